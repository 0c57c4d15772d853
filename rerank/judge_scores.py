"""How an LLM judge's answer becomes a score on the 1-5 rubric, in-process or through a server.

- :func:`expected_digit`: the expected digit of a distribution over "1".."5"
  (renormalized over the five digits) and its argmax (``mode="expected"``);
- :func:`parse_score`: the paper's text mode, the first integer of the reply if
  it is 1..5, else 1 (``mode="parse"``).

Used by the in-process judges (:mod:`.scorers.llm_judge`) and the server path
(:mod:`.server_judge`) alike.
"""

from __future__ import annotations

import re

_FIRST_INT = re.compile(r"\d+")


def expected_digit(probs: list[float]) -> tuple[float, int]:
    """(expected value, argmax digit) of a distribution over the digits 1..5.

    >>> expected_digit([0.0, 0.5, 0.0, 0.5, 0.0])
    (3.0, 2)
    """
    total = sum(probs)
    if len(probs) != 5 or total <= 0:
        raise ValueError(f"need 5 non-negative probabilities with a positive sum, got {probs}")
    value = sum((d + 1) * p for d, p in enumerate(probs)) / total
    return value, max(range(5), key=lambda d: probs[d]) + 1


def parse_score(reply: str) -> int:
    """The paper's text mode: the first integer in the reply if it is 1..5, else 1."""
    match = _FIRST_INT.search(reply)
    if match is None:
        return 1
    value = int(match.group())
    return value if 1 <= value <= 5 else 1
