"""The checks every input goes through: numbers (finite, in range, bounded), JSON values, YAML text.

One helper per kind of check, used by every flag, config field, data format
and side file, so a NaN, an infinity, a huge count, a wrong JSON type, a lone
surrogate, a deeply nested document or a YAML alias bomb gets the same
one-line error wherever it enters:

- :func:`check_number` / :func:`check_count`: a finite number (or an int) in
  a range with a sane upper bound; NaN and ±inf are refused wherever a finite
  number is needed, bools are never numbers.
- :func:`parse_json`: ``json.loads`` that refuses NaN/Infinity constants,
  lone surrogates and nesting deeper than :data:`MAX_JSON_DEPTH`, naming
  ``where`` (file:line) and the JSON path.
- :func:`expect` / :func:`json_type`: a field of a given JSON type, the message
  naming the field and the type found.
- :func:`safe_yaml`: ``yaml.safe_load`` that refuses anchors and aliases (a
  1 KB file of nested aliases expands to gigabytes) before building anything,
  and keys given twice.

Every failure is a :class:`~evenhand.evaluation.schema.DataError`, which the
CLI prints as one line and exits with status 2.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, cast

from .schema import DataError

#: Deepest JSON/YAML nesting accepted in any input (the formats need 4 levels).
MAX_JSON_DEPTH = 64

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
    number = float(cast(float, value))  # an int or a finite float by now
    if low is not None and (number < low or (low_open and number == low)):
        raise DataError(f"{loc}{name} must be {want}, got {_short(value)}")
    if high is not None and (number > high or (high_open and number == high)):
        if " in " in want:
            raise DataError(f"{loc}{name} must be {want}, got {_short(value)}")
        bound = f"below {_num(high)}" if high_open else f"at most {_num(high)}"
        raise DataError(f"{loc}{name} must be {bound}, got {_short(value)}")
    return value


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


def _refuse_constant(name: str) -> float:
    raise ValueError(f"`{name}` is not valid JSON (write a number, or null)")


def _printable(key: Any) -> str:
    """A JSON key as it can be printed: a lone surrogate written as its escape (``\\ud800``)."""
    return str(key).encode("utf-8", "backslashreplace").decode("utf-8")


def _walk(value: Any, where: str, max_depth: int) -> None:
    """Refuse lone surrogates and nesting deeper than ``max_depth``, naming the JSON path."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth > max_depth:
            raise DataError(
                f"{where}: JSON nested deeper than {max_depth} levels (at `{path or '$'}`); "
                "no input format needs that"
            )
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as err:
                bad = item[err.start]
                raise DataError(
                    f"{where}: `{path or '$'}` holds a lone surrogate (\\u{ord(bad):04x}), which "
                    "is not valid Unicode; fix the escape in the file"
                ) from None
        elif isinstance(item, Mapping):
            for k, v in item.items():
                name = f"{path}.{_printable(k)}" if path else _printable(k)
                if isinstance(k, str):
                    stack.append((k, name, depth + 1))  # keys too
                stack.append((v, name, depth + 1))
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item))


def check_json_value(value: Any, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``value`` (already parsed) once its strings are valid Unicode and its nesting bounded."""
    _walk(value, where, max_depth)
    return value


def parse_json(
    text: str | bytes, where: str, max_depth: int = MAX_JSON_DEPTH, nan_ok: bool = False
) -> Any:
    """Parse one JSON document; every problem is a DataError naming ``where``.

    Refused: invalid JSON (with its line when ``text`` spans lines), the
    non-standard constants ``NaN``/``Infinity``, nesting deeper than
    ``max_depth`` (no RecursionError) and lone surrogates (``"\\ud800"``, which
    no UTF-8 file can hold and every writer would fail on later). ``nan_ok``
    accepts ``NaN`` (files evenhand wrote itself with undefined metrics).
    """
    try:
        value = json.loads(text) if nan_ok else json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        line = f" at line {err.lineno}" if "\n" in (text if isinstance(text, str) else "") else ""
        raise DataError(f"{where}: invalid JSON{line} ({err.msg})") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply to read; no input format needs that") from None
    except ValueError as err:  # NaN / Infinity, or bytes that are not UTF-8
        raise DataError(f"{where}: {err}") from None
    return check_json_value(value, where, max_depth)


class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key, self.line = key, line


def _unique_key_loader() -> type:
    """``yaml.SafeLoader`` refusing a key given twice in one mapping (YAML keeps the last silently)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, (str, int, float, bool)):
                    continue  # unhashable keys: left to the field checks
                if key in seen:
                    raise _DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def safe_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load`` of ``text`` after refusing anchors and aliases (``&a``, ``*a``).

    Aliases let a 1 KB file expand to billions of nodes ("billion laughs");
    configs never need them. The check walks the parser's event stream, which
    is linear in the text, before anything is built. A key given twice in one
    mapping (YAML would keep the last one silently), lone surrogates, nesting
    deeper than :data:`MAX_JSON_DEPTH` and invalid YAML raise DataError naming
    ``where`` (and the line).
    """
    import yaml

    _UniqueKeyLoader = _unique_key_loader()
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = event.start_mark.line + 1
                raise DataError(
                    f"{where}:{line}: YAML anchors and aliases (&name, *name) are not accepted; "
                    "write the values out"
                )
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_JSON_DEPTH:
                    line = event.start_mark.line + 1
                    raise DataError(f"{where}:{line}: YAML nested deeper than {MAX_JSON_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        value = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as err:
        raise DataError(f"{where}:{err.line}: key {err.key!r} appears twice; keep one") from None
    except yaml.YAMLError as err:
        raise DataError(f"{where}: not valid YAML ({' '.join(str(err).split())})") from None
    except RecursionError:
        raise DataError(f"{where}: YAML nested too deeply to read") from None
    return check_json_value(value, where)  # "\ud800" escapes: a lone surrogate, named
