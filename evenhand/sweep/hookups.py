"""The sweep's links to ``evenhand.rerank``: reranking cells and per-row scorers.

``evenhand.rerank`` is imported only when a cell reranks (``candidates`` > 1) or the
sweep names a factuality / extra scorer, so plain sweeps start without loading it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evenhand.evaluation.data.lists import split_list
from evenhand.evaluation.data.schema import Example
from evenhand.evaluation.errors import DataError


def build_scorer(name: str, options: dict[str, Any] | None = None) -> Any:
    """The rerank scorer ``name`` with ``options`` (its Config fields)."""
    from evenhand.evaluation.scoring.registry import get_scorer

    try:
        return get_scorer(name, **(options or {}))
    except (KeyError, TypeError, ValueError) as err:
        raise DataError(f"scorer {name!r}: {err}") from None


def reranking_scorer(scorers: str | None) -> Any:
    """One scorer from the ``scorers`` setting: a single name, or several joined by ``composite``."""
    names = split_list(scorers, "scorers", empty_ok=True)
    if not names:
        raise DataError("a reranking cell (`candidates` > 1) needs `scorers`, e.g. 'llm-coverage,alignscore'")
    if len(names) == 1:
        return build_scorer(names[0])
    return build_scorer("composite", {"scorers": ",".join(names)})


def rerank_batch(
    model: Any, tokenizer: Any, examples: Sequence[Example], config: Any, candidates: int,
    scorers: str | None,
) -> list[dict[str, Any]]:
    """Best-of-N records for ``examples`` via ``rerank.Reranker`` (seeded by ``config.seed``).

    A record: ``{"summary", "best_index", "best_score", "scorer", "candidates": [...]}``.
    """
    from evenhand.rerank.reranker import RerankConfig, Reranker

    scorer = reranking_scorer(scorers)
    reranker = Reranker(
        model, tokenizer, scorer, RerankConfig(candidates=candidates, seed=config.seed),
        generate_config=config,
    )
    return [reranker.rerank_one(ex) for ex in examples]


def score_rows(
    scorer: Any, examples: Sequence[Example], summaries: Sequence[str]
) -> list[tuple[float, dict[str, Any]]]:
    """(score, details) per summary; details keep the scorer's numeric and string fields."""
    details = scorer.score_details(list(examples), list(summaries))
    out = []
    for d in details:
        kept = {k: v for k, v in d.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)}
        out.append((float(d["score"]), kept))
    return out


def backend_name(scorer: Any, details: dict[str, Any]) -> str:
    """The model behind a scorer's numbers: its ``backend`` detail, else its model id, else its name."""
    return str(details.get("backend") or getattr(scorer, "model_id", "") or scorer.name)
