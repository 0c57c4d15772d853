"""The processes a command started (servers, vLLM engine workers, their own children), found and ended.

Read from ``/proc`` (Linux; no psutil needed): :func:`descendants` walks the parent links
from this process down. A child that dies first (a terminal's Ctrl-C reaches the whole
foreground process group, so a vLLM engine process may exit before evenhand does) would
leave its own workers to ``init``, out of reach of that walk; :func:`adopt_orphans` makes
this process their "child subreaper" (``prctl(PR_SET_CHILD_SUBREAPER)``), so such orphans
are re-parented here and still found. :func:`end_descendants` sends SIGTERM to all of
them, SIGKILL to those alive after a grace period, and reaps them (no zombie left).
On systems without ``/proc`` a psutil walk is used when psutil is installed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

_PROC = Path("/proc")
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def _stat(pid: int) -> tuple[int, str, int] | None:
    """``(parent pid, state letter, start time in clock ticks)`` of a live process, None if gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # after "pid (comm) ": the name may hold spaces and ")"
    try:
        return int(fields[1]), fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def alive(pid: int, start: int | None = None) -> bool:
    """Whether ``pid`` runs (a zombie does not), and is still the process that started at ``start``."""
    info = _stat(pid)
    if info is None or info[1] in ("Z", "X"):
        return False
    return start is None or info[2] == start


def descendants(root: int | None = None) -> list[tuple[int, int]]:
    """``(pid, start time)`` of every live process below ``root`` (default: this one), parents first."""
    root = os.getpid() if root is None else root
    if not _PROC.is_dir():
        return _psutil_descendants(root)
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        info = _stat(int(entry.name))
        if info is not None and info[1] not in ("Z", "X"):
            children.setdefault(info[0], []).append((int(entry.name), info[2]))
    found: list[tuple[int, int]] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child[0])
    return found


def _psutil_descendants(root: int) -> list[tuple[int, int]]:  # pragma: no cover - systems without /proc
    try:
        import psutil
    except ImportError:
        return []
    with contextlib.suppress(psutil.Error):
        return [(p.pid, 0) for p in psutil.Process(root).children(recursive=True)]
    return []


def _reap() -> None:
    """Collect the exit status of every finished child (adopted orphans included): no zombie is left."""
    with contextlib.suppress(ChildProcessError, OSError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return


def end_descendants(grace: float = 5.0, rounds: int = 5) -> list[int]:
    """SIGTERM every descendant, SIGKILL those still alive ``grace`` seconds later; return their pids.

    A pid is signalled only while it is the same process (its start time is
    checked), so a pid reused by an unrelated process is never touched. A process
    that dies while this runs (an engine killed by the same Ctrl-C, or by this
    SIGTERM) hands its own children to this process when it is the subreaper
    (:func:`adopt_orphans`); they were not in the first walk, so the walk is
    repeated until it finds no new process, at most ``rounds`` times.
    """
    ended: list[int] = []
    seen: set[tuple[int, int]] = set()
    for _ in range(max(1, rounds)):
        procs = [proc for proc in descendants() if proc not in seen]
        if not procs:
            break
        seen.update(procs)
        _end(procs, grace)
        ended.extend(pid for pid, _ in procs)
    return ended


def _end(procs: list[tuple[int, int]], grace: float) -> None:
    """SIGTERM ``procs``, SIGKILL those alive after ``grace`` seconds, and reap them."""
    for pid, start in procs:
        if alive(pid, start or None):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap()
        if not any(alive(pid, start or None) for pid, start in procs):
            break
        time.sleep(0.05)
    for pid, start in procs:
        if alive(pid, start or None):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    # the SIGKILLed ones disappear at once; reap what is ours (an adopted orphan may be a zombie here)
    for _ in range(20):
        _reap()
        if not any(alive(pid, start or None) for pid, start in procs):
            break
        time.sleep(0.05)


def _prctl(option: int, value: int = 0) -> int | None:
    """``prctl(option, value)`` through libc, or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if option == _PR_GET_CHILD_SUBREAPER:
            out = ctypes.c_int(0)
            return None if libc.prctl(option, ctypes.byref(out), 0, 0, 0) != 0 else out.value
        return None if libc.prctl(option, value, 0, 0, 0) != 0 else value
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def adopt_orphans() -> Iterator[None]:
    """Within the block, a descendant whose parent dies is re-parented to this process (Linux), so
    :func:`end_descendants` still finds it; the previous setting is restored afterwards."""
    before = _prctl(_PR_GET_CHILD_SUBREAPER)
    if before is None or before:
        yield
        return
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        _prctl(_PR_SET_CHILD_SUBREAPER, 0)
