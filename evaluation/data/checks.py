"""The checks every input value goes through: numbers (finite, in range, bounded), JSON field types.

One helper per kind of check, used by every flag, config field, data format
and side file, so a NaN, an infinity, a huge count or a wrong JSON type gets
the same one-line error wherever it enters:

- :func:`check_number` / :func:`check_count`: a finite number (or an int) in
  a range with a sane upper bound; NaN and ±inf are refused wherever a finite
  number is needed, bools are never numbers.
- :func:`expect` / :func:`json_type`: a field of a given JSON type, the message
  naming the field and the type found.

Parsing the text itself (JSON without NaN or lone surrogates, YAML without
aliases, bounded nesting) is :mod:`evenhand.evaluation.io.parsing`. Every
failure is a :class:`~evenhand.evaluation.errors.DataError`, which the CLI
prints as one line and exits with status 2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

from ..errors import DataError

#: Upper bounds of counts: more is a typo (or a denial of service), never a useful setting.
LIMITS = {
    "candidates": 1024,
    "num_beams": 256,
    "max_new_tokens": 32768,
    "batch_size": 4096,
    "n_bootstrap": 1_000_000,
    "bootstrap": 1_000_000,
    "folds": 10_000,
    "max_concurrency": 1024,
    "top_k": 10_000_000,
    "no_repeat_ngram_size": 10_000,
    "fair_meaning_every": 100_000,
    "iterations": 100_000,
    "max_length": 1_000_000,
    "lora_r": 65_536,
}

#: Seeds users give are 32-bit unsigned ints (numpy's and torch's common range).
MAX_SEED = 2**32 - 1
#: Seeds derived from them (``seed + batch start``, ``seed + 7919 * recipe``) stay below torch's limit.
MAX_DERIVED_SEED = 2**63 - 1

_JSON_TYPES = {
    str: "a string", int: "an integer", float: "a number", bool: "true or false",
    list: "a list", dict: "an object", type(None): "null",
}


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type: ``string``, ``number``, ``list``, ``object``..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    if value is None:
        return "null"
    return type(value).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def expect(value: Any, types: type | tuple[type, ...], where: str, field: str, what: str = "") -> Any:
    """``value`` when it is one of ``types`` (a bool is no int or float), else DataError naming the field.

    Args:
        value: the field's value.
        types: allowed Python types (``str``, ``int``, ``float``, ``list``, ``dict``, ``type(None)``).
        where: where the value comes from (``data.jsonl:3``, ``amazon_gold.json[2]``).
        field: the field's name or JSON path (``documents[0].text``).
        what: how to describe the expected value; default from ``types``.
    """
    allowed = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in allowed:
        ok = False
    elif isinstance(value, int) and float in allowed:
        ok = True
    else:
        ok = isinstance(value, allowed)
    if not ok:
        want = what or " or ".join(_JSON_TYPES.get(t, t.__name__) for t in allowed)
        loc = f"{where}: " if where else ""
        raise DataError(f"{loc}`{field}` must be {want}, got {json_type(value)} ({_short(value)})")
    return value


def _num(x: float) -> str:
    """A bound as written: an int as an int (``9223372036854775807``, never ``9.22337e+18``), a float short."""
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"





def _describe(low: float | None, high: float | None, low_open: bool, high_open: bool, integer: bool) -> str:
    """``a positive int``, ``a non-negative float``, ``a float in (0, 1]``, ``a finite float``..."""
    kind = "int" if integer else "float"
    if high is not None and low is not None and high < 100:  # a small range: say it whole
        return f"{'an' if integer else 'a'} {kind} in {'(' if low_open else '['}{_num(low)}, {_num(high)}{')' if high_open else ']'}"
    if low is None:
        return "an int" if integer else "a finite float"
    if low == 0:
        return f"a {'positive' if low_open else 'non-negative'} {kind}"
    if low == 1 and integer and not low_open:
        return "a positive int"
    return f"{'an' if integer else 'a'} {kind} {'>' if low_open else '>='} {_num(low)}"


def check_number(
    value: Any, name: str, *, low: float | None = None, high: float | None = None,
    low_open: bool = False, high_open: bool = False, integer: bool = False,
    none_ok: bool = False, where: str = "",
) -> Any:
    """``value`` when it is a finite number (an int if ``integer``) within ``[low, high]``.

    NaN, ±inf, bools and strings raise DataError naming ``name`` (a flag such as
    ``--top-p`` as typed, a field such as ``learning_rate`` quoted), what it must
    be and the value (``learning_rate must be a positive float, got inf``). A
    value past the upper bound (a sane limit on counts) says so: ``--candidates
    must be at most 1024, got 100000``. ``low_open``/``high_open`` make a bound
    strict. None passes when ``none_ok``.
    """
    if value is None and none_ok:
        return None
    loc = f"{where}: " if where else ""
    if not (name.startswith("--") or "`" in name or " " in name):
        name = f"`{name}`"  # a field quoted, a flag as typed
    want = _describe(low, high, low_open, high_open, integer)
    ok_type = not isinstance(value, bool) and (
        isinstance(value, int) if integer else isinstance(value, (int, float))
    )
    if not ok_type or (isinstance(value, float) and not math.isfinite(value)):
        raise DataError(f"{loc}{name} must be {want}, got {_short(value)}")
    number = cast(float, value)  # an int or a finite float by now; ints compare exactly (no float rounding)
    if low is not None and (number < low or (low_open and number == low)):
        raise DataError(f"{loc}{name} must be {want}, got {_short(value)}")
    if high is not None and (number > high or (high_open and number == high)):
        if " in " in want:
            raise DataError(f"{loc}{name} must be {want}, got {_short(value)}")
        bound = f"below {_num(high)}" if high_open else f"at most {_num(high)}"
        raise DataError(f"{loc}{name} must be {bound}, got {_short(value)}")
    return value


def check_flags(config: Any, *names: str) -> None:
    """Fields of a config that must be true or false: ValueError naming the first that is not
    (``"yes"`` and ``1`` included), with its value."""
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, bool):
            raise ValueError(f"`{name}` must be true or false, got {value!r}")


def check_count(value: Any, name: str, *, low: int = 1, limit: str | None = None,
                high: int | None = None, none_ok: bool = False, where: str = "") -> Any:
    """An int in ``[low, high]``; ``high`` defaults to ``LIMITS[limit or name]`` (the sane upper bound)."""
    if high is None:
        key = limit or name.lstrip("-").replace("-", "_")
        high = LIMITS.get(key)
    return check_number(value, name, low=low, high=high, integer=True, none_ok=none_ok, where=where)


def check_seed(value: Any, name: str = "seed", where: str = "") -> int:
    """A seed: an int in ``[0, 2**32 - 1]``."""
    return check_number(value, name, low=0, high=MAX_SEED, integer=True, where=where)


def check_finite_list(values: Any, name: str, *, low: float | None = None, where: str = "") -> list[float]:
    """Each item a finite number (``>= low`` when given); the list of them."""
    return [check_number(v, f"{name}[{i}]", low=low, where=where) for i, v in enumerate(values)]

