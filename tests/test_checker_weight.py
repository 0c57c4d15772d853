"""benchmarks/checker_weight.py and faithfulness_cost.py, and the shipped faithfulness calibration they chose."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ is a folder of the checkout, not an installed package

from benchmarks.checker_weight import pair_wins, pick_weight  # noqa: E402


def test_pair_wins_count_per_kind_with_half_ties() -> None:
    # three pairs: faithful scores first (a: 1, 2, 3), then contradicted (a: 0, 2, 5); prediction = 2a
    raw = {"a": [1.0, 2.0, 3.0, 0.0, 2.0, 5.0]}
    wins = pair_wins(lambda r: 2 * np.asarray(r["a"]), raw, ["group", "group", "number"])
    assert wins == {"group": 1.5, "number": 0.0, "all": 1.5}


def test_pick_weight_is_the_smallest_meeting_both_bars_in_every_set() -> None:
    def row(weight: float, *sets: tuple[float, float]) -> dict:
        return {"weight": weight, "wins": {f"set{i}": {"all": a, "majority": m, "group": 8.0}
                                           for i, (a, m) in enumerate(sets)}}

    rows = [row(0.2, (47, 7), (46, 7)), row(0.0, (39, 3), (38, 3)), row(0.1, (45, 6), (44, 6)),
            row(0.05, (44, 6), (44, 5))]  # 0.05: the second set has a kind at 5
    assert pick_weight(rows, 44, 6) == 0.1
    assert pick_weight(rows, 44, 5) == 0.05
    assert pick_weight(rows, 45, 6) == 0.2
    assert pick_weight(rows, 48, 0) is None
    assert pick_weight([row(0.05, (44, 6))], 44, 6) == 0.05  # one set: the dev pairs alone


def test_shipped_faithfulness_calibration_holds_the_checker_weight() -> None:
    from evenhand.rerank.scorers.calibrated import load_calibration

    cal = load_calibration("faithfulness")
    assert cal.scorers == ["lm-pmi", "rouge-1-precision", "checker", "sentiment-agreement"]
    assert cal.weights["checker"] == 0.1 and cal.meta["fixed_weights"] == {"checker": 0.1}
    assert cal.meta["backends"]["lm-pmi"] == "smollm2-135m-instruct"
    t = cal.transforms
    at_mean = {s: [t[s]["mean"]] for s in cal.scorers}
    assert cal.predict(at_mean)[0] == pytest.approx(cal.intercept)
    # one checker standard deviation more adds exactly its fixed weight
    up = {**at_mean, "checker": [t["checker"]["mean"] + t["checker"]["std"]]}
    assert cal.predict(up)[0] - cal.predict(at_mean)[0] == pytest.approx(0.1)
    # the checker's weight was fixed, not fitted: the free ones still carry the source evidence, and a
    # summary whose tone strays from its source's loses (sentiment-agreement is minus that gap)
    assert cal.weights["lm-pmi"] > 0 and cal.weights["rouge-1-precision"] > 0
    assert cal.weights["sentiment-agreement"] > 0
    assert 0.54 < cal.meta["cross_validated"]["spearman"][0] < 0.59  # 0.566 (docs/reranking.md)


def test_cost_baseline_drops_one_feature() -> None:
    from benchmarks.faithfulness_cost import without

    cal = {"scorers": ["lm-pmi", "rouge-1-precision", "checker"], "weights": {"lm-pmi": 1, "rouge-1-precision": 2,
           "checker": 3}, "transforms": {"lm-pmi": {}, "rouge-1-precision": {}, "checker": {}},
           "scorer_options": {"lm-pmi": {"model": "m"}, "rouge-1-precision": {}, "checker": {}}}
    base = without(cal, "checker")
    assert base["scorers"] == ["lm-pmi", "rouge-1-precision"] and "checker" not in base["weights"]
    assert base["scorer_options"] == {"lm-pmi": {"model": "m"}, "rouge-1-precision": {}}
    assert cal["scorers"][-1] == "checker"  # the input is not changed
