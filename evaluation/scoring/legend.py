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
"""

from __future__ import annotations

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

    @property
    def arrow(self) -> str:
        """``↑ better``, ``↓ better`` or ``descriptive``."""
        return {HIGHER: "higher is better", LOWER: "lower is better"}.get(self.direction, "descriptive")

    def short(self) -> str:
        """``0-1, higher is better``."""
        return f"{self.range}, {self.arrow}"


_SHARE = "0-1"
#: Exact column names, then patterns (first match wins).
_EXACT: dict[str, Meaning] = {
    "mint": Meaning(DESCRIPTIVE, _SHARE, "MINT abstractiveness (1 = nothing copied)"),
    "mint_lcsr": Meaning(DESCRIPTIVE, _SHARE, "longest common subsequence / summary length (copying)"),
    "frag_coverage": Meaning(DESCRIPTIVE, _SHARE, "share of summary words inside copied fragments"),
    "frag_density": Meaning(DESCRIPTIVE, ">= 0", "mean squared copied-fragment length per word"),
    "frag_compression": Meaning(DESCRIPTIVE, "> 0", "source words per summary word"),
    "equal-coverage.ec": Meaning(LOWER, ">= 0 (0 = equal)", "Equal Coverage EC: groups' coverage gap"),
    "equal-coverage": Meaning(HIGHER, "<= 0 (0 = equal)", "-EC, the equal-coverage scorer's ranking score"),
    "alignscore": Meaning(HIGHER, _SHARE, "mean support of summary sentences by the source"),
    "fluency": Meaning(HIGHER, "<= 0 nats", "mean token log p(summary) without the source"),
    "lm-likelihood": Meaning(HIGHER, "<= 0 nats", "mean token log p(summary | source)"),
    "lm-pmi": Meaning(HIGHER, "nats", "log p(summary | source) - log p(summary)"),
    "checker": Meaning(HIGHER, _SHARE, "support of the summary's claims by their documents (evenhand's checker)"),
    "sentiment-agreement": Meaning(HIGHER, "-2-0 (0 = the source's tone)",
                                   "minus the summary's VADER tone gap to its documents' mean, beyond 0.1"),
    "llm-coverage": Meaning(HIGHER, "1-5", "judge's expected coverage rating"),
    "llm-faithfulness": Meaning(HIGHER, "1-5", "judge's expected faithfulness rating"),
    "composite": Meaning(HIGHER, _SHARE, "weighted mean of min-max normalized scorers (per candidate set)"),
}
_PATTERNS: list[tuple[str, Meaning]] = [
    (r"mint_p\d", Meaning(DESCRIPTIVE, _SHARE, "share of summary n-grams not in the source")),
    (r"novel_\d", Meaning(DESCRIPTIVE, _SHARE, "share of novel summary n-grams")),
    (r"fairsumm[\w-]*_(bur|bur_multigroup|unfair)", Meaning(LOWER, _SHARE, "share of summaries judged unfair")),
    (r"fairsumm[\w-]*_uer", Meaning(LOWER, ">= 0", "unfair error rate: distance from the fair distribution")),
    (r"fairsumm[\w-]*_sof", Meaning(LOWER, ">= 0", "second-order fairness: bias spread across values")),
    (r"fairsumm[\w-]*_auc", Meaning(LOWER, ">= 0", "unfairness area over the fairness thresholds")),
    (r"fairsumm[\w-]*_skipped", Meaning(LOWER, "count", "summaries with fewer than 2 groups (not scored)")),
    (r"fairsumm[\w-]*_groups", Meaning(DESCRIPTIVE, "count", "groups in the source")),
    (r"rouge-[\w-]+", Meaning(HIGHER, _SHARE, "ROUGE against the source")),
    (r"calibrated:coverage(\.json)?", Meaning(HIGHER, "~0-1 (linear fit; may leave it)",
                                              "predicted share of key points covered")),
    (r"calibrated:faithfulness(\.json)?", Meaning(HIGHER, "~0-1 (linear fit; may leave it)",
                                                  "predicted faithfulness")),
    (r"calibrated:.+", Meaning(HIGHER, "target's scale (linear fit)", "predicted human score")),
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
