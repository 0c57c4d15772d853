"""Preference pairs from one prompt's candidate scores (pure functions).

For candidates 0..N-1 with scores s_i, a pair (c, r) prefers candidate c over r
and has gap g = s_c - s_r > 0. Ties (g = 0) never form a pair, and pairs with
g < ``min_gap`` are dropped. Strategies:

- ``all``: every unordered pair {i, j} with s_i != s_j, chosen = the higher
  score (Ri, Deas & McKeown 2025), ordered by (min(i, j), max(i, j));
- ``best-worst``: one pair, the highest score (first index on ties) against the
  lowest (last index on ties);
- ``top-gap``: the ``k`` pairs of ``all`` with the largest gaps (earlier pairs
  first on equal gaps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .config import PAIR_STRATEGIES


@dataclass(frozen=True)
class Pair:
    """One preference: candidate ``chosen`` over ``rejected`` with ``gap`` = s_chosen - s_rejected."""

    chosen: int
    rejected: int
    gap: float


def _check(scores: Sequence[float], min_gap: float) -> list[float]:
    values = [float(s) for s in scores]
    bad = [i for i, s in enumerate(values) if not math.isfinite(s)]
    if bad:
        raise ValueError(f"`scores` must be finite, got {values[bad[0]]} at index {bad[0]}")
    if min_gap < 0:
        raise ValueError(f"`min_gap` must be a non-negative float, got {min_gap}")
    return values


def all_pairs(scores: Sequence[float], min_gap: float = 0.0) -> list[Pair]:
    """Every pair with unequal scores and gap >= ``min_gap``; chosen = higher score."""
    s = _check(scores, min_gap)
    out = []
    for i in range(len(s)):
        for j in range(i + 1, len(s)):
            if s[i] == s[j]:
                continue
            c, r = (i, j) if s[i] > s[j] else (j, i)
            gap = s[c] - s[r]
            if gap >= min_gap:
                out.append(Pair(c, r, gap))
    return out


def best_worst_pair(scores: Sequence[float], min_gap: float = 0.0) -> list[Pair]:
    """The best candidate (first on ties) over the worst (last on ties); [] when all tie."""
    s = _check(scores, min_gap)
    if len(s) < 2:
        return []
    best = max(range(len(s)), key=lambda i: (s[i], -i))
    worst = min(range(len(s)), key=lambda i: (s[i], -i))
    gap = s[best] - s[worst]
    return [Pair(best, worst, gap)] if gap > 0 and gap >= min_gap else []


def top_gap_pairs(scores: Sequence[float], k: int, min_gap: float = 0.0) -> list[Pair]:
    """The ``k`` pairs of ``all_pairs`` with the largest gaps (stable on equal gaps)."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"`k` must be a positive int, got {k!r}")
    pairs = all_pairs(scores, min_gap)
    order = sorted(range(len(pairs)), key=lambda n: -pairs[n].gap)
    return [pairs[n] for n in order[:k]]


def build_pairs(
    scores: Sequence[float], strategy: str = "all", min_gap: float = 0.0, k: int = 4
) -> list[Pair]:
    """Pairs of one prompt by ``strategy`` (``all``, ``best-worst`` or ``top-gap`` with ``k``).

    >>> [(p.chosen, p.rejected) for p in build_pairs([0.2, 0.5, 0.2], "all")]
    [(1, 0), (1, 2)]
    """
    if strategy == "all":
        return all_pairs(scores, min_gap)
    if strategy == "best-worst":
        return best_worst_pair(scores, min_gap)
    if strategy == "top-gap":
        return top_gap_pairs(scores, k, min_gap)
    raise ValueError(f"`strategy` must be one of {PAIR_STRATEGIES}, got {strategy!r}")
