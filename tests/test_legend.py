"""Every printed score has a direction and a range; EC has one sign; backend names are true."""

from __future__ import annotations

import math

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.legend import HIGHER, LOWER, Meaning, legend_lines
from evenhand.evaluation.scoring.legend import meaning as _meaning
from evenhand.evaluation.scoring.report import EvaluationReport, format_corpus


def meaning(column: str) -> Meaning:
    """The legend's meaning of a column evenhand knows (these tests ask only for known ones)."""
    found = _meaning(column)
    assert found is not None, column
    return found


def test_known_columns_have_direction_and_range():
    assert meaning("equal-coverage.ec").direction == LOWER and meaning("equal-coverage.ec").range.startswith(">= 0")
    assert meaning("equal-coverage").direction == HIGHER  # the scorer's -EC, never printed as EC
    assert meaning("fairsumm_uer").direction == LOWER and meaning("fairsumm-bertscore_uer").direction == LOWER
    assert meaning("rouge-l-recall").short() == "0-1, higher is better"
    # a linear fit leaves its target's 0-1 on the demo's sets (2.8, -0.04): its legend says unbounded
    assert meaning("calibrated:coverage").unbounded and meaning("calibrated:coverage").range.startswith("unbounded")
    assert meaning("calibrated:faithfulness").unbounded and meaning("calibrated:my.json").unbounded
    assert meaning("mint_p3").arrow == "descriptive" and _meaning("my-scorer") is None
    assert meaning("sentiment-agreement").short() == "-2-0 (0 = the source's tone), higher is better"
    assert meaning("checker").direction == HIGHER
    assert legend_lines(["mint", "mint", "my-scorer"]) == [
        "  mint: 0-1, descriptive - MINT abstractiveness (1 = nothing copied)"]


def test_corpus_table_prints_each_rows_meaning():
    report = EvaluationReport(corpus=[{"metric": "equal-coverage.ec", "value": 0.0709, "n": 12},
                                      {"metric": "mine", "value": 1.0, "n": 2}])
    lines = format_corpus(report).splitlines()
    assert lines[0].endswith("range, direction")
    assert lines[1].split() == ["equal-coverage.ec", "0.0709", "12", ">=", "0", "(0", "=", "equal),", "lower", "is",
                                "better"]
    assert lines[2].split() == ["mine", "1.0000", "2"]


def test_equal_coverage_columns_are_the_papers_ec_and_the_backend_is_named_truly():
    from evenhand.evaluation.scoring.registry import get_scorer

    scorer = get_scorer("equal-coverage")
    ex = Example("a", [Document("The hotel was clean and quiet.", "5"), Document("The staff was rude.", "1")])
    (record,) = scorer.score_details([ex], ["The hotel was clean and quiet."])
    row = scorer.columns(record)
    assert set(row) == {"equal-coverage.ec", "equal-coverage_backend"}
    assert row["equal-coverage.ec"] == record["ec"] == -record["score"] and row["equal-coverage.ec"] > 0
    assert row["equal-coverage_backend"] == "alignscore-minilm-fallback"
    assert scorer.aggregate([record, {"ec": None, "score": -1.0}]) == {"equal-coverage.ec": record["ec"]}
    assert math.isnan(scorer.aggregate([{"ec": None}])["equal-coverage.ec"])


def test_every_range_text_agrees_with_its_numbers():
    """A legend says "unbounded" exactly when it has no numeric bound; a bounded one names a side."""
    from evenhand.evaluation.scoring.legend import _EXACT, _PATTERNS

    for found in [*_EXACT.values(), *(m for _, m in _PATTERNS)]:
        assert found.low <= found.high
        assert found.unbounded == found.range.startswith("unbounded"), found
    assert meaning("checker").contains(0.0) and meaning("checker").contains(1.0)
    assert not meaning("checker").contains(1.01) and not meaning("fluency").contains(0.2)
    assert meaning("equal-coverage").contains(-1.0) and not meaning("equal-coverage").contains(0.1)
    assert meaning("composite").contains(0.5) and not meaning("composite").contains(1.5)


def test_one_legend_line_groups_columns_that_share_a_scale():
    from evenhand.evaluation.scoring.legend import legend_line, printable

    assert legend_line(["calibrated:coverage", "calibrated:faithfulness", "fluency", "checker", "x"]) == (
        "scales: calibrated:coverage, calibrated:faithfulness unbounded (linear fit), higher is better; "
        "fluency <= 0 nats, higher is better; checker 0-1, higher is better")
    assert printable("calibrated:coverage", 2.787) and printable("my-scorer", 99.0)
    assert not printable("checker", 2.787) and printable("checker", float("nan"))


def test_commands_read_their_legends_from_the_one_module(monkeypatch):
    """evaluate's corpus table, compare's page, rerank's selection lines, the sweep report and the demo
    print what ``evaluation.scoring.legend`` says: change it there and every one of them changes."""
    from evenhand.compare_page import compare_page
    from evenhand.demo_display import format_scores, format_table
    from evenhand.evaluation.scoring import legend
    from evenhand.rerank.selection import selection_lines

    marks = {name: legend.Meaning(legend.HIGHER, f"RANGE-{i}", "what", 0.0, 1.0)
             for i, name in enumerate(["composite", "checker", "rouge_l_f1", "equal-coverage.ec"])}
    for name, found in marks.items():
        monkeypatch.setitem(legend._EXACT, name, found)
    corpus = format_corpus(EvaluationReport(corpus=[{"metric": "equal-coverage.ec", "value": 0.1, "n": 2}]))
    assert "RANGE-3" in corpus
    table = [{"metric": "checker", "system_mean": 0.5, "baseline_mean": 0.4, "diff": 0.1, "lower": 0.0,
              "upper": 0.2, "verdict": "tie", "n": 2}]
    assert "RANGE-1" in compare_page(("a", "b"), table, [], ({}, {}), ({}, {}), ["checker"], "note")
    record = {"best_index": 0, "best_score": 1.0,
              "candidates": [{"recipe": "nucleus", "score": 1.0}, {"recipe": "beam", "score": 0.0}]}
    assert "RANGE-0" in selection_lines([record])[1]
    assert "RANGE-1" in "\n".join(legend_lines(["checker"]))  # the sweep report's column notes

    class Composite:
        class config:
            names, weight_list = ["checker"], [1.0]

    side = {"selection": {"checker": 0.5, "composite": 1.0}, "checks": {"rouge_l_f1": 0.3}}
    block = format_scores(Composite, {"plain": side, "evenhand": side})
    assert "checker RANGE-1" in block and "rouge_l_f1 RANGE-2" in block
    rows = [{"id": "a", "rouge_l_f1_plain": 0.3, "rouge_l_f1_evenhand": 0.4}]
    assert "rouge_l_f1 RANGE-2" in format_table(rows)
