"""ROUGE proxies against the source (rouge-score package): no reference summary needed.

``rouge`` scores the summary against the joined source documents with the
configured ROUGE type and measure; ``rouge-l-recall`` (the paper's coverage
proxy: how much of the source's longest common subsequence the summary holds),
``rouge-l-precision``, ``rouge-l-f`` and the ROUGE-1/2 recall and precision
presets in ``PRESETS`` are presets of it (features for ``evenhand calibrate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ...evaluation.data.schema import Example
from ...evaluation.scoring.registry import register
from ...evaluation.scoring.scorer import Scorer, ScorerConfig

MEASURES = ("recall", "precision", "fmeasure")


@dataclass
class RougeConfig(ScorerConfig):
    """Settings of the ROUGE proxies."""

    rouge_type: str = field(default="rougeL", metadata={"help": "rouge1, rouge2, rougeL, rougeLsum."})
    measure: str = field(default="recall", metadata={"help": "recall, precision or fmeasure."})
    use_stemmer: bool = field(default=True, metadata={"help": "Porter-stem tokens first."})
    batch_size: int = field(default=64, metadata={"help": "Outputs per batch (no model involved)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.measure not in MEASURES:
            raise ValueError(f"`measure` must be one of {MEASURES}, got {self.measure!r}")
        if self.rouge_type not in ("rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"):
            raise ValueError(f"`rouge_type` must be rouge1, rouge2, rougeL or rougeLsum, got {self.rouge_type!r}")


@cache
def rouge_score_scorer(rouge_type: str, use_stemmer: bool) -> Any:
    """rouge-score's ``RougeScorer`` of one ROUGE type, built once per process; NLTK (whose Porter
    stemmer it imports) is imported first by ``import_nltk``, without NLTK's scipy/sklearn parts."""
    from ...evaluation.text.tokens import import_nltk

    import_nltk()
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([rouge_type], use_stemmer=use_stemmer)


@register("rouge")
class RougeScorer(Scorer[RougeConfig]):
    """ROUGE of the summary against its source (``measure`` of ``rouge_type``)."""

    Config = RougeConfig

    def __init__(self, config: RougeConfig | None = None, cache_dir: Any = None) -> None:
        super().__init__(config, cache_dir)
        self._rouge = rouge_score_scorer(self.config.rouge_type, self.config.use_stemmer)

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        results = []
        for ex, out in zip(sources, outputs):
            s = self._rouge.score(ex.source_text("\n"), out)[self.config.rouge_type]
            results.append({"score": getattr(s, self.config.measure)})
        return results


def _preset(type_default: str, measure_default: str) -> type[RougeConfig]:
    @dataclass
    class Preset(RougeConfig):
        rouge_type: str = field(default=type_default, metadata={"help": "rouge1, rouge2, rougeL, rougeLsum."})
        measure: str = field(default=measure_default, metadata={"help": "recall, precision or fmeasure."})

    Preset.__name__ = Preset.__qualname__ = f"{type_default.capitalize()}{measure_default.capitalize()}Config"
    return Preset


#: Registered presets: name -> (rouge_type, measure).
PRESETS = {
    "rouge-l-recall": ("rougeL", "recall"),  # the paper's best ROUGE coverage proxy
    "rouge-l-precision": ("rougeL", "precision"),  # a cheap faithfulness proxy
    "rouge-l-f": ("rougeL", "fmeasure"),
    "rouge-1-recall": ("rouge1", "recall"),
    "rouge-1-precision": ("rouge1", "precision"),
    "rouge-2-recall": ("rouge2", "recall"),
    "rouge-2-precision": ("rouge2", "precision"),
}

for _name, (_type, _measure) in PRESETS.items():
    register(_name)(type(
        f"Rouge{_type[5:].upper()}{_measure.capitalize()}", (RougeScorer,),
        {"Config": _preset(_type, _measure), "__doc__": f"{_type} {_measure} of the summary against its source."},
    ))
