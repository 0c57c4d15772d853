"""Ctrl-C and kill end every process a command started, its workers' workers too (issue 34).

A stub "engine" child (as vLLM's engine process or a server would be) starts a
"worker" grandchild that ignores SIGINT, as engine workers do. A terminal's Ctrl-C
reaches the whole foreground process group: the engine dies at once and its worker
is orphaned; `kill PID` reaches evenhand alone. In both cases no process of the run
may survive it. Checked without psutil: every process of the run's session is
listed from ``/proc`` (the command runs in a session of its own).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

#: the stub engine: starts the worker, writes both pids, and dies at once on SIGINT without ending it
ENGINE = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGINT, lambda *a: os._exit(1))
worker = subprocess.Popen([sys.executable, "-c",
    "import signal, time\\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\\nwhile True: time.sleep(0.1)",
    sys.argv[1] + "-worker"])
open(sys.argv[2], "w").write(f"{os.getpid()} {worker.pid}")
while True:
    time.sleep(0.1)
"""

#: runs the CLI after starting the stub engine, as a command starting its engine would
WRAPPER = """
import json, subprocess, sys
subprocess.Popen([sys.executable, "-c", {engine!r}, {marker!r} + "-engine", {pids!r}])
from evenhand.cli import main
sys.exit(main(json.loads(sys.argv[1])))
"""


def session_members(sid: int) -> list[tuple[int, str]]:
    """``(pid, command line)`` of every live, non-zombie process of session ``sid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            found.append((int(entry.name), cmdline))
    return found


def _data(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"e{i}", "attribute": "sentiment", "documents": [
        {"text": f"The food was great {i}.", "group": "pos"}, {"text": "The rooms were poor.", "group": "neg"}]})
        + "\n" for i in range(n)))
    return path


@pytest.mark.parametrize("how", ["ctrl-c to the group", "kill the command"])
def test_a_signal_ends_the_engine_and_its_orphaned_worker(tmp_path, model_dir, how):
    out, pids = tmp_path / "o.jsonl", tmp_path / "pids"
    marker = f"evenhand-stub-{os.getpid()}-{time.time_ns()}"
    argv = ["generate", "--data", str(_data(tmp_path / "d.jsonl", 12)), "--out", str(out),
            "--model", str(model_dir), "--max-new-tokens", "12", "--batch-size", "2"]
    wrapper = WRAPPER.format(engine=ENGINE, marker=marker, pids=str(pids))
    proc = subprocess.Popen([sys.executable, "-c", wrapper, json.dumps(argv)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None and not (out.exists() and out.stat().st_size):
            time.sleep(0.05)
        assert proc.poll() is None and pids.exists(), proc.communicate()[1]
        engine, worker = map(int, pids.read_text().split())
        members = {pid for pid, _ in session_members(proc.pid)}
        assert {proc.pid, engine, worker} <= members, members  # the run's processes, before the signal
        if how == "ctrl-c to the group":
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal does: the engine dies, its worker is orphaned
        else:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == (130 if how == "ctrl-c to the group" else 143), err
        assert "Traceback" not in err and "evenhand generate: interrupted" in err.strip().splitlines()[-1], err
        time.sleep(0.2)
        left = [(pid, cmd) for pid, cmd in session_members(proc.pid) if marker in cmd]
        assert left == [], f"processes of the run outlived it: {left}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid, _ in session_members(proc.pid):
            with __import__("contextlib").suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_end_descendants_reaches_an_orphan_adopted_by_this_process():
    """The mechanism alone, in this process: a grandchild whose parent died is found and ended."""
    from evenhand.process_tree import adopt_orphans, alive, descendants, end_descendants

    code = ("import subprocess, sys\np = subprocess.Popen([sys.executable, '-c', "
            "'import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\ntime.sleep(300)'])\n"
            "print(p.pid, flush=True)\n")  # the parent exits at once; the grandchild ignores SIGTERM
    with adopt_orphans():
        parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        orphan = int(parent.stdout.readline())
        parent.wait()
        time.sleep(0.2)
        assert orphan in [pid for pid, _ in descendants()]  # re-parented to this process, still found
        assert orphan in end_descendants(grace=0.5)  # SIGTERM ignored: SIGKILL after the grace
    assert not alive(orphan)


def test_end_descendants_ends_an_orphan_left_while_it_runs():
    """A child that, when ended, starts a worker and exits hands that worker to this process after the
    first walk; the walk is repeated, so the worker is ended too (the race of a Ctrl-C on a busy machine)."""
    from evenhand.process_tree import adopt_orphans, alive, end_descendants

    code = ("import os, signal, subprocess, sys, time\n"
            "def spawn(*_):\n"
            "    p = subprocess.Popen([sys.executable, '-c', "
            "'import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\ntime.sleep(300)'])\n"
            "    print(p.pid, flush=True)\n"
            "    time.sleep(0.5)\n"
            "    os._exit(0)\n"
            "signal.signal(signal.SIGTERM, spawn)\nprint('ready', flush=True)\ntime.sleep(300)\n")
    late = 0
    try:
        with adopt_orphans():
            parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            assert parent.stdout.readline().strip() == "ready"
            ended = end_descendants(grace=5.0)
            late = int(parent.stdout.readline())
        assert parent.pid in ended and late in ended, (parent.pid, late, ended)  # found in the second walk
        assert not alive(late)
    finally:
        if late and alive(late):
            os.kill(late, signal.SIGKILL)


def test_an_interrupted_command_ends_its_children_while_it_is_still_their_subreaper(monkeypatch):
    """``handling`` ends the children before it stops adopting orphans, so an engine that dies only
    after the command has unwound still leaves its workers within reach."""
    from evenhand import interrupts, process_tree

    if process_tree._prctl(process_tree._PR_GET_CHILD_SUBREAPER) != 0:
        pytest.skip("no prctl, or this process is a subreaper already")
    seen: list[int | None] = []
    monkeypatch.setattr(interrupts, "end_children",
                        lambda: seen.append(process_tree._prctl(process_tree._PR_GET_CHILD_SUBREAPER)))
    with pytest.raises(interrupts.Interrupted), interrupts.handling():
        raise interrupts.Interrupted(signal.SIGINT)
    assert seen == [1]  # once, while the subreaper flag was still set
    assert process_tree._prctl(process_tree._PR_GET_CHILD_SUBREAPER) == 0  # restored afterwards


@pytest.mark.parametrize("error", [UnboundLocalError, OSError])
def test_a_library_error_raised_while_a_signal_unwinds_still_stops_as_interrupted(tmp_path, monkeypatch, error):
    """vLLM's tokenizer pool (``finally: pool.put(tok)``, ``tok`` never bound) turned a Ctrl-C into an
    ``UnboundLocalError``: the command exited 1 with a traceback instead of 130 and its one line. An
    error raised while the interrupt unwinds is the interrupt's doing: the same line and exit code;
    the children are ended once. An error with no interrupt behind it is not touched."""
    from evenhand import cli, interrupts

    ended: list[int] = []
    monkeypatch.setattr(interrupts, "end_children", lambda: ended.append(1))

    def library() -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)  # the handler raises Interrupted here
            time.sleep(5)
        finally:
            raise error("the library's clean-up failed")

    with pytest.raises(interrupts.Interrupted) as caught, interrupts.handling():
        library()
    assert caught.value.signum == signal.SIGINT and caught.value.exit_code == 130
    assert isinstance(caught.value.__cause__, error) and ended == [1]
    with pytest.raises(error), interrupts.handling():
        raise error("no signal behind it")
    assert ended == [1]

    # through the CLI, raised inside `_run`'s handler of user mistakes and disk errors (OSError: exit 2
    # and one line): exit 130 and the interrupted line, not exit 2 or a traceback
    import contextlib
    import io

    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "source": "x"}\n')
    out = tmp_path / "o.jsonl"

    @contextlib.contextmanager
    def files(args):  # where the command's work starts: the signal arrives while a library works
        library()
        yield

    monkeypatch.setattr(cli, "_run_files", files)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    code = cli.main(["generate", "--data", str(data), "--out", str(out)])
    assert code == 130, err.getvalue()
    assert err.getvalue().startswith("evenhand generate: interrupted (SIGINT); no record finished yet; resume with: "
                                     "evenhand generate --data "), err.getvalue()
    assert ended == [1, 1] and not out.exists()


def test_error_chain_follows_cause_then_context_once_each():
    from evenhand.evaluation.errors import error_chain

    first, second, third = KeyError("a"), ValueError("b"), OSError("c")
    second.__context__ = first
    third.__cause__, third.__context__ = second, first  # an explicit cause wins over the context
    assert list(error_chain(third)) == [third, second, first]
    first.__context__ = third  # a loop ends where it started
    assert list(error_chain(third)) == [third, second, first]
