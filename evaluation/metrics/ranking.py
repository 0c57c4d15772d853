"""System ranking and metric meta-evaluation.

* Bradley–Terry abilities (Bradley & Terry 1952) from per-document pairwise
  wins: on each document every pair of systems is one game won by the higher
  score (ties broken by a seeded coin). With W[i, j] the wins of i over j,
  maximize Σ_{i≠j} W[i, j] · log σ(θ_i − θ_j) − (λ/2)·||θ||² by L-BFGS
  (λ = 1e-6 keeps θ finite when a system wins every game); abilities are
  reported centred (mean 0, natural-log odds scale). 95% intervals: percentile
  bootstrap over documents (B = 500), each resample refitted.
* Spearman's ρ between a metric and ground truth over all summaries, and
  pairwise winrate: the share of same-source summary pairs with different
  ground truth that the metric orders the same way (a metric tie counts as
  wrong by default) — the protocol of Ri, Deas & McKeown (2025), Table 2.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .bootstrap import percentile_interval


@dataclass(frozen=True)
class BradleyTerry:
    """Bradley–Terry abilities with bootstrap intervals, one entry per system."""

    systems: tuple[str, ...]
    abilities: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]

    def ranking(self) -> list[str]:
        """Systems from strongest to weakest."""
        order = np.argsort(-np.asarray(self.abilities), kind="stable")
        return [self.systems[i] for i in order]


def pairwise_wins(scores: ArrayLike, seed: int = 0) -> np.ndarray:
    """Per-document win indicators w[d, i, j] = 1 when system i beats j on document d.

    ``scores`` is (documents × systems), higher is better; ties are broken by a
    seeded coin so that exactly one of w[d, i, j], w[d, j, i] is 1 for i ≠ j.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 2 or s.shape[0] == 0 or s.shape[1] < 2:
        raise ValueError(
            f"`scores` must be (documents × systems) with at least one document and two systems, got {s.shape}"
        )
    if not np.isfinite(s).all():
        raise ValueError("`scores` must be finite")
    diff = s[:, :, None] - s[:, None, :]
    coin = np.random.default_rng(seed).random(diff.shape) < 0.5
    upper = np.triu(np.ones(diff.shape[1:], dtype=bool), k=1)
    coin = np.where(upper, coin, ~np.swapaxes(coin, 1, 2))
    off_diagonal = ~np.eye(diff.shape[1], dtype=bool)
    return ((diff > 0) | ((diff == 0) & coin & off_diagonal)).astype(float)


def fit_bradley_terry(wins: ArrayLike, l2: float = 1e-6) -> np.ndarray:
    """Centred Bradley–Terry abilities from a win-count matrix W[i, j] (L-BFGS)."""
    from scipy.optimize import minimize

    w = np.asarray(wins, dtype=float)
    games = w + w.T

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        delta = theta[:, None] - theta[None, :]
        nll = float((w * np.logaddexp(0.0, -delta)).sum()) + 0.5 * l2 * float(theta @ theta)
        prob = 1.0 / (1.0 + np.exp(-delta))  # P(i beats j)
        grad = (games * prob).sum(axis=1) - w.sum(axis=1) + l2 * theta
        return nll, grad

    result = minimize(objective, np.zeros(len(w)), jac=True, method="L-BFGS-B")
    return result.x - result.x.mean()


def bradley_terry(
    scores: ArrayLike,
    systems: Sequence[str] | None = None,
    n_bootstrap: int = 500,
    confidence: float = 0.95,
    seed: int = 0,
) -> BradleyTerry:
    """Bradley–Terry abilities of systems from per-document scores, with bootstrap intervals.

    Args:
        scores: (documents × systems) metric values, higher is better.
        systems: system names (default ``"0"``, ``"1"``, …).
        n_bootstrap: bootstrap resamples of the documents.
        confidence: interval coverage.
        seed: seeds the tie-breaking coin and the bootstrap.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be in (0, 1), got {confidence!r}")
    w = pairwise_wins(scores, seed)
    n_docs, n_sys = w.shape[:2]
    names = tuple(systems) if systems is not None else tuple(str(i) for i in range(n_sys))
    if len(names) != n_sys:
        raise ValueError(f"`systems` must name {n_sys} systems, got {len(names)}")
    theta = fit_bradley_terry(w.sum(axis=0))
    rng = np.random.default_rng(seed + 1)
    multiplicity = rng.multinomial(n_docs, np.full(n_docs, 1.0 / n_docs), size=n_bootstrap)
    boot_wins = (multiplicity @ w.reshape(n_docs, -1)).reshape(n_bootstrap, n_sys, n_sys)
    boot = np.array([fit_bradley_terry(bw) for bw in boot_wins]) if n_bootstrap else theta[None]
    lower, upper = percentile_interval(boot, confidence)
    return BradleyTerry(
        names, tuple(map(float, theta)), tuple(map(float, lower)), tuple(map(float, upper))
    )


def spearman(metric: ArrayLike, truth: ArrayLike) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    from scipy.stats import spearmanr

    m, t = np.asarray(metric, float), np.asarray(truth, float)
    if m.shape != t.shape or m.ndim != 1 or len(m) < 2:
        raise ValueError(
            f"`metric` and `truth` must be 1-D of equal length >= 2, got {m.shape} and {t.shape}"
        )
    return float(spearmanr(m, t).statistic)  # pyright: ignore[reportAttributeAccessIssue]  # scipy's stub omits .statistic


def pairwise_winrate(
    metric: ArrayLike, truth: ArrayLike, sources: Sequence[Hashable], tie_credit: float = 0.0
) -> float:
    """Share of same-source pairs with different ground truth that the metric orders correctly.

    Args:
        metric: metric value per summary.
        truth: ground-truth score per summary.
        sources: the source each summary was written for; only pairs sharing one are compared.
        tie_credit: credit for a pair the metric ties (0 = wrong, 0.5 = half).
    """
    m, t = np.asarray(metric, float), np.asarray(truth, float)
    if m.shape != t.shape or m.ndim != 1 or len(sources) != len(m):
        raise ValueError("`metric`, `truth` and `sources` must be 1-D of equal length")
    _, src = np.unique(np.asarray([str(s) for s in sources]), return_inverse=True)
    same = (src[:, None] == src[None, :]) & (t[:, None] > t[None, :])
    if not same.any():
        raise ValueError("no same-source pair has different ground truth; winrate is undefined")
    dm = (m[:, None] - m[None, :])[same]
    return float(((dm > 0) + tie_credit * (dm == 0)).mean())
