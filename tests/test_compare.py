"""``evenhand compare``: paired differences with intervals, the page, and output chaining."""

from __future__ import annotations

import csv
import json

import pytest

from evenhand.cli import main
from evenhand.evaluation.data.loaders import write_examples
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.metrics.paired import paired_table

EXAMPLES = [
    Example(f"e{i}", [Document(f"The room {i} was clean.", "5"), Document(f"The staff {i} was rude.", "1")],
            attribute="rating")
    for i in range(3)
]


def _summaries(path, texts):
    path.write_text("".join(json.dumps({"id": f"e{i}", "summary": t}) + "\n" for i, t in enumerate(texts)))
    return path


def test_paired_table_uses_the_directions():
    rows = {"a": [{"id": i, "uer": v} for i, v in enumerate([0.1, 0.2, 0.3])],
            "b": [{"id": i, "uer": v} for i, v in enumerate([0.3, 0.4, 0.5])]}
    (lower,) = paired_table(rows, [("a", "b")], ["uer"], {"uer": -1})
    assert lower["diff"] == pytest.approx(-0.2) and lower["verdict"] == "better"  # lower UER is better
    (higher,) = paired_table(rows, [("a", "b")], ["uer"])  # unlisted: higher is better
    assert higher["verdict"] == "worse"


def test_compare_command_differences_page_and_csv(tmp_path, capsys):
    data = write_examples(tmp_path / "d.jsonl", EXAMPLES)
    # A copies the first document whole (MINT 0 against... recall 1 of it); B adds a <tag> and words
    a = _summaries(tmp_path / "a.jsonl", [f"The room {i} was clean." for i in range(3)])
    b = _summaries(tmp_path / "b.jsonl", [f"Guests said <b>lovely</b> things about room {i}." for i in range(3)])
    out = tmp_path / "cmp.html"
    code = main(["compare", str(a), str(b), "--data", str(data), "--metrics", "rouge-l-recall,mint",
                 "--out", str(out), "--quiet", "--score-cache", "none"])
    assert code == 0
    printed = capsys.readouterr().out
    with (tmp_path / "cmp.csv").open() as f:
        table = {r["metric"]: r for r in csv.DictReader(f)}
    from evenhand.evaluation.scoring.registry import get_scorer

    rouge = get_scorer("rouge-l-recall")
    sa = rouge.score(EXAMPLES, [f"The room {i} was clean." for i in range(3)])
    sb = rouge.score(EXAMPLES, [f"Guests said <b>lovely</b> things about room {i}." for i in range(3)])
    diff = sum(x - y for x, y in zip(sa, sb)) / 3
    assert float(table["rouge-l-recall"]["diff"]) == pytest.approx(diff)
    assert float(table["rouge-l-recall"]["system_mean"]) == pytest.approx(sum(sa) / 3)
    assert table["rouge-l-recall"]["n"] == "3"
    assert "rouge-l-recall" in printed and f"{diff:+.4f}" in printed and "0-1, higher is better" in printed
    assert "A = a, B = b" in printed
    page = out.read_text()
    assert "&lt;b&gt;lovely&lt;/b&gt;" in page and "<b>lovely</b>" not in page  # escaped
    assert page.count("class=pair") == 3 and "The room 2 was clean." in page


def test_compare_refuses_files_without_shared_examples(tmp_path, capsys):
    data = write_examples(tmp_path / "d.jsonl", EXAMPLES)
    a = _summaries(tmp_path / "a.jsonl", ["x", "y", "z"])
    b = tmp_path / "b.jsonl"
    b.write_text(json.dumps({"id": "e0", "summary": "only one"}) + "\n")
    code = main(["compare", str(a), str(b), "--data", str(data), "--out", str(tmp_path / "c.html")])
    assert code == 2
    assert "only 1 shared example; a paired interval needs at least 2" in capsys.readouterr().err
