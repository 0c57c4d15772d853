"""evenhand.decoding: model loading, logits processors, beam search and generate().

Public names are imported lazily (``from evenhand.decoding import AbstractivenessProcessor``)
so that importing the package does not import torch or transformers.
"""

from __future__ import annotations

from evenhand.evaluation.lazy import lazy_attributes

_LAZY = {
    "AbstractivenessProcessor": "evenhand.decoding.abstractiveness",
    "fragment_penalties": "evenhand.decoding.abstractiveness",
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
