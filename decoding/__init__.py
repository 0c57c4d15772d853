"""evenhand.decoding: model loading, logits processors, beam search and generate().

Public names are imported lazily (``from evenhand.decoding import AbstractivenessProcessor``)
so that importing the package does not import torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "AbstractivenessProcessor": "evenhand.decoding.abstractiveness",
    "fragment_penalties": "evenhand.decoding.abstractiveness",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'decoding' has no attribute {name!r}")
