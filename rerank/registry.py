"""The scorer registry lives in :mod:`evenhand.evaluation.registry`; re-exported here.

``from evenhand.rerank.registry import register, get_scorer`` keeps working.
"""

from ..evaluation.registry import (
    UnknownScorerError,
    available,
    check_names,
    get_scorer,
    is_registered,
    register,
    scorer_class,
    split_name,
    unregister,
)

__all__ = [
    "UnknownScorerError", "available", "check_names", "get_scorer", "is_registered", "register",
    "scorer_class", "split_name", "unregister",
]
