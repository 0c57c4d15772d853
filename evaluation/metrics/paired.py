"""Paired comparison of systems over the same examples: mean differences with bootstrap intervals.

:func:`paired_table` pairs two systems' per-example rows by ``id`` and gives, per metric,
``system - baseline`` with a percentile paired bootstrap interval
(:func:`evenhand.evaluation.metrics.bootstrap.paired_bootstrap`) and a verdict. Used by
``evenhand compare``, the DPO+RR experiment (``training.experiment``) and the scripts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .bootstrap import paired_bootstrap


def paired_table(
    rows: Mapping[str, Sequence[Mapping[str, Any]]], pairs: Sequence[tuple[str, str]],
    metrics: Sequence[str], directions: Mapping[str, int] | None = None,
    n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0,
) -> list[dict[str, Any]]:
    """Paired bootstrap differences ``system - baseline`` per metric over shared dev articles.

    Args:
        rows: system -> per-article rows with ``id`` and the metrics.
        pairs: (system, baseline) names in ``rows``.
        metrics: the metric columns to compare.
        directions: metric -> 1 (higher is better), -1 (lower is better) or 0 (descriptive);
            unlisted metrics count higher as better.
        n_resamples, confidence, seed: of ``paired_bootstrap`` (one seed for every cell).

    Returns:
        One dict per (pair, metric): ``system``, ``baseline``, ``metric``, ``n``
        (articles where both values are finite), ``system_mean``, ``baseline_mean``,
        ``diff``, ``lower``, ``upper`` and ``verdict``: ``better`` / ``worse`` when
        the interval excludes 0 (by the metric's direction), ``higher`` / ``lower`` for
        descriptive metrics, else ``tie``.
    """
    out = []
    for system, baseline in pairs:
        for name in (system, baseline):
            if name not in rows:
                raise ValueError(f"no rows for system {name!r}; available: {', '.join(rows)}")
        base = {r["id"]: r for r in rows[baseline]}
        shared = [r for r in rows[system] if r["id"] in base]
        for metric in metrics:
            a = np.array([float(r.get(metric, math.nan)) for r in shared])
            b = np.array([float(base[r["id"]].get(metric, math.nan)) for r in shared])
            ok = np.isfinite(a) & np.isfinite(b)
            row: dict[str, Any] = {"system": system, "baseline": baseline, "metric": metric, "n": int(ok.sum())}
            if not ok.any():
                out.append({**row, "system_mean": math.nan, "baseline_mean": math.nan, "diff": math.nan,
                            "lower": math.nan, "upper": math.nan, "verdict": "n/a"})
                continue
            diff, lower, upper = paired_bootstrap(a[ok], b[ok], n_resamples, confidence, seed)
            direction = (directions or {}).get(metric, 1)
            if lower > 0 or upper < 0:
                sign = 1 if lower > 0 else -1
                verdict = ("higher" if sign > 0 else "lower") if direction == 0 else (
                    "better" if sign == direction else "worse")
            else:
                verdict = "tie"
            out.append({**row, "system_mean": float(a[ok].mean()), "baseline_mean": float(b[ok].mean()),
                        "diff": diff, "lower": lower, "upper": upper, "verdict": verdict})
    return out


def format_paired_table(table: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table of :func:`paired_table` rows."""
    lines = ["| system | baseline | metric | system mean | baseline mean | diff [95% CI] | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(
            f"| {r['system']} | {r['baseline']} | {r['metric']} | {r['system_mean']:.4f} | "
            f"{r['baseline_mean']:.4f} | {r['diff']:+.4f} [{r['lower']:+.4f}, {r['upper']:+.4f}] | "
            f"{r['verdict']} |"
        )
    return "\n".join(lines)
