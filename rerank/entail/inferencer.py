"""Scoring a summary against its source with the entailment model: AlignScore's chunk x sentence max-mean.

The source's documents are cut into short chunks (``chunks``: runs of whole
sentences of at most ``chunk_words`` words, about 100 tokens; a chunk never
spans two documents); the summary into sentences s_1..s_n. Then

    score = (1/n) * sum_j max_{i in K_j} p(c_i supports s_j)        (``max_mean``)

where p is the model's probability and K_j the ``k`` chunks closest to s_j
(``Inferencer.closest``): by cosine similarity of the embedded MiniLM's
mean-pooled embeddings (``select="embedding"``; a source's chunk embeddings are
computed once and reused for every candidate summary of it) or by shared
content words (``select="words"``); all chunks when there are at most ``k`` of
them or ``k`` is 0. Reading only the closest chunks bounds the cost per
sentence whatever the source's length (AlignScore reads every 350-word chunk).
All pairs of a call go to the model in one length-batched pass. A summary
without a sentence scores ``empty_score``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...evaluation.text.sentences import split_sentences, word_blocks

#: Words per chunk (about 100 MiniLM tokens).
CHUNK_WORDS = 70
#: Chunks read per summary sentence.
TOP_K = 2
SELECTIONS = ("embedding", "words")


class PairModel(Protocol):
    """What the inferencer needs of a model: p(premise supports hypothesis) per pair."""

    def probs(self, premises: Sequence[str], claims: Sequence[str], batch_size: int = 32) -> list[float]: ...


def chunks(text: str, chunk_words: int = CHUNK_WORDS) -> list[str]:
    """A document as chunks of whole consecutive sentences, at most ``chunk_words`` words each (a longer
    sentence is a chunk of its own).

    >>> chunks("One two. Three four. Five six.", chunk_words=4)
    ['One two. Three four.', 'Five six.']
    """
    return word_blocks(split_sentences(text) or [text], chunk_words + 1)


def max_mean(columns: Sequence[Sequence[float]]) -> float:
    """Mean over sentences of the max over each sentence's chunks (``columns[j]``: p of s_j's chunks).

    >>> max_mean([[0.2, 0.6], [0.9, 0.1]])  # (0.6 + 0.9) / 2
    0.75
    """
    if not columns or any(not col for col in columns):
        raise ValueError("need at least one sentence, each with at least one chunk")
    return sum(max(col) for col in columns) / len(columns)


def _words(text: str) -> frozenset[str]:
    from ...evaluation.text.tokens import NLTK_ENGLISH_STOP_WORDS

    return frozenset(w for w in "".join(c if c.isalnum() else " " for c in text.lower()).split()
                     if w not in NLTK_ENGLISH_STOP_WORDS)


def closest_by_words(sentence: str, texts: Sequence[str], k: int) -> list[int]:
    """Indices of the ``k`` texts sharing the most distinct content words with ``sentence`` (ties: earlier).

    >>> closest_by_words("the battery lasts a week", ["The case is red.", "A week on one battery.", "Week two."], 2)
    [1, 2]
    """
    words = _words(sentence)
    shared = [len(words & _words(t)) for t in texts]
    return sorted(sorted(range(len(texts)), key=lambda i: (-shared[i], i))[:k])


class Inferencer:
    """``score(sources, summaries)``: the max-mean of each summary (see the module docstring).

    Args:
        model: anything with ``probs(premises, hypotheses, batch_size)`` (``model.load_model``).
        k: chunks read per summary sentence (0: all).
        chunk_words: words per chunk.
        select: "embedding" (MiniLM cosine) or "words" (shared content words).
        batch_size: pairs per forward.
        empty_score: the score of a summary without a sentence.
    """

    def __init__(
        self, model: PairModel, k: int = TOP_K, chunk_words: int = CHUNK_WORDS, select: str = "embedding",
        batch_size: int = 32, empty_score: float = 0.0,
    ) -> None:
        if select not in SELECTIONS:
            raise ValueError(f"`select` must be one of {', '.join(SELECTIONS)}, got {select!r}")
        if k < 0 or chunk_words < 1:
            raise ValueError(f"need k >= 0 and chunk_words >= 1, got k={k}, chunk_words={chunk_words}")
        self.model, self.k, self.chunk_words, self.select = model, k, chunk_words, select
        self.batch_size, self.empty_score = batch_size, empty_score
        self._embedder: Any = None
        self._embedded: dict[str, Any] = {}  # chunk text -> unit embedding, kept for the next candidates

    def source_chunks(self, documents: Sequence[str]) -> list[str]:
        """The chunks of a source's documents, in order."""
        return [c for d in documents for c in chunks(d, self.chunk_words) if c.strip()] or [""]

    def _embed(self, texts: Sequence[str]) -> Any:
        import torch

        if self._embedder is None:
            from ..alignment import load_backend

            self._embedder = load_backend("fallback", device="cpu")
        new = [t for t in dict.fromkeys(texts) if t not in self._embedded]
        if new:
            if len(self._embedded) > 20_000:
                self._embedded.clear()
            self._embedded.update(zip(new, self._embedder.embed(new, self.batch_size)))
        return torch.stack([self._embedded[t] for t in texts])

    def closest(self, pieces: Sequence[str], sentences: Sequence[str]) -> list[list[int]]:
        """Per sentence, the indices of the chunks it is read with."""
        if self.k == 0 or len(pieces) <= self.k:
            return [list(range(len(pieces))) for _ in sentences]
        if self.select == "words":
            return [closest_by_words(s, pieces, self.k) for s in sentences]
        sims = self._embed(sentences) @ self._embed(pieces).T
        return [sorted(row.topk(self.k).indices.tolist()) for row in sims]

    def score(self, sources: Sequence[Sequence[str]], summaries: Sequence[str]) -> list[dict[str, Any]]:
        """Per (source documents, summary): ``score``, ``sentences``, ``chunks`` and ``per_sentence`` (each
        sentence's best p)."""
        plans = []
        premises: list[str] = []
        hypotheses: list[str] = []
        for documents, summary in zip(sources, summaries, strict=True):
            pieces = self.source_chunks(documents)
            sentences = split_sentences(summary)
            rows = []
            for sentence, keep in zip(sentences, self.closest(pieces, sentences) if sentences else []):
                rows.append(list(range(len(premises), len(premises) + len(keep))))
                premises.extend(pieces[i] for i in keep)
                hypotheses.extend([sentence] * len(keep))
            plans.append((len(pieces), rows))
        probs = self.model.probs(premises, hypotheses, self.batch_size) if premises else []
        out = []
        for n_chunks, rows in plans:
            columns = [[probs[i] for i in row] for row in rows]
            out.append({"score": max_mean(columns) if columns else self.empty_score, "sentences": len(rows),
                        "chunks": n_chunks, "per_sentence": [max(c) for c in columns]})
        return out
