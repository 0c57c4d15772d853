"""JSONL files: records read with errors naming file:line, and written atomically.

Each line is read through :func:`~evenhand.evaluation.io.parsing.parse_json`
(no NaN, no lone surrogates, bounded nesting); :func:`write_jsonl` replaces the
file whole (:mod:`.atomic`). Appending results that resume after a kill is
:mod:`.resumable`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import DataError
from .atomic import atomic_open
from .parsing import parse_json
from .utf8 import read_utf8


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for each non-empty line; bad JSON raises naming file:line.

    Each line goes through :func:`~evenhand.evaluation.io.parsing.parse_json`: no NaN,
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


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``rows`` to ``path`` atomically (temporary file + rename)."""
    with atomic_open(path) as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return Path(path)
