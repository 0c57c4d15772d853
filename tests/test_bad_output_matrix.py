"""Every command, bad outputs: exit 2, one line naming the path, no traceback, no file changed, no hang.

An output (or one of its sibling files: manifest, backup, CSV tables, timing
sidecar, SQLite side files, report plots, lock) that is a directory, a FIFO, a
symlink to a device, a directory or nothing, sits under a regular file, or is
locked by another writer is refused before any work. The folder's files are
hashed before and after (the helpers of ``test_bad_input_matrix``), FIFOs and
devices are checked to still be what they were, and every case runs under an
alarm, so a FIFO opened for reading or writing fails the test instead of hanging.
"""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from test_bad_input_matrix import CALIB, EVAL, GEN, META, RERANK, _snapshot, make_inputs

from evenhand.cli import main

#: command -> (argv with {w} work folder, {m} model folder, {o} the output; the output's name; its kind)
COMMANDS: dict[str, tuple[list[str], str]] = {
    "generate": ([*GEN[:4], "{o}", *GEN[5:]], "o.jsonl"),
    "rerank": ([*RERANK[:4], "{o}", *RERANK[5:]], "o.jsonl"),
    "evaluate": ([*EVAL[:6], "{o}"], "o.jsonl"),
    "meta-eval": ([*META[:6], "{o}", *META[7:]], "o.jsonl"),
    "calibrate": ([*CALIB[:8], "{o}", *CALIB[9:]], "c.json"),
    "demo": (["demo", "--model", "{m}", "--out", "{o}"], "d.jsonl"),
    "sweep": (["sweep", "--config", "{w}/sweep.yaml", "--quiet", "--results", "{o}"], "r.sqlite"),
    "train": (["train", "--data", "{w}/data.jsonl", "--out", "{o}"], "run"),
    "report": (["report", "--results", "{w}/results.sqlite", "--out", "{o}", "--bootstrap", "5"], "rep"),
}
for _argv, _ in COMMANDS.values():
    assert _argv[_argv.index("{o}") - 1] in ("--out", "--results"), _argv
FILE_COMMANDS = ["generate", "rerank", "evaluate", "meta-eval", "calibrate", "demo", "sweep"]
DIR_COMMANDS = ["train", "report"]


def _dir(p: Path) -> None:
    p.mkdir(parents=True)
    (p / "keep.txt").write_text("a folder of the user's\n")


def _fifo(p: Path) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(p)


def _devlink(p: Path) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.symlink_to("/dev/null")


def _dirlink(p: Path) -> None:
    target = p.parent / (p.name + ".target")
    _dir(target)
    p.symlink_to(target)


def _dangling(p: Path) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.symlink_to(p.parent / "nowhere" / "missing")


def _file(p: Path) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("a file of the user's\n")


def _foreign_csv(p: Path) -> None:
    p.write_text("name,salary\nada,100\n")


def _link_to(name: str, hard: bool = False) -> Callable[[Path], None]:
    """Make the path a symbolic (or hard) link to the work folder's file ``name``: an input, or a user's file."""

    def make(p: Path) -> None:
        target = p.parent / name
        if not target.exists():
            target.write_text("a file of the user's\n")
        if hard:
            os.link(target, p)
        else:
            p.symlink_to(target)

    return make


#: kind -> (make it at a path, text the message must hold)
KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "dir": (_dir, "is a directory"),
    "fifo": (_fifo, "is a FIFO"),
    "devlink": (_devlink, "symlink to a device"),
    "dirlink": (_dirlink, "symlink to a directory"),
    "dangling": (_dangling, "symlink to a missing path"),
    # the link rule: never into an input of the run, never through a link beside the output
    "link-data": (_link_to("data.jsonl"), "--data"),
    "hardlink-data": (_link_to("data.jsonl", hard=True), "--data"),
    "link-controlled": (_link_to("controlled.json"), "--data"),
    "hardlink-controlled": (_link_to("controlled.json", hard=True), "--data"),
    "link-foreign": (_link_to("user_notes.txt"), "a file this command did not create"),
    "hardlink-foreign": (_link_to("user_notes.txt", hard=True), "hard links"),
}

#: (command, the path made bad relative to the output ({o}) or work folder, kind, needle or None)
CASES: list[tuple[str, str, str, str | None]] = []
for _cmd in FILE_COMMANDS:
    for _kind in ("dir", "fifo", "devlink", "dirlink", "dangling"):
        CASES.append((_cmd, "{o}", _kind, None))
    CASES.append((_cmd, "{o}", "locked", "is being written by pid"))
    CASES.append((_cmd, "{w}/data.jsonl/{n}", "under-file", "is not a directory"))
for _cmd in ("generate", "rerank", "meta-eval"):
    CASES += [
        (_cmd, "{o}.manifest.json", "fifo", "o.jsonl.manifest.json"),
        (_cmd, "{o}.bak", "dir", "o.jsonl.bak"),
        (_cmd, "{o}.manifest.json.bak", "devlink", "o.jsonl.manifest.json.bak"),
        (_cmd, "{o}.lock", "fifo", "o.jsonl.lock"),
    ]
CASES += [
    ("meta-eval", "{o}.timings.json", "fifo", "o.jsonl.timings.json"),
    ("meta-eval", "{o}.timings.json", "dir", "o.jsonl.timings.json"),
    ("evaluate", "{w}/o.csv", "fifo", "o.csv"),
    ("evaluate", "{w}/o.corpus.jsonl", "dir", "o.corpus.jsonl"),
    ("evaluate", "{w}/o.corpus.csv", "devlink", "o.corpus.csv"),
    ("evaluate", "{o}.lock", "dir", "o.jsonl.lock"),
    ("calibrate", "{o}.lock", "fifo", "c.json.lock"),
    ("demo", "{w}/d.csv", "foreign-csv", "is not a demo table"),
    ("demo", "{w}/d.csv", "fifo", "d.csv"),
    ("demo", "{w}/d.csv", "dir", "d.csv"),
    ("sweep", "{o}-wal", "dir", "r.sqlite-wal"),
    ("sweep", "{o}-shm", "fifo", "r.sqlite-shm"),
    ("sweep", "{o}.lock", "devlink", "r.sqlite.lock"),
    ("sweep", "{w}/r.part0-of2.sqlite", "fifo", "r.part0-of2.sqlite"),
]
for _cmd in ("generate", "rerank", "evaluate"):
    CASES += [(_cmd, "{o}", "link-data", None), (_cmd, "{o}", "hardlink-data", None)]
for _cmd in ("meta-eval", "calibrate"):
    CASES += [(_cmd, "{o}", "link-controlled", None), (_cmd, "{o}", "hardlink-controlled", None)]
CASES += [
    ("sweep", "{o}", "link-data", "symbolic link to data set d"),
    ("generate", "{o}.manifest.json", "link-foreign", None),
    ("rerank", "{o}.bak", "link-foreign", None),
    ("meta-eval", "{o}.timings.json", "link-foreign", None),
    ("evaluate", "{w}/o.csv", "link-foreign", None),
    ("evaluate", "{w}/o.corpus.jsonl", "link-foreign", None),
    ("demo", "{w}/d.csv", "link-foreign", None),
    ("sweep", "{o}-wal", "link-foreign", None),
    ("generate", "{o}", "hardlink-foreign", None),
    ("calibrate", "{o}.lock", "link-foreign", None),
]
for _cmd in DIR_COMMANDS:
    CASES += [
        (_cmd, "{o}", "file", "is a regular file, not a directory"),
        (_cmd, "{o}", "fifo", "not a directory"),
        (_cmd, "{o}", "devlink", "not a directory"),
        (_cmd, "{o}", "dangling", "symlink to a missing path"),
        (_cmd, "{o}", "locked", "is being written by pid"),
        (_cmd, "{o}.lock", "dir", "run.lock" if _cmd == "train" else "rep.lock"),
    ]
CASES += [
    ("train", "{o}/manifest.json", "dir", "manifest.json"),
    ("report", "{o}/index.html", "dir", "index.html"),
    ("report", "{o}/cells.csv", "fifo", "cells.csv"),
    ("report", "{o}/old_plot.png", "fifo", "old_plot.png"),
]


def _ids() -> list[str]:
    return [f"{cmd}:{where.replace('{o}', 'out').replace('{w}/', '')}:{kind}" for cmd, where, kind, _ in CASES]


def _report_results(work: Path) -> None:
    from evenhand.sweep.config import Cell
    from evenhand.sweep.store import ResultRow, ResultStore

    store = ResultStore(work / "results.sqlite")
    cell = Cell({"abstractiveness": 2.0}, "h2")
    store.add_cells([cell])
    store.write([ResultRow(cell.id, "news", 0, f"ex{i}", i, f"summary {i}", {"mint": 0.1 * i})
                 for i in range(3)])
    store.conn.execute("PRAGMA journal_mode=DELETE")  # readers then leave no -wal/-shm files behind
    store.close()


def _kinds(folder: Path) -> dict[str, str]:
    """What each non-regular entry is (FIFO, symlink target): they must stay as they were."""
    out = {}
    for p in sorted(folder.rglob("*")):
        info = p.lstat()
        if stat.S_ISLNK(info.st_mode):
            out[str(p)] = "link:" + os.readlink(p)
        elif not stat.S_ISREG(info.st_mode):
            out[str(p)] = stat.filemode(info.st_mode)[0]
    return out


class _Alarm(Exception):
    pass


def _on_alarm(signum, frame):  # noqa: ANN001, ARG001
    raise _Alarm


@pytest.mark.parametrize("command, where, kind, needle", CASES, ids=_ids())
def test_bad_output_exits_2_with_one_line_and_changes_nothing(
    tmp_path, model_dir, capsys, command, where, kind, needle
):
    work = make_inputs(tmp_path)
    if command == "report":
        _report_results(work)
    argv_template, name = COMMANDS[command]
    out = work / name
    bad = Path(where.format(o=out, w=work, n=name))
    argv = [a.format(w=work, m=model_dir, o=bad if kind == "under-file" else out) for a in argv_template]
    holder = None
    if kind == "locked":
        from evenhand.evaluation.io.locks import output_lock

        holder = output_lock(out)
        holder.__enter__()
    elif kind == "under-file":
        pass
    elif kind == "file":
        _file(bad)
    elif kind == "foreign-csv":
        _foreign_csv(bad)
    else:
        KINDS[kind][0](bad)
        needle = needle or KINDS[kind][1]
    before, kinds = _snapshot(work), _kinds(work)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(60)
    try:
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
        except _Alarm:
            pytest.fail(f"{command} hung on {bad} ({kind})")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if holder is not None:
            holder.__exit__(None, None, None)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, (code, err)
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"evenhand {command}: error: "), err
    assert "Traceback" not in captured.err + captured.out
    assert needle in err, err
    if kind == "locked":
        assert f"pid {os.getpid()}" in err and "lock file" in err
    after = _snapshot(work)
    if kind == "locked":  # the holder's lock file is released now; nothing else changed
        before = {k: v for k, v in before.items() if not k.endswith(".lock")}
    assert after == before
    assert _kinds(work) == kinds
    assert Path("/dev/null").is_char_device()


@pytest.mark.parametrize("command", ["generate", "evaluate", "calibrate", "demo"])
def test_a_device_given_directly_is_refused_and_kept(tmp_path, model_dir, capsys, command):
    work = make_inputs(tmp_path)
    argv_template, _ = COMMANDS[command]
    argv = [a.format(w=work, m=model_dir, o="/dev/null") for a in argv_template]
    if command == "calibrate":
        argv = [a.replace("/dev/null", str(work / "dev.json")) for a in argv]
        (work / "dev.json").symlink_to("/dev/null")
    before = _snapshot(work)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ("is a device" in err or "symlink to a device" in err), err
    assert Path("/dev/null").is_char_device()
    assert _snapshot(work) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere: permissions cannot be tested")
@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_read_only_folder_is_refused_before_any_work(tmp_path, model_dir, capsys, command):
    work = make_inputs(tmp_path)
    locked_dir = work / "ro"
    locked_dir.mkdir()
    locked_dir.chmod(0o555)
    argv_template, name = COMMANDS[command]
    argv = [a.format(w=work, m=model_dir, o=locked_dir / name) for a in argv_template]
    try:
        assert main(argv) == 2
    finally:
        locked_dir.chmod(0o755)
    err = capsys.readouterr().err.strip()
    assert "permission denied" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("command", ["evaluate", "meta-eval", "calibrate", "rerank"])
@pytest.mark.parametrize("kind", ["fifo", "dir", "devlink", "cache-is-a-file"])
def test_a_bad_score_cache_file_is_refused(tmp_path, model_dir, capsys, command, kind):
    work = make_inputs(tmp_path)
    cache = work / "cache"
    argv_template, name = COMMANDS[command]
    argv = [a.format(w=work, m=model_dir, o=work / name) for a in argv_template]
    flag = {"evaluate": "--metrics", "meta-eval": "--scorers", "calibrate": "--scorers", "rerank": "--scorers"}[command]
    argv = [a for i, a in enumerate(argv) if a != "--score-cache" and (i == 0 or argv[i - 1] != "--score-cache")]
    if flag in argv:
        argv[argv.index(flag) + 1] = "lm-likelihood"
    else:
        argv += [flag, "lm-likelihood"]
    argv += ["--lm-model", str(model_dir), "--score-cache", str(cache)]
    if kind == "cache-is-a-file":
        cache.write_text("not a folder\n")
        needle = "is not a directory"
    else:
        cache.mkdir()
        KINDS[kind][0](cache / "lm-likelihood.jsonl")
        needle = KINDS[kind][1]
    before, kinds = _snapshot(work), _kinds(work)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--score-cache" in err and needle in err, err
    assert _snapshot(work) == before and _kinds(work) == kinds


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unwritable_output_folder_is_refused_before_any_work(tmp_path, model_dir, capsys, monkeypatch, command):
    """Permissions as a non-root user sees them (tests may run as root): ``os.access`` denies the folder."""
    import evenhand.evaluation.io.output_checks as outputs

    work = make_inputs(tmp_path)
    if command == "report":
        _report_results(work)
    denied = work / "ro"
    denied.mkdir()
    real_access = os.access

    def access(path, mode, **kwargs):  # noqa: ANN001, ANN003, ANN202
        if Path(path) == denied and mode & os.W_OK:
            return False
        return real_access(path, mode, **kwargs)

    monkeypatch.setattr(outputs.os, "access", access)
    argv_template, name = COMMANDS[command]
    argv = [a.format(w=work, m=model_dir, o=denied / name) for a in argv_template]
    before = _snapshot(work)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "permission denied" in err and str(denied) in err, err
    assert _snapshot(work) == before and not any(denied.iterdir())


@pytest.mark.parametrize("kind", ["fifo", "devlink", "dir"])
def test_report_refuses_a_results_file_that_is_no_regular_file(tmp_path, capsys, kind):
    work = make_inputs(tmp_path)
    results = work / "r.sqlite"
    KINDS[kind][0](results)
    before, kinds = _snapshot(work), _kinds(work)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(60)
    try:
        code = main(["report", "--results", str(results), "--out", str(work / "rep")])
    except _Alarm:
        pytest.fail(f"report hung reading {kind} results")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "r.sqlite" in err, err
    assert _snapshot(work) == before and _kinds(work) == kinds and not (work / "rep").exists()
