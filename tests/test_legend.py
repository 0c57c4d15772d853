"""Every printed score has a direction and a range; EC has one sign; backend names are true."""

from __future__ import annotations

import math

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.legend import HIGHER, LOWER, legend_lines, meaning
from evenhand.evaluation.scoring.report import EvaluationReport, format_corpus


def test_known_columns_have_direction_and_range():
    assert meaning("equal-coverage.ec").direction == LOWER and meaning("equal-coverage.ec").range.startswith(">= 0")
    assert meaning("equal-coverage").direction == HIGHER  # the scorer's -EC, never printed as EC
    assert meaning("fairsumm_uer").direction == LOWER and meaning("fairsumm-bertscore_uer").direction == LOWER
    assert meaning("rouge-l-recall").short() == "0-1, higher is better"
    assert meaning("calibrated:coverage").range.startswith("~0-1")  # a linear fit: may leave 0-1
    assert meaning("mint_p3").arrow == "descriptive" and meaning("my-scorer") is None
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
