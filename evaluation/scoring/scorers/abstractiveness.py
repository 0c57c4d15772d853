"""``mint`` and ``fragments``: how abstractive a summary is, on spaCy tokens of source and summary.

Both score blocks of summaries through the corpus path
(:class:`evenhand.evaluation.metrics.corpus.PairCorpus`: each distinct source
tokenized once per block, shared by the two metrics when they score the same
block one after the other); :func:`mint_row` and :func:`fragments_row` give the
same rows one summary at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple
from functools import lru_cache
from typing import Any

from ...data.schema import Example
from ...errors import DataError
from ..registry import register
from ..scorer import MetricConfig, MetricScorer

SOURCE_SEPARATOR = "\n"  # between documents for MINT and fragments: a spaCy whitespace token

#: MintScore's fields in order (mint, p1..p4, lcsr) as report columns.
MINT_COLUMNS = ("mint", "mint_p1", "mint_p2", "mint_p3", "mint_p4", "mint_lcsr")
#: FragmentScores' fields in order as report columns.
FRAGMENT_COLUMNS = (
    "frag_coverage", "frag_density", "frag_compression", "novel_1", "novel_2", "novel_3", "novel_4",
)

Row = dict[str, Any]


def _named_row(columns: Sequence[str], scores: Any) -> Row:
    """A score dataclass's fields, in order, under the report's column names."""
    values = astuple(scores)
    if len(values) != len(columns):
        raise ValueError(f"{type(scores).__name__} has {len(values)} fields, expected {len(columns)}: {columns}")
    return dict(zip(columns, values))


@lru_cache(maxsize=64)
def _spacy_source(text: str) -> tuple[str, ...]:
    from ...text.tokens import spacy_tokens

    return tuple(spacy_tokens(text))


def _summary_tokens(example: Example, summary: str) -> tuple[tuple[str, ...], list[str]]:
    from ...text.tokens import spacy_tokens

    tokens = spacy_tokens(summary)
    if not any(t.strip() for t in tokens):
        raise DataError(f"example {example.id!r}: the summary is empty")
    return _spacy_source(example.source_text(SOURCE_SEPARATOR)), tokens


@lru_cache(maxsize=1)
def _pair_corpus(sources: tuple[str, ...], summaries: tuple[str, ...]) -> Any:
    """The corpus path's tokenized pairs, kept for the next metric on the same block."""
    from ...metrics.corpus import PairCorpus

    return PairCorpus(sources, summaries)


def _corpus_for(examples: Sequence[Example], summaries: Sequence[str]) -> Any:
    for example, summary in zip(examples, summaries):
        if not summary.strip():  # exactly when spaCy finds no non-whitespace token
            raise DataError(f"example {example.id!r}: the summary is empty")
    sources = tuple(ex.source_text(SOURCE_SEPARATOR) for ex in examples)
    return _pair_corpus(sources, tuple(summaries))


def mint_row(example: Example, summary: str) -> Row:
    """The ``mint`` columns of one summary, computed alone (same values as the corpus path)."""
    from ...metrics.mint import mint_tokens

    source, tokens = _summary_tokens(example, summary)
    return _named_row(MINT_COLUMNS, mint_tokens(source, tokens))


def fragments_row(example: Example, summary: str) -> Row:
    """The ``fragments`` columns of one summary, computed alone (same values as the corpus path)."""
    from ...metrics.fragments import fragment_scores_tokens

    source, tokens = _summary_tokens(example, summary)
    return _named_row(FRAGMENT_COLUMNS, fragment_scores_tokens(source, tokens))


@register("mint")
class Mint(MetricScorer[MetricConfig]):
    """MINT abstractiveness (Dreyer et al. 2023) and its components; score: MINT (higher = more abstractive)."""

    detail_fields = MINT_COLUMNS

    def rows(self, examples: list[Example], summaries: list[str]) -> list[Row]:
        return [_named_row(MINT_COLUMNS, s) for s in _corpus_for(examples, summaries).mint()]

    def score_of(self, row: Row) -> float:
        return row["mint"]


@register("fragments")
class Fragments(MetricScorer[MetricConfig]):
    """Extractive fragment coverage/density/compression (Grusky et al. 2018), novel n-grams.

    Score: 1 - coverage, the share of summary tokens outside copied fragments
    (higher = more abstractive).
    """

    detail_fields = FRAGMENT_COLUMNS

    def rows(self, examples: list[Example], summaries: list[str]) -> list[Row]:
        return [_named_row(FRAGMENT_COLUMNS, f) for f in _corpus_for(examples, summaries).fragments()]

    def score_of(self, row: Row) -> float:
        return 1.0 - row["frag_coverage"]
