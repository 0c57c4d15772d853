import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evenhand.evaluation.metrics.coverage import (
    coverage_parity,
    coverage_significance,
    document_coverage,
    equal_coverage,
    proportional_representation,
    significant_share,
)


def test_hand_computed_equal_coverage():
    # c = (1, 0, 0, 0), mean 1/4; group a mean 1/2, b mean 0 → EC = (1/4 + 1/4)/2
    r = equal_coverage([[1, 0, 0, 0]], ["a", "a", "b", "b"])
    assert r.ec == pytest.approx(0.25)
    assert r.group_diffs == pytest.approx({"a": 0.25, "b": -0.25})


def test_uncovered_units_excluded_by_default():
    p = [[1.0, 0.5], [0.0, 0.0]]
    assert document_coverage(p).tolist() == [1.0, 0.5]
    assert document_coverage(p, exclude_uncovered_units=False).tolist() == [0.5, 0.25]


def test_permutation_p_value_hand():
    # 2 docs per group, perfectly separated: 4 of the 24 label orders are as extreme → p ≈ 1/3
    p = np.array([[1.0, 1.0, 0.0, 0.0]])
    value = coverage_significance(p, ["a", "a", "b", "b"], n_resamples=20000, seed=1)
    assert value == pytest.approx(1 / 3, abs=0.02)
    assert coverage_significance(p, ["a", "a", "b", "b"], seed=1) == coverage_significance(
        p, ["a", "a", "b", "b"], seed=1
    )


def test_bootstrap_variant():
    p = np.array([[1.0, 0.9, 0.8, 0.0, 0.1, 0.05]])  # every "a" doc above the mean
    value = coverage_significance(p, list("aaabbb"), method="bootstrap")
    assert value == 0.0


def test_coverage_parity_and_pr():
    r1 = equal_coverage([[1, 0, 0, 0]], ["a", "a", "b", "b"])  # diffs .75 -.25 | -.25 -.25
    r2 = equal_coverage([[0, 0, 1, 1]], ["a", "a", "b", "b"])  # diffs -.5 -.5 | .5 .5
    cp = coverage_parity([r1, r2])
    # a: (.75 - .25 - .5 - .5)/4 = -0.125; b: (-.25 - .25 + .5 + .5)/4 = 0.125
    assert cp.group_diffs == pytest.approx({"a": -0.125, "b": 0.125})
    assert cp.cp == pytest.approx(0.125)
    assert (cp.most_over, cp.most_under) == ("b", "a")
    # PR: coverage mass (1, 0) by group vs doc shares (1/2, 1/2) → mean |.| = 1/2
    assert proportional_representation([[1, 0, 0, 0]], ["a", "a", "b", "b"]) == pytest.approx(0.5)
    assert significant_share([0.01, 0.2, 0.04, 0.5]) == 0.5


@pytest.mark.parametrize(
    ("matrix", "groups", "message"),
    [
        ([[0.5, 0.5]], ["a", "a"], "at least two"),
        (np.zeros((0, 2)), ["a", "b"], "non-empty"),
        ([[0.0, 0.0]], ["a", "b"], "no summary unit is covered"),
        ([[0.5, 0.5]], ["a"], "one group per document"),
        ([[1.5, 0.5]], ["a", "b"], "probabilities"),
    ],
)
def test_bad_inputs_raise(matrix, groups, message):
    with pytest.raises(ValueError, match=message):
        equal_coverage(matrix, groups)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_ranges_and_document_order_invariance(n_docs, n_units, seed):
    rng = np.random.default_rng(seed)
    p = rng.random((n_units, n_docs))
    groups = [str(i % 3) for i in range(n_docs)]
    perm = rng.permutation(n_docs)
    a = equal_coverage(p, groups)
    b = equal_coverage(p[:, perm], [groups[i] for i in perm])
    assert 0.0 <= a.ec <= 1.0
    assert a.ec == pytest.approx(b.ec)
    assert a.group_diffs == pytest.approx(b.group_diffs)
    value = coverage_significance(p, groups, n_resamples=200, seed=seed)
    assert 1 / 201 <= value <= 1.0
    assert 0.0 <= proportional_representation(p, groups) <= 1.0
