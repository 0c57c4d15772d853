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
from collections.abc import Iterable, Iterator, Mapping
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


class _Run:
    """The files of the running command: its inputs by (device, inode), the output paths its user named."""

    inputs: dict[tuple[int, int], str] | None = None
    named: frozenset[str] = frozenset()


@contextlib.contextmanager
def run_files(inputs: Mapping[str, str | Path], named: Iterable[str | Path]) -> Iterator[None]:
    """Within the block, :func:`check_output_path` applies the link rule for this run (the CLI sets it).

    ``inputs``: ``{label: path}`` of every file the command reads (``--data data.jsonl``); an
    output that is the same file (same ``st_dev``/``st_ino``, reached by a symbolic or hard
    link or by its own name) is refused. ``named``: the output paths the user gave; only
    those may be symbolic links (followed, the link kept); a derived file (a manifest, a
    table beside ``--out``, a lock) that is a link leads to a file this command did not
    create and is refused.
    """
    identities: dict[tuple[int, int], str] = {}
    for label, file in inputs.items():
        with contextlib.suppress(OSError, ValueError):
            info = os.stat(file)
            if stat.S_ISREG(info.st_mode):
                identities.setdefault((info.st_dev, info.st_ino), label)
    saved = (_Run.inputs, _Run.named)
    _Run.inputs, _Run.named = identities, frozenset(os.path.abspath(p) for p in named)
    try:
        yield
    finally:
        _Run.inputs, _Run.named = saved


def add_run_inputs(inputs: Mapping[str, str | Path]) -> None:
    """Add files a command reads that its flags do not name (a sweep's data sets, a train config's data)."""
    if _Run.inputs is None:
        return
    for label, file in inputs.items():
        with contextlib.suppress(OSError, ValueError):
            info = os.stat(file)
            if stat.S_ISREG(info.st_mode):
                _Run.inputs.setdefault((info.st_dev, info.st_ino), label)


def _check_links(path: Path, where: str, info: os.stat_result, linked: bool, append: bool) -> None:
    """The link rule: never write into an input of this run, or through a link to a file not ours."""
    if _Run.inputs is not None and (info.st_dev, info.st_ino) in _Run.inputs:
        how = "a symbolic link to" if linked else ("a hard link to" if info.st_nlink > 1 else "the same file as")
        raise OutputError(f"{where}: is {how} {_Run.inputs[info.st_dev, info.st_ino]}, an input of this run, "
                          "which writing would destroy; choose another path")
    if linked and _Run.inputs is not None and os.path.abspath(path) not in _Run.named:
        raise OutputError(f"{where}: is a symbolic link to {path.resolve()}, a file this command did not create "
                          "(evenhand writes files beside an output only as plain files); remove the link or "
                          "choose another output path")
    if append and info.st_nlink > 1:
        raise OutputError(f"{where}: has {info.st_nlink} hard links, so appending would change the file under its "
                          "other names too; copy it (cp, not ln) or choose another path")


def check_output_path(path: str | Path, flag: str = "", append: bool = False) -> Path:
    """Raise OutputError unless ``path`` can be written as a regular file; return the path to write.

    Allowed: a missing file whose nearest existing ancestor is a writable
    directory, an existing regular file, or a symlink to a regular file (the
    returned path is then the link's target, which is what gets replaced, so
    the link keeps pointing at the new content). ``append``: the file is
    appended to in place, so it must itself be writable, and have no other
    hard link. Within :func:`run_files` (every CLI command), an output that is
    an input of the run, or a derived output that is a symbolic link, is refused.
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
    linked = False
    if info is not None and stat.S_ISLNK(info.st_mode):
        try:
            real = path.stat()
        except OSError:
            raise OutputError(f"{where}: is a symlink to a missing path; {fix}") from None
        if not stat.S_ISREG(real.st_mode):
            raise OutputError(f"{where}: is a symlink to {_kind(real.st_mode)}; {fix}")
        target, info, linked = path.resolve(), real, True
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise OutputError(f"{where}: is {_kind(info.st_mode)}; {fix}")
    if info is not None:
        _check_links(path, where, info, linked, append)
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
        if path is not None and Path(path).exists() and (
            Path(path).resolve() == target or (target.exists() and os.path.samefile(path, target))
        ):
            raise DataError(f"{flag} {out} is the {name} file; write the results to another path")
