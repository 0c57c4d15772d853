"""CSV tables written atomically, with cells a spreadsheet would run as formulas escaped."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .atomic import atomic_open

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
