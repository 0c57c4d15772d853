"""Atomic result files: write_jsonl, write_json, write_csv on atomic_open."""

import json

import pytest

from evenhand.evaluation.io.atomic import atomic_open
from evenhand.evaluation.io.csv_file import write_csv
from evenhand.evaluation.io.json_file import write_json
from evenhand.evaluation.io.jsonl import read_jsonl, write_jsonl


def test_writers_round_trip_and_leave_no_temporary_file(tmp_path):
    rows = [{"id": "a", "x": 0.5}, {"id": "é", "y": 1}]
    write_jsonl(tmp_path / "r.jsonl", rows)
    write_json(tmp_path / "r.json", {"k": [1, 2]})
    write_csv(tmp_path / "r.csv", rows)
    assert read_jsonl(tmp_path / "r.jsonl") == rows
    assert json.loads((tmp_path / "r.json").read_text()) == {"k": [1, 2]}
    assert (tmp_path / "r.csv").read_bytes().decode("utf-8") == "id,x,y\r\na,0.5,\r\né,,1\r\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json", "r.jsonl"]


def test_a_failed_write_keeps_the_old_content(tmp_path):
    path = tmp_path / "r.jsonl"
    write_jsonl(path, [{"id": "old"}])
    with pytest.raises(RuntimeError), atomic_open(path) as f:
        f.write("half")
        raise RuntimeError("killed")
    assert read_jsonl(path) == [{"id": "old"}] and [p.name for p in tmp_path.iterdir()] == ["r.jsonl"]
