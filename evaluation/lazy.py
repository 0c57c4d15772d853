"""Lazy package attributes: public names resolved from their modules on first access.

Packages use it so that importing them does not import torch or transformers::

    __getattr__, __dir__ = lazy_attributes(__name__, {"mint": "evenhand.evaluation.metrics.mint"})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module-level ``__getattr__`` and ``__dir__`` serving ``names`` (public name -> module)."""
    import sys

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
