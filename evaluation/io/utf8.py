"""Reading user files as UTF-8 text, with errors that name the file, line and fix."""

from __future__ import annotations

from pathlib import Path

from ..errors import DataError


def read_utf8(path: str | Path, flag: str = "") -> str:
    """The text of ``path``; a missing file or bytes that are not UTF-8 raise a one-line DataError.

    A leading UTF-8 byte-order mark is dropped, so a JSON, JSONL or YAML file saved
    "with BOM" reads like one without.

    Args:
        path: the file to read.
        flag: the option that named the file (``--data``), quoted in the messages.
    """
    path = Path(path)
    given = f" (given to {flag})" if flag else ""
    if not path.is_file():
        raise DataError(f"{path}: no such file{given}; check the path")
    from .limits import check_file_size

    check_file_size(path, given)  # before reading: a bound on memory and time
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
        return text[1:] if text.startswith("\ufeff") else text  # a byte-order mark (Windows editors)
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[err.start]:02x}){given}; "
            "save the file as UTF-8"
        ) from None
