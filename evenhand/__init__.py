"""evenhand: fair, faithful and controllably abstractive summarization.

The public API, imported lazily (``import evenhand`` loads neither torch nor
transformers)::

    from evenhand import load_generator, load_examples, GenerateConfig, generate
    from evenhand import get_scorer, Reranker, RerankConfig, mint
    from evenhand import ServerClient   # generate(ServerClient("http://HOST:PORT/v1"), None, examples)

The layers themselves are ``evenhand.evaluation``, ``evenhand.decoding``,
``evenhand.rerank`` and ``evenhand.training``.
"""

from __future__ import annotations

from evenhand.evaluation.lazy import lazy_attributes

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_PUBLIC = {
    "Example": "evenhand.evaluation.schema",
    "Document": "evenhand.evaluation.schema",
    "DataError": "evenhand.evaluation.schema",
    "load_examples": "evenhand.evaluation.loaders",
    "mint": "evenhand.evaluation.mint",
    "fragment_scores": "evenhand.evaluation.fragments",
    "Calibration": "evenhand.evaluation.calibration",
    "load_generator": "evenhand.decoding.models",
    "GenerateConfig": "evenhand.decoding.generate",
    "generate": "evenhand.decoding.generate",
    "AbstractivenessProcessor": "evenhand.decoding.abstractiveness",
    "ServerClient": "evenhand.decoding.server",
    "ServerConfig": "evenhand.decoding.server",
    "get_scorer": "evenhand.evaluation.registry",
    "available": "evenhand.evaluation.registry",
    "register": "evenhand.evaluation.registry",
    "Scorer": "evenhand.evaluation.scorer",
    "ScorerConfig": "evenhand.evaluation.scorer",
    "Reranker": "evenhand.rerank.reranker",
    "RerankConfig": "evenhand.rerank.reranker",
    "DPORRConfig": "evenhand.training.config",
    "train_dpo_rr": "evenhand.training.loop",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC)
