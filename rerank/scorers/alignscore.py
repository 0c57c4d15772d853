"""``alignscore``: AlignScore's chunked consistency score (Zha et al. 2023, inference "nli_sp").

For a source with context chunks c_1..c_m (``text.alignscore_chunks``, ~350 words)
and a summary with sentences s_1..s_n:

    AlignScore = (1/n) * sum_j max_i p(c_i supports s_j)

with p from the configured backend (``evenhand.rerank.alignment``). A summary without
any sentence (empty or blank) scores ``empty_score`` (default 0.0: it states
nothing supported) and is flagged ``empty: true``; upstream returns NaN there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...evaluation.data.schema import Example
from ...evaluation.scoring.registry import register
from ...evaluation.scoring.scorer import Scorer
from ...evaluation.text.sentences import alignscore_chunks, split_sentences
from ..alignment import AlignmentBackendMixin, AlignmentConfig
from ..entail.inferencer import max_mean as chunk_max_mean


def max_mean(probs: Sequence[Sequence[float]]) -> float:
    """Max over chunks (rows), then mean over claim sentences (columns): ``entail.inferencer.max_mean`` of the
    grid's columns.

    >>> max_mean([[0.2, 0.9], [0.6, 0.1]])  # (0.6 + 0.9) / 2
    0.75
    """
    if not probs or not probs[0]:
        raise ValueError("need at least one chunk and one sentence")
    return chunk_max_mean([list(col) for col in zip(*probs)])


@dataclass
class AlignScoreConfig(AlignmentConfig):
    """Settings of the ``alignscore`` scorer (``max_length``: tokens per (chunk, sentence) pair)."""

    chunk_words: int = field(default=350, metadata={"help": "Words per context chunk."})
    empty_score: float = field(default=0.0, metadata={"help": "Score of a summary without sentences."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chunk_words < 1:
            raise ValueError(f"`chunk_words` must be a positive int, got {self.chunk_words}")


@register("alignscore")
class AlignScoreScorer(AlignmentBackendMixin, Scorer[AlignScoreConfig]):
    """AlignScore-style factual consistency of a summary with its source, in [0, 1]."""

    Config = AlignScoreConfig
    detail_fields = ("backend", "sentences", "chunks", "empty")

    def __init__(self, config: AlignScoreConfig | None = None, cache_dir: Any = None) -> None:
        super().__init__(config, cache_dir)
        self._backend: Any = None

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        grids = [
            (alignscore_chunks(ex.source_text(" "), self.config.chunk_words), split_sentences(out))
            for ex, out in zip(sources, outputs)
        ]
        results = []
        for (chunks, sentences), rows in zip(grids, self.pair_grids(grids)):
            record: dict[str, Any] = {
                "backend": self.backend.name, "sentences": len(sentences), "chunks": len(chunks),
                "empty": not sentences,
            }
            record["score"] = max_mean(rows) if sentences else self.config.empty_score
            results.append(record)
        return results
