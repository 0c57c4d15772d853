"""One advisory lock per output: a second writer of the same path is refused, naming the holder.

:func:`output_lock` holds an advisory lock (``filelock``) on ``<path>.lock``
for as long as one process writes ``path``; a second writer gets a one-line
``OutputError`` naming the holder (pid, host, command, start time, which the
holder writes into the lock file). The lock file is removed on release.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import OutputError
from .output_checks import output_label, write_errors


def lock_path(path: str | Path) -> Path:
    """The lock file of an output: ``<path>.lock`` beside it."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def _holder(lock: Path) -> str:
    try:
        info = json.loads(lock.read_text(encoding="utf-8"))
        return (f"pid {info['pid']} on {info['host']} since {info['since']}: "
                f"{' '.join(str(a) for a in info['command'])[:200]}")
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


@contextlib.contextmanager
def output_lock(path: str | Path, flag: str = "", wait: float = 0.0) -> Iterator[Path]:
    """Hold the advisory lock of output ``path`` for the block; a second holder raises OutputError.

    The lock (``fcntl.flock`` through ``filelock``) lives on ``<path>.lock``,
    into which the holder writes its pid, host, command and start time; the
    file is removed when the block ends. ``wait``: seconds to wait for the
    lock (0 = refuse at once; the score cache waits for short appends).
    A lock file that cannot be created (read-only folder) raises OutputError too.
    """
    import filelock

    lock = lock_path(path)
    info = json.dumps({
        "pid": os.getpid(), "host": socket.gethostname(), "command": sys.argv,
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }).encode("utf-8")

    def record(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, info, 0)

    with contextlib.suppress(FileExistsError):
        lock.parent.mkdir(parents=True, exist_ok=True)
    handle = filelock.FileLock(str(lock), timeout=wait, on_acquired=record)
    try:
        with write_errors(lock, "nothing was written"):
            handle.acquire()
    except filelock.Timeout:
        raise OutputError(
            f"{output_label(Path(path), flag)}: is being written by {_holder(lock)}; wait for it to finish "
            f"or choose another path (lock file {lock.name})"
        ) from None
    try:
        yield lock
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()  # while still holding it: a waiter on the old inode retries (filelock checks st_nlink)
        handle.release()
