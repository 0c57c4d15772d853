"""The checker floor (issue 33): a candidate that contradicts the source more than the plain summary
cannot win; hand-computed floors on stub scores, and the margin measurement's arithmetic."""

from __future__ import annotations

import pytest

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.scorer import Scorer
from evenhand.rerank.reranker import score_and_select
from evenhand.rerank.selection import floor_lines


class Fixed(Scorer):
    """Score = a fixed value per text (a stand-in with hand-set scores)."""

    def __init__(self, values: dict[str, float]) -> None:
        super().__init__()
        self.values = values

    def _score_batch(self, sources, outputs):
        return [{"score": self.values[o]} for o in outputs]


EXAMPLE = Example("e", [Document("The battery lasts a week.", "5"), Document("The case is flimsy.", "1")])


def _candidates():
    return [
        {"text": "fair but invented", "recipe": "fair-beam β=1", "index": 0},
        {"text": "fair and supported", "recipe": "fair-beam β=3", "index": 1},
        {"text": "slightly weaker", "recipe": "nucleus", "index": 2},
        {"text": "plain", "recipe": "beam", "index": 3},
    ]


#: selection composite: the invented candidate is the most "fair"
SELECT = {"fair but invented": 0.9, "fair and supported": 0.8, "slightly weaker": 0.85, "plain": 0.5}
#: checker: p(supported); plain 0.70
CHECK = {"fair but invented": 0.40, "fair and supported": 0.72, "slightly weaker": 0.62, "plain": 0.70}
#: fluency (nats/token): all within 0.5 of plain
FLUENCY = {"fair but invented": -2.9, "fair and supported": -2.7, "slightly weaker": -3.0, "plain": -2.8}


def test_checker_floor_keeps_the_contradicting_candidate_from_winning():
    cands = _candidates()
    best = score_and_select(EXAMPLE, cands, Fixed(SELECT), {"checker": 0.1}, {"checker": Fixed(CHECK)})
    # 0.40 < 0.70 - 0.1 = 0.60: out; 0.62 >= 0.60: stays, and beats 0.8 on selection
    assert [c["eligible"] for c in cands] == [False, True, True, True]
    assert best == 2
    assert cands[0]["below"] == ["checker"] and "below" not in cands[2]
    assert [c["floors"]["checker"] for c in cands] == [0.40, 0.72, 0.62, 0.70]


def test_a_tighter_margin_excludes_more_and_zero_keeps_only_at_least_as_supported():
    cands = _candidates()
    best = score_and_select(EXAMPLE, cands, Fixed(SELECT), {"checker": 0.05}, {"checker": Fixed(CHECK)})
    assert [c["eligible"] for c in cands] == [False, True, False, True]  # 0.62 < 0.65
    assert best == 1
    cands = _candidates()
    score_and_select(EXAMPLE, cands, Fixed(SELECT), {"checker": 0.0}, {"checker": Fixed(CHECK)})
    assert [c["eligible"] for c in cands] == [False, True, False, True]
    cands = _candidates()  # without the floor the invented one wins
    assert score_and_select(EXAMPLE, cands, Fixed(SELECT)) == 0


def test_floors_combine_and_each_exclusion_is_attributed():
    cands = _candidates()
    fluency = {**FLUENCY, "slightly weaker": -3.4}  # 0.6 below plain: fails the fluency floor too
    best = score_and_select(
        EXAMPLE, cands, Fixed(SELECT), {"fluency": 0.5, "checker": 0.1},
        {"fluency": Fixed(fluency), "checker": Fixed(CHECK)},
    )
    assert best == 1
    assert [c.get("below", []) for c in cands] == [["checker"], [], ["fluency"], []]
    record = {"candidates": cands, "best_index": best, "best_score": cands[best]["score"]}
    assert floor_lines([record]) == [
        "below a floor: 2 of 3 candidates (plain excluded); per floor: fluency 1, checker 1"]
    assert floor_lines([{"candidates": [{"recipe": "nucleus", "score": 1.0}], "best_index": 0}]) == []


def test_margin_measurement_counts_right_and_wrong_exclusions():
    from benchmarks.checker_floor import floor_exclusions, pick_margin

    # source 0: three summaries; source 1: two (pairs never cross sources)
    scores = [0.9, 0.5, 0.45, 0.2, 0.8]
    truth = [1.0, 0.5, 0.75, 1.0, 0.0]
    sources = [0, 0, 0, 1, 1]
    # margin 0.1: (1 vs 0) 0.5<0.8 right; (2 vs 0) 0.45<0.8 right; (2 vs 1) 0.45<0.4? no;
    # (3 vs 4) 0.2<0.7 wrong (truth 1.0 > 0.0) -> 3 excluded, 2 right
    assert floor_exclusions(scores, truth, sources, 0.1) == (3, 2)
    # margin 0: adds (2 vs 1): 0.45 < 0.5, truth 0.75 > 0.5: wrong -> 4, 2
    assert floor_exclusions(scores, truth, sources, 0.0) == (4, 2)
    # margin 0.4: (2 vs 0) 0.45<0.5 right, (3 vs 4) 0.2<0.4 wrong -> 2, 1; 0.5: (3 vs 4) only -> 1, 0
    assert floor_exclusions(scores, truth, sources, 0.4) == (2, 1)
    rows = [(0.0, 4, 2), (0.1, 3, 2), (0.4, 2, 1), (0.5, 1, 0)]
    assert pick_margin(rows, 0.6) == 0.1
    assert pick_margin(rows, 0.7) is None


@pytest.mark.parametrize("margin", [0.0, 0.1])
def test_plain_always_qualifies(margin):
    cands = _candidates()
    low = {**CHECK, "plain": 0.0}  # plain is the reference: it cannot fall below itself
    score_and_select(EXAMPLE, cands, Fixed(SELECT), {"checker": margin}, {"checker": Fixed(low)})
    assert cands[3]["eligible"] and all(c["eligible"] for c in cands)
