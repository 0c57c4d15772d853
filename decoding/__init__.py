"""evenhand.decoding: model loading, logits processors, beam search and generate().

Public names are imported lazily (``from evenhand.decoding import AbstractivenessProcessor``)
so that importing the package does not import torch or transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..evaluation.lazy import lazy_attributes

if TYPE_CHECKING:  # what type checkers and IDEs see; _LAZY serves the same names at run time
    from .processors.abstractiveness import AbstractivenessProcessor as AbstractivenessProcessor
    from .processors.abstractiveness import fragment_penalties as fragment_penalties

_LAZY = {
    "AbstractivenessProcessor": "evenhand.decoding.processors.abstractiveness",
    "fragment_penalties": "evenhand.decoding.processors.abstractiveness",
}

__all__ = [  # the table's names, sorted (tests/test_layout.py checks)
    "AbstractivenessProcessor", "fragment_penalties",
]
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
