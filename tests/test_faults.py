"""Faults: two writers, changed data / metrics / weights, kill -9 of train, disk full, file modes.

Each test asserts what must hold after the fault: the second writer exits 2
naming the first and the first's output is intact; changed inputs are refused
or recomputed, never silently reused; a full disk gives one line naming the
file and keeps every finished record; same inputs and seed give the same bytes.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_reliability import _examples, _kill_when

from evenhand.cli import main
from evenhand.evaluation.errors import DataError, OutputError
from evenhand.evaluation.io.digests import content_digest
from evenhand.evaluation.io.json_file import write_json
from evenhand.evaluation.io.jsonl import read_jsonl
from evenhand.evaluation.io.locks import lock_path, output_lock
from evenhand.evaluation.io.resumable import ResumableJsonl


def _write_data(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in _examples(n)))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _hold_lock(out: Path) -> subprocess.Popen:
    """Another process that holds ``out``'s output lock until killed."""
    code = ("import sys, time\nfrom evenhand.evaluation.io.locks import output_lock\n"
            f"with output_lock({str(out)!r}):\n    print('held', flush=True)\n    time.sleep(300)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


# --- two writers ---------------------------------------------------------------------------------


def test_second_generate_on_one_out_exits_2_and_the_first_output_is_intact(tmp_path, model_dir, capsys):
    data = _write_data(tmp_path / "data.jsonl", 4)
    flags = ["--data", str(data), "--model", str(model_dir), "--max-new-tokens", "8", "--batch-size", "1"]
    out, clean = tmp_path / "out.jsonl", tmp_path / "clean.jsonl"
    first = subprocess.Popen([sys.executable, "-m", "evenhand", "generate", *flags, "--out", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not lock_path(out).exists() and time.time() < deadline and first.poll() is None:
        time.sleep(0.02)
    assert lock_path(out).exists(), "the first writer never took its lock"
    assert main(["generate", *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"is being written by pid {first.pid}" in err, err
    assert "generate" in err  # the holder's command line
    assert first.wait(timeout=300) == 0, first.stderr.read() if first.stderr else ""
    assert not lock_path(out).exists()  # released and removed
    assert main(["generate", *flags, "--out", str(clean)]) == 0
    assert out.read_bytes() == clean.read_bytes()  # no duplicated or interleaved records
    assert len(read_jsonl(out)) == 4


@pytest.mark.parametrize("command", ["rerank", "meta-eval", "evaluate", "calibrate", "sweep", "train", "report", "demo"])
def test_a_second_writer_of_every_command_exits_2_naming_the_holder(tmp_path, model_dir, capsys, command):
    from conftest import write_controlled

    data = _write_data(tmp_path / "data.jsonl", 2)
    controlled = write_controlled(tmp_path / "controlled.json")
    summaries = tmp_path / "summaries.jsonl"
    summaries.write_text('{"id": "e0", "summary": "Great food."}\n{"id": "e1", "summary": "Nice rooms."}\n')
    (tmp_path / "sweep.yaml").write_text(f"datasets:\n  d: {data}\nbase:\n  max_new_tokens: 4\n")
    argv = {
        "rerank": ["rerank", "--data", str(data), "--model", str(model_dir), "--scorers", "rouge-l-recall",
                   "--floors", "none", "--candidates", "2", "--out"],
        "meta-eval": ["meta-eval", "--data", str(controlled), "--scorers", "rouge-l-recall",
                      "--score-cache", "none", "--out"],
        "evaluate": ["evaluate", "--data", str(data), "--summaries", str(summaries), "--out"],
        "calibrate": ["calibrate", "--data", str(controlled), "--target", "coverage", "--scorers",
                      "rouge-l-recall", "--folds", "2", "--out"],
        "sweep": ["sweep", "--config", str(tmp_path / "sweep.yaml"), "--results"],
        "train": ["train", "--data", str(data), "--model", str(model_dir), "--out"],
        "report": ["report", "--results", str(tmp_path / "none.sqlite"), "--out"],
        "demo": ["demo", "--model", str(model_dir), "--out"],
    }[command]
    out = tmp_path / {"calibrate": "c.json", "sweep": "r.sqlite", "train": "run", "report": "rep"}.get(command, "o.jsonl")
    if command == "report":  # a store to report on
        from evenhand.sweep.config import Cell
        from evenhand.sweep.store import ResultRow, ResultStore

        store = ResultStore(tmp_path / "none.sqlite")
        cell = Cell({"abstractiveness": 2.0}, "h2")
        store.add_cells([cell])
        store.write([ResultRow(cell.id, "d", 0, "e0", 0, "s", {"mint": 0.5})])
        store.close()
    holder = _hold_lock(out)
    try:
        assert main([*argv, str(out)]) == 2
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"is being written by pid {holder.pid}" in err, err
    assert not out.exists()  # the refused run wrote nothing


def test_a_lock_held_by_a_killed_process_is_free(tmp_path):
    out = tmp_path / "o.jsonl"
    holder = _hold_lock(out)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert lock_path(out).exists()  # a killed holder leaves its file, but not its lock
    with output_lock(out):
        pass
    assert not lock_path(out).exists()


def test_the_score_cache_takes_turns_between_writers(tmp_path):
    from evenhand.evaluation.scoring.registry import get_scorer

    cache = tmp_path / "cache"
    scorer = get_scorer("lm-likelihood", cache_dir=cache)
    holder = _hold_lock(cache / "lm-likelihood.jsonl")
    holder.kill()  # released at once: the append below waits for nothing
    holder.wait()
    scorer._append_disk_cache({"k": {"score": 1.0}})
    assert read_jsonl(cache / "lm-likelihood.jsonl") == [{"key": "k", "result": {"score": 1.0}}]
    assert not lock_path(cache / "lm-likelihood.jsonl").exists()


# --- changed data, metrics, weights --------------------------------------------------------------


def _replace_in_place(path: Path) -> None:
    """Change a file's content, keeping its size (and name): what a re-export over the old file does."""
    raw = bytearray(path.read_bytes())
    raw[-64:] = bytes(reversed(raw[-64:])) if raw[-64:] != raw[-64:][::-1] else bytes(64)
    path.write_bytes(bytes(raw))


def _copy_model(model_dir: Path, dest: Path) -> Path:
    shutil.copytree(model_dir, dest)
    return dest


def test_weights_replaced_in_place_change_the_content_digest(model_dir, tmp_path):
    model = _copy_model(model_dir, tmp_path / "m")
    weights = model / "model.safetensors"
    before, size = content_digest(model), weights.stat().st_size
    assert content_digest(model) == before  # cached: same path, size, mtime
    _replace_in_place(weights)
    assert weights.stat().st_size == size
    assert content_digest(model) != before


def test_generate_refuses_to_resume_after_weights_changed_in_place(model_dir, tmp_path, capsys):
    model = _copy_model(model_dir, tmp_path / "m")
    data = _write_data(tmp_path / "data.jsonl", 3)
    out = tmp_path / "out.jsonl"
    argv = ["generate", "--data", str(data), "--out", str(out), "--model", str(model),
            "--max-new-tokens", "6", "--limit", "1"]
    assert main(argv) == 0
    before = _sha(out)
    _replace_in_place(model / "model.safetensors")
    assert main(argv[:-2]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "model.content_sha256" in err and "--force-resume" in err, err
    assert _sha(out) == before


def test_generate_refuses_to_resume_after_the_data_changed(model_dir, tmp_path, capsys):
    data = _write_data(tmp_path / "data.jsonl", 3)
    out = tmp_path / "out.jsonl"
    argv = ["generate", "--data", str(data), "--out", str(out), "--model", str(model_dir), "--max-new-tokens", "6"]
    assert main([*argv, "--limit", "1"]) == 0
    before = _sha(out)
    data.write_text(data.read_text().replace("great", "grand"))  # same ids, other text
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "data.sha256" in err, err
    assert _sha(out) == before


def test_score_cache_is_not_reused_after_weights_changed_in_place(model_dir, tmp_path):
    from evenhand.evaluation.scoring.registry import get_scorer

    model = _copy_model(model_dir, tmp_path / "m")
    cache = tmp_path / "cache"
    sources, outputs = [["The food was great."]], ["Great food."]
    first = get_scorer("lm-likelihood", cache_dir=cache, model=str(model), progress=False)
    old = first.score(sources, outputs)
    _replace_in_place(model / "model.safetensors")
    second = get_scorer("lm-likelihood", cache_dir=cache, model=str(model), progress=False)
    [example] = first._validate(sources, outputs)[0]
    assert second._key(example, outputs[0]) != first._key(example, outputs[0])
    new = second.score(sources, outputs)
    assert new != old  # scored again with the new weights, not read back from the cache
    assert len(read_jsonl(cache / "lm-likelihood.jsonl")) == 2


def _sweep_config(tmp_path: Path, data: Path, model: Path, metrics: str) -> Path:
    config = tmp_path / "sweep.yaml"
    config.write_text(
        f"datasets:\n  d: {data}\nmetrics: [{metrics}]\n"
        f"base:\n  model: {model}\n  max_new_tokens: 6\n  num_beams: 1\n  batch_size: 2\n"
    )
    return config


def _stored_rows(path: Path) -> list[tuple]:
    from evenhand.sweep.store import read_results

    return [(r.example_id, r.summary, json.dumps(r.metrics, sort_keys=True)) for r in read_results(path).rows]


def test_sweep_scores_finished_rows_with_an_added_metric(model_dir, tmp_path, capsys):
    data = _write_data(tmp_path / "data.jsonl", 4)
    results, fresh = tmp_path / "r.sqlite", tmp_path / "fresh.sqlite"
    config = _sweep_config(tmp_path, data, model_dir, "mint")
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(results)]) == 0
    assert all("frag_density" not in json.loads(m) for _, _, m in _stored_rows(results))
    config = _sweep_config(tmp_path, data, model_dir, "mint, fragments")
    capsys.readouterr()
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(results)]) == 0
    printed = capsys.readouterr().out
    assert "wrote 0 rows, skipped 4 finished, scored 4 finished rows with the metrics they lacked" in printed
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(fresh)]) == 0
    assert _stored_rows(results) == _stored_rows(fresh)  # as if both metrics were there from the start
    assert all("frag_density" in json.loads(m) for _, _, m in _stored_rows(results))
    capsys.readouterr()
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(results)]) == 0
    assert "scored" not in capsys.readouterr().out  # nothing lacking any more


def test_sweep_refuses_finished_rows_of_changed_data(model_dir, tmp_path, capsys):
    data = _write_data(tmp_path / "data.jsonl", 2)
    results = tmp_path / "r.sqlite"
    config = _sweep_config(tmp_path, data, model_dir, "mint")
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(results)]) == 0
    before = _stored_rows(results)
    data.write_text(data.read_text().replace("great", "grand"))  # same ids, same length, other text
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "data set 'd'" in err and "changed since its rows were written" in err, err
    assert _stored_rows(results) == before


def test_sweep_refuses_finished_rows_of_a_model_changed_in_place(model_dir, tmp_path, capsys):
    model = _copy_model(model_dir, tmp_path / "m")
    data = _write_data(tmp_path / "data.jsonl", 2)
    results = tmp_path / "r.sqlite"
    config = _sweep_config(tmp_path, data, model, "mint")
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(results)]) == 0
    _replace_in_place(model / "model.safetensors")
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"model {str(model)!r} changed" in err, err


def test_train_refuses_to_resume_after_the_data_changed(tmp_path, capsys):
    from evenhand.training.config import DPORRConfig
    from evenhand.training.loop import check_inputs, run_inputs

    data = _write_data(tmp_path / "data.jsonl", 4)
    out = tmp_path / "run"
    out.mkdir()
    config = DPORRConfig(data=str(data), out_dir=str(out), scorers=["rouge-l-recall"])
    write_json(out / "manifest.json", {"config": config.to_dict(), "inputs": run_inputs(config)})
    check_inputs(config, out)  # unchanged: resumes
    data.write_text(data.read_text().replace("great", "grand"))
    with pytest.raises(DataError, match="run's data changed"):
        check_inputs(config, out)


# --- kill -9 and resume of train -----------------------------------------------------------------


def _adapters(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.glob("iter_*/adapter/*.safetensors"))}


def test_kill_9_then_rerun_train_gives_the_same_adapters(tmp_path, model_dir):
    data = _write_data(tmp_path / "data.jsonl", 6)
    flags = ["--data", str(data), "--model", str(model_dir), "--iterations", "2",
             "--prompts-per-iteration", "2", "--candidates", "2", "--max-new-tokens", "6", "--dev-size", "1",
             "--batch-size", "2", "--scorers", "alignscore", "--no-progress", "--seed", "3"]
    # alignscore (the MiniLM fallback) tells the tiny model's candidates apart; ROUGE gives them
    # all 0 against the source, and an iteration without pairs stops the run (exit 2)
    part, full = tmp_path / "part", tmp_path / "full"
    _kill_when(["train", *flags, "--out", str(part)],
               lambda: len(list(part.glob("iter_*/summary.json"))), 2, 3)  # killed during iteration 2
    assert main(["train", *flags, "--out", str(part)]) == 0
    assert main(["train", *flags, "--out", str(full)]) == 0
    got, want = _adapters(part), _adapters(full)
    assert sorted(got) == ["iter_1/adapter/adapter_model.safetensors", "iter_2/adapter/adapter_model.safetensors"]
    assert got == want


# --- disk full -----------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs (root only), else skip: real ENOSPC from the kernel."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True
    ).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (the injected ENOSPC tests still run)")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_disk_full_on_a_real_small_tmpfs_keeps_finished_records(small_disk):
    out = small_disk / "out.jsonl"
    store = ResumableJsonl(out, manifest={"x": 1})
    store.append([{"id": 0, "text": "first"}])
    before = out.read_bytes()
    with pytest.raises(OutputError, match=r"out\.jsonl: cannot write \(disk full\)"):
        store.append([{"id": i, "text": "x" * 1000} for i in range(1, 200)])
    assert out.read_bytes() == before  # the torn batch is cut off, the first record stays
    assert ResumableJsonl(out, manifest={"x": 1}).records == {0: {"id": 0, "text": "first"}}


def test_disk_full_on_a_real_small_tmpfs_keeps_the_previous_whole_file(small_disk):
    path = small_disk / "table.json"
    write_json(path, {"a": 1})
    with pytest.raises(OutputError, match="disk full"):
        write_json(path, {"a": "x" * 200_000})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in small_disk.iterdir()] == ["table.json"]  # no temporary file left


def _enospc(*args, **kwargs):  # noqa: ANN002, ANN003, ARG001
    raise OSError(errno.ENOSPC, "No space left on device")


def test_injected_disk_full_while_appending_keeps_finished_records(tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    store = ResumableJsonl(out, manifest={"x": 1})
    store.append([{"id": 0}])
    before = out.read_bytes()
    monkeypatch.setattr(os, "fsync", _enospc)
    with pytest.raises(OutputError, match="disk full"):
        store.append([{"id": 1}, {"id": 2}])
    monkeypatch.undo()
    assert out.read_bytes() == before


def test_injected_disk_full_in_generate_exits_2_with_one_line(tmp_path, model_dir, monkeypatch, capsys):
    data = _write_data(tmp_path / "data.jsonl", 4)
    out = tmp_path / "out.jsonl"
    argv = ["generate", "--data", str(data), "--out", str(out), "--model", str(model_dir),
            "--max-new-tokens", "6", "--batch-size", "2"]
    assert main([*argv, "--limit", "2"]) == 0
    before = out.read_bytes()
    monkeypatch.setattr(os, "fsync", _enospc)
    assert main(argv) == 2
    monkeypatch.undo()
    err = capsys.readouterr().err.strip()
    assert err.splitlines()[-1].startswith("evenhand generate: error: ") and "disk full" in err, err
    assert str(out) in err.splitlines()[-1] and "Traceback" not in err
    assert out.read_bytes() == before
    assert main(argv) == 0 and len(read_jsonl(out)) == 4  # resumes once there is space


def test_injected_disk_full_in_evaluate_keeps_the_old_tables(tmp_path, monkeypatch, capsys):
    data = _write_data(tmp_path / "data.jsonl", 2)
    summaries = tmp_path / "summaries.jsonl"
    summaries.write_text('{"id": "e0", "summary": "Great food."}\n{"id": "e1", "summary": "Nice rooms."}\n')
    out = tmp_path / "scores.jsonl"
    out.write_text('{"id": "old"}\n')
    monkeypatch.setattr(os, "fsync", _enospc)
    assert main(["evaluate", "--data", str(data), "--summaries", str(summaries), "--out", str(out)]) == 2
    monkeypatch.undo()
    assert out.read_text() == '{"id": "old"}\n'
    assert "Traceback" not in capsys.readouterr().err


# --- modes, symlinks, determinism, sibling files ---------------------------------------------------


def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(tmp_path):
    old = os.umask(0o027)
    try:
        write_json(tmp_path / "a.json", {})
        store = ResumableJsonl(tmp_path / "r.jsonl", manifest={})
        store.append([{"id": 1}])
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "r.jsonl").stat().st_mode & 0o777 == 0o640
    (tmp_path / "a.json").chmod(0o604)
    write_json(tmp_path / "a.json", {"b": 1})
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o604


def test_a_symlink_to_a_regular_file_is_written_through(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("{}\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_json(link, {"a": 1})
    assert link.is_symlink() and json.loads(target.read_text()) == {"a": 1}


def test_meta_eval_twice_gives_the_same_bytes_and_timings_go_to_a_sidecar(tmp_path, capsys):
    from conftest import write_controlled

    controlled = write_controlled(tmp_path / "controlled.json")
    outs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for out in outs:
        assert main(["meta-eval", "--data", str(controlled), "--scorers", "rouge-l-recall,rouge-1-precision",
                     "--score-cache", "none", "--n-bootstrap", "20", "--out", str(out)]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert all("seconds" not in key for row in read_jsonl(outs[0]) for key in row)
    timings = json.loads((tmp_path / "a.jsonl.timings.json").read_text())
    assert set(timings) == {"rouge-l-recall", "rouge-1-precision"} and all(v >= 0 for v in timings.values())
    assert main(["meta-eval", "--data", str(controlled), "--scorers", "rouge-l-recall",
                 "--score-cache", "none", "--n-bootstrap", "20", "--out", str(outs[0])]) == 0
    assert "already in" in capsys.readouterr().out


def test_demo_replaces_its_own_csv_and_refuses_a_foreign_one(tmp_path):
    from evenhand.demo import DEMO_CSV_HEADER, check_demo_outputs

    out = tmp_path / "d.jsonl"
    assert check_demo_outputs(str(out)) == tmp_path / "d.csv"
    (tmp_path / "d.csv").write_text(DEMO_CSV_HEADER + ",fluency_plain\nheadphones,0.5,0.6,0.7\n")
    assert check_demo_outputs(str(out)) == tmp_path / "d.csv"  # ours: replaced
    (tmp_path / "d.csv").write_text("id,salary\n1,2\n")
    with pytest.raises(DataError, match="is not a demo table"):
        check_demo_outputs(str(out))


def test_report_plot_files_of_a_dash_and_an_underscore_data_set_differ():
    from evenhand.sweep.report import _slug

    assert _slug("news") == "news" and _slug("a_b") == "a_b"
    assert _slug("a-b") != _slug("a_b") and _slug("a b") != _slug("a-b")
    assert _slug("a-b").startswith("a_b-") and len({_slug(t) for t in ("a-b", "a_b", "a b", "a.b", "a/b")}) == 5


def test_injected_disk_full_in_rerank_exits_2_on_one_line_keeping_finished_records(tmp_path, model_dir, monkeypatch, capfd):
    data = _write_data(tmp_path / "data.jsonl", 3)
    out = tmp_path / "out.jsonl"
    argv = ["rerank", "--data", str(data), "--out", str(out), "--model", str(model_dir), "--max-new-tokens", "6",
            "--candidates", "2", "--scorers", "rouge-l-recall", "--floors", "none", "--score-cache", "none"]
    assert main([*argv, "--limit", "1"]) == 0
    before = out.read_bytes()
    monkeypatch.setattr(os, "fsync", _enospc)
    assert main(argv) == 2
    monkeypatch.undo()
    last = capfd.readouterr().err.rstrip("\n").split("\n")[-1]
    assert last.startswith(f"evenhand rerank: error: {out}: cannot write (disk full)"), last
    assert out.read_bytes() == before


def test_report_writes_a_dash_and_an_underscore_data_set_to_separate_files(tmp_path):
    from evenhand.sweep.config import Cell
    from evenhand.sweep.report import build_report
    from evenhand.sweep.store import ResultRow, ResultStore

    store = ResultStore(tmp_path / "r.sqlite")
    cells = [Cell({"abstractiveness": h}, f"h{h}") for h in (1.0, 2.0)]
    store.add_cells(cells)
    store.write([ResultRow(c.id, name, 0, f"e{i}", i, "s", {"mint": 0.1 * i + k + (name == "a_b")},
                           factuality=0.2 * k + 0.1 * i)
                 for name in ("a-b", "a_b") for k, c in enumerate(cells) for i in range(3)])
    store.close()
    out = tmp_path / "rep"
    build_report(tmp_path / "r.sqlite", out, n_bootstrap=5)
    tradeoff = sorted(p.name for p in out.glob("*_tradeoff.csv"))
    assert len(tradeoff) == 2 and "a_b_tradeoff.csv" in tradeoff, tradeoff
    tables = [(out / name).read_text() for name in tradeoff]
    assert tables[0] != tables[1] and all(("a-b" in t) != ("a_b" in t) for t in tables)
    assert len(list(out.glob("*_tradeoff.png"))) == 2


# --- signals: Ctrl-C, kill, a closed terminal --------------------------------------------------------

#: a wrapper that runs the CLI after a patch: ``{patch}`` runs first, then ``main(argv)``
_WRAPPER = """
import json, os, signal, subprocess, sys, time
{patch}
from evenhand.cli import main
sys.exit(main(json.loads(sys.argv[1])))
"""


def _signalled(argv: list[str], signum: int, when, patch: str = "", again: float | None = None,  # noqa: ANN001
               bound: float = 120.0) -> tuple[int, str]:
    """Run ``evenhand argv`` in a subprocess, send ``signum`` once ``when()`` holds (a second one ``again``
    seconds later, if given); return the exit status and stderr. How soon it stopped is read from what it
    left (records kept, a flag a patched step writes only when it is not cut short), never from the clock."""
    proc = subprocess.Popen([sys.executable, "-c", _WRAPPER.format(patch=patch), json.dumps(argv)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + bound
    while time.time() < deadline and proc.poll() is None and not when():
        time.sleep(0.02)
    assert proc.poll() is None, f"finished before the signal: {proc.communicate()[1]}"
    proc.send_signal(signum)
    if again is not None:
        time.sleep(again)
        proc.send_signal(signum)
    _, err = proc.communicate(timeout=180)
    return proc.returncode, err


def _last_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [ln for ln in err.replace("\r", "\n").splitlines() if ln.strip()]
    assert lines, "nothing printed"
    return lines[-1]


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_during_generate_keeps_finished_batches_and_the_resume_is_identical(
    tmp_path, model_dir, signum, code
):
    data = _write_data(tmp_path / "data.jsonl", 10)
    flags = ["--model", str(model_dir), "--max-new-tokens", "10", "--batch-size", "2"]
    part, full = tmp_path / "part.jsonl", tmp_path / "full.jsonl"
    argv = ["generate", "--data", str(data), "--out", str(part), *flags, "--no-resume"]
    status, err = _signalled(argv, signum, lambda: part.exists() and part.read_bytes().endswith(b"\n"))
    line = _last_line(err)
    kept = len(part.read_text().splitlines())
    assert status == code and 0 < kept < 10, (status, err)
    assert line.startswith(f"evenhand generate: interrupted ({signal.Signals(signum).name}); "), line
    assert f"kept {kept} finished records in {part}" in line
    resume = line.split("resume with: ", 1)[1]
    assert resume == " ".join(["evenhand", *argv[:-1]])  # --no-resume dropped: it would discard what is kept
    assert part.read_text().endswith("\n") and not lock_path(part).exists()
    if signum != signal.SIGINT:
        return  # the resume below is the same for every signal: run it once
    assert main(resume.split()[1:]) == 0
    assert main(["generate", "--data", str(data), "--out", str(full), *flags]) == 0
    assert part.read_bytes() == full.read_bytes()


def test_sigterm_during_evaluate_keeps_the_old_tables_and_says_run_again(tmp_path):
    data = _write_data(tmp_path / "data.jsonl", 4)
    (tmp_path / "s.jsonl").write_text("".join(json.dumps({"id": f"e{i}", "summary": "The food was great."}) + "\n"
                                              for i in range(4)))
    out = tmp_path / "r.jsonl"
    out.write_text("an older table\n")
    before = _sha(out)
    flag, slept = tmp_path / "scoring", tmp_path / "slept"
    # the signal arrives while the metrics run: the metric module tells the test when it started, and
    # writes `slept` only if its 30 s sleep is waited out (the signal must cut it short)
    patch = ("import evenhand.evaluation.scoring.report as r\n_orig = r.evaluate\n"
             f"def slow(*a, **k):\n    open({str(flag)!r}, 'w').close(); time.sleep(30)\n"
             f"    open({str(slept)!r}, 'w').close(); return _orig(*a, **k)\n"
             "r.evaluate = slow\n")
    argv = ["evaluate", "--data", str(data), "--summaries", str(tmp_path / "s.jsonl"), "--out", str(out)]
    status, err = _signalled(argv, signal.SIGTERM, flag.exists, patch=patch)
    line = _last_line(err)
    assert status == 143 and not slept.exists(), (status, err)
    assert line.startswith("evenhand evaluate: interrupted (SIGTERM); nothing was written"), line
    assert line.endswith("run again with: " + " ".join(["evenhand", *argv])), line
    assert _sha(out) == before and not lock_path(out).exists()
    assert not list(tmp_path.glob(".*tmp*")) and not (tmp_path / "r.csv").exists()


def test_a_second_ctrl_c_exits_at_once_and_ends_the_children(tmp_path, model_dir):
    data = _write_data(tmp_path / "data.jsonl", 12)
    out, child_pid, waited = tmp_path / "o.jsonl", tmp_path / "child.pid", tmp_path / "waited"
    # a child process of the command (as a server would be), and a clean-up that hangs (and writes
    # `waited` if the hang is ever waited out: the second Ctrl-C must not wait for it)
    patch = (f"child = subprocess.Popen(['sleep', '600']); open({str(child_pid)!r}, 'w').write(str(child.pid))\n"
             "import evenhand.evaluation.io.locks as locks\n_orig = locks.output_lock.__wrapped__\n"
             "import contextlib\n@contextlib.contextmanager\ndef hanging(*a, **k):\n"
             "    with contextlib.ExitStack() as s:\n        s.enter_context(contextlib.contextmanager(_orig)(*a, **k))\n"
             "        try:\n            yield\n        finally:\n            time.sleep(120)\n"
             f"            open({str(waited)!r}, 'w').close()\n"
             "locks.output_lock = hanging\n")
    argv = ["generate", "--data", str(data), "--out", str(out), "--model", str(model_dir),
            "--max-new-tokens", "12", "--batch-size", "2"]
    status, err = _signalled(argv, signal.SIGINT, lambda: out.exists() and out.stat().st_size > 0,
                             patch=patch, again=1.0)
    line = _last_line(err)
    assert status == 130 and not waited.exists(), (status, err)
    assert "interrupted again (SIGINT); stopped at once" in line, line
    pid = int(child_pid.read_text())
    time.sleep(0.5)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_sweep_list_into_a_closed_pipe_stops_quietly(tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(_examples(1)[0]) + "\n")
    (tmp_path / "s.yaml").write_text("datasets:\n  d: d.jsonl\ngrid:\n  max_new_tokens: [" +
                                     ", ".join(str(i) for i in range(1, 3001)) + "]\n")  # 3000 cells, > a pipe's buffer
    shell = (f"{sys.executable} -m evenhand sweep --config {tmp_path / 's.yaml'} --list | head -1; "
             "echo status=${PIPESTATUS[0]}")
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.stderr.strip() == "" and "status=141" in done.stdout, (done.stdout, done.stderr)


def test_an_ascii_terminal_gets_escapes_not_a_crash(tmp_path):
    data = tmp_path / "café–data.jsonl"
    data.write_text("")
    done = subprocess.run([sys.executable, "-m", "evenhand", "evaluate", "--data", str(data),
                           "--summaries", "references", "--out", str(tmp_path / "r.jsonl")],
                          capture_output=True, env={**os.environ, "PYTHONIOENCODING": "ascii", "LANG": "C",
                                                    "LC_ALL": "C"}, timeout=120)
    err = done.stderr.decode("ascii")
    assert done.returncode == 2 and "UnicodeEncodeError" not in err and len(err.strip().splitlines()) == 1, err
    assert "caf\\xe9\\u2013data.jsonl" in err, err
    # stdout too: Python escapes what stderr cannot show by itself, but stdout is strict (the crash of round 3)
    (tmp_path / "d.jsonl").write_text(json.dumps(_examples(1)[0]) + "\n")
    (tmp_path / "s.yaml").write_text('datasets:\n  d: d.jsonl\nbase:\n  instruction: "R\u00e9sum\u00e9 \u2013 briefly"\n')
    listed = subprocess.run([sys.executable, "-m", "evenhand", "sweep", "--config", str(tmp_path / "s.yaml"), "--list"],
                            capture_output=True, env={**os.environ, "PYTHONIOENCODING": "ascii", "LANG": "C",
                                                      "LC_ALL": "C"}, timeout=120)
    assert listed.returncode == 0 and b"UnicodeEncodeError" not in listed.stderr, listed.stderr
    assert "'instruction': 'R\\xe9sum\\xe9 \\u2013 briefly'" in listed.stdout.decode("ascii"), listed.stdout


# --- results stores: one sweep per file, report reads its own shards ---------------------------------


def test_a_sweep_of_another_config_is_refused_on_a_results_file_unless_merged(model_dir, tmp_path, capsys):
    data = _write_data(tmp_path / "data.jsonl", 2)
    results = tmp_path / "r.sqlite"
    assert main(["sweep", "--config", str(_sweep_config(tmp_path, data, model_dir, "mint")), "--quiet",
                 "--results", str(results)]) == 0
    before = _sha(results)
    other = tmp_path / "other.yaml"
    other.write_text(_sweep_config(tmp_path, data, model_dir, "mint").read_text().replace(
        "max_new_tokens: 6", "max_new_tokens: 5"))
    capsys.readouterr()
    assert main(["sweep", "--config", str(other), "--quiet", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds the results of another sweep (1 of its cells are not in this " \
        "config, 1 of this config's are not in it)" in err and "--merge" in err, err
    assert _sha(results) == before
    assert main(["sweep", "--config", str(other), "--quiet", "--results", str(results), "--merge"]) == 0
    from evenhand.sweep.store import read_results

    assert len(read_results(results).cells) == 2 and len(read_results(results).rows) == 4


def test_report_reads_only_the_shards_of_its_own_sweep(tmp_path, capsys):
    from evenhand.sweep.config import Cell
    from evenhand.sweep.store import ResultRow, ResultStore, read_results, shard_path

    def store(path: Path, cell: Cell, config: str) -> None:
        s = ResultStore(path)
        s.set_meta("config", config)
        s.add_cells([cell])
        s.write([ResultRow(cell.id, "news", 0, f"ex{i}", i, f"summary {i}", {"mint": 0.1 * i}) for i in range(3)])
        s.conn.execute("PRAGMA journal_mode=DELETE")
        s.close()

    results = tmp_path / "r.sqlite"
    ours, theirs = Cell({"abstractiveness": 2.0}, "h2"), Cell({"abstractiveness": 8.0}, "h8")
    store(results, ours, "ours: 1\n")
    store(shard_path(results, 0, 2), ours, "ours: 1\n")
    store(shard_path(results, 1, 2), theirs, "theirs: 1\n")
    with pytest.warns(UserWarning, match=r"r\.part1-of2\.sqlite: skipped, written by another sweep"):
        stored = read_results(results)
    assert set(stored.cells) == {ours.id}
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "rep"), "--bootstrap", "5"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("skipped, written by another sweep") == 1, captured.err
    assert "h8" not in (tmp_path / "rep" / "cells.csv").read_text()


def test_report_on_an_unreadable_results_file_is_one_line(tmp_path, capsys, monkeypatch):
    """What SQLite says of a file it may not open (tests may run as root, who opens anything)."""
    import sqlite3

    import evenhand.sweep.store as store

    results = tmp_path / "r.sqlite"
    results.write_bytes(b"")

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202, ARG001
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(store.sqlite3, "connect", refuse)
    code = main(["report", "--results", str(results), "--out", str(tmp_path / "rep")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "r.sqlite" in err, err


def test_a_signal_swallowed_by_a_finalizer_still_stops_the_run(tmp_path):
    """Python drops an exception raised inside ``__del__``; the handler raises it again right after."""
    script = tmp_path / "swallow.py"
    script.write_text(
        "import os, signal, sys, time\nfrom evenhand import interrupts\n"
        "class D:\n    def __del__(self):\n        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        for _ in range(1000):\n            sum(range(10))\n"
        "try:\n    with interrupts.handling():\n        D()\n        time.sleep(3)\n"
        "        print('not stopped')\nexcept interrupts.Interrupted as err:\n    print('stopped', err.exit_code)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert done.stdout.strip() == "stopped 143" and "Traceback" not in done.stderr, (done.stdout, done.stderr)


def test_sigterm_during_a_sweep_keeps_committed_rows_and_the_resume_completes_them(model_dir, tmp_path):
    import sqlite3

    data = _write_data(tmp_path / "data.jsonl", 12)
    config = _sweep_config(tmp_path, data, model_dir, "mint")
    results, fresh = tmp_path / "r.sqlite", tmp_path / "fresh.sqlite"

    def rows() -> int:
        try:
            with sqlite3.connect(results.resolve().as_uri() + "?mode=ro", uri=True, timeout=1) as conn:
                return conn.execute("SELECT COUNT(*) FROM rows").fetchone()[0]
        except sqlite3.Error:
            return 0

    argv = ["sweep", "--config", str(config), "--results", str(results)]
    status, err = _signalled(argv, signal.SIGTERM, lambda: rows() > 0)
    line = _last_line(err)
    kept = rows()
    assert status == 143 and 0 < kept < 12, (status, err)
    assert line == (f"evenhand sweep: interrupted (SIGTERM); kept {kept} finished rows in {results}; "
                    f"resume with: evenhand {' '.join(argv)}"), line
    assert not lock_path(results).exists()
    assert main([*argv, "--quiet"]) == 0
    assert main(["sweep", "--config", str(config), "--quiet", "--results", str(fresh)]) == 0
    assert _stored_rows(results) == _stored_rows(fresh)
