"""evenhand.evaluation: data schema, loaders and the field's metrics.

This package imports nothing else of ours (see DEVELOPERS.md layout). Its rooms,
each importing only the ones listed before it:

- :mod:`.errors`, :mod:`.lazy`: the error types every layer raises; lazy package attributes;
- :mod:`.io`: atomic writes and folder commits, JSONL/JSON/CSV files, locks, digests, output checks;
- :mod:`.data`: the schema, loaders, input checks, config loading (and the FairSumm word tables);
- :mod:`.text`: tokenizers, sentence splitting, FairSumm's word processing;
- :mod:`.metrics`: MINT, fragments, FairSumm, coverage, factuality, ranking, bootstrap, meta-evaluation;
- :mod:`.scoring`: the scorer protocol and registry, the metrics as scorers, calibration, reports.
"""

from .metrics import corpus, coverage, factuality, fairsumm, fragments, ranking
from .metrics.corpus import PairCorpus, fragment_scores_corpus, mint_corpus
from .metrics.fragments import FragmentScores, fragment_scores
from .metrics.mint import MintScore, mean_mint, mint, mint_tokens

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
