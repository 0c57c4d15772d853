"""What a rerank run selected, reported honestly: which candidate source won how often, and the
composite gain over the plain beam-search summary only where a sampled candidate replaced it.

The composite is min-max normalized within each candidate set (0 = that set's worst, 1 = its
best), so "selected vs the mean of all candidates" is positive by construction and says
nothing; the comparison that means something is the kept summary against the plain one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..evaluation.scoring.legend import meaning

#: The recipe of the plain beam-search candidate (``Reranker.plain_candidate``).
PLAIN = "beam"


def wins(records: Sequence[dict[str, Any]]) -> Counter[str]:
    """How often each candidate source (recipe) was kept."""
    return Counter(str(r["candidates"][r["best_index"]]["recipe"]) for r in records)


def selection_lines(records: Sequence[dict[str, Any]], candidates: Sequence[str] = (), gain: bool = True) -> list[str]:
    """The lines a command prints after reranking ``records`` (``Reranker.rerank``'s records).

    ``candidates``: the recipes offered, so a source that never won is listed with 0. ``gain=False``
    leaves out the composite's gain over plain (the demo prints each component's kept minus plain).
    """
    n = len(records)
    counted = wins(records)
    order = [*dict.fromkeys([*candidates, *sorted(counted)])]
    won = ", ".join(f"{'plain beam search' if name == PLAIN else name} {counted.get(name, 0)}" for name in order)
    lines = [f"kept (of {n} examples): {won}"]
    if not gain:
        return lines + floor_lines(records)
    has_plain = [r for r in records if any(c["recipe"] == PLAIN for c in r["candidates"])]
    changed = [r for r in has_plain if r["candidates"][r["best_index"]]["recipe"] != PLAIN]
    if has_plain and not changed:
        lines.append(f"plain beam search kept for {len(has_plain)} of {n} examples: reranking changed no "
                     "summary, so no gain is claimed")
    elif changed:
        gains = [r["best_score"] - next(c["score"] for c in r["candidates"] if c["recipe"] == PLAIN)
                 for r in changed]
        lines.append(
            f"where another candidate replaced plain beam search ({len(changed)} of {n}): composite "
            f"{sum(gains) / len(gains):+.3f} over plain ({_composite_scale()})"
        )
    else:  # no plain candidate (floors off): only the spread of the set is known
        spread = [r["best_score"] - sum(c["score"] for c in r["candidates"]) / len(r["candidates"]) for r in records]
        lines.append(f"no plain summary to compare with (--floors none): kept minus the set's mean composite "
                     f"{sum(spread) / max(1, len(spread)):+.3f} ({_composite_scale()}; positive by construction)")
    return lines + floor_lines(records)


def _composite_scale() -> str:
    """The composite's scale, from the one legend (``evaluation.scoring.legend``)."""
    found = meaning("composite")
    return found.short() if found is not None else "composite"


def floor_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    """How many candidates each floor excluded (a candidate may fail several); none without floors.

    ``checker`` excluded means: it contradicts the source more than the plain summary, by more
    than the floor's margin, as evenhand's checker reads it.
    """
    floored = [c for r in records for c in r["candidates"] if "eligible" in c and c["recipe"] != PLAIN]
    if not floored:
        return []
    counted: Counter[str] = Counter(name for c in floored for name in c.get("below", []))
    names = [*dict.fromkeys(name for c in floored for name in c.get("floors", {}))]
    excluded = sum(not c["eligible"] for c in floored)
    per = ", ".join(f"{name} {counted.get(name, 0)}" for name in names)
    return [f"below a floor: {excluded} of {len(floored)} candidates (plain excluded); per floor: {per}"]
