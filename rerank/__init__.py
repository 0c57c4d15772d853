"""evenhand.rerank: scorer protocol and registry, scorers, reranker.

>>> from evenhand.rerank import get_scorer, available
>>> get_scorer("rouge-l-recall").score(["The cat sat on the mat."], ["The cat sat."])
[0.5]
"""

from ..evaluation.scoring.registry import available, get_scorer, register, scorer_class
from ..evaluation.scoring.scorer import Scorer, ScorerConfig, Source, as_example
from .reranker import RECIPES, RerankConfig, Reranker, select_best

__all__ = [
    "RECIPES", "Reranker", "RerankConfig", "Scorer", "ScorerConfig", "Source", "as_example",
    "available", "get_scorer", "register", "scorer_class", "select_best",
]
