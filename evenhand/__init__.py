"""evenhand: fair, faithful and controllably abstractive summarization.

The public API, imported lazily (``import evenhand`` loads neither torch nor
transformers)::

    from evenhand import load_generator, load_examples, GenerateConfig, generate
    from evenhand import get_scorer, Reranker, RerankConfig, mint
    from evenhand import open_engine    # generate(open_engine("http://HOST:PORT/v1"), None, examples)

The layers themselves are ``evenhand.evaluation``, ``evenhand.decoding``,
``evenhand.rerank`` and ``evenhand.training``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evenhand.evaluation.lazy import lazy_attributes

if TYPE_CHECKING:  # what type checkers and IDEs see; _PUBLIC serves the same names at run time
    from evenhand.decoding.config import GenerateConfig as GenerateConfig
    from evenhand.decoding.engines.base import open_engine as open_engine
    from evenhand.decoding.engines.http import ServerClient as ServerClient
    from evenhand.decoding.engines.http import ServerConfig as ServerConfig
    from evenhand.decoding.generate import generate as generate
    from evenhand.decoding.models import load_generator as load_generator
    from evenhand.decoding.processors.abstractiveness import (
        AbstractivenessProcessor as AbstractivenessProcessor,
    )
    from evenhand.evaluation.data.loaders import load_examples as load_examples
    from evenhand.evaluation.data.schema import Document as Document
    from evenhand.evaluation.data.schema import Example as Example
    from evenhand.evaluation.errors import DataError as DataError
    from evenhand.evaluation.metrics.fragments import fragment_scores as fragment_scores
    from evenhand.evaluation.metrics.mint import mint as mint
    from evenhand.evaluation.scoring.calibration import Calibration as Calibration
    from evenhand.evaluation.scoring.registry import available as available
    from evenhand.evaluation.scoring.registry import get_scorer as get_scorer
    from evenhand.evaluation.scoring.registry import register as register
    from evenhand.evaluation.scoring.scorer import Scorer as Scorer
    from evenhand.evaluation.scoring.scorer import ScorerConfig as ScorerConfig
    from evenhand.rerank.reranker import RerankConfig as RerankConfig
    from evenhand.rerank.reranker import Reranker as Reranker
    from evenhand.training.config import DPORRConfig as DPORRConfig
    from evenhand.training.loop import train_dpo_rr as train_dpo_rr

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_PUBLIC = {
    "Example": "evenhand.evaluation.data.schema",
    "Document": "evenhand.evaluation.data.schema",
    "DataError": "evenhand.evaluation.errors",
    "load_examples": "evenhand.evaluation.data.loaders",
    "mint": "evenhand.evaluation.metrics.mint",
    "fragment_scores": "evenhand.evaluation.metrics.fragments",
    "Calibration": "evenhand.evaluation.scoring.calibration",
    "load_generator": "evenhand.decoding.models",
    "GenerateConfig": "evenhand.decoding.config",
    "open_engine": "evenhand.decoding.engines.base",
    "generate": "evenhand.decoding.generate",
    "AbstractivenessProcessor": "evenhand.decoding.processors.abstractiveness",
    "ServerClient": "evenhand.decoding.engines.http",
    "ServerConfig": "evenhand.decoding.engines.http",
    "get_scorer": "evenhand.evaluation.scoring.registry",
    "available": "evenhand.evaluation.scoring.registry",
    "register": "evenhand.evaluation.scoring.registry",
    "Scorer": "evenhand.evaluation.scoring.scorer",
    "ScorerConfig": "evenhand.evaluation.scoring.scorer",
    "Reranker": "evenhand.rerank.reranker",
    "RerankConfig": "evenhand.rerank.reranker",
    "DPORRConfig": "evenhand.training.config",
    "train_dpo_rr": "evenhand.training.loop",
}

__all__ = [  # the table's names, sorted (tests/test_layout.py checks)
    "AbstractivenessProcessor", "Calibration", "DPORRConfig", "DataError", "Document",
    "Example", "GenerateConfig", "RerankConfig", "Reranker", "Scorer", "ScorerConfig",
    "ServerClient", "ServerConfig", "available", "fragment_scores", "generate", "get_scorer",
    "load_examples", "load_generator", "mint", "open_engine", "register", "train_dpo_rr",
]
__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC)
