"""Result files: JSONL reading, atomic whole-file writes (JSONL, JSON, CSV), resumable appends.

``atomic_open`` (and ``write_jsonl``, ``write_json``, ``write_csv`` on it) writes a
temporary file and renames it over the target, so a reader never sees half a file.
``ResumableJsonl`` appends one record per line,
flushed and fsync'ed per batch; on reopening it keeps the complete lines, drops
a half-written last line left by a kill, and reports which keys are done.
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

from evenhand.evaluation.schema import DataError, Example


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for each non-empty line; bad JSON raises naming file:line."""
    path = Path(path)
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if line.strip():
                try:
                    yield lineno, json.loads(line)
                except json.JSONDecodeError as err:
                    raise DataError(f"{path}:{lineno}: invalid JSON ({err.msg})") from None


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """All records of a JSONL file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    return [record for _, record in iter_jsonl(path)]


@contextlib.contextmanager
def atomic_open(path: str | Path, newline: str | None = None) -> Iterator[IO[str]]:
    """A text file handle whose content replaces ``path`` only when the block ends without error.

    The data goes to a temporary file beside ``path`` (flushed and fsync'ed), then
    renamed over it; on an exception the temporary file is removed and ``path``
    keeps its old content.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


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


def write_csv(
    path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None
) -> Path:
    """Write ``rows`` as CSV atomically; columns default to every key, in first-seen order.

    A row without some column leaves its cell empty.
    """
    columns = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    with atomic_open(path, newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)


def write_examples(path: str | Path, examples: Iterable[Example]) -> Path:
    """Examples in the generic JSONL format (readable by ``load_examples``)."""
    return write_jsonl(path, (ex.to_dict() for ex in examples))


class ResumableJsonl:
    """An append-only JSONL results file keyed by one field, safe to kill and resume.

    Args:
        path: the results file; created if missing.
        key: the record field identifying a finished item (default ``id``).
        resume: keep existing records (True) or start afresh (False).
    """

    def __init__(self, path: str | Path, key: str = "id", resume: bool = True) -> None:
        self.path = Path(path)
        self.key = key
        self.records: dict[Any, dict[str, Any]] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and self.path.exists():
            self._recover()
        else:
            write_jsonl(self.path, [])

    def _recover(self) -> None:
        good: list[dict[str, Any]] = []
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                good.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a half-written line from an interrupted run
        for row in good:
            self.records[row[self.key]] = row
        if not raw.endswith(b"\n") and raw:
            write_jsonl(self.path, good)  # drop the torn tail

    def done(self, key: Any) -> bool:
        """Whether a record with this key is already stored."""
        return key in self.records

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append rows and fsync, so a kill after this call loses none of them."""
        rows = [dict(r) for r in rows]
        with self.path.open("a", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        for row in rows:
            self.records[row[self.key]] = row
