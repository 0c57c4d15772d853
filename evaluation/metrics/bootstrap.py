"""Percentile bootstrap intervals (Efron & Tibshirani 1993, ch. 13).

The interval at ``confidence`` c of a statistic's bootstrap replicates is their
(1-c)/2 and (1+c)/2 percentiles (numpy's default linear interpolation).

>>> percentile_interval([[1.0], [2.0], [3.0], [4.0], [5.0]], confidence=0.5)
(array([2.]), array([4.]))
"""

from __future__ import annotations

from typing import Any

import numpy as np


def percentile_interval(
    replicates: Any, confidence: float = 0.95, *, ignore_nan: bool = False,
) -> tuple[Any, Any]:
    """(lower, upper) percentile bounds of bootstrap replicates along their first axis.

    Args:
        replicates: (resamples, ...) array of a statistic's bootstrap values.
        confidence: the interval's coverage, in (0, 1).
        ignore_nan: skip NaN replicates (``np.nanpercentile``); with no replicates at
            all the bounds are NaN.

    Returns:
        Two arrays shaped like one replicate.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be in (0, 1), got {confidence!r}")
    tail = (1 - confidence) / 2 * 100
    arr = np.asarray(replicates, float)
    if not ignore_nan:
        lower, upper = np.percentile(arr, [tail, 100 - tail], axis=0)
        return lower, upper
    if len(arr) == 0:
        nan = np.full(arr.shape[1:], np.nan)
        return nan, nan.copy()
    with np.errstate(all="ignore"):
        return np.nanpercentile(arr, tail, axis=0), np.nanpercentile(arr, 100 - tail, axis=0)


def paired_bootstrap(
    system: Any, baseline: Any, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0,
) -> tuple[float, float, float]:
    """Mean paired difference ``system - baseline`` and its percentile bootstrap interval.

    The two score vectors are aligned by example (the same dev article at index
    i); each resample draws n examples with replacement (seeded) and keeps the
    pairs together, so the interval reflects example-to-example variation of the
    difference, not of either system alone.

    Args:
        system, baseline: 1-D arrays of per-example scores, same length, finite.
        n_resamples: bootstrap resamples.
        confidence: the interval's coverage, in (0, 1).
        seed: seed of ``numpy.random.default_rng``.

    Returns:
        (mean difference, lower bound, upper bound).

    >>> paired_bootstrap([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    (0.0, 0.0, 0.0)
    """
    a, b = np.asarray(system, float), np.asarray(baseline, float)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"`system` and `baseline` must be 1-D and aligned, got shapes {a.shape} and {b.shape}")
    if len(a) == 0:
        raise ValueError("`system` is empty; give one score per example")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("`system`/`baseline` hold NaN or inf; drop those examples from both first")
    if not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"`n_resamples` must be a positive int, got {n_resamples!r}")
    diff = a - b
    idx = np.random.default_rng(seed).integers(0, len(diff), size=(n_resamples, len(diff)))
    lower, upper = percentile_interval(diff[idx].mean(axis=1), confidence)
    return float(diff.mean()), float(lower), float(upper)
