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

from ..registry import register
from ..schema import DataError, Example
from ..scorer import MetricConfig, MetricScorer

Row = dict[str, Any]


@lru_cache(maxsize=64)
def _group_profile(
    groups: tuple[tuple[str, str], ...],
) -> tuple[dict[str, int], dict[str, frozenset]]:
    from ..fairsumm import group_profile

    return group_profile(dict(groups))


def check_groups(example: Example, metric: str = "fairsumm") -> dict[str, str]:
    """The example's per-value texts (documents joined by a space); DataError without two groups."""
    missing = [i for i, d in enumerate(example.documents) if d.group is None]
    if missing:
        raise DataError(
            f"example {example.id!r}: documents {missing[:5]} have no `group`; "
            f"{metric} needs a group label on every document"
        )
    groups = example.group_texts(" ")
    if len(groups) < 2:
        raise DataError(
            f"example {example.id!r}: {metric} needs at least two groups (attribute values), "
            f"got {list(groups)}; give `group_values` or documents from two groups"
        )
    return groups


def source_profile(example: Example, metric: str = "fairsumm") -> tuple[dict[str, int], dict[str, frozenset]]:
    """Per value its N-gram source count and content-token set (cached); DataError on bad groups.

    Every FairSumm variant (N-gram, BERTScore, BARTScore) keeps this source
    distribution; only the target changes (the authors' ``metrics/eval.py``).
    """
    groups = check_groups(example, metric)
    counts, vocab = _group_profile(tuple(groups.items()))
    if sum(counts.values()) == 0:
        raise DataError(f"example {example.id!r}: the documents have no content words for {metric}")
    return counts, vocab


def distribution_row(prefix: str, counts: dict[str, int], target: Any) -> Row:
    """The columns of one summary from its source counts and target distribution.

    ``<prefix>_uer``, ``_unfair``, ``_auc`` (over cutoffs), ``_groups`` (values with
    source content), and ``_fairsumm``: the SampleFairness as a JSON-able dict for
    the corpus aggregate (:func:`corpus_of`).
    """
    from ..fairsumm import auc, sample_fairness

    result = sample_fairness(counts, target)
    return {
        f"{prefix}_uer": result.uer,
        f"{prefix}_unfair": float(result.unfair),
        f"{prefix}_auc": auc(counts, target),
        f"{prefix}_groups": float(sum(c > 0 for c in counts.values())),
        "_fairsumm": {"uer": result.uer, "unfair": result.unfair, "terms": dict(result.terms)},
    }


def fairsumm_row(example: Example, summary: str) -> Row:
    """The ``fairsumm`` columns of one summary, plus ``_fairsumm`` (its SampleFairness) for the corpus."""
    from ..fairsumm import ngram_target
    from ..text import fairsumm_tokens

    counts, vocab = source_profile(example)
    return distribution_row("fairsumm", counts, ngram_target(vocab, fairsumm_tokens(summary)))


class ValueDistributionMetric:
    """Columns and corpus statistics shared by the three FairSumm variants.

    ``prefix`` names the columns (``fairsumm``, ``fairsumm_bertscore``...); rows
    carry ``_fairsumm`` (see :func:`distribution_row`).
    """

    prefix: str = "fairsumm"

    def score_of(self, row: Row) -> float:
        """−UER (higher is fairer, 0 at best)."""
        return 0.0 - row[f"{self.prefix}_uer"]

    def aggregate(self, records: list[Row]) -> dict[str, float]:
        """BUR, UER and SOF over the corpus, the mean AUC, and BUR over multi-group summaries."""
        from ..fairsumm import SampleFairness, corpus_fairness

        p = self.prefix
        corpus = corpus_fairness([SampleFairness(**r["_fairsumm"]) for r in records])
        multi = [r[f"{p}_unfair"] for r in records if r[f"{p}_groups"] >= 2]
        return {
            f"{p}_bur": corpus.bur,
            f"{p}_uer": corpus.uer,
            f"{p}_sof": corpus.sof,
            f"{p}_auc": float(np.mean([r[f"{p}_auc"] for r in records])),
            f"{p}_bur_multigroup": float(np.mean(multi)) if multi else 0.0,
        }


@register("fairsumm")
class FairSumm(ValueDistributionMetric, MetricScorer[MetricConfig]):
    """FairSumm BUR/UER/SOF/AUC (Zhang et al. 2024); score: −UER (higher is fairer)."""

    prefix = "fairsumm"
    detail_fields = ("fairsumm_uer", "fairsumm_unfair", "fairsumm_auc", "fairsumm_groups")

    def rows(self, examples: list[Example], summaries: list[str]) -> list[Row]:
        return [fairsumm_row(ex, s) for ex, s in zip(examples, summaries)]
