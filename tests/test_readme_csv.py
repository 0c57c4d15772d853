"""The README's first-page CSV example runs as shown: the attribute column picks groups and prompt."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from evenhand.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def _example() -> tuple[str, list[list[str]]]:
    block = re.search(r"cat > reviews\.csv <<'CSV'\n(.*?)\nCSV\n(.*?)\n```", README.read_text(), re.S)
    assert block, "README lost its CSV example"
    commands = [shlex.split(line.split("#")[0]) for line in block.group(2).splitlines() if line.startswith("evenhand ")]
    return block.group(1) + "\n", commands


def test_readme_csv_example(tmp_path, model_dir, capsys, monkeypatch):
    csv_text, commands = _example()
    assert csv_text.splitlines()[0] == "example_id,text,rating"
    monkeypatch.chdir(tmp_path)
    Path("reviews.csv").write_text(csv_text)
    generate, evaluate = commands
    assert generate[:2] == ["evenhand", "generate"] and evaluate[:2] == ["evenhand", "evaluate"]
    code = main([*generate[1:], "--model", str(model_dir), "--max-new-tokens", "4", "--device", "cpu"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "prompt kind: reviews (attribute rating)" in printed
    (row,) = [json.loads(line) for line in Path("summaries.jsonl").read_text().splitlines()]
    assert row["id"] == "cafe" and isinstance(row["summary"], str)
    assert main([*evaluate[1:], "--quiet", "--score-cache", "none"]) == 0
    scores = json.loads(Path("scores.jsonl").read_text().splitlines()[0])
    assert scores["id"] == "cafe" and 0 <= scores["mint"] <= 1 and scores["equal-coverage.ec"] >= 0
