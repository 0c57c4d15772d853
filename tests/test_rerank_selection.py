"""rerank.selection: which source won, and a composite gain only where another candidate replaced plain."""

from __future__ import annotations

from evenhand.rerank.selection import selection_lines, wins


def _record(scores: dict[str, float], best: str) -> dict:
    cands = [{"recipe": r, "score": s, "text": r} for r, s in scores.items()]
    index = [c["recipe"] for c in cands].index(best)
    return {"candidates": cands, "best_index": index, "best_score": scores[best]}


def test_plain_kept_everywhere_claims_no_gain():
    records = [_record({"nucleus": 1.0, "top-k": 0.0, "beam": 0.4}, "beam") for _ in range(4)]
    lines = selection_lines(records, ["nucleus", "top-k", "beam"])
    assert lines == [
        "kept (of 4 examples): nucleus 0, top-k 0, plain beam search 4",
        "plain beam search kept for 4 of 4 examples: reranking changed no summary, so no gain is claimed",
    ]


def test_gain_is_over_plain_where_a_sample_won():
    records = [
        _record({"nucleus": 1.0, "top-k": 0.0, "beam": 0.4}, "nucleus"),  # +0.6 over plain
        _record({"nucleus": 0.9, "top-k": 0.0, "beam": 0.7}, "nucleus"),  # +0.2
        _record({"nucleus": 1.0, "top-k": 0.0, "beam": 0.5}, "beam"),  # kept: not counted
    ]
    assert wins(records) == {"nucleus": 2, "beam": 1}
    lines = selection_lines(records, ["nucleus", "top-k", "beam"])
    assert lines[0] == "kept (of 3 examples): nucleus 2, top-k 0, plain beam search 1"
    assert lines[1] == ("where another candidate replaced plain beam search (2 of 3): composite +0.400 over plain "
                        "(0-1 within its candidate set (min-max), higher is better)")
    assert selection_lines(records, ["nucleus", "top-k", "beam"], gain=False) == lines[:1] + lines[2:]
