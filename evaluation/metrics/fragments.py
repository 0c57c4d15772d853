"""Extractive fragments (Grusky, Naaman & Artzi 2018) and novel n-gram ratios.

"Newsroom: A Dataset of 1.3 Million Summaries with Diverse Extractive
Strategies", NAACL 2018; reference implementation
``newsroom/analyze/fragments.py`` in lil-lab/newsroom.

Greedy fragments F(A, S) of summary tokens S in article tokens A: at summary
position i, scan the article left to right; at each match, follow it as far
as it goes and jump past it; keep the longest match seen; append it as a
fragment and move i past it (or by one token when there is none). Jumping
past a match, as the authors' code and the paper's Algorithm 1 do, can miss a
longer match that starts inside it; we reproduce that. Then

* coverage = (1/|S|) Σ_{f∈F} |f|
* density = (1/|S|) Σ_{f∈F} |f|²
* compression = |A| / |S|

Tokens: lowercased spaCy tokens (:func:`evenhand.evaluation.text.tokens.spacy_tokens`), as
the authors' code (``en_core_web_sm`` tokenizer, lowercased).

Novel n-gram ratio (See et al. 2017's abstractiveness measure), n = 1..4:
the share of the summary's n-grams, every occurrence counted, that are not
among the source's n-grams (1 - raw p_n of MINT). A summary shorter than n
has no n-grams and gets 0.0.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ..text.tokens import spacy_tokens
from .lcs import token_ids
from .mint import ngram_match_counts


@dataclass(frozen=True)
class FragmentScores:
    """Grusky et al.'s coverage, density, compression, and novel n-gram ratios."""

    coverage: float = field(metadata={"help": "(1/|S|) Σ|f|: share of summary tokens in copied fragments."})
    density: float = field(metadata={"help": "(1/|S|) Σ|f|²: mean fragment length per summary token."})
    compression: float = field(metadata={"help": "|A| / |S|: article tokens per summary token."})
    novel_1: float = field(metadata={"help": "Share of summary unigrams (each occurrence) not in the source."})
    novel_2: float = field(metadata={"help": "Share of summary bigrams not in the source."})
    novel_3: float = field(metadata={"help": "Share of summary trigrams not in the source."})
    novel_4: float = field(metadata={"help": "Share of summary 4-grams not in the source."})

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _run_lengths(article: np.ndarray, summary: np.ndarray) -> np.ndarray:
    """R[i, j] = length of the common prefix of summary[i:] and article[j:]."""
    equal = summary[:, None] == article[None, :]
    runs = np.zeros((len(summary) + 1, len(article) + 1), dtype=np.int32)
    for i in range(len(summary) - 1, -1, -1):
        runs[i, :-1] = equal[i] * (runs[i + 1, 1:] + 1)
    return runs[:-1, :-1]


def greedy_fragments(
    article_tokens: Sequence[Hashable], summary_tokens: Sequence[Hashable]
) -> list[tuple[int, int]]:
    """Greedy extractive fragments as ``(summary_start, length)`` pairs, in summary order."""
    return greedy_fragments_ids(*token_ids(article_tokens, summary_tokens))


def greedy_fragments_ids(article: np.ndarray, summary: np.ndarray) -> list[tuple[int, int]]:
    """:func:`greedy_fragments` on integer arrays (token ids over one vocabulary)."""
    if len(summary) == 0 or len(article) == 0:
        return []
    runs = _run_lengths(article, summary)
    fragments = []
    i = 0
    while i < len(summary):
        best = 0
        next_j = 0
        row = runs[i]
        for j in np.flatnonzero(row).tolist():
            if j < next_j:
                continue
            length = int(row[j])
            best = max(best, length)
            next_j = j + length
        if best:
            fragments.append((i, best))
        i += max(best, 1)
    return fragments


def fragment_scores_tokens(
    article_tokens: Sequence[Hashable], summary_tokens: Sequence[Hashable]
) -> FragmentScores:
    """:func:`fragment_scores` on given token sequences."""
    n = len(summary_tokens)
    if n == 0:
        raise ValueError("fragments are undefined for an empty summary (no tokens)")
    lengths = np.array([f[1] for f in greedy_fragments(article_tokens, summary_tokens)], float)
    x, y = token_ids(article_tokens, summary_tokens)
    matched = ngram_match_counts(x, y, 4)
    novel = [1.0 - matched[k - 1] / (n - k + 1) if n >= k else 0.0 for k in range(1, 5)]
    return FragmentScores(
        coverage=float(lengths.sum() / n),
        density=float((lengths**2).sum() / n),
        compression=len(article_tokens) / n,
        novel_1=float(novel[0]),
        novel_2=float(novel[1]),
        novel_3=float(novel[2]),
        novel_4=float(novel[3]),
    )


def fragment_scores(article: str, summary: str) -> FragmentScores:
    """Coverage, density, compression and novel n-gram ratios of ``summary`` w.r.t. ``article``.

    Example: article "a b c d", summary "a b x" → fragments ["a b"], coverage 2/3,
    density 4/3, compression 4/3.
    """
    return fragment_scores_tokens(spacy_tokens(article), spacy_tokens(summary))
