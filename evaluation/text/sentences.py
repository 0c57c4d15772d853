"""Sentence splitting and the windows scorers read: AlignScore chunks and Equal Coverage blocks (pure text, bottom layer).

The splitter is a rule-based one (no downloaded models): a sentence ends at
``.``, ``!`` or ``?`` (optionally followed by closing quotes or brackets) when
whitespace and an upper-case letter, digit or opening quote follow, unless the
word before the stop is a common abbreviation (``Mr.``, ``U.S.``, ``e.g.``...)
or a capital initial (``J. Doe``).
"""

from __future__ import annotations

import re

_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "u.s",
    "u.k", "u.n", "inc", "ltd", "co", "corp", "gen", "gov", "sen", "rep", "rev",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "a.m", "p.m", "fig", "al", "approx", "dept", "est",
}
_BOUNDARY = re.compile(r"""([.!?]+["'”’)\]]*)\s+(?=["'“‘(\[]?[A-Z0-9])""")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, whitespace-normalized; ``[]`` for blank text.

    >>> split_sentences("Mr. Smith left. He was tired! Was he?  Yes.")
    ['Mr. Smith left.', 'He was tired!', 'Was he?', 'Yes.']
    """
    text = " ".join(text.split())
    if not text:
        return []
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1)
        words = text[start:end].split()
        last = words[-1].rstrip(".!?\"'”’)]") if words else ""
        initial = len(last) == 1 and last.isupper()
        if match.group(1).startswith(".") and (last.lower() in _ABBREVIATIONS or initial):
            continue  # "Mr. Smith", "J. Doe": not a boundary
        sentences.append(text[start:end].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def alignscore_chunks(text: str, chunk_words: int = 350) -> list[str]:
    """AlignScore's context chunks: equal runs of sentences, about ``chunk_words`` words each.

    As in the AlignScore inference code: with W words and S sentences,
    ``n = W // chunk_words + 1`` chunks are wanted, so each chunk takes
    ``k = max(S // n, 1)`` consecutive sentences (the last may take fewer).
    Blank text gives ``[""]`` (one empty chunk, as upstream).
    """
    if chunk_words < 1:
        raise ValueError(f"`chunk_words` must be a positive int, got {chunk_words}")
    sentences = split_sentences(text) or [""]
    wanted = len(text.split()) // chunk_words + 1
    k = max(len(sentences) // wanted, 1)
    return [" ".join(sentences[i : i + k]) for i in range(0, len(sentences), k)]


def word_blocks(sentences: list[str], max_words: int = 100) -> list[str]:
    """Consecutive sentences joined into blocks of fewer than ``max_words`` words.

    A sentence joins the current block while the block stays under ``max_words``
    words; otherwise it starts a new block (a single sentence that is itself
    longer than the limit is a block of its own). These are the Equal Coverage
    authors' document blocks.
    """
    if max_words < 1:
        raise ValueError(f"`max_words` must be a positive int, got {max_words}")
    blocks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in sentences:
        n = len(sentence.split())
        if current and count + n >= max_words:
            blocks.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += n
    if current:
        blocks.append(" ".join(current))
    return blocks
