import numpy as np
import pytest

from evenhand.evaluation.metrics.ranking import (
    bradley_terry,
    fit_bradley_terry,
    pairwise_winrate,
    pairwise_wins,
    spearman,
)


def test_two_systems_closed_form():
    # MLE: θ_0 − θ_1 = log(30/10)
    theta = fit_bradley_terry([[0, 30], [10, 0]])
    assert theta[0] - theta[1] == pytest.approx(np.log(3), abs=1e-5)
    assert theta.sum() == pytest.approx(0.0, abs=1e-12)


def test_ties_broken_once_per_pair():
    w = pairwise_wins(np.zeros((50, 3)), seed=3)
    assert np.array_equal(w + np.swapaxes(w, 1, 2), 1 - np.eye(3)[None].repeat(50, 0))
    assert 0.3 < w[:, 0, 1].mean() < 0.7


def test_recovers_order_with_intervals():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(120, 3)) + np.array([0.0, 0.5, 1.0])
    bt = bradley_terry(scores, ["a", "b", "c"], n_bootstrap=100)
    assert bt.ranking() == ["c", "b", "a"]
    for lo, est, hi in zip(bt.lower, bt.abilities, bt.upper):
        assert lo <= est <= hi
    assert bradley_terry(scores, n_bootstrap=100) == bradley_terry(scores, n_bootstrap=100)


def test_meta_evaluation_hand():
    # source 0: truth 1 < 2 < 3; metric orders (1,2),(1,3) right and (2,3) tied → 2/3
    assert pairwise_winrate([1, 2, 2, 9], [1, 2, 3, 0], [0, 0, 0, 1]) == pytest.approx(2 / 3)
    assert pairwise_winrate(
        [1, 2, 2, 9], [1, 2, 3, 0], [0, 0, 0, 1], tie_credit=0.5
    ) == pytest.approx(5 / 6)
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="two systems"):
        bradley_terry(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="no same-source pair"):
        pairwise_winrate([1, 2], [1, 2], ["a", "b"])
