"""What evenhand writes: output checks, one advisory lock per output, write errors, content digests.

* :func:`check_output_path` refuses, before any work, an output that is not a
  regular file (a directory, FIFO, device, socket, a symlink to one of them or
  a dangling symlink) or that cannot be written, naming the path and the fix.
  evenhand only ever writes, replaces or removes regular files.
* :func:`output_lock` holds an advisory lock (``filelock``) on ``<path>.lock``
  for as long as one process writes ``path``; a second writer gets a one-line
  ``OutputError`` naming the holder (pid, host, command, start time, which the
  holder writes into the lock file). The lock file is removed on release.
* :func:`write_errors` turns an ``OSError`` while writing (disk full, quota,
  read-only file system) into an ``OutputError`` naming the path.
* :func:`content_digest` is the SHA-256 of a file's or a folder's weight files,
  cached by path + size + mtime_ns, so that a model replaced in place (same
  sizes) is never taken for the old one: resume manifests, the score cache and
  the sweep store all key on it.

See ``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .schema import DataError


class OutputError(DataError):
    """An output that cannot be written safely (not a regular file, locked, disk full...)."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _label(path: Path, flag: str) -> str:
    return f"{flag} {path}" if flag else str(path)


def check_output_path(path: str | Path, flag: str = "", append: bool = False) -> Path:
    """Raise OutputError unless ``path`` can be written as a regular file; return the path to write.

    Allowed: a missing file whose nearest existing ancestor is a writable
    directory, an existing regular file, or a symlink to a regular file (the
    returned path is then the link's target, which is what gets replaced, so
    the link keeps pointing at the new content). ``append``: the file is
    appended to in place, so it must itself be writable.
    """
    path = Path(path)
    where = _label(path, flag)
    fix = "give the path of a regular file (evenhand only writes, replaces or removes regular files)"
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except OSError as err:
        raise OutputError(f"{where}: cannot be examined ({err.strerror}); {fix}") from None
    target = path
    if info is not None and stat.S_ISLNK(info.st_mode):
        try:
            real = path.stat()
        except OSError:
            raise OutputError(f"{where}: is a symlink to a missing path; {fix}") from None
        if not stat.S_ISREG(real.st_mode):
            raise OutputError(f"{where}: is a symlink to {_kind(real.st_mode)}; {fix}")
        target, info = path.resolve(), real
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise OutputError(f"{where}: is {_kind(info.st_mode)}; {fix}")
    if info is not None and append and not os.access(target, os.W_OK):
        raise OutputError(f"{where}: is not writable (permission denied); fix its permissions or choose another path")
    _check_parent(target, where)
    return target


def check_output_dir(path: str | Path, flag: str = "", files: tuple[str, ...] = ()) -> Path:
    """Raise OutputError unless ``path`` is (or can become) a writable directory; check ``files`` in it."""
    path = Path(path)
    where = _label(path, flag)
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            kind = "a symlink to a missing path" if not path.exists() else (
                "a regular file" if path.is_file() else _kind(path.stat().st_mode))
            raise OutputError(f"{where}: is {kind}, not a directory; give a folder path")
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputError(f"{where}: folder is not writable (permission denied); choose another folder")
    else:
        _check_parent(path, where)
    for name in files:
        check_output_path(path / name, flag)
    return path


def _check_parent(path: Path, where: str) -> None:
    ancestor = path.parent
    while not ancestor.exists() and not ancestor.is_symlink() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if ancestor.is_symlink() and not ancestor.exists():
        raise OutputError(f"{where}: folder {ancestor} is a symlink to a missing path; create it or choose another path")
    if not ancestor.is_dir():
        raise OutputError(f"{where}: {ancestor} is not a directory; choose another path")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{where}: cannot write into {ancestor} (permission denied); choose another path")


def new_file_mode(existing: Path | None = None) -> int:
    """The mode a new output gets: an existing file's own mode, else 0o666 minus the umask."""
    if existing is not None:
        with contextlib.suppress(OSError):
            info = existing.stat()
            if stat.S_ISREG(info.st_mode):
                return stat.S_IMODE(info.st_mode)
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


#: errno values of writes that fail for reasons outside the program: the user frees space or picks a path.
WRITE_ERRNOS = {
    errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
    errno.EFBIG: "file too large", errno.EIO: "input/output error", errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


@contextlib.contextmanager
def write_errors(path: str | Path, kept: str = "the previous file is unchanged") -> Iterator[None]:
    """Turn an OSError of :data:`WRITE_ERRNOS` raised in the block into a one-line OutputError naming ``path``."""
    try:
        yield
    except OSError as err:
        if err.errno not in WRITE_ERRNOS or isinstance(err, OutputError):
            raise
        raise OutputError(
            f"{path}: cannot write ({WRITE_ERRNOS[err.errno]}); {kept}; free space or fix the "
            "permissions and run again"
        ) from None


# -- locks -----------------------------------------------------------------------------------


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
            f"{_label(Path(path), flag)}: is being written by {_holder(lock)}; wait for it to finish "
            f"or choose another path (lock file {lock.name})"
        ) from None
    try:
        yield lock
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()  # while still holding it: a waiter on the old inode retries (filelock checks st_nlink)
        handle.release()


# -- content digests -------------------------------------------------------------------------

#: Files whose content makes a model: weights and the configs that shape them.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".ckpt", ".pt", ".pth", ".json", ".model", ".txt")
_DIGESTS: dict[tuple[str, int, int], str] = {}


def _digest_cache_file() -> Path:
    root = os.environ.get("EVENHAND_CACHE")
    if root:
        return Path(root).expanduser() / "digests.jsonl"
    import platformdirs

    return Path(platformdirs.user_cache_dir("evenhand")) / "digests.jsonl"


def _load_digests() -> None:
    if _DIGESTS:
        return
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in _digest_cache_file().read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                row = json.loads(line)
                _DIGESTS[(str(row["path"]), int(row["size"]), int(row["mtime_ns"]))] = str(row["sha256"])


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, cached (in memory and on disk) by real path + size + mtime_ns."""
    path = Path(path).resolve()
    info = path.stat()
    key = (str(path), info.st_size, info.st_mtime_ns)
    _load_digests()
    if key in _DIGESTS:
        return _DIGESTS[key]
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    _DIGESTS[key] = value = digest.hexdigest()
    with contextlib.suppress(OSError):  # the on-disk cache only saves time
        cache = _digest_cache_file()
        cache.parent.mkdir(parents=True, exist_ok=True)
        with cache.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"path": key[0], "size": key[1], "mtime_ns": key[2], "sha256": value}) + "\n")
    return value


def content_digest(path: str | Path) -> str | None:
    """The content identity of a model file or folder: SHA-256 over its weight and config files.

    A folder hashes every file directly in it whose suffix is in
    :data:`WEIGHT_SUFFIXES`, by name and content; a file hashes its bytes. Each
    file's hash is cached by path + size + mtime_ns, so repeated calls cost a
    ``stat`` per file. None when ``path`` is neither (an HF id, a URL).
    """
    path = Path(path)
    if path.is_file():
        return file_digest(path)
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for item in sorted(path.iterdir()):
        if item.is_file() and item.suffix in WEIGHT_SUFFIXES:
            digest.update(f"{item.name}\0{file_digest(item)}\n".encode())
    return digest.hexdigest()


def describe(value: Any) -> str:
    """A short form of a digest or setting for messages (``ab12cd34``)."""
    text = str(value)
    return text[:12] if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text
