"""Atomic writes: a file or a folder replaces its target whole, or the target keeps its old content.

atomic_open (and atomic_write_bytes) writes a temporary file beside the
target, flushed and fsync'ed, and renames it over the target, so a reader never
sees half a file. atomic_folder fills a temporary sibling folder and renames
it into place, so the folder exists only when complete. Every writer of
evenhand (result tables, manifests, plots, training iterations) goes through
these. See ``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .output_checks import check_output_path, write_errors


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


@contextlib.contextmanager
def atomic_open(path: str | Path, newline: str | None = None) -> Iterator[IO[str]]:
    """A text file handle whose content replaces ``path`` only when the block ends without error.

    ``path`` must be a regular file, a symlink to one (its target is replaced)
    or absent (``check_output_path``); anything else raises OutputError before
    a byte is written. The data goes to a temporary file beside it (flushed
    and fsync'ed), then renamed over it; on an exception the temporary file is
    removed and ``path`` keeps its old content. The new file gets the old
    file's mode, or 0o666 minus the umask. A write that fails for lack of
    space (or quota, or a read-only file system) raises OutputError naming ``path``.
    """
    with _atomic_file(path, "w", newline) as f:
        yield f


@contextlib.contextmanager
def _atomic_file(path: str | Path, how: str, newline: str | None = None) -> Iterator[IO[Any]]:
    """``atomic_open``'s mechanism for text (``how="w"``) or bytes (``"wb"``)."""
    path = check_output_path(path)
    mode = new_file_mode(path)
    with write_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with write_errors(path):
            os.fchmod(fd, mode)
        f = os.fdopen(fd, how, encoding="utf-8", newline=newline) if how == "w" else os.fdopen(fd, how)
        with f:
            yield f
            with write_errors(path):
                f.flush()
                os.fsync(f.fileno())
        with write_errors(path):
            check_output_path(path)  # still a regular file (or absent) at the moment it is replaced
            os.replace(tmp, path)
    except OSError as err:
        raise_write_error(path, err)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def raise_write_error(path: Path, err: OSError) -> None:
    """Re-raise ``err`` as an OutputError naming ``path`` when it is a write failure (disk full...)."""
    with write_errors(path):
        raise err


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically (an image, say), like ``atomic_open``."""
    target = check_output_path(path)
    with _atomic_file(target, "wb") as f:
        f.write(data)
    return target


def foreign_entry(folder: Path) -> Path | None:
    """The first entry under ``folder`` that is not a regular file or a real folder (a link, a FIFO...), else None.

    Replacing or removing a folder of ours deletes only those two kinds: a
    symlink (whose target is someone else's) or a device is never deleted.
    """
    for entry in sorted(folder.iterdir()):
        mode = entry.lstat().st_mode
        if stat.S_ISDIR(mode):
            found = foreign_entry(entry)
            if found is not None:
                return found
        elif not stat.S_ISREG(mode):
            return entry
    return None


def remove_folder(folder: Path) -> None:
    """Remove ``folder``: its regular files and real folders only (OutputError naming anything else, first)."""
    from ..errors import OutputError

    found = foreign_entry(folder)
    if found is not None:
        raise OutputError(f"{found}: not a regular file or folder, so not removed; move it out of {folder}")
    for entry in sorted(folder.iterdir()):
        if stat.S_ISDIR(entry.lstat().st_mode):
            remove_folder(entry)
        else:
            entry.unlink()
    folder.rmdir()


@contextlib.contextmanager
def atomic_folder(folder: str | Path, prefix: str | None = None) -> Iterator[Path]:
    """A temporary sibling folder to fill; it replaces ``folder`` whole when the block ends without error.

    The temporary folder (``prefix`` + random beside ``folder``; by default
    ``.<name>.tmp-XXXX``, mode 0o755) is renamed into place: an existing
    ``folder`` (an earlier or unfinished one) is first renamed aside, then
    removed once the new one is in place, so nothing of the old one stays
    beside the new files. Only regular files and real folders are removed
    (``remove_folder``): an existing ``folder`` holding anything else (a link,
    a FIFO) raises OutputError before the block runs. On an exception the
    temporary folder is removed and ``folder`` is left as it was. Write its
    files with the atomic writers of this package.
    """
    from ..errors import OutputError

    folder = Path(folder)
    if folder.is_symlink():
        folder = folder.resolve()  # a link to a folder: its target is the output
    if folder.is_dir():
        found = foreign_entry(folder)
        if found is not None:
            raise OutputError(f"{found}: not a regular file or folder; replacing {folder} would delete it: move it "
                              "out, or give another folder")
    with write_errors(folder):
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=prefix or f".{folder.name}.tmp-", dir=folder.parent))
    try:
        tmp.chmod(0o755)
        yield tmp
        with write_errors(folder):
            if folder.exists():
                aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
                os.replace(folder, aside)  # onto the empty folder just made
                os.replace(tmp, folder)
                remove_folder(aside)
            else:
                os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)  # our own temporary folder, never a user's
