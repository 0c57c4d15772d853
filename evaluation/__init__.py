"""evenhand.evaluation: data schema, loaders and the field's metrics.

This package imports nothing else of ours (see DEVELOPERS.md layout).
"""

from evenhand.evaluation import coverage, factuality, fairsumm, fragments, ranking
from evenhand.evaluation.fragments import FragmentScores, fragment_scores
from evenhand.evaluation.mint import MintScore, mean_mint, mint, mint_tokens

__all__ = [
    "FragmentScores",
    "MintScore",
    "coverage",
    "factuality",
    "fairsumm",
    "fragment_scores",
    "fragments",
    "mean_mint",
    "mint",
    "mint_tokens",
    "ranking",
]
