"""JSON and YAML text parsed safely: every problem a one-line DataError naming the file and line.

- :func:`parse_json`: ``json.loads`` that refuses NaN/Infinity constants,
  lone surrogates and nesting deeper than :data:`MAX_JSON_DEPTH`, naming
  ``where`` (file:line) and the JSON path.
- :func:`safe_yaml`: ``yaml.safe_load`` that refuses anchors and aliases (a
  1 KB file of nested aliases expands to gigabytes) before building anything,
  and keys given twice.

The checks of the values inside (numbers, field types) are
:mod:`evenhand.evaluation.data.checks`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import DataError

#: Deepest JSON/YAML nesting accepted in any input (the formats need 4 levels).
MAX_JSON_DEPTH = 64


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
