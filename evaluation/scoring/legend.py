"""What each printed score means: its direction and range, for every table evenhand prints.

One place for the meaning of the columns ``evaluate``, ``compare`` and the reports print.
Conventions (docs/fairsumm_metrics.md):

- **Equal Coverage** is always printed as the paper's EC (Li et al. 2024): ``>= 0``, 0 when
  every group's documents cover the summary alike, **lower is fairer** (column
  ``equal-coverage.ec``). The ``equal-coverage`` scorer's *score* is −EC (higher is fairer),
  which only ranks candidates inside rerank and train and is never printed as "EC".
- Scorers keep the scorer protocol's "higher is better" for their score; descriptive
  columns (MINT, fragments) have no better direction: they measure how abstractive a
  summary is, which the user chooses.
- Every range is also numeric (``Meaning.low``/``high``): a printed value lies inside it, or
  the range says ``unbounded`` (a linear fit's prediction, a log-ratio), and then a reader
  compares two values (the demo prints kept minus plain), never one value against a scale.

Every command that prints scores (``evaluate``, ``rerank``, ``compare``, ``report``, ``demo``)
reads their meaning here: :func:`meaning`, :func:`legend_line` (one line for a block).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

#: Directions: +1 higher is better, -1 lower is better, 0 descriptive (no better side).
HIGHER, LOWER, DESCRIPTIVE = 1, -1, 0


@dataclass(frozen=True)
class Meaning:
    """One column's direction, range and what it measures."""

    direction: int
    range: str
    what: str
    low: float = -math.inf
    high: float = math.inf

    @property
    def arrow(self) -> str:
        """``↑ better``, ``↓ better`` or ``descriptive``."""
        return {HIGHER: "higher is better", LOWER: "lower is better"}.get(self.direction, "descriptive")

    @property
    def unbounded(self) -> bool:
        """No bound on either side: one value means nothing alone, a difference does."""
        return self.low == -math.inf and self.high == math.inf

    def contains(self, value: float) -> bool:
        """``value`` lies on this scale (NaN, "not computed", counts as inside: it is printed as n/a)."""
        return value != value or self.low <= value <= self.high

    def short(self) -> str:
        """``0-1, higher is better``."""
        return f"{self.range}, {self.arrow}"


_SHARE = "0-1"
_UNIT = {"low": 0.0, "high": 1.0}
_NONNEG = {"low": 0.0}
_NONPOS = {"high": 0.0}
#: The range of a linear fit's prediction: a calibration (``calibrated:X``) extrapolates outside its fit's
#: domain (the demo's short review sets score 2-4 on a 0-1 target), so its scale has no bound.
UNBOUNDED_FIT = "unbounded (linear fit)"
#: The composite's range: min-max within one candidate set, so 1 is that set's best, not a good summary.
COMPOSITE_RANGE = "0-1 within its candidate set (min-max)"
#: Exact column names, then patterns (first match wins).
_EXACT: dict[str, Meaning] = {
    "mint": Meaning(DESCRIPTIVE, _SHARE, "MINT abstractiveness (1 = nothing copied)", **_UNIT),
    "mint_lcsr": Meaning(DESCRIPTIVE, _SHARE, "longest common subsequence / summary length (copying)", **_UNIT),
    "frag_coverage": Meaning(DESCRIPTIVE, _SHARE, "share of summary words inside copied fragments", **_UNIT),
    "frag_density": Meaning(DESCRIPTIVE, ">= 0", "mean squared copied-fragment length per word", **_NONNEG),
    "frag_compression": Meaning(DESCRIPTIVE, "> 0", "source words per summary word", **_NONNEG),
    "equal-coverage.ec": Meaning(LOWER, ">= 0 (0 = equal)", "Equal Coverage EC: groups' coverage gap", **_NONNEG),
    "equal-coverage": Meaning(HIGHER, "<= 0 (0 = equal)", "-EC, the equal-coverage scorer's ranking score",
                              low=-1.0, high=0.0),
    "alignscore": Meaning(HIGHER, _SHARE, "mean support of summary sentences by the source", **_UNIT),
    "fluency": Meaning(HIGHER, "<= 0 nats", "mean token log p(summary) without the source", **_NONPOS),
    "lm-likelihood": Meaning(HIGHER, "<= 0 nats", "mean token log p(summary | source)", **_NONPOS),
    "lm-pmi": Meaning(HIGHER, "unbounded (nats)", "log p(summary | source) - log p(summary)"),
    "checker": Meaning(HIGHER, _SHARE, "support of the summary's claims by their documents (evenhand's checker)",
                       **_UNIT),
    "sentiment-agreement": Meaning(HIGHER, "-2-0 (0 = the source's tone)",
                                   "minus the summary's VADER tone gap to its documents' mean, beyond 0.1",
                                   low=-2.0, high=0.0),
    "llm-coverage": Meaning(HIGHER, "1-5", "judge's expected coverage rating", low=1.0, high=5.0),
    "llm-faithfulness": Meaning(HIGHER, "1-5", "judge's expected faithfulness rating", low=1.0, high=5.0),
    "rouge_l_f1": Meaning(HIGHER, _SHARE, "ROUGE-L F1 against the best reference summary (stemmed)", **_UNIT),
    "words": Meaning(DESCRIPTIVE, "count", "summary length in words", **_NONNEG),
    "composite": Meaning(HIGHER, COMPOSITE_RANGE, "weighted mean of min-max normalized scorers (per candidate set)",
                          **_UNIT),
}
_PATTERNS: list[tuple[str, Meaning]] = [
    (r"mint_p\d", Meaning(DESCRIPTIVE, _SHARE, "share of summary n-grams not in the source", **_UNIT)),
    (r"novel_\d", Meaning(DESCRIPTIVE, _SHARE, "share of novel summary n-grams", **_UNIT)),
    (r"fairsumm[\w-]*_(bur|bur_multigroup|unfair)", Meaning(LOWER, _SHARE, "share of summaries judged unfair", **_UNIT)),
    (r"fairsumm[\w-]*_uer", Meaning(LOWER, ">= 0", "unfair error rate: distance from the fair distribution",
                                                      **_NONNEG)),
    (r"fairsumm[\w-]*_sof", Meaning(LOWER, ">= 0", "second-order fairness: bias spread across values",
                                                      **_NONNEG)),
    (r"fairsumm[\w-]*_auc", Meaning(LOWER, ">= 0", "unfairness area over the fairness thresholds",
                                                      **_NONNEG)),
    (r"fairsumm[\w-]*_skipped", Meaning(LOWER, "count", "summaries with fewer than 2 groups (not scored)",
                                                          **_NONNEG)),
    (r"fairsumm[\w-]*_groups", Meaning(DESCRIPTIVE, "count", "groups in the source", **_NONNEG)),
    (r"rouge-[\w-]+", Meaning(HIGHER, _SHARE, "ROUGE against the source", **_UNIT)),
    (r"calibrated:coverage(\.json)?", Meaning(HIGHER, UNBOUNDED_FIT,
                                              "predicted share of key points covered (a 0-1 target)")),
    (r"calibrated:faithfulness(\.json)?", Meaning(HIGHER, UNBOUNDED_FIT,
                                                  "predicted faithfulness (a 0-1 target)")),
    (r"calibrated:.+", Meaning(HIGHER, UNBOUNDED_FIT, "predicted human score")),
]


def meaning(column: str) -> Meaning | None:
    """The meaning of ``column``, or None for one evenhand does not know (a user's scorer)."""
    if column in _EXACT:
        return _EXACT[column]
    for pattern, found in _PATTERNS:
        if re.fullmatch(pattern, column):
            return found
    return None


def legend_lines(columns: Iterable[str]) -> list[str]:
    """``column: range, direction — what`` for each known column (once, in order)."""
    lines = []
    for column in dict.fromkeys(columns):
        found = meaning(column)
        if found is not None:
            lines.append(f"  {column}: {found.short()} - {found.what}")
    return lines


def legend_line(columns: Iterable[str], prefix: str = "scales") -> str:
    """One line for a block of scores: the known ``columns`` grouped by their ``short()`` meaning.

    >>> legend_line(["fluency", "lm-likelihood", "checker", "mine"])
    'scales: fluency, lm-likelihood <= 0 nats, higher is better; checker 0-1, higher is better'
    """
    groups: dict[str, list[str]] = {}
    for column in dict.fromkeys(columns):
        found = meaning(column)
        if found is not None:
            groups.setdefault(found.short(), []).append(column)
    return f"{prefix}: " + "; ".join(f"{', '.join(names)} {text}" for text, names in groups.items())


def printable(column: str, value: float) -> bool:
    """Whether ``value`` may be printed as ``column``: inside its legend's range, or the range is unbounded
    (or evenhand does not know the column)."""
    found = meaning(column)
    return found is None or found.unbounded or found.contains(value)
