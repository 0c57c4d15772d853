"""``fairsumm``: FairSumm BUR/UER/SOF/AUC with the N-gram matching target (Zhang et al. 2024).

Per summary: its UER, whether it is unfair, its AUC and how many groups it
covers; over the corpus (:meth:`FairSumm.aggregate`): BUR, UER and SOF as the
paper defines them (corpus statistics, not means), the mean AUC, and BUR over
the summaries that cover two or more groups. The per-summary score is −UER
(higher is fairer, 0 at best).

``text`` (config field; ``--fairsumm-text`` on the command line) picks the
pipeline from text to counts:

* ``"authors"`` (default): the released ``metrics/eval.py`` end to end — each
  value's documents joined by " || " (its ``value_input``), the authors' word
  processing (:mod:`evenhand.evaluation.text.fairsumm_words`), their float cutoff
  sum, and ``skip_empty``: a summary that is empty or whitespace is left out of
  the corpus statistics (its row is still written; ``<prefix>_skipped`` counts them);
* ``"evenhand"``: the earlier pipeline, kept for comparison — documents joined
  by a space, English stop words, lemminflect lemmas
  (:func:`evenhand.evaluation.text.tokens.fairsumm_tokens`), the tolerant cutoff, no
  skipping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ...data.schema import Example
from ...errors import DataError
from ..registry import register
from ..scorer import MetricConfig, MetricScorer

Row = dict[str, Any]

#: Per text pipeline: how a value's documents are joined, and the cutoff sum.
SEPARATORS = {"authors": " || ", "evenhand": " "}
CUMULATIVE = {"authors": "float", "evenhand": "tolerant"}
TEXT_HELP = (
    "Text to counts: 'authors' (FairSumm's released eval.py: NLTK stop words of every language, "
    "tag-alone WordNet lemmas, float cutoff, empty summaries skipped; default) or 'evenhand' "
    "(the earlier pipeline: English stop words, lemminflect lemmas, tolerant cutoff)."
)


def check_text(value: Any) -> str:
    """``value`` when it names a text pipeline; ValueError naming the choices otherwise."""
    if value not in SEPARATORS:
        raise ValueError(f"`text` must be one of {sorted(SEPARATORS)}, got {value!r}")
    return value


@dataclass
class FairSummConfig(MetricConfig):
    """Settings of ``fairsumm``."""

    text: str = field(default="authors", metadata={"help": TEXT_HELP})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_text(self.text)


@lru_cache(maxsize=1024)
def _group_profile(
    groups: tuple[tuple[str, str], ...], text: str = "authors"
) -> tuple[dict[str, int], dict[str, frozenset]]:
    from ...metrics.fairsumm import group_profile

    return group_profile(dict(groups), text)  # type: ignore[arg-type]


def check_groups(example: Example, metric: str = "fairsumm", separator: str = " ") -> dict[str, str]:
    """The example's per-value texts (documents joined by ``separator``); DataError without two groups."""
    missing = [i for i, d in enumerate(example.documents) if d.group is None]
    if missing:
        raise DataError(
            f"example {example.id!r}: documents {missing[:5]} have no `group`; "
            f"{metric} needs a group label on every document"
        )
    groups = example.group_texts(separator)
    if len(groups) < 2:
        raise DataError(
            f"example {example.id!r}: {metric} needs at least two groups (attribute values), "
            f"got {list(groups)}; give `group_values` or documents from two groups"
        )
    return groups


def source_profile(
    example: Example, metric: str = "fairsumm", text: str = "authors"
) -> tuple[dict[str, int], dict[str, frozenset]]:
    """Per value its N-gram source count and content-token set (cached); DataError on bad groups.

    Every FairSumm variant (N-gram, BERTScore, BARTScore) keeps this source
    distribution; only the target changes (the authors' ``metrics/eval.py``).
    ``text``: ``"authors"`` or ``"evenhand"`` (see the module docstring).
    """
    groups = check_groups(example, metric, SEPARATORS[check_text(text)])
    counts, vocab = _group_profile(tuple(groups.items()), text)
    if sum(counts.values()) == 0:
        raise DataError(f"example {example.id!r}: the documents have no content words for {metric}")
    return counts, vocab


def distribution_row(
    prefix: str, counts: dict[str, int], target: Any, text: str = "authors", summary: str | None = None
) -> Row:
    """The columns of one summary from its source counts and target distribution.

    ``<prefix>_uer``, ``_unfair``, ``_auc`` (over cutoffs), ``_groups`` (values with
    source content), and ``_fairsumm``: the SampleFairness as a JSON-able dict for
    the corpus aggregate (:meth:`ValueDistributionMetric.aggregate`), with ``skip``
    set when ``text="authors"`` and ``summary`` is empty or whitespace (the
    authors' ``skip_empty``).
    """
    from ...metrics.fairsumm import auc, sample_fairness

    cumulative = CUMULATIVE[check_text(text)]
    result = sample_fairness(counts, target, cumulative=cumulative)  # type: ignore[arg-type]
    skip = text == "authors" and summary is not None and not summary.strip()
    return {
        f"{prefix}_uer": result.uer,
        f"{prefix}_unfair": float(result.unfair),
        f"{prefix}_auc": auc(counts, target, cumulative=cumulative),  # type: ignore[arg-type]
        f"{prefix}_groups": float(sum(c > 0 for c in counts.values())),
        "_fairsumm": {"uer": result.uer, "unfair": result.unfair, "terms": dict(result.terms), "skip": skip},
    }


def fairsumm_row(example: Example, summary: str, text: str = "authors") -> Row:
    """The ``fairsumm`` columns of one summary, plus ``_fairsumm`` (its SampleFairness) for the corpus."""
    from ...metrics.fairsumm import content_tokenizer, ngram_target

    counts, vocab = source_profile(example, text=text)
    target = ngram_target(vocab, content_tokenizer(text)(summary))  # type: ignore[arg-type]
    return distribution_row("fairsumm", counts, target, text, summary)


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
        """BUR, UER and SOF over the corpus, the mean AUC, and BUR over multi-group summaries.

        Summaries marked ``skip`` (empty, under ``text="authors"``) are left out, as the
        authors' ``skip_empty`` does; ``<prefix>_skipped`` says how many (and is the only
        statistic when every summary is empty).
        """
        from ...metrics.fairsumm import SampleFairness, corpus_fairness

        p = self.prefix
        kept = [r for r in records if not r["_fairsumm"].get("skip")]
        if not kept:  # every summary empty: nothing to aggregate (the authors' code divides by 0)
            return {f"{p}_skipped": float(len(records))}
        corpus = corpus_fairness(
            [SampleFairness(**{k: v for k, v in r["_fairsumm"].items() if k != "skip"}) for r in kept]
        )
        multi = [r[f"{p}_unfair"] for r in kept if r[f"{p}_groups"] >= 2]
        return {
            f"{p}_bur": corpus.bur,
            f"{p}_uer": corpus.uer,
            f"{p}_sof": corpus.sof,
            f"{p}_auc": float(np.mean([r[f"{p}_auc"] for r in kept])),
            f"{p}_bur_multigroup": float(np.mean(multi)) if multi else 0.0,
            f"{p}_skipped": float(len(records) - len(kept)),
        }


@register("fairsumm")
class FairSumm(ValueDistributionMetric, MetricScorer[MetricConfig]):
    """FairSumm BUR/UER/SOF/AUC (Zhang et al. 2024); score: −UER (higher is fairer)."""

    Config = FairSummConfig
    prefix = "fairsumm"
    detail_fields = ("fairsumm_uer", "fairsumm_unfair", "fairsumm_auc", "fairsumm_groups")
    cli_options = {"fairsumm_text": "text"}

    def rows(self, examples: list[Example], summaries: list[str]) -> list[Row]:
        text = getattr(self.config, "text", "authors")
        return [fairsumm_row(ex, s, text) for ex, s in zip(examples, summaries)]
