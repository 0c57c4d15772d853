"""evenhand.evaluation: data schema, loaders and the field's metrics.

This package imports nothing else of ours (see DEVELOPERS.md layout).
"""

from . import corpus, coverage, factuality, fairsumm, fragments, ranking
from .corpus import PairCorpus, fragment_scores_corpus, mint_corpus
from .fragments import FragmentScores, fragment_scores
from .mint import MintScore, mean_mint, mint, mint_tokens

__all__ = [
    "FragmentScores",
    "MintScore",
    "PairCorpus",
    "corpus",
    "coverage",
    "factuality",
    "fairsumm",
    "fragment_scores",
    "fragment_scores_corpus",
    "fragments",
    "mean_mint",
    "mint",
    "mint_corpus",
    "mint_tokens",
    "ranking",
]
