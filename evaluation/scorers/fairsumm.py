"""``fairsumm``: FairSumm BUR/UER/SOF/AUC with the N-gram matching target (Zhang et al. 2024).

Per summary: its UER, whether it is unfair, its AUC and how many groups it
covers; over the corpus (:meth:`FairSumm.aggregate`): BUR, UER and SOF as the
paper defines them (corpus statistics, not means), the mean AUC, and BUR over
the summaries that cover two or more groups. The per-summary score is −UER
(higher is fairer, 0 at best).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from evenhand.evaluation.registry import register
from evenhand.evaluation.schema import DataError, Example
from evenhand.evaluation.scorer import MetricScorer

Row = dict[str, Any]


@lru_cache(maxsize=64)
def _group_profile(
    groups: tuple[tuple[str, str], ...],
) -> tuple[dict[str, int], dict[str, frozenset]]:
    from evenhand.evaluation.fairsumm import group_profile

    return group_profile(dict(groups))


def fairsumm_row(example: Example, summary: str) -> Row:
    """The ``fairsumm`` columns of one summary, plus ``_fairsumm`` (its SampleFairness) for the corpus."""
    from evenhand.evaluation.fairsumm import auc, ngram_target, sample_fairness
    from evenhand.evaluation.text import fairsumm_tokens

    missing = [i for i, d in enumerate(example.documents) if d.group is None]
    if missing:
        raise DataError(
            f"example {example.id!r}: documents {missing[:5]} have no `group`; "
            "fairsumm needs a group label on every document"
        )
    groups = example.group_texts(" ")
    if len(groups) < 2:
        raise DataError(
            f"example {example.id!r}: fairsumm needs at least two groups (attribute values), "
            f"got {list(groups)}; give `group_values` or documents from two groups"
        )
    counts, vocab = _group_profile(tuple(groups.items()))
    if sum(counts.values()) == 0:
        raise DataError(f"example {example.id!r}: the documents have no content words for fairsumm")
    target = ngram_target(vocab, fairsumm_tokens(summary))
    result = sample_fairness(counts, target)
    return {
        "fairsumm_uer": result.uer,
        "fairsumm_unfair": float(result.unfair),
        "fairsumm_auc": auc(counts, target),
        "fairsumm_groups": float(sum(c > 0 for c in counts.values())),
        "_fairsumm": result,
    }


@register("fairsumm")
class FairSumm(MetricScorer):
    """FairSumm BUR/UER/SOF/AUC (Zhang et al. 2024); score: −UER (higher is fairer)."""

    detail_fields = ("fairsumm_uer", "fairsumm_unfair", "fairsumm_auc", "fairsumm_groups")

    def rows(self, examples: list[Example], summaries: list[str]) -> list[Row]:
        return [fairsumm_row(ex, s) for ex, s in zip(examples, summaries)]

    def score_of(self, row: Row) -> float:
        return 0.0 - row["fairsumm_uer"]

    def aggregate(self, records: list[Row]) -> dict[str, float]:
        """BUR, UER and SOF over the corpus, the mean AUC, and BUR over multi-group summaries."""
        from evenhand.evaluation.fairsumm import corpus_fairness

        corpus = corpus_fairness([r["_fairsumm"] for r in records])
        multi = [r["fairsumm_unfair"] for r in records if r["fairsumm_groups"] >= 2]
        return {
            "fairsumm_bur": corpus.bur,
            "fairsumm_uer": corpus.uer,
            "fairsumm_sof": corpus.sof,
            "fairsumm_auc": float(np.mean([r["fairsumm_auc"] for r in records])),
            "fairsumm_bur_multigroup": float(np.mean(multi)) if multi else 0.0,
        }
