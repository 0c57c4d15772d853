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
