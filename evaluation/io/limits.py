"""Size bounds on what evenhand reads, checked before any tokenizer or model sees it.

* a file: at most ``EVENHAND_MAX_FILE_MB`` MiB (default 1024), checked by
  ``evaluation.io.utf8.read_utf8`` from the file's size before it is read;
* a text (an example's documents together, a summary, a reference): at most
  ``EVENHAND_MAX_TEXT_CHARS`` characters (default 1,000,000: spaCy's limit and
  far beyond any model's context), so a 50 MB one-line document is refused in
  one line instead of crashing a tokenizer or running for hours;
* a text must show something: one made only of invisible characters (zero-width
  space, joiners, word joiner, byte-order mark, soft hyphen) counts as empty, and
  two ids that differ only by such characters are one id (they print the same).

See ``docs/reliability.md`` ("Input limits").
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataError

FILE_ENV = "EVENHAND_MAX_FILE_MB"
TEXT_ENV = "EVENHAND_MAX_TEXT_CHARS"
DEFAULT_FILE_MB = 1024
DEFAULT_TEXT_CHARS = 1_000_000

#: characters that take no room on screen: a text of only these is empty, an id differing by them is the same
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u2061\u2062\u2063\u2064"
_DROP_INVISIBLE = str.maketrans("", "", INVISIBLE)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise DataError(f"environment variable {name}={raw!r}: must be a positive integer; unset it for "
                        f"the default {default:,}")
    return value


def max_text_chars() -> int:
    """The most characters one text may hold (``EVENHAND_MAX_TEXT_CHARS``, default 1,000,000)."""
    return _env_int(TEXT_ENV, DEFAULT_TEXT_CHARS)


def max_file_bytes() -> int:
    """The largest input file in bytes (``EVENHAND_MAX_FILE_MB`` MiB, default 1024)."""
    return _env_int(FILE_ENV, DEFAULT_FILE_MB) * 1024 * 1024


def check_text_size(text: str, where: str, field: str) -> None:
    """Raise DataError when ``text`` is longer than :func:`max_text_chars`, naming ``where`` and ``field``."""
    limit = max_text_chars()
    if len(text) > limit:
        raise DataError(
            f"{where}: `{field}` holds {len(text):,} characters, more than the limit of {limit:,}; split it, "
            f"or raise the limit with {TEXT_ENV}"
        )


def check_file_size(path: str | Path, given: str = "") -> None:
    """Raise DataError when the file at ``path`` is larger than :func:`max_file_bytes`."""
    limit = max_file_bytes()
    try:
        size = Path(path).stat().st_size
    except OSError:
        return
    if size > limit:
        raise DataError(
            f"{path}: {size / 2**20:,.0f} MiB{given}, more than the limit of {limit // 2**20:,} MiB; split "
            f"it, or raise the limit with {FILE_ENV}"
        )


def visible(text: str) -> str:
    """``text`` without its invisible characters (for emptiness and id comparisons)."""
    return text.translate(_DROP_INVISIBLE)


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only whitespace and invisible characters."""
    return not visible(text).strip()
