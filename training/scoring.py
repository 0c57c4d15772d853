"""Scores for DPO+RR: components, a per-candidate-set composite for pairs, a raw composite for dev.

Any object with ``name`` and ``score(sources, outputs) -> list[float]`` is a
component (the ``rerank`` registry's scorers, or a test's tiny scorer).

- Candidate composite (pairs): each component's scores are normalized within
  one prompt's candidate set (``evenhand.rerank.scorers.composite.normalize``: minmax by
  default), then ``sum_c w_c * norm_c / sum_c w_c`` — what ``composite`` does.
- Dev composite: one output per source makes per-set normalization constant,
  so the dev composite is the weighted mean of the raw component scores,
  ``sum_c w_c * x_c / sum_c w_c``, comparable across iterations and baselines.

``score_source="target"`` scores against the target perspective's document
only (TheFlipSide: ``meta["document"]``, else the documents whose group is
``target``), as Ri, Deas & McKeown do; ``"documents"`` uses all documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evenhand.evaluation.lists import split_list
from evenhand.evaluation.schema import DataError, Document, Example

SCORE_SOURCES = ("documents", "target")


def scoring_source(example: Example, mode: str = "documents") -> Example:
    """The example a scorer sees for ``example`` under ``mode`` (see module)."""
    if mode == "documents":
        return example
    if mode != "target":
        raise ValueError(f"`score_source` must be one of {SCORE_SOURCES}, got {mode!r}")
    text = example.meta.get("document")
    if isinstance(text, str) and text.strip():
        docs = [Document(text, example.target)]
    else:
        docs = [d for d in example.documents if example.target is not None and d.group == example.target]
    if not docs:
        raise DataError(
            f"example {example.id!r}: `score_source='target'` needs `meta.document` or documents whose "
            f"group equals `target` ({example.target!r}); use score_source='documents'"
        )
    return Example(id=example.id, documents=docs, attribute=example.attribute, target=example.target)


class Scoring:
    """Weighted components with the two composites of the module docstring.

    Args:
        components: name -> scorer object.
        weights: one non-negative weight per component (default equal).
        normalize: per-set normalization of the candidate composite.
        source: ``documents`` or ``target`` (see ``scoring_source``).
    """

    def __init__(
        self, components: Mapping[str, Any], weights: Sequence[float] | None = None,
        normalize: str = "minmax", source: str = "documents",
    ) -> None:
        from evenhand.rerank.scorers.composite import NORMALIZATIONS

        if not components:
            raise ValueError("`components` is empty; give at least one scorer")
        self.components = dict(components)
        self.weights = [1.0] * len(self.components) if weights is None else [float(w) for w in weights]
        if len(self.weights) != len(self.components):
            raise ValueError(
                f"`weights` gives {len(self.weights)} numbers for {len(self.components)} scorers; "
                "give one weight per scorer"
            )
        if any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
            raise ValueError(f"`weights` must be non-negative with a positive sum, got {self.weights}")
        if normalize not in NORMALIZATIONS:
            raise ValueError(f"`normalize` must be one of {NORMALIZATIONS}, got {normalize!r}")
        if source not in SCORE_SOURCES:
            raise ValueError(f"`score_source` must be one of {SCORE_SOURCES}, got {source!r}")
        self.normalize = normalize
        self.source = source

    @property
    def names(self) -> list[str]:
        """Component names, in weight order."""
        return list(self.components)

    def raw(self, examples: Sequence[Example], outputs: Sequence[str]) -> dict[str, list[float]]:
        """Per component, one raw score per (example, output)."""
        sources = [scoring_source(ex, self.source) for ex in examples]
        return {name: [float(x) for x in s.score(sources, list(outputs))]
                for name, s in self.components.items()}

    def weighted(self, values: Mapping[str, Sequence[float]]) -> list[float]:
        """sum_c w_c * values_c / sum_c w_c, element-wise."""
        total = sum(self.weights)
        n = len(next(iter(values.values())))
        return [
            sum(w * values[name][i] for name, w in zip(self.names, self.weights)) / total
            for i in range(n)
        ]

    def candidate_composite(self, raw: Mapping[str, Sequence[float]]) -> list[float]:
        """The composite of one prompt's candidate set (per-set normalized components)."""
        from evenhand.rerank.scorers.composite import normalize

        return self.weighted({name: normalize(raw[name], self.normalize) for name in self.names})


def registry_scoring(
    names: Sequence[str], weights: str | None, normalize: str, source: str,
    cache_dir: str | None = None,
) -> Scoring:
    """A ``Scoring`` of registered scorers (``evenhand.rerank.registry.get_scorer``)."""
    from evenhand.rerank.registry import get_scorer

    components = {name: get_scorer(name, cache_dir=cache_dir, progress=False) for name in names}
    ws = None if weights is None else [float(w) for w in split_list(weights, "weights", empty_ok=True)]
    return Scoring(components, ws, normalize, source)
