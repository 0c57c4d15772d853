"""Scores for DPO+RR: components, a per-candidate-set composite for pairs, a raw composite for dev.

Any object with ``name`` and ``score(sources, outputs) -> list[float]`` is a
component (the ``rerank`` registry's scorers, or a test's tiny scorer).

- Candidate composite (pairs): each component's scores are normalized within
  one prompt's candidate set (``evenhand.rerank.scorers.composite.normalize``: minmax by
  default), then ``sum_c w_c * norm_c / sum_c w_c`` — ``composite.set_composite``, what
  the ``composite`` scorer does.
- Dev composite: one output per source makes per-set normalization constant,
  so the dev composite is the weighted mean of the raw component scores,
  ``sum_c w_c * x_c / sum_c w_c``, comparable across iterations and baselines.

``score_source="target"`` scores against the target perspective's document
only (TheFlipSide: ``meta["document"]``, else the documents whose group is
``target``: ``evenhand.evaluation.scoring.scorer.target_view``), as Ri, Deas & McKeown do;
``"documents"`` uses all documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..evaluation.data.configs import as_list
from ..evaluation.data.schema import Document, Example
from ..evaluation.errors import DataError

SCORE_SOURCES = ("documents", "target")


def scoring_source(example: Example, mode: str = "documents") -> Example:
    """The example a scorer sees for ``example`` under ``mode`` (see module)."""
    from ..evaluation.scoring.scorer import target_view

    if mode == "documents":
        return example
    if mode != "target":
        raise ValueError(f"`score_source` must be one of {SCORE_SOURCES}, got {mode!r}")
    text = example.meta.get("document")
    if isinstance(text, str) and text.strip():
        docs = [Document(text, example.target)]
        return Example(id=example.id, documents=docs, attribute=example.attribute, target=example.target)
    view = target_view(example)
    if example.target is None or not any(d.group == example.target for d in view.documents):
        raise DataError(
            f"example {example.id!r}: `score_source='target'` needs `meta.document` or documents whose "
            f"group equals `target` ({example.target!r}); use score_source='documents'"
        )
    return view


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
        from ..rerank.scorers.composite import NORMALIZATIONS, check_weights

        if not components:
            raise ValueError("`components` is empty; give at least one scorer")
        self.components = dict(components)
        self.weights = check_weights([1.0] * len(self.components) if weights is None else weights,
                                     list(self.components))
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
        """sum_c w_c * values_c / sum_c w_c, element-wise (``composite.weighted_mean``)."""
        from ..rerank.scorers.composite import weighted_mean

        return weighted_mean(values, dict(zip(self.names, self.weights)))

    def candidate_composite(self, raw: Mapping[str, Sequence[float]]) -> list[float]:
        """The composite of one prompt's candidate set (``composite.set_composite``)."""
        from ..rerank.scorers.composite import set_composite

        return set_composite(raw, dict(zip(self.names, self.weights)), self.normalize)


def registry_scoring(
    names: Sequence[str], weights: Sequence[float] | str | None, normalize: str, source: str,
    cache_dir: str | None = None,
) -> Scoring:
    """A ``Scoring`` of registered scorers (``evenhand.evaluation.scoring.registry.get_scorer``)."""
    from ..evaluation.scoring.registry import get_scorer

    components = {name: get_scorer(name, cache_dir=cache_dir, progress=False) for name in names}
    ws = None if weights is None else [float(w) for w in as_list(weights, "weights", float) or []]
    return Scoring(components, ws, normalize, source)
