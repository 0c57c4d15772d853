"""Result files: JSONL reading, atomic whole-file writes (JSONL, JSON, CSV), resumable appends.

``atomic_open`` (and ``write_jsonl``, ``write_json``, ``write_csv`` on it) writes a
temporary file and renames it over the target, so a reader never sees half a file.
``ResumableJsonl`` appends one record per line,
flushed and fsync'ed per batch; on reopening it keeps the complete lines, drops
a half-written last line left by a kill, stops at a corrupt line in the middle,
refuses an output whose manifest (``<out>.manifest.json``: model, options, data
hash) differs, and reports which keys are done. ``write_csv`` escapes cells that
a spreadsheet would run as formulas. See ``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from .checks import parse_json
from .files import read_utf8
from .outputs import check_output_path, new_file_mode, write_errors
from .schema import DataError, Example


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for each non-empty line; bad JSON raises naming file:line.

    Each line goes through :func:`~evenhand.evaluation.checks.parse_json`: no NaN,
    no lone surrogates, bounded nesting.
    """
    path = Path(path)
    for lineno, line in enumerate(read_utf8(path).split("\n"), start=1):
        if line.strip():
            yield lineno, parse_json(line, f"{path}:{lineno}")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """All records of a JSONL file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    return [record for _, record in iter_jsonl(path)]


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


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``rows`` to ``path`` atomically (temporary file + rename)."""
    with atomic_open(path) as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return Path(path)


def write_json(path: str | Path, data: Any) -> Path:
    """Write one JSON document to ``path`` atomically, indented for people to read."""
    with atomic_open(path) as f:
        f.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    return Path(path)


#: First characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula (``=HYPERLINK(...)``), quoted with ``'``.

    Only strings are touched, and strings that are plain numbers (``-0.5``) are kept.
    """
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value


def write_csv(
    path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None
) -> Path:
    """Write ``rows`` as CSV atomically; columns default to every key, in first-seen order.

    A row without some column leaves its cell empty. Text cells (and headers)
    starting with ``= + - @`` are escaped with a leading ``'`` (``escape_cell``), so
    a summary or id cannot run as a formula when the CSV is opened in a spreadsheet.
    """
    columns = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    with atomic_open(path, newline="") as f:
        writer = csv.writer(f)
        writer.writerow([escape_cell(c) for c in columns])
        for row in rows:
            writer.writerow([escape_cell(row.get(c, "")) for c in columns])
    return Path(path)


def write_examples(path: str | Path, examples: Iterable[Example]) -> Path:
    """Examples in the generic JSONL format (readable by ``load_examples``)."""
    return write_jsonl(path, (ex.to_dict() for ex in examples))


def manifest_path(path: str | Path) -> Path:
    """The manifest beside a resumable output: ``<out>.manifest.json``."""
    path = Path(path)
    return path.with_name(path.name + ".manifest.json")


def backup_path(path: str | Path) -> Path:
    """Where ``--no-resume`` moves the previous output once the first new result is ready."""
    path = Path(path)
    return path.with_name(path.name + ".bak")


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in 1 MiB blocks."""
    import hashlib

    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def manifest_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``key old -> new`` for every (dotted) setting that differs between two manifests."""
    a = _flatten(json.loads(json.dumps(old)))
    b = _flatten(json.loads(json.dumps(new)))
    a.pop("force_resumed", None)
    return [f"{k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def check_output(out: str | Path, inputs: Mapping[str, str | Path | None], flag: str = "--out") -> None:
    """Raise DataError when the output ``out`` is one of the ``inputs`` (``{flag: path}``)."""
    target = Path(out).resolve()
    for name, path in inputs.items():
        if path is not None and Path(path).exists() and Path(path).resolve() == target:
            raise DataError(f"{flag} {out} is the {name} file; write the results to another path")


class ResumableJsonl:
    """An append-only JSONL results file keyed by one field, safe to kill and resume.

    Guarantees (``docs/reliability.md``):

    * appends are flushed and fsync'ed per call; a kill loses at most the line
      being written, whose torn tail the next run drops;
    * a *complete* line that is not a JSON record with ``key`` is corruption,
      not an interrupted write: resuming stops naming its line;
    * with a ``manifest`` (model identity, the options that change results, data
      hash) stored beside the file as ``<out>.manifest.json``, resuming refuses a
      file written with other settings (or without a manifest), naming what
      differs, unless ``force_resume``;
    * with ``resume=False`` the previous file (and manifest) stay untouched until
      the first new record is ready, and are then moved aside to ``<out>.bak``;
    * nothing is created before the first record.

    Args:
        path: the results file.
        key: the record field identifying a finished item (default ``id``).
        resume: keep existing records (True) or start afresh (False).
        manifest: what the results depend on; None skips the check (API use).
        force_resume: keep the records even when the manifest differs.
    """

    def __init__(
        self, path: str | Path, key: str = "id", resume: bool = True,
        manifest: Mapping[str, Any] | None = None, force_resume: bool = False,
    ) -> None:
        self.path = Path(path)
        for sibling in self.siblings(self.path):  # regular files only, before anything is read
            check_output_path(sibling, append=sibling == self.path)
        self.key = key
        self.manifest = json.loads(json.dumps(manifest)) if manifest is not None else None
        self.records: dict[Any, dict[str, Any]] = {}
        self._fresh = not (resume and self.path.exists())  # write the manifest (and move aside) first
        if not self._fresh:
            self._check_manifest(force_resume)
            self._recover()

    @staticmethod
    def siblings(path: str | Path) -> list[Path]:
        """Every file a resumable output may write, replace or remove: itself, its manifest, their backups."""
        path = Path(path)
        return [path, manifest_path(path), backup_path(path), backup_path(manifest_path(path))]

    def _check_manifest(self, force: bool) -> None:
        if self.manifest is None:
            return
        sidecar = manifest_path(self.path)
        hint = (
            "pass --no-resume to start afresh (the old file is kept as "
            f"{backup_path(self.path).name}) or --force-resume to keep its records anyway"
        )
        if not sidecar.is_file():
            if self.path.stat().st_size == 0:
                self._fresh = True
                return
            if not force:
                raise DataError(
                    f"{self.path}: has no manifest ({sidecar.name}), so its settings are unknown; {hint}"
                )
            stored: dict[str, Any] = {}
        else:
            try:
                stored = parse_json(read_utf8(sidecar), str(sidecar))
            except DataError as err:
                raise DataError(f"{err}; {hint}") from None
            if not isinstance(stored, dict):
                raise DataError(f"{sidecar}: must hold a JSON object of settings, got {type(stored).__name__}; {hint}")
        diff = manifest_diff(stored, self.manifest)
        if diff and not force:
            raise DataError(
                f"{self.path}: was written with other settings ({'; '.join(diff[:6])}"
                + (f"; and {len(diff) - 6} more" if len(diff) > 6 else "") + f"); {hint}"
            )
        if diff:
            stored.setdefault("force_resumed", []).append(self.manifest)
            write_json(sidecar, stored)

    def _recover(self) -> None:
        raw = self.path.read_bytes()
        *complete, tail = raw.split(b"\n")  # tail: b"" or a line torn by a kill
        good: list[dict[str, Any]] = []
        for lineno, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            where = f"{self.path}:{lineno}"
            fix = "fix or delete that line, or pass --no-resume to start afresh"
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                reason = getattr(err, "msg", "not UTF-8")
                raise DataError(f"{where}: corrupt line ({reason}) in the middle of the results; {fix}") from None
            if not isinstance(row, dict) or self.key not in row:
                raise DataError(f"{where}: record has no `{self.key}` field; {fix}")
            good.append(row)
        for row in good:
            self.records[row[self.key]] = row
        if tail:
            write_jsonl(self.path, good)  # drop the torn tail

    def done(self, key: Any) -> bool:
        """Whether a record with this key is already stored."""
        return key in self.records

    def _start(self) -> None:
        """Before the first new record: move a previous file aside, write the manifest."""
        if self.path.exists() and self.path.stat().st_size == 0:
            self.path.unlink()  # nothing to keep: do not let it replace an older backup
        if self.path.exists():
            os.replace(self.path, backup_path(self.path))
            if manifest_path(self.path).exists():
                os.replace(manifest_path(self.path), backup_path(manifest_path(self.path)))
        elif manifest_path(self.path).exists():
            manifest_path(self.path).unlink()  # a manifest without results describes nothing
        if self.manifest is not None:
            write_json(manifest_path(self.path), self.manifest)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fresh = False

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append rows and fsync, so a kill after this call loses none of them."""
        rows = [dict(r) for r in rows]
        if self._fresh:
            self._start()
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
        with write_errors(self.path, "the records written before are kept"):
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                size = os.fstat(fd).st_size
                try:
                    view = memoryview(text)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                except OSError:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, size)  # no torn batch: the file ends at its last complete record
                    raise
            finally:
                os.close(fd)
        for row in rows:
            self.records[row[self.key]] = row

