"""Source token ids of a prompt batch, for processors that compare the output with the source.

Decoder-only models read the documents inside the chat prompt. A document
tokenized on its own can differ from its tokens in the prompt at the
boundaries (``"The"`` at the start of a text versus ``" The"`` after a
space), so the source is taken *as it appears*: each document's characters
are located in the prompt text and the prompt tokens overlapping them are
kept, with ``-1`` (never matches) between documents. A document not found
verbatim in the prompt (a custom ``prompt`` that rewrites it) is tokenized on
its own with ``add_special_tokens=False``.

Encoder-decoder models: the source is the encoder input ids, without padding
and special tokens (``processors.builders.source_token_ids``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

#: Separator between documents in a source: negative ids never match.
SEPARATOR = -1


def document_spans(prompt: str, texts: Sequence[str]) -> list[tuple[int, int] | None]:
    """Character span of each text in ``prompt`` (whitespace-normalized or raw), in order."""
    spans: list[tuple[int, int] | None] = []
    start = 0
    for text in texts:
        found = None
        for candidate in (" ".join(text.split()), text.strip()):
            if not candidate:
                continue
            at = prompt.find(candidate, start)
            if at < 0:
                at = prompt.find(candidate)
            if at >= 0:
                found = (at, at + len(candidate))
                break
        spans.append(found)
        if found is not None:
            start = found[1]
    return spans


def prompt_source_ids(tokenizer: Any, prompt: str, texts: Sequence[str]) -> list[int]:
    """Token ids of ``texts`` as they appear in ``prompt`` (decoder-only), -1 between them."""
    enc = tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    out: list[int] = []
    for text, span in zip(texts, document_spans(prompt, texts)):
        if out:
            out.append(SEPARATOR)
        if span is None:
            warnings.warn(
                "a document was not found verbatim in its prompt; matching on its own "
                "tokenization (tokens at its boundaries may differ from the prompt's)",
                stacklevel=2,
            )
            out.extend(tokenizer(text, add_special_tokens=False)["input_ids"])
            continue
        lo, hi = span
        out.extend(t for t, (a, b) in zip(ids, offsets) if a < hi and b > lo)
    return out
