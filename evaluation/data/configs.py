"""The one loader of dataclass configs: a mapping (a YAML file's) plus overrides, list fields typed.

Every config dataclass (``DPORRConfig``, ``RerankConfig``, a scorer's
``Config``...) declares its list-valued fields as ``list[X]`` (or
``list[X] | None``). For back-compat they accept a comma-separated string as
well: :func:`coerce_lists` (called first in each config's ``__post_init__``)
turns ``"a, b"`` and ``["a", "b"]`` into the same ``["a", "b"]``, and numbers
into ``X`` (``weights: list[float]``), with an error naming the field.

:func:`config_from_mapping` builds a config from a mapping whose unknown keys
are errors naming the key; :func:`load_config` reads a YAML file of fields and
lets ``overrides`` (command-line flags; None = not given) win over it. The CLI
side (``evenhand.args``) maps flags onto the same fields.

>>> from dataclasses import dataclass, field
>>> @dataclass
... class C:
...     names: list[str] = field(default_factory=list)
...     weights: list[float] | None = None
...     def __post_init__(self) -> None:
...         coerce_lists(self)
>>> C(names="a, b", weights="2,1") == C(names=["a", "b"], weights=[2.0, 1.0])
True
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

from .lists import split_list

T = TypeVar("T", bound="DataclassInstance")


@functools.cache
def list_fields(cls: type) -> dict[str, type]:
    """``{field: X}`` of every field of ``cls`` annotated ``list[X]`` or ``list[X] | None``, X str, int or float."""
    hints = typing.get_type_hints(cls)
    found: dict[str, type] = {}
    for f in dataclasses.fields(cls):
        annotation = hints[f.name]
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(annotation) if a is not type(None)]
            annotation = options[0] if len(options) == 1 else annotation
        if typing.get_origin(annotation) is list:
            (element,) = typing.get_args(annotation) or (str,)
            if element in (str, int, float):
                found[f.name] = element
    return found


def as_list(value: Any, name: str, element: type = str) -> list[Any] | None:
    """A comma-separated string or a list as a list of ``element``; None stays None.

    Raises ValueError naming ``name`` when an item is not an ``element``.
    """
    if value is None:
        return None
    if not isinstance(value, (str, list, tuple)):
        raise ValueError(f"`{name}` must be a list or a comma-separated string, got {value!r}")
    items = split_list(value, name, empty_ok=True)
    if element is str:
        return items
    try:
        return [element(item) for item in items]
    except (TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be {element.__name__} numbers (a list or comma-separated), got {value!r}"
            if element in (int, float)
            else f"`{name}` must be {element.__name__} values (a list or comma-separated), got {value!r}"
        ) from None


def coerce_lists(config: Any) -> None:
    """Turn every ``list[X]`` field of a dataclass instance given as a string or list into ``list[X]``."""
    for name, element in list_fields(type(config)).items():
        setattr(config, name, as_list(getattr(config, name), name, element))


def config_from_mapping(cls: type[T], values: Mapping[str, Any], where: str = "config") -> T:
    """``cls(**values)``; a key that is not a field raises ValueError naming it and the valid keys."""
    if not isinstance(values, Mapping):
        raise ValueError(f"{where}: expected a mapping of {cls.__name__} fields, got {type(values).__name__}")
    valid = [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(set(values) - set(valid))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; valid keys: {', '.join(valid)}")
    check_scalar_types(cls, values, where)
    return cls(**values)


def check_scalar_types(cls: type, values: Mapping[str, Any], where: str = "config") -> None:
    """Raise ValueError naming the field when a scalar field gets a value of another type.

    ``lora_dropout: high`` in a YAML file fails here with "`lora_dropout` must be
    float, got 'high'" instead of a TypeError deep in ``__post_init__``. An int
    is a valid float; a bool is neither int nor float. Fields of other types
    (lists, dicts, unions of them) are left to the config's own checks.
    """
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        annotation = hints.get(key)
        union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
        allowed = [a for a in (typing.get_args(annotation) if union else (annotation,)) if a is not type(None)]
        if value is None or not allowed or any(a not in (bool, int, float, str) for a in allowed):
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = any(
            (a is bool and isinstance(value, bool)) or (a is str and isinstance(value, str))
            or (a is int and number and isinstance(value, int)) or (a is float and number)
            for a in allowed
        )
        if not ok:
            names = " or ".join(getattr(a, "__name__", str(a)) for a in allowed)
            raise ValueError(f"{where}: `{key}` must be {names}, got {value!r}")


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """The top-level mapping of a YAML file (an empty file is ``{}``); anchors and aliases are refused."""
    from ..io.parsing import safe_yaml
    from ..io.utf8 import read_utf8

    path = Path(path)
    values = safe_yaml(read_utf8(path, "--config"), str(path)) or {}
    if not isinstance(values, dict):
        raise ValueError(f"{path}: expected a mapping of fields at the top level")
    return values


def load_config(cls: type[T], path: str | Path | None = None, **overrides: Any) -> T:
    """A config from a YAML file of fields (optional) and ``overrides`` (None = not given) over it."""
    values = read_yaml_mapping(path) if path is not None else {}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return config_from_mapping(cls, values, str(path) if path is not None else "config")


def normalized(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (a stored config dict) with its list fields as lists, for comparing old and new runs.

    A manifest written when list fields were comma strings compares equal to
    today's lists; keys that are not list fields are left as they are.
    """
    fields = list_fields(cls)
    out = dict(values)
    for name, element in fields.items():
        if name in out:
            try:
                out[name] = as_list(out[name], name, element)
            except ValueError:
                pass  # not comparable as a list: left as stored, so it counts as changed
    return out
