"""Lazy links from the sweep to the ``rerank`` package: reranking cells and per-row scorers.

``rerank`` is imported only when a cell reranks (``candidates`` > 1) or the
sweep names a factuality / extra scorer, so plain sweeps run without it; when it
is missing or lacks the API, :class:`RerankUnavailable` says what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evenhand.evaluation.lists import split_list
from evenhand.evaluation.schema import DataError, Example


class RerankUnavailable(DataError):
    """The sweep needs the ``rerank`` package (Reranker or a scorer) and it is not installed."""


def _rerank_module(name: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise RerankUnavailable(
            f"{what} needs `{name}` from the rerank package, which is not available ({err}); "
            "set `candidates: 1` / `factuality: none` / drop `extra_scorers`, or install the rerank branch"
        ) from None


def build_scorer(name: str, options: dict[str, Any] | None = None) -> Any:
    """The rerank scorer ``name`` with ``options`` (its Config fields)."""
    registry = _rerank_module("evenhand.rerank.registry", f"scorer {name!r}")
    try:
        return registry.get_scorer(name, **(options or {}))
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
    reranker_mod = _rerank_module("evenhand.rerank.reranker", f"reranking with candidates={candidates}")
    scorer = reranking_scorer(scorers)
    reranker = reranker_mod.Reranker(
        model, tokenizer, scorer, reranker_mod.RerankConfig(candidates=candidates, seed=config.seed),
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
