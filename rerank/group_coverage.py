"""Per-group coverage in plain words: for each group, does the summary state one of its points?

``group_coverage(example, summary, backend)`` is the one place that decides it, so swapping the
entailment backend (a trained entailment model for the NLI-less fallback) changes every output
that prints it. Today it reads the backend of Equal Coverage (``rerank.scorers.equal_coverage``):
the matrix P[s, d] = max over blocks b of document d of p(b supports summary unit s), from
``EqualCoverageScorer.coverage_matrix``. A group is **covered** when some summary unit is
supported by one of the group's documents at p >= ``threshold`` (``COVERED_AT``).

On the offline fallback (``alignscore-minilm-fallback``) p is a cosine similarity, not an
entailment probability: "covered" then means "a summary sentence is about what one of the
group's documents says", and every line that prints it names the backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evaluation.data.schema import Example

#: The support at which a summary unit counts as stating a document's point.
COVERED_AT = 0.5


@dataclass(frozen=True)
class GroupCoverage:
    """One group of a source and whether a summary covers it."""

    group: str
    name: str
    documents: int
    total: int
    support: float
    covered: bool

    def words(self) -> str:
        """``Okafor (1 of 5 documents): not covered``."""
        state = "covered" if self.covered else "not covered"
        return f"{self.name} ({self.documents} of {self.total} documents): {state}"


def group_name(example: Example, group: str, documents: int) -> str:
    """How a reader names ``group``: ``one-star reviewers``, ``Councillor Okafor``, ``supporters``.

    >>> group_name(Example("x", [], "rating"), "1", 2), group_name(Example("y", [], "speaker"), "Kim", 1)
    ('one-star reviewers', 'Kim')
    """
    from ..decoding.groupwise import group_phrase

    phrase = group_phrase(example, group, documents)
    return phrase[len("The "):] if phrase.startswith("The ") else phrase


def group_coverage(
    example: Example, summary: str, backend: Any, threshold: float = COVERED_AT,
) -> list[GroupCoverage]:
    """Per group of ``example`` (in its order) whether ``summary`` states one of its points.

    ``backend``: an object with ``coverage_matrix(example, summary) -> (P, groups, origin)``
    (``EqualCoverageScorer``); ``support`` is the best p over the summary's units and the group's
    documents. A summary without units covers no group.
    """
    matrix, _, _ = backend.coverage_matrix(example, summary)
    labels = [str(d.group) for d in example.documents]
    out = []
    for group in dict.fromkeys(labels):
        columns = [d for d, label in enumerate(labels) if label == group]
        best = max((row[d] for row in matrix for d in columns), default=0.0)
        out.append(GroupCoverage(group, group_name(example, group, len(columns)), len(columns), len(labels),
                                 float(best), best >= threshold))
    return out


def backend_words(scorer: Any) -> str:
    """The backend that decides coverage, as every output names it: ``alignscore-minilm-fallback (MiniLM
    cosine: similarity, not entailment)``, an NLI model, an AlignScore checkpoint, evenhand's checker."""
    from .alignment import FALLBACK_NAME

    label = str(scorer.backend_label)
    return f"{label} (MiniLM cosine: similarity, not entailment)" if label == FALLBACK_NAME else label


def coverage_words(coverage: list[GroupCoverage]) -> str:
    """``Reyes (4 of 5 documents): covered; Okafor (1 of 5 documents): not covered``."""
    return "; ".join(c.words() for c in coverage)


def coverage_component(scorer: Any) -> Any:
    """What reads per-group coverage in ``scorer``: the scorer itself when it has ``coverage_matrix``
    (``EqualCoverageScorer``), else a composite's Equal Coverage component; None when it has neither."""
    if hasattr(scorer, "coverage_matrix"):
        return scorer
    return getattr(scorer, "components", {}).get("equal-coverage")


def left_out_groups(example: Example, summary: str, backend: Any) -> list[str]:
    """The groups ``summary`` does not cover, by ``group_coverage`` on ``backend``."""
    return [g.group for g in group_coverage(example, summary, backend) if not g.covered]
