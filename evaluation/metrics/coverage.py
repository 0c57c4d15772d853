"""Coverage-based fairness: Equal Coverage, Coverage Parity (Li et al. 2024).

"Coverage-based Fairness in Multi-document Summarization" (Li, Zhang, Zhang
& Chaturvedi, NAACL 2025; arXiv 2412.08795); reference implementation
``eval_fairness/eval_fairness.py`` in leehaoyuan/coverage_fairness.

Input: a matrix P[s, d] = p(d_i, s_j), the probability that document d
covers (entails) summary unit s — built elsewhere by a model (``rerank/``);
nothing here loads one. With g(d) the group of document d:

* per-document coverage  c_d = Σ_s P[s, d] / |S*|, S* the summary units
  covered by some document (the code's denominator; ``exclude_uncovered_units
  =False`` divides by all units, the paper's expectation over units);
* Equal Coverage of one summary:  EC = (1/|K|) Σ_k |mean_{d: g(d)=k} c_d − mean_d c_d|
  over the groups K that have documents;
* significance of one summary's group differences: a permutation test over
  the group labels (5000 permutations as one matrix operation; statistic EC;
  p = (1 + #{EC_perm >= EC}) / (1 + B)); the seeded permutations of n
  documents are drawn once and reused for every summary with n documents, so
  each test is exact while a corpus pays for them once — or the authors' bootstrap (1000
  draws) — resample the per-document differences c_d − mean c of the group
  farthest from the mean and report the share of draws whose sum does not
  have the observed sign;
* Coverage Parity over a corpus: pool the per-document differences
  c_d − mean c by group over all summaries; CP = (1/|K|) Σ_k |mean of group k's
  differences|; the most over- and under-represented groups are the argmax
  and argmin, with the authors' bootstrap significance;
* Proportional Representation (baseline): the summary's group distribution
  q_k = Σ_s Σ_{d: g(d)=k} P[s, d] / Σ P against the source's document shares
  π_k = n_k / n, PR = (1/|K|) Σ_k |q_k − π_k|.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

Method = Literal["permutation", "bootstrap"]


@dataclass(frozen=True)
class EqualCoverage:
    """One summary's Equal Coverage.

    Attributes:
        ec: Equal Coverage (0 = every group covered alike).
        group_diffs: per group, its mean document coverage minus the overall mean.
        doc_diffs: per document, c_d minus the overall mean (Coverage Parity's input).
        doc_groups: per document, its group.
    """

    ec: float
    group_diffs: dict[str, float]
    doc_diffs: tuple[float, ...]
    doc_groups: tuple[str, ...]


@dataclass(frozen=True)
class CoverageParity:
    """Corpus Coverage Parity with the most over/under-represented groups and their significance."""

    cp: float
    group_diffs: dict[str, float]
    most_over: str
    most_under: str
    p_over: float
    p_under: float


def _matrix(coverage: ArrayLike) -> np.ndarray:
    p = np.asarray(coverage, dtype=float)
    if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] == 0:
        raise ValueError(
            f"`coverage` must be a non-empty (summary units × documents) matrix, got shape {p.shape}"
        )
    if not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
        raise ValueError("`coverage` entries must be probabilities in [0, 1]")
    return p


def _group_index(groups: Sequence[str], n_docs: int) -> tuple[list[str], np.ndarray]:
    if len(groups) != n_docs:
        raise ValueError(f"`groups` must give one group per document ({n_docs}), got {len(groups)}")
    names = list(dict.fromkeys(groups))
    if len(names) < 2:
        raise ValueError(
            f"`groups` has {len(names)} distinct group(s) {names}; coverage fairness needs at least two"
        )
    lookup = {g: i for i, g in enumerate(names)}
    return names, np.array([lookup[g] for g in groups], dtype=np.int64)


def document_coverage(coverage: ArrayLike, exclude_uncovered_units: bool = True) -> np.ndarray:
    """c_d: each document's coverage of the summary, averaged over (covered) summary units."""
    p = _matrix(coverage)
    denom = int((p.max(axis=1) > 0).sum()) if exclude_uncovered_units else p.shape[0]
    if denom == 0:
        raise ValueError(
            "no summary unit is covered by any document; coverage fairness is undefined"
        )
    return p.sum(axis=0) / denom


def _ec_stats(c: np.ndarray, labels: np.ndarray, n_groups: int) -> np.ndarray:
    """EC for each row of a (B, n) label matrix, in one bincount."""
    b, n = labels.shape
    flat = (labels + n_groups * np.arange(b)[:, None]).ravel()
    sums = np.bincount(flat, weights=np.broadcast_to(c, (b, n)).ravel(), minlength=b * n_groups)
    counts = np.bincount(labels[0], minlength=n_groups)
    means = sums.reshape(b, n_groups) / counts
    return np.abs(means - c.mean()).mean(axis=1)


def equal_coverage(
    coverage: ArrayLike, groups: Sequence[str], exclude_uncovered_units: bool = True
) -> EqualCoverage:
    """Equal Coverage of one summary from its P[s, d] matrix and the documents' groups.

    Example: P = [[1, 0, 0, 0]], groups a, a, b, b → c = (1, 0, 0, 0), mean 1/4,
    group means 1/2 and 0, EC = (1/4 + 1/4) / 2 = 0.25.
    """
    c = document_coverage(coverage, exclude_uncovered_units)
    names, idx = _group_index(groups, len(c))
    ec = float(_ec_stats(c, idx[None, :], len(names))[0])
    means = np.bincount(idx, weights=c, minlength=len(names)) / np.bincount(idx)
    return EqualCoverage(
        ec=ec,
        group_diffs={g: float(m - c.mean()) for g, m in zip(names, means)},
        doc_diffs=tuple(float(x) for x in c - c.mean()),
        doc_groups=tuple(groups),
    )


def coverage_significance(
    coverage: ArrayLike,
    groups: Sequence[str],
    method: Method = "permutation",
    n_resamples: int | None = None,
    seed: int = 0,
    exclude_uncovered_units: bool = True,
) -> float:
    """p-value of one summary's group coverage differences.

    Args:
        coverage: P[s, d] matrix.
        groups: one group per document.
        method: ``"permutation"`` (test over group labels, statistic EC) or
            ``"bootstrap"`` (the authors' sign bootstrap on the farthest group).
        n_resamples: permutations (default 5000) or bootstrap draws (default 1000).
        seed: seed of the generator; results are reproducible.
        exclude_uncovered_units: see :func:`document_coverage`.
    """
    c = document_coverage(coverage, exclude_uncovered_units)
    names, idx = _group_index(groups, len(c))
    rng = np.random.default_rng(seed)
    if method == "permutation":
        b = 5000 if n_resamples is None else n_resamples
        order = np.argsort(idx, kind="stable")  # groups as contiguous blocks
        counts = np.bincount(idx)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        c_sorted = c[order]
        observed = np.abs(np.add.reduceat(c_sorted, starts) / counts - c.mean()).mean()
        sums = np.add.reduceat(np.take(c_sorted, _permutations(len(c), b, seed)), starts, axis=1)
        stats = np.abs(sums / counts - c.mean()).mean(axis=1)
        return float((1 + np.count_nonzero(stats >= observed - 1e-12)) / (b + 1))
    if method == "bootstrap":
        b = 1000 if n_resamples is None else n_resamples
        diffs = c - c.mean()
        means = np.bincount(idx, weights=diffs) / np.bincount(idx)
        far = int(np.argmax(np.abs(means)))
        return _sign_bootstrap(diffs[idx == far], b, rng)
    raise ValueError(f"`method` must be 'permutation' or 'bootstrap', got {method!r}")


@lru_cache(maxsize=8)
def _permutations(n: int, b: int, seed: int) -> np.ndarray:
    """``b`` seeded permutations of range(n), one per row, reused across summaries of n documents."""
    rng = np.random.default_rng([seed, n, b])
    perms = rng.permuted(np.tile(np.arange(n, dtype=np.intp), (b, 1)), axis=1)
    perms.flags.writeable = False
    return perms


def _sign_bootstrap(values: np.ndarray, b: int, rng: np.random.Generator) -> float:
    """Share of bootstrap sums of ``values`` that lack the sign of their mean (1.0 if it is 0)."""
    sign = np.sign(values.sum())
    if sign == 0:
        return 1.0
    draws = rng.choice(values, size=(b, len(values)), replace=True).sum(axis=1)
    return float(np.mean(np.sign(draws) != sign))


def significant_share(p_values: Sequence[float], alpha: float = 0.05) -> float:
    """Share of summaries whose p-value is below ``alpha``."""
    if len(p_values) == 0:
        raise ValueError("`p_values` is empty")
    return float(np.mean(np.asarray(p_values) < alpha))


def coverage_parity(
    summaries: Sequence[EqualCoverage], n_resamples: int = 1000, seed: int = 0
) -> CoverageParity:
    """Corpus Coverage Parity from per-summary :func:`equal_coverage` results."""
    if not summaries:
        raise ValueError("`summaries` is empty; Coverage Parity needs at least one summary")
    pooled: dict[str, list[float]] = {}
    for result in summaries:
        for g, d in zip(result.doc_groups, result.doc_diffs):
            pooled.setdefault(g, []).append(d)
    names = list(pooled)
    means = np.array([np.mean(pooled[g]) for g in names])
    over, under = names[int(np.argmax(means))], names[int(np.argmin(means))]
    rng = np.random.default_rng(seed)
    return CoverageParity(
        cp=float(np.abs(means).mean()),
        group_diffs={g: float(m) for g, m in zip(names, means)},
        most_over=over,
        most_under=under,
        p_over=_sign_bootstrap(np.array(pooled[over]), n_resamples, rng),
        p_under=_sign_bootstrap(np.array(pooled[under]), n_resamples, rng),
    )


def proportional_representation(coverage: ArrayLike, groups: Sequence[str]) -> float:
    """PR baseline: mean |q_k − π_k| between the summary's coverage mass by group and doc shares."""
    p = _matrix(coverage)
    names, idx = _group_index(groups, p.shape[1])
    total = p.sum()
    if total == 0:
        raise ValueError("no summary unit is covered by any document; PR is undefined")
    q = np.bincount(idx, weights=p.sum(axis=0), minlength=len(names)) / total
    share = np.bincount(idx, minlength=len(names)) / len(idx)
    return float(np.abs(q - share).mean())
