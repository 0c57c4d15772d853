"""From a summary to claims, and from per-document support to a claim's score.

A summary sentence is split into clauses at contrast connectives (", but",
"; ", ", while", ", although"...): each clause is a *claim*. A claim is
checked against the documents of the groups it names ("one-star reviewers",
"Okafor", "the left"; all documents when it names none), and its score
aggregates the checker's per-document support p_d (max over the document's
windows) by the claim's quantifier:

- singular or unquantified ("one reviewer", "some", "reviewers"): max_d p_d —
  one supporting document suffices;
- majority ("most", "many", "all", "the majority"): the support of the
  weakest document of the best half, i.e. the ceil(n/2)-th largest p_d —
  half of the named documents must support it.

The summary's score is the mean of its claims' scores (AlignScore's
mean-of-max form, with documents in place of chunks).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ...evaluation.data.schema import Example
from ...evaluation.text.sentences import split_sentences
from .lexicon import MAJORITY, RATING_RANGES, group_aliases

_CLAUSE = re.compile(
    r"(?:;\s+|,\s+(?=(?:but|while|whereas|although|though|yet|however)\b)|\s+(?=but\s)|:\s+(?=[a-z]))",
    re.IGNORECASE,
)
#: Words of a premise window (long documents are split into windows of about this many words).
WINDOW_WORDS = 120


def split_claims(summary: str) -> list[str]:
    """Clauses of a summary's sentences, split at contrast connectives.

    >>> split_claims("Most like the sound, but one found the cushions warm. Support never answered.")
    ['Most like the sound', 'but one found the cushions warm.', 'Support never answered.']
    """
    claims = []
    for sentence in split_sentences(summary):
        claims.extend(c.strip() for c in _CLAUSE.split(sentence) if len(c.strip().split()) >= 2)
    return claims


def is_majority(claim: str) -> bool:
    """Whether the claim is about most of its documents ("most", "all", "many", ...).

    >>> is_majority("Most reviewers praise the bass"), is_majority("One reviewer praises the bass")
    (True, False)
    """
    return MAJORITY.search(claim) is not None


def named_groups(claim: str, example: Example) -> list[str]:
    """The example's group labels that the claim names (empty: it names none)."""
    labels = [g for g in dict.fromkeys(example.labels) if g is not None]
    if len(labels) < 2:
        return []
    attribute = (example.attribute or "").lower()
    low = " " + claim.lower() + " "
    hits = []
    for label in labels:
        for alias in group_aliases(attribute, label, labels):
            if re.search(r"(?<![\w-])" + re.escape(alias) + r"(?![\w-])", low):
                hits.append(label)
                break
    if not hits and attribute == "rating" and all(v.isdigit() for v in labels):
        for pattern, ratings in RATING_RANGES:
            if pattern.search(claim):
                hits = [v for v in labels if int(v) in ratings]
                break
    return hits


def windows(text: str, words: int = WINDOW_WORDS) -> list[str]:
    """A document as premise windows of whole sentences, about ``words`` words each.

    >>> windows("One two. Three four. Five six.", words=4)
    ['One two. Three four.', 'Five six.']
    """
    out: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text) or [text]:
        n = len(sentence.split())
        if current and count + n > words:
            out.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += n
    if current:
        out.append(" ".join(current))
    return out


def aggregate(doc_support: Sequence[float], majority: bool) -> float:
    """A claim's score from its documents' support (see the module docstring).

    >>> aggregate([0.9, 0.1, 0.2, 0.05], majority=False)
    0.9
    >>> aggregate([0.9, 0.1, 0.2, 0.05], majority=True)  # the 2nd largest of 4
    0.2
    """
    if not doc_support:
        return 0.0
    ranked = sorted(doc_support, reverse=True)
    if not majority:
        return ranked[0]
    return ranked[math.ceil(len(ranked) / 2) - 1]
