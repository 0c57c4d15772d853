"""``composite``: a weighted sum of other scorers, each normalized within its candidate set.

A candidate set is all outputs given with the same source in one ``score``
call (the reranker passes the N candidates of one example). Each component's
raw scores x_1..x_N in the set are normalized, then combined:

    composite_i = sum_c w_c * norm_c(x_ci) / sum_c w_c

``normalize="minmax"`` (default): (x - min) / (max - min), 0.5 for a set whose
scores are all equal (a set of one included); ``"zscore"``: (x - mean) / std
(0 when std is 0); ``"none"``: raw scores. The composite is relative to its
set, so it is not cached; the components are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...evaluation.data.configs import coerce_lists
from ...evaluation.data.lists import split_list
from ...evaluation.scoring.registry import register
from ...evaluation.scoring.scorer import Scorer, ScorerConfig, Source, as_example, source_key

NORMALIZATIONS = ("minmax", "zscore", "none")


def normalize(values: Sequence[float], method: str = "minmax") -> list[float]:
    """Normalize one candidate set's scores (see the module docstring).

    >>> normalize([1.0, 3.0, 2.0])
    [0.0, 1.0, 0.5]
    """
    if method not in NORMALIZATIONS:
        raise ValueError(f"`normalize` must be one of {NORMALIZATIONS}, got {method!r}")
    xs = [float(v) for v in values]
    if method == "none" or not xs:
        return xs
    if method == "minmax":
        lo, hi = min(xs), max(xs)
        return [0.5] * len(xs) if hi == lo else [(x - lo) / (hi - lo) for x in xs]
    mean = sum(xs) / len(xs)
    std = (sum((x - mean) ** 2 for x in xs) / len(xs)) ** 0.5
    return [0.0] * len(xs) if std == 0 else [(x - mean) / std for x in xs]


def check_weights(weights: Sequence[float], names: Sequence[str]) -> list[float]:
    """One finite non-negative weight per component name, with a positive sum; returns them as floats."""
    from ...evaluation.data.checks import check_finite_list

    ws = [float(w) for w in check_finite_list(list(weights), "weights", low=0)]
    if len(ws) != len(names):
        raise ValueError(
            f"`weights` gives {len(ws)} numbers for {len(names)} scorers ({', '.join(names)}); "
            "give one weight per scorer"
        )
    if any(w < 0 for w in ws) or sum(ws) <= 0:
        raise ValueError(f"`weights` must be non-negative with a positive sum, got {ws}")
    return ws


def weighted_mean(values: Mapping[str, Sequence[float]], weights: Mapping[str, float]) -> list[float]:
    """sum_c w_c * values_c[i] / sum_c w_c for each i, components in ``weights`` order.

    >>> weighted_mean({"a": [1.0, 0.0], "b": [0.0, 0.0]}, {"a": 3.0, "b": 1.0})
    [0.75, 0.0]
    """
    total = sum(weights.values())
    n = len(next(iter(values.values())))
    return [sum(w * values[name][i] for name, w in weights.items()) / total for i in range(n)]


def set_composite(
    raw: Mapping[str, Sequence[float]], weights: Mapping[str, float], method: str = "minmax",
) -> list[float]:
    """The composite of one candidate set: each component normalized within the set, then weighted."""
    return weighted_mean({name: normalize(raw[name], method) for name in weights}, weights)


@dataclass
class CompositeConfig(ScorerConfig):
    """Settings of the ``composite`` scorer."""

    scorers: list[str] = field(
        default_factory=lambda: ["llm-coverage", "alignscore"],
        metadata={"help": "Registered scorer names (a list or comma-separated)."},
    )
    weights: list[float] | None = field(
        default=None, metadata={"help": "Weights, one per scorer (default: equal)."}
    )
    normalize: str = field(default="minmax", metadata={"help": "minmax, zscore or none."})
    options: dict[str, dict[str, Any]] = field(
        default_factory=dict,
        metadata={"help": "Per-scorer config fields, e.g. {'alignscore': {'model': 'x.ckpt'}}."},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        coerce_lists(self)  # lists or comma-separated strings
        names = self.names
        if "composite" in names:
            raise ValueError("`scorers` cannot include 'composite' itself")
        if len(set(names)) != len(names):
            raise ValueError(f"`scorers` lists a name twice: {names}")
        if self.weights is not None:
            check_weights(self.weight_list, names)
        if self.normalize not in NORMALIZATIONS:
            raise ValueError(f"`normalize` must be one of {NORMALIZATIONS}, got {self.normalize!r}")
        unknown = set(self.options) - set(names)
        if unknown:
            raise ValueError(f"`options` names scorers {sorted(unknown)} that are not in `scorers`")

    @property
    def names(self) -> list[str]:
        """The component scorer names."""
        return split_list(self.scorers, "scorers")  # raises when empty

    @property
    def weight_list(self) -> list[float]:
        """One weight per component (equal when not given)."""
        if self.weights is None:
            return [1.0] * len(self.names)
        if not self.weights:
            raise ValueError("`weights` is empty; give one weight per scorer")
        return list(self.weights)


@register("composite")
class CompositeScorer(Scorer[CompositeConfig]):
    """Weighted, per-set normalized combination of registered scorers."""

    Config = CompositeConfig
    detail_fields = ("components", "normalized")

    def __init__(self, config: CompositeConfig | None = None, cache_dir: Any = None,
                 components: dict[str, Scorer] | None = None) -> None:
        super().__init__(config, cache_dir)
        from ...evaluation.scoring.registry import get_scorer

        given = components or {}
        self.components: dict[str, Scorer] = {
            name: given.get(name) or get_scorer(
                name, cache_dir=cache_dir,
                **{"batch_size": self.config.batch_size, "progress": self.config.progress,
                   **self.config.options.get(name, {})},
            )
            for name in self.config.names
        }

    def score_details(self, sources: Sequence[Source], outputs: Sequence[str]) -> list[dict[str, Any]]:
        examples = [as_example(s, i) for i, s in enumerate(sources)]  # components apply target_only
        _, outputs = self._validate(sources, outputs)
        raw = {name: s.score(examples, outputs) for name, s in self.components.items()}
        sets: dict[str, list[int]] = {}
        for i, ex in enumerate(examples):
            sets.setdefault(json.dumps(source_key(ex)), []).append(i)
        normed = {name: [0.0] * len(outputs) for name in raw}
        for members in sets.values():
            for name, values in raw.items():
                for i, v in zip(members, normalize([values[i] for i in members], self.config.normalize)):
                    normed[name][i] = v
        scores = weighted_mean(normed, dict(zip(self.config.names, self.config.weight_list)))
        return [
            {
                "score": scores[i],
                "components": {n: raw[n][i] for n in raw},
                "normalized": {n: normed[n][i] for n in raw},
            }
            for i in range(len(outputs))
        ]

    def _score_batch(self, sources: list[Any], outputs: list[str]) -> list[dict[str, Any]]:
        return self.score_details(sources, outputs)


__all__ = [
    "CompositeScorer", "CompositeConfig", "as_example", "check_weights", "normalize", "set_composite",
    "weighted_mean",
]
