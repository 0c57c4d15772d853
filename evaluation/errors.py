"""The error types of bad input and unsafe output, raised by every layer and printed by the CLI as one line.

A :class:`DataError` names where (file, line or index), which field and the fix;
the CLI prints it as one line and exits with status 2. :class:`OutputError` is
the DataError of an output that cannot be written safely.
"""

from __future__ import annotations

from collections.abc import Iterator


class DataError(ValueError):
    """Bad input data. The message names where (file, line or index) and which field."""


class OutputError(DataError):
    """An output that cannot be written safely (not a regular file, locked, disk full...)."""


class IgnoredOptionWarning(UserWarning):
    """An option (or input file) the user gave that has no effect in the chosen mode, or is skipped; the CLI
    always shows it, as one line, with or without ``-v``."""


def error_chain(err: BaseException) -> Iterator[BaseException]:
    """``err``, then the error it was raised from or while handling (``__cause__``, else ``__context__``),
    and so on, each once (a chain may loop)."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
