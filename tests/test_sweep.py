"""Sweep configs (grid expansion, validation), the SQLite store, resume after a kill, sharding."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from evenhand.evaluation.errors import DataError
from evenhand.sweep.config import Cell, expand_cells, load_sweep, parse_sweep
from evenhand.sweep.store import merge_shards, read_results, shard_paths

DATA = [
    {
        "id": f"ex{i}",
        "attribute": "rating",
        "documents": [
            {"text": f"The battery lasts {i + 2} days and charging is fast.", "group": "5"},
            {"text": "The screen cracked after one week, support never answered.", "group": "1"},
            {"text": "Sound is fine for the price but the case feels cheap.", "group": "3"},
        ],
    }
    for i in range(4)
]
DATA[3]["documents"] = [{"text": d["text"]} for d in DATA[3]["documents"]]  # no groups: no fairsumm


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Generation on the shared 2-core machine is ~30x faster on one thread than contended."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "reviews.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in DATA), encoding="utf-8")
    return path


# ------------------------------------------------------------------ grid expansion


def test_grid_is_the_cartesian_product_in_key_order() -> None:
    cells = expand_cells(
        base={"max_new_tokens": 8},
        grid={"num_beams": [1, 2], "repetition_penalty": [1.0, 1.2, 1.5], "batch_size": 2},
    )
    got = [(c.settings["num_beams"], c.settings["repetition_penalty"]) for c in cells]
    assert got == [(1, 1.0), (1, 1.2), (1, 1.5), (2, 1.0), (2, 1.2), (2, 1.5)]
    assert all(c.settings["max_new_tokens"] == 8 and c.settings["batch_size"] == 2 for c in cells)
    assert cells[1].name == "num_beams=1,repetition_penalty=1.2"
    assert len({c.id for c in cells}) == 6


def test_explicit_cells_follow_the_grid_and_duplicates_collapse() -> None:
    cells = expand_cells(
        base={"num_beams": 1},
        grid={"max_new_tokens": [8, 16]},
        cells=[{"name": "long", "max_new_tokens": 32}, {"max_new_tokens": 8}],
    )
    assert [c.settings for c in cells] == [
        {"max_new_tokens": 8, "num_beams": 1},
        {"max_new_tokens": 16, "num_beams": 1},
        {"max_new_tokens": 32, "num_beams": 1},
    ]
    assert cells[2].name == "long"


def test_only_cells_and_only_base() -> None:
    cells = expand_cells(base={"num_beams": 1}, cells=[{"max_new_tokens": 4}, {"max_new_tokens": 5}])
    assert [c.settings["max_new_tokens"] for c in cells] == [4, 5]
    (single,) = expand_cells(base={"num_beams": 3})
    assert single.settings == {"num_beams": 3} and single.name == "base"


def test_null_means_default_and_ids_ignore_key_order() -> None:
    a = Cell({"num_beams": 2, "max_new_tokens": 4}, "a")
    b = Cell({"max_new_tokens": 4, "num_beams": 2}, "b")
    assert a.id == b.id
    (none_cell, one) = expand_cells(grid={"top_k": [None, 5], "do_sample": True})
    assert none_cell.settings == {"do_sample": True}
    assert one.generate_config(3).top_k == 5 and one.generate_config(3).seed == 3


def test_any_generate_config_field_is_a_key_and_unknown_keys_name_themselves() -> None:
    import dataclasses

    from evenhand.decoding.config import GenerateConfig

    field = next(f.name for f in dataclasses.fields(GenerateConfig) if f.name != "seed")
    assert expand_cells(grid={field: [getattr(GenerateConfig(), field)]})
    with pytest.raises(DataError, match=r"unknown setting 'temprature'.*temperature"):
        expand_cells(grid={"temprature": [0.5]})
    with pytest.raises(DataError, match=r"cells\[1\]: unknown setting 'beams'"):
        expand_cells(cells=[{"num_beams": 2}, {"beams": 2}])
    with pytest.raises(DataError, match="top-level `seeds:`"):
        expand_cells(base={"seed": 1})
    with pytest.raises(DataError, match="empty list"):
        expand_cells(grid={"num_beams": []})


def test_parse_sweep_validates_top_level_and_values(tmp_path: Path) -> None:
    ok = parse_sweep({"datasets": {"d": "x.jsonl"}, "grid": {"num_beams": [1, 2]}}, tmp_path, "s")
    assert ok.datasets == {"d": str(tmp_path / "x.jsonl")}
    assert ok.results == str(tmp_path / "s.sqlite") and ok.seeds == [0] and ok.factuality is None
    with pytest.raises(DataError, match="unknown sweep key"):
        parse_sweep({"datasets": {"d": "x"}, "temperature": 0.5}, tmp_path)
    with pytest.raises(DataError, match="num_beams"):
        parse_sweep({"datasets": {"d": "x"}, "grid": {"num_beams": [0]}}, tmp_path)
    with pytest.raises(DataError, match="metrics: Unknown scorer 'rouge9'"):
        parse_sweep({"datasets": {"d": "x"}, "metrics": ["rouge9"]}, tmp_path)
    with pytest.raises(DataError, match="`seeds` lists a seed twice"):
        parse_sweep({"datasets": {"d": "x"}, "seeds": [1, 1]}, tmp_path)


def test_shipped_sweep_configs_load() -> None:
    folder = Path(__file__).resolve().parents[1] / "scripts"
    configs = sorted(folder.glob("sweep_*.yaml"))
    assert len(configs) >= 3
    pending = []
    for path in configs:
        try:
            config = load_sweep(path)
        except DataError as err:
            if "unknown setting" in str(err):  # a decoding field that has not merged yet
                pending.append(f"{path.name}: {err}")
                continue
            raise
        assert config.cells and config.limit and config.limit <= 10
        assert Path(config.results).parent.name == "runs"
    if pending:
        pytest.skip("; ".join(pending))


# ------------------------------------------------------------------ running and resuming


def _config(tmp_path: Path, data_file: Path, **extra):
    data = {
        "datasets": {"reviews": str(data_file)},
        "seeds": [0, 1],
        "metrics": ["mint", "fairsumm"],
        "base": {"max_new_tokens": 6, "num_beams": 1, "batch_size": 2},
        "grid": {"do_sample": [False, True]},
        **extra,
    }
    return parse_sweep(data, tmp_path, "t")


@pytest.fixture()
def loader(tiny_causal):
    calls = []

    def load(name: str):
        calls.append(name)
        return tiny_causal

    load.calls = calls
    return load


def _table(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT cell_id, dataset, seed, example_id, summary, metrics FROM rows "
            "ORDER BY cell_id, dataset, seed, example_id"
        ).fetchall()


def test_sweep_writes_one_row_per_example_cell_seed(tmp_path, data_file, loader) -> None:
    from evenhand.sweep.runner import run_sweep

    config = _config(tmp_path, data_file)
    summary = run_sweep(config, tmp_path / "r.sqlite", load_model=loader, progress=False)
    assert summary.written == 2 * 2 * 4 and summary.skipped == 0
    stored = read_results(tmp_path / "r.sqlite")
    assert len(stored.rows) == 16 and len(stored.cells) == 2
    assert {r.seed for r in stored.rows} == {0, 1}
    by_id = {(r.cell_id, r.seed, r.example_id): r for r in stored.rows}
    for r in stored.rows:
        assert r.example_index == int(r.example_id[2:])
        if r.error is None:
            assert 0.0 <= r.metrics["mint"] <= 1.0
            assert ("fairsumm_uer" in r.metrics) == (r.example_id != "ex3")
    greedy = next(c for c, (_, s) in stored.cells.items() if not s["do_sample"])
    # greedy decoding ignores the seed; sampling does not (with overwhelming probability)
    assert all(by_id[(greedy, 0, f"ex{i}")].summary == by_id[(greedy, 1, f"ex{i}")].summary for i in range(4))
    again = run_sweep(config, tmp_path / "r.sqlite", load_model=loader, progress=False)
    assert again.written == 0 and again.skipped == 16 and again.units == 0


def test_resume_after_kill_loses_and_duplicates_nothing(tmp_path, data_file, loader) -> None:
    from evenhand.sweep.runner import run_sweep

    config = _config(tmp_path, data_file)
    full = tmp_path / "full.sqlite"
    run_sweep(config, full, load_model=loader, progress=False)

    class Killed(RuntimeError):
        pass

    seen = []

    def kill_after(k):
        def hook(row):
            seen.append(row.key)
            if len(seen) == k:
                raise Killed

        return hook

    part = tmp_path / "part.sqlite"
    with pytest.raises(Killed):
        run_sweep(config, part, load_model=loader, on_row=kill_after(7), progress=False)
    # batches of 2 are committed whole: the 4th batch (rows 7 and 8) is in, nothing after it
    assert len(_table(part)) == 8
    seen.clear()
    with pytest.raises(Killed):
        run_sweep(config, part, load_model=loader, on_row=kill_after(3), progress=False)
    assert len(_table(part)) == 8 + 4
    resumed = run_sweep(config, part, load_model=loader, progress=False)
    assert resumed.skipped == 12 and resumed.written == 4
    assert _table(part) == _table(full)  # same keys, same summaries and metrics, no duplicates


def test_process_shards_merge_to_the_single_process_result(tmp_path, data_file, loader) -> None:
    from evenhand.sweep.runner import run_sweep

    config = _config(tmp_path, data_file)
    single = tmp_path / "single.sqlite"
    run_sweep(config, single, load_model=loader, progress=False)
    results = tmp_path / "multi.sqlite"
    a = run_sweep(config, results, load_model=loader, process_index=0, num_processes=2, progress=False)
    b = run_sweep(config, results, load_model=loader, process_index=1, num_processes=2, progress=False)
    assert a.written + b.written == 16 and a.written > 0 and b.written > 0
    assert [p.name for p in shard_paths(results)] == ["multi.part0-of2.sqlite", "multi.part1-of2.sqlite"]
    assert len(read_results(results).rows) == 16  # the report reads unmerged shards too
    assert merge_shards(results) == 16 and not shard_paths(results)
    assert _table(results) == _table(single)


def test_reranking_cells_use_the_rerank_function(tmp_path, data_file, loader) -> None:
    from evenhand.sweep.runner import run_sweep

    calls = []

    def fake_rerank(model, tokenizer, examples, config, candidates, scorers):
        calls.append((len(examples), candidates, scorers, config.seed))
        return [
            {"summary": f"candidate {candidates} for {ex.id}", "best_index": 0, "best_score": 0.5,
             "scorer": scorers, "candidates": []}
            for ex in examples
        ]

    config = parse_sweep(
        {
            "datasets": {"reviews": str(data_file)}, "metrics": ["mint"],
            "base": {"max_new_tokens": 4, "num_beams": 1, "batch_size": 4, "scorers": "rouge"},
            "grid": {"candidates": [1, 3]},
        },
        tmp_path,
    )
    run_sweep(config, tmp_path / "r.sqlite", load_model=loader, rerank_fn=fake_rerank, progress=False)
    assert calls == [(4, 3, "rouge", 0)]
    rows = read_results(tmp_path / "r.sqlite").rows
    reranked = [r for r in rows if r.rerank is not None]
    assert len(reranked) == 4 and reranked[0].rerank["best_score"] == 0.5
    assert all(r.summary.startswith("candidate 3") for r in reranked)


def test_accelerate_launch_writes_this_process_shard(tmp_path, data_file, loader, monkeypatch) -> None:
    import accelerate

    from evenhand.sweep.runner import run_sweep

    class FakeState:  # what PartialState reports in process 1 of 2 under `accelerate launch`
        process_index, num_processes, is_main_process, device = 1, 2, False, "cpu"
        waited = 0

        def wait_for_everyone(self):
            FakeState.waited += 1

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(accelerate, "PartialState", FakeState)
    config = _config(tmp_path, data_file, seeds=[0])
    summary = run_sweep(config, tmp_path / "r.sqlite", load_model=loader, progress=False)
    assert (summary.process_index, summary.num_processes) == (1, 2) and FakeState.waited == 1
    assert [p.name for p in shard_paths(tmp_path / "r.sqlite")] == ["r.part1-of2.sqlite"]
    assert not (tmp_path / "r.sqlite").exists()  # only the main process merges
    # units alternate between the processes: 2 cells x 2 batches, this one gets units 1 and 3
    assert summary.written == 4 and summary.units == 2


def test_sweep_cli_lists_cells_and_rejects_unknown_keys(tmp_path, data_file, capsys) -> None:
    from evenhand.cli import main

    good = tmp_path / "good.yaml"
    good.write_text(
        f"datasets: {{r: {data_file}}}\nseeds: [0, 1]\ngrid: {{num_beams: [1, 2], max_new_tokens: [4, 8]}}\n",
        encoding="utf-8",
    )
    assert main(["sweep", "--config", str(good), "--list"]) == 0
    out = capsys.readouterr().out
    assert "num_beams=2,max_new_tokens=4" in out and "4 cells x 1 data sets x 2 seeds" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"datasets: {{r: {data_file}}}\ngrid: {{beams: [1, 2]}}\n", encoding="utf-8")
    assert main(["sweep", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml: grid: unknown setting 'beams'" in err and "num_beams" in err
    assert main(["sweep", "--config", str(tmp_path / "missing.yaml")]) == 2


def test_batch_metrics_equal_row_by_row() -> None:
    """The batched metrics (corpus path) give each row what row_metrics gives it, errors per row."""
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.sweep.runner import batch_metrics, row_metrics

    grouped = Example(
        id="g", documents=[Document("Great shoes, great fit.", "pos"), Document("Bad laces.", "neg")],
        attribute="sentiment",
    )
    plain = Example(id="p", documents=[Document("The cat sat on the mat.")])
    examples = [grouped, plain, grouped, plain]
    summaries = ["Great fit, bad laces.", "The cat sat.", "   ", "A dog sat on the mat."]
    metrics = ["mint", "fragments", "fairsumm"]
    batched = batch_metrics(examples, summaries, metrics)
    assert batched == [row_metrics(ex, s, metrics) for ex, s in zip(examples, summaries)]
    assert "fairsumm_uer" in batched[0][0] and "fairsumm_uer" not in batched[1][0]
    assert "mint" not in batched[2][0] and "mint: example 'g': the summary is empty" in batched[2][1]
    assert batched[3][1] is None and batched[3][0]["mint_lcsr"] == pytest.approx(5 / 7)
