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

from evenhand.evaluation.registry import register
from evenhand.evaluation.schema import Example
from evenhand.evaluation.scorer import Scorer, ScorerConfig
from evenhand.rerank.alignment import AlignmentBackendMixin
from evenhand.rerank.text import alignscore_chunks, split_sentences


def max_mean(probs: Sequence[Sequence[float]]) -> float:
    """Max over chunks (rows), then mean over claim sentences (columns).

    >>> max_mean([[0.2, 0.9], [0.6, 0.1]])  # (0.6 + 0.9) / 2
    0.75
    """
    if not probs or not probs[0]:
        raise ValueError("need at least one chunk and one sentence")
    columns = list(zip(*probs))
    return sum(max(col) for col in columns) / len(columns)


@dataclass
class AlignScoreConfig(ScorerConfig):
    """Settings of the ``alignscore`` scorer."""

    model: str = field(
        default="fallback",
        metadata={"help": "AlignScore .ckpt file, NLI classifier folder/id, or 'fallback' (MiniLM)."},
    )
    base_model: str = field(
        default="roberta-large",
        metadata={"help": "Config+tokenizer folder for a .ckpt (roberta-large or roberta-base)."},
    )
    chunk_words: int = field(default=350, metadata={"help": "Words per context chunk."})
    max_length: int = field(default=512, metadata={"help": "Tokens per (chunk, sentence) pair."})
    empty_score: float = field(default=0.0, metadata={"help": "Score of a summary without sentences."})
    device: str | None = field(default=None, metadata={"help": "cpu, cuda... (default: auto)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chunk_words < 1:
            raise ValueError(f"`chunk_words` must be a positive int, got {self.chunk_words}")
        if self.max_length < 8:
            raise ValueError(f"`max_length` must be an int >= 8, got {self.max_length}")


@register("alignscore")
class AlignScoreScorer(AlignmentBackendMixin, Scorer):
    """AlignScore-style factual consistency of a summary with its source, in [0, 1]."""

    Config = AlignScoreConfig
    detail_fields = ("backend", "sentences", "chunks", "empty")

    def __init__(self, config: AlignScoreConfig | None = None, cache_dir: Any = None) -> None:
        super().__init__(config, cache_dir)
        self._backend: Any = None

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        plans = []
        premises: list[str] = []
        hypotheses: list[str] = []
        for ex, out in zip(sources, outputs):
            chunks = alignscore_chunks(ex.source_text(" "), self.config.chunk_words)
            sentences = split_sentences(out)
            plans.append((len(chunks), len(sentences), len(premises)))
            for chunk in chunks:
                for sentence in sentences:
                    premises.append(chunk)
                    hypotheses.append(sentence)
        probs = self.backend.pair_probs(premises, hypotheses, self.config.batch_size) if premises else []
        results = []
        for n_chunks, n_sents, start in plans:
            record: dict[str, Any] = {
                "backend": self.backend.name, "sentences": n_sents, "chunks": n_chunks,
                "empty": n_sents == 0,
            }
            if n_sents == 0:
                record["score"] = self.config.empty_score
            else:
                flat = probs[start : start + n_chunks * n_sents]
                rows = [flat[i * n_sents : (i + 1) * n_sents] for i in range(n_chunks)]
                record["score"] = max_mean(rows)
            results.append(record)
        return results
