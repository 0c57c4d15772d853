"""benchmarks/checker_weight.py: pair wins per kind of a calibration and the rule that picks the weight."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ is a folder of the checkout, not an installed package

from benchmarks.checker_weight import pair_wins, pick_weight  # noqa: E402


def test_pair_wins_count_per_kind_with_half_ties() -> None:
    # three pairs: faithful scores first (a: 1, 2, 3), then contradicted (a: 0, 2, 5); prediction = 2a
    raw = {"a": [1.0, 2.0, 3.0, 0.0, 2.0, 5.0]}
    wins = pair_wins(lambda r: 2 * np.asarray(r["a"]), raw, ["group", "group", "number"])
    assert wins == {"group": 1.5, "number": 0.0, "all": 1.5}


def test_pick_weight_is_the_smallest_meeting_both_bars() -> None:
    rows = [
        {"weight": 0.2, "wins": {"all": 47.0, "majority": 7.0, "group": 8.0}},
        {"weight": 0.0, "wins": {"all": 39.0, "majority": 3.0, "group": 6.0}},
        {"weight": 0.1, "wins": {"all": 45.0, "majority": 6.0, "group": 8.0}},
        {"weight": 0.05, "wins": {"all": 44.0, "majority": 5.0, "group": 8.0}},  # 44 in all, one kind at 5
    ]
    assert pick_weight(rows, 44, 6) == 0.1
    assert pick_weight(rows, 44, 5) == 0.05
    assert pick_weight(rows, 46, 6) == 0.2
    assert pick_weight(rows, 48, 0) is None
