"""MINT abstractiveness (Dreyer, Liu, Nan, Atluri & Ravi, 2023).

"Evaluating the Tradeoff Between Abstractiveness and Factuality in Abstractive
Summarization", Findings of EACL 2023; reference implementation
``mintscore/mint.py`` in amazon-science/abstractive-factual-tradeoff.

For source tokens x and summary tokens y:

* raw match counts m_n = #{summary n-grams (every occurrence) found in the
  *set* of source n-grams}, n = 1..5;
* Chen & Cherry (2014) smoothing method 5: m_0 = m_1 + 1, then for
  n = 1..4, m_n <- (m_{n-1} + m_n + m_{n+1}) / 3 with the already smoothed
  m_{n-1} and the raw m_{n+1};
* p_n = m_n / (|y| - n + 1), n = 1..4;
* lcsr = LCS(x, y) / |y|;
* MINT = 1 - H(p_1, p_2, p_3, p_4, lcsr), H the harmonic mean; MINT = 1 when
  lcsr = 0 (no token in common).

Short summaries: the authors' code divides by |y| - n + 1, which is zero or
negative when |y| <= 3. We divide by max(|y| - n + 1, 1) there: an n-gram
order the summary is too short to have contributes its (smoothed, small)
count out of one. An empty summary raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..text.tokens import spacy_tokens
from .lcs import lcs_length_ids, token_ids


@dataclass(frozen=True)
class MintScore:
    """MINT and its five components, all in [0, 1]."""

    mint: float
    p1: float
    p2: float
    p3: float
    p4: float
    lcsr: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def ngram_match_counts(x: np.ndarray, y: np.ndarray, max_n: int = 5) -> np.ndarray:
    """Raw m_1..m_max_n: summary n-grams (each occurrence) present among the source n-grams.

    ``x`` and ``y`` are token-id arrays over one shared vocabulary. N-grams are
    keyed level by level: the key of an n-gram combines the key of its
    (n-1)-gram prefix with its last token and is re-numbered densely, so keys
    stay small integers and matching is one ``np.isin`` per order.
    """
    counts = np.zeros(max_n, dtype=np.int64)
    vocab = int(max(x.max(initial=-1), y.max(initial=-1))) + 1
    kx, ky = x, y
    for n in range(1, max_n + 1):
        if n > 1:
            kx = kx[:-1] * vocab + x[n - 1 :]
            ky = ky[:-1] * vocab + y[n - 1 :]
            _, inverse = np.unique(np.concatenate([kx, ky]), return_inverse=True)
            kx, ky = inverse[: len(kx)], inverse[len(kx) :]
        if len(ky) == 0 or len(kx) == 0:
            break
        counts[n - 1] = int(np.isin(ky, kx).sum())
    return counts


def smooth_counts(counts: Sequence[float] | np.ndarray) -> list[float]:
    """Chen & Cherry method 5 over m_1..m_5; returns the smoothed m_1..m_4."""
    m = [float(counts[0]) + 1.0, *map(float, counts[:5])]
    for i in range(1, 5):
        m[i] = (m[i - 1] + m[i] + m[i + 1]) / 3.0
    return m[1:5]


def _score_ids(x: np.ndarray, y: np.ndarray) -> MintScore:
    if len(y) == 0:
        raise ValueError("MINT is undefined for an empty summary (no tokens)")
    smoothed = smooth_counts(ngram_match_counts(x, y, 5))
    p = [smoothed[n - 1] / max(len(y) - n + 1, 1) for n in range(1, 5)]
    lcsr = lcs_length_ids(x, y) / len(y)
    parts = [*p, lcsr]
    if lcsr == 0.0 or min(parts) == 0.0:
        value = 1.0
    else:
        value = 1.0 - len(parts) / sum(1.0 / v for v in parts)
    return MintScore(mint=value, p1=p[0], p2=p[1], p3=p[2], p4=p[3], lcsr=lcsr)


def mint_tokens(source_tokens: Sequence[Hashable], summary_tokens: Sequence[Hashable]) -> MintScore:
    """MINT on given token sequences, compared as they are (no lowercasing).

    Example: ``mint_tokens(["a"], "a a a b b c".split()).mint`` is 0.9232456140350878.
    """
    return _score_ids(*token_ids(source_tokens, summary_tokens))


def mint(source: str, summary: str) -> MintScore:
    """MINT of ``summary`` against ``source`` on lowercased spaCy tokens (the authors' setup).

    Whitespace tokens (double spaces, newlines) are kept, as in the authors' code.
    """
    return mint_tokens(spacy_tokens(source), spacy_tokens(summary))


def mean_mint(scores: Sequence[MintScore]) -> MintScore:
    """Corpus MINT: the mean of every field over ``scores`` (non-empty)."""
    if not scores:
        raise ValueError("`scores` is empty; the corpus mean needs at least one MintScore")
    arr = np.array([[s.mint, s.p1, s.p2, s.p3, s.p4, s.lcsr] for s in scores]).mean(axis=0)
    return MintScore(*map(float, arr))
