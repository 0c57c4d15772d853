"""The error types of bad input and unsafe output, raised by every layer and printed by the CLI as one line.

A :class:`DataError` names where (file, line or index), which field and the fix;
the CLI prints it as one line and exits with status 2. :class:`OutputError` is
the DataError of an output that cannot be written safely.
"""

from __future__ import annotations


class DataError(ValueError):
    """Bad input data. The message names where (file, line or index) and which field."""


class OutputError(DataError):
    """An output that cannot be written safely (not a regular file, locked, disk full...)."""


class IgnoredOptionWarning(UserWarning):
    """An option (or input file) the user gave that has no effect in the chosen mode, or is skipped; the CLI
    always shows it, as one line, with or without ``-v``."""
