"""Sentence splitting and Equal Coverage / AlignScore windows: moved to
:mod:`evenhand.evaluation.sentences` (pure text, used by decoding's meaning-level fair
beam search as well); re-exported here for the rerank scorers."""

from ..evaluation.sentences import alignscore_chunks, split_sentences, word_blocks

__all__ = ["alignscore_chunks", "split_sentences", "word_blocks"]
