"""Abstractiveness-adjusted factuality (Dreyer et al. 2023, Section 6).

"Evaluating the Tradeoff Between Abstractiveness and Factuality in Abstractive
Summarization", Findings of EACL 2023.

* MINT-adjusted factuality of a summary or system with factuality F and
  abstractiveness A = MINT (both on the same scale, [0, 1] or [0, 100]):

      mF = (φ·F + A) / (φ + 1),   φ = 2 by default

  a weighted arithmetic mean that counts factuality φ times as much.
* F@50: decode one system at several abstractiveness-constraint strengths,
  fit the least-squares line F = a + b·MINT through the (MINT, F) points, and
  read it off at MINT = 50 (``at=0.5`` on the [0, 1] scale we use). Systems
  are then compared at equal abstractiveness.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mint_adjusted_factuality(factuality: float, mint: float, phi: float = 2.0) -> float:
    """(φ·F + A) / (φ + 1) with A the MINT abstractiveness score."""
    if not phi >= 0:
        raise ValueError(f"`phi` must be a non-negative float, got {phi!r}")
    return (phi * factuality + mint) / (phi + 1.0)


def factuality_at(
    mint_values: Sequence[float], factuality_values: Sequence[float], at: float = 0.5
) -> float:
    """F@``at``: the least-squares line through (MINT, factuality) points, evaluated at ``at``.

    Use ``at=50`` when the scores are percentages. Needs at least two points with
    different MINT values.

    Example: points (0.2, 0.9), (0.4, 0.8), (0.6, 0.7) lie on F = 1 - 0.5·MINT, so F@50 = 0.75.
    """
    x = np.asarray(mint_values, dtype=float)
    y = np.asarray(factuality_values, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(
            f"`mint_values` and `factuality_values` must be 1-D of equal length, got {x.shape} and {y.shape}"
        )
    if len(x) < 2 or np.ptp(x) == 0:
        raise ValueError(
            "F@50 needs at least two points with different MINT values "
            f"(decode at several constraint strengths), got MINT values {x.tolist()}"
        )
    slope, intercept = np.polyfit(x, y, 1)
    return float(intercept + slope * at)
