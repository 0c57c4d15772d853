"""Issue 50, what a command leaves on disk: a refused command changes no byte, a report is its own sweep's
and replaces its folder whole, integer limits print as integers."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from evenhand.cli import main


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _store(path: Path, name: str, config: str, values: tuple[float, ...] = (0.1, 0.2, 0.3)) -> str:
    """A results (or shard) file in rollback-journal mode holding one cell; its cell id."""
    from evenhand.sweep.config import Cell
    from evenhand.sweep.store import ResultRow, ResultStore

    cell = Cell({"abstractiveness": float(len(name))}, name)
    store = ResultStore(path)
    store.set_meta("config", config)
    store.add_cells([cell])
    store.write([ResultRow(cell.id, "news", 0, f"ex{i}", i, f"summary {i}", {"mint": v})
                 for i, v in enumerate(values)])
    store.conn.execute("PRAGMA journal_mode=DELETE")
    store.close()
    return cell.id


def test_an_integer_limit_prints_as_an_integer_and_is_compared_exactly():
    from evenhand.decoding.config import GenerateConfig
    from evenhand.evaluation.data.checks import MAX_DERIVED_SEED, check_number
    from evenhand.evaluation.errors import DataError

    assert GenerateConfig(seed=MAX_DERIVED_SEED).seed == 2**63 - 1  # at the limit: accepted
    with pytest.raises(DataError) as err:
        check_number(2**63, "seed", low=0, high=MAX_DERIVED_SEED, integer=True)
    assert str(err.value) == "`seed` must be at most 9223372036854775807, got 9223372036854775808"
    with pytest.raises(ValueError, match="must be at most 9223372036854775807, got 9223372036854775808"):
        GenerateConfig(seed=2**63)


def test_a_refused_sweep_leaves_the_other_sweeps_store_byte_identical(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "attribute": "sentiment", "documents": [
        {"text": "Good food.", "group": "pos"}, {"text": "Slow service.", "group": "neg"}]}) + "\n")
    results = tmp_path / "r.sqlite"
    _store(results, "theirs", "theirs: 1\n")
    config = tmp_path / "s.yaml"
    config.write_text(f"datasets:\n  d: {data}\nmetrics: [mint]\nbase:\n  max_new_tokens: 4\n  num_beams: 1\n")
    before = {p.name: _sha(p) for p in tmp_path.iterdir()}
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds the results of another sweep" in err and "--merge" in err, err
    assert {p.name: _sha(p) for p in tmp_path.iterdir()} == before  # no -wal/-shm, not one byte changed
    with sqlite3.connect(results) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_report_refuses_shards_of_two_sweeps_without_a_results_file(tmp_path, capsys):
    from evenhand.sweep.store import shard_path

    results = tmp_path / "r.sqlite"
    _store(shard_path(results, 0, 2), "ours", "ours: 1\n")
    _store(shard_path(results, 1, 2), "theirs", "theirs: 1\n")
    before = {p.name: _sha(p) for p in tmp_path.iterdir()}
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "rep"), "--bootstrap", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "r.part1-of2.sqlite: a shard of another sweep than r.part0-of2.sqlite" in err
    assert "--merge" in err and "remove" in err
    assert {p.name: _sha(p) for p in tmp_path.iterdir()} == before


def test_a_skipped_shard_is_one_line_even_without_a_config_in_the_results_file(tmp_path, capsys):
    from evenhand.sweep.store import shard_path

    results = tmp_path / "r.sqlite"
    _store(results, "ours", "")
    with sqlite3.connect(results) as conn:  # a results file of an older evenhand: no stored config
        conn.execute("DELETE FROM meta WHERE key='config'")
    _store(shard_path(results, 1, 2), "theirs", "theirs: 1\n")
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "rep"), "--bootstrap", "5"]) == 0
    err = capsys.readouterr().err
    assert err.count("r.part1-of2.sqlite: skipped, written by another sweep") == 1 and "--merge" in err, err
    assert "theirs" not in (tmp_path / "rep" / "cells.csv").read_text()


def test_report_replaces_an_earlier_report_whole(tmp_path, capsys):
    first, second = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    _store(first, "first", "a: 1\n")
    _store(second, "second", "b: 1\n")
    out = tmp_path / "rep"
    assert main(["report", "--results", str(first), "--out", str(out), "--bootstrap", "5"]) == 0
    (out / "old-dataset_tradeoff.png").write_bytes(b"\x89PNG stale")  # an earlier report's data set
    (out / "old-dataset_ranking.csv").write_text("stale\n")
    assert main(["report", "--results", str(second), "--out", str(out), "--bootstrap", "5"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "old-dataset_tradeoff.png" not in names and "old-dataset_ranking.csv" not in names
    assert "second" in (out / "cells.csv").read_text() and "first" not in (out / "cells.csv").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sqlite", "b.sqlite", "rep"]  # nothing left aside


def test_report_refuses_a_folder_holding_what_no_report_writes(tmp_path, capsys):
    results = tmp_path / "r.sqlite"
    _store(results, "ours", "ours: 1\n")
    out = tmp_path / "notes"
    out.mkdir()
    (out / "thesis.txt").write_text("mine\n")
    (out / "index.html").write_text("<p>mine</p>\n")
    assert main(["report", "--results", str(results), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds thesis.txt, which no report writes" in err, err
    assert (out / "thesis.txt").read_text() == "mine\n" and (out / "index.html").read_text() == "<p>mine</p>\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "r.sqlite"]


def test_atomic_folder_never_deletes_a_link_or_what_it_points_to(tmp_path):
    from evenhand.evaluation.errors import OutputError
    from evenhand.evaluation.io.atomic import atomic_folder

    kept = tmp_path / "kept.txt"
    kept.write_text("keep\n")
    folder = tmp_path / "f"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "link").symlink_to(kept)
    with pytest.raises(OutputError, match="not a regular file or folder"), atomic_folder(folder) as tmp:
        (tmp / "x").write_text("new\n")
    assert kept.read_text() == "keep\n" and (folder / "sub" / "link").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "kept.txt"]
