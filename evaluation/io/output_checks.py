"""What evenhand may write, and what a failed write says.

* :func:`check_output_path` refuses, before any work, an output that is not a
  regular file (a directory, FIFO, device, socket, a symlink to one of them or
  a dangling symlink) or that cannot be written, naming the path and the fix.
  evenhand only ever writes, replaces or removes regular files.
  :func:`check_output_dir` does the same for an output folder, and
  :func:`check_output` refuses an output that is one of the inputs.
* :func:`write_errors` turns an ``OSError`` while writing (disk full, quota,
  read-only file system) into an ``OutputError`` naming the path.

See ``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..errors import DataError, OutputError


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


def output_label(path: Path, flag: str) -> str:
    """How messages name an output: ``--out runs/x.jsonl``, or the path alone."""
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
    where = output_label(path, flag)
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
    where = output_label(path, flag)
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


def check_output(out: str | Path, inputs: Mapping[str, str | Path | None], flag: str = "--out") -> None:
    """Raise DataError when the output ``out`` is one of the ``inputs`` (``{flag: path}``)."""
    target = Path(out).resolve()
    for name, path in inputs.items():
        if path is not None and Path(path).exists() and Path(path).resolve() == target:
            raise DataError(f"{flag} {out} is the {name} file; write the results to another path")
