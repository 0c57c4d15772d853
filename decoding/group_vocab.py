"""Which vocabulary tokens speak for which group: a per-example token -> group map.

For an example whose documents carry group labels, a *content word* is a word of
the tokenizer's segmentation — a word-start piece (SmolLM2's byte-level BPE marks
it with ``Ġ``) plus its alphabetic continuation pieces — that is alphabetic, at
least two letters long and no stop word. It is keyed by its lowercased first
piece k, the token a generator has to emit to start writing it (words whose
first piece is itself a stop word or one letter, like "any" of "anyway", are
skipped: that token says nothing about the word). With n_{g,k} the
occurrences of k in group g's documents, N_g = Σ_k n_{g,k} and the prior
π_g = N_g / Σ_h N_h:

* membership   A[g, k] = 1 if n_{g,k} > 0 else 0 — FairSumm's N-gram target
  counts a summary token for every group whose documents contain it;
* specificity  S[g, k] = max(0, p(g|k) − π_g) / (1 − π_g), with
  p(g|k) = (n_{g,k} + λ·π_g) / (n_k + λ) smoothed towards the prior (λ =
  ``smoothing``): near 1 for a token seen often and only in g, 0 for a token
  spread over the groups like the text itself;
* source counts N_g — FairSumm's source distribution s_g ∝ N_g.

Each key k is then expanded to the vocabulary ids of its single-token surface
forms (``Ġk``, ``ĠK``, ``k``, ``K``), so "Great" at a sentence start counts like
" great". :class:`GroupTables` stacks a batch of maps into dense tensors
(built once per batch) together with each example's target distribution.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Union

from evaluation.schema import DataError, Example
from evaluation.text import NLTK_ENGLISH_STOP_WORDS

#: A fairness target: "ratio" (source distribution), "equal" (uniform) or shares per group.
Fairness = Union[str, Mapping[str, float]]
FAIRNESS_MODES = ("ratio", "equal")
DEFAULT_SMOOTHING = 1.0
_WORD_START = "Ġ"


def parse_fairness(value: Fairness | None) -> str | dict[str, float] | None:
    """Normalize a fairness target: "ratio", "equal", a mapping, or a JSON object string.

    Returns ``None``, ``"ratio"``, ``"equal"`` or a ``{group: share}`` dict with
    string keys (ratings 1..5 become "1".."5") and non-negative shares with a
    positive sum (they need not sum to 1).
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text in FAIRNESS_MODES:
            return text
        if not text.startswith("{"):
            raise ValueError(
                f"`fairness` must be 'ratio', 'equal' or a JSON object of group shares such as "
                f'\'{{"pos": 0.5, "neg": 0.5}}\', got {value!r}'
            )
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"`fairness` is not valid JSON ({err.msg}): {text!r}") from None
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"`fairness` must be a non-empty mapping of group shares, got {value!r}")
    shares: dict[str, float] = {}
    for group, share in value.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not share >= 0:
            raise ValueError(
                f"`fairness` share of group {group!r} must be a non-negative number, got {share!r}"
            )
        shares[str(group)] = float(share)
    if sum(shares.values()) <= 0:
        raise ValueError(f"`fairness` shares must have a positive sum, got {shares}")
    return shares


@lru_cache(maxsize=8)
def _vocab(tokenizer: Any) -> dict[str, int]:
    return dict(tokenizer.get_vocab())


def _content_words(tokenizer: Any, text: str, stop_words: frozenset[str]) -> list[str]:
    """The lowercased first pieces of ``text``'s content words, every occurrence."""
    ids = tokenizer(" " + " ".join(text.split()), add_special_tokens=False)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    keys: list[str] = []
    first, word = "", ""

    def close() -> None:
        key = first.lower()
        if word.isalpha() and len(word) >= 2 and word.lower() not in stop_words:
            if len(key) >= 2 and key not in stop_words:  # "Ġany" of "anyway" stays a stop word
                keys.append(key)

    for piece in pieces:
        if piece.startswith(_WORD_START):
            close()
            first = word = piece[len(_WORD_START) :]
        elif word and piece.isalpha():
            word += piece
        else:
            close()
            first = word = ""
    close()
    return keys


@dataclass(frozen=True)
class GroupVocab:
    """One example's token -> group map over its K content tokens.

    Attributes:
        groups: the example's groups, in ``Example.groups`` order (G of them).
        token_ids: (K,) vocabulary ids of the content tokens (surface forms expanded).
        member: (G, K) 1.0 where the token occurs in the group's documents.
        specificity: (G, K) in [0, 1], how specific the token is to the group.
        source_counts: (G,) content-word count of each group's documents.
    """

    groups: tuple[str, ...]
    token_ids: Any
    member: Any
    specificity: Any
    source_counts: Any

    def target(self, fairness: Fairness) -> Any:
        """The (G,) target distribution over groups with content words; 0 for the others.

        ``"ratio"``: s_g ∝ N_g; ``"equal"``: uniform; a mapping: the given shares,
        renormalized over the groups that have content words.
        """
        import torch

        spec = parse_fairness(fairness)
        present = self.source_counts > 0
        if spec == "ratio":
            raw = self.source_counts.clone()
        elif spec == "equal":
            raw = present.to(torch.float32)
        else:
            unknown = sorted(set(spec) - set(self.groups))
            if unknown:
                raise DataError(
                    f"`fairness` names groups {unknown} that are not among this example's groups "
                    f"{list(self.groups)}; use the example's group labels as keys"
                )
            raw = torch.tensor([spec.get(g, 0.0) for g in self.groups], dtype=torch.float32)
            raw = raw * present
            if raw.sum() <= 0:
                raise DataError(
                    f"`fairness` gives no share to any group with documents ({list(self.groups)}); "
                    "give a positive share to at least one of them"
                )
        return raw / raw.sum()


def build_group_vocab(
    example: Example,
    tokenizer: Any,
    smoothing: float = DEFAULT_SMOOTHING,
    stop_words: frozenset[str] = NLTK_ENGLISH_STOP_WORDS,
) -> GroupVocab:
    """The token -> group map of ``example`` (formulas in the module docstring).

    Args:
        example: documents with a group label each and at least two groups.
        tokenizer: the generator's tokenizer (a byte-level BPE marking word starts with ``Ġ``).
        smoothing: λ >= 0, pseudo-count pulling p(g|k) towards the prior π_g.
        stop_words: lowercased words that are never content.

    Raises:
        DataError: a document lacks a group or fewer than two groups have documents.
    """
    import torch

    if not smoothing >= 0:
        raise ValueError(f"`smoothing` must be a non-negative float, got {smoothing!r}")
    groups = tuple(example.require_groups())
    index = {g: i for i, g in enumerate(groups)}
    counts: dict[str, list[int]] = {}
    for doc in example.documents:
        for key in _content_words(tokenizer, doc.text, stop_words):
            counts.setdefault(key, [0] * len(groups))[index[doc.group]] += 1
    if not counts:
        raise DataError(
            f"example {example.id!r}: the documents have no content words (only stop words, "
            "numbers or punctuation); fairness-aware decoding needs words to attribute"
        )
    keys = sorted(counts)
    n = torch.tensor([counts[k] for k in keys], dtype=torch.float64).T  # (G, keys)
    source = n.sum(dim=1)
    prior = source / source.sum()
    p_group = (n + smoothing * prior[:, None]) / (n.sum(dim=0, keepdim=True) + smoothing)
    spec = ((p_group - prior[:, None]).clamp(min=0) / (1 - prior[:, None]).clamp(min=1e-12)).clamp(
        max=1
    )
    vocab = _vocab(tokenizer)
    ids: list[int] = []
    columns: list[int] = []
    for j, key in enumerate(keys):
        forms = {_WORD_START + key, _WORD_START + key.capitalize(), key, key.capitalize()}
        for form in sorted(forms):
            if form in vocab:
                ids.append(vocab[form])
                columns.append(j)
    cols = torch.tensor(columns, dtype=torch.long)
    return GroupVocab(
        groups=groups,
        token_ids=torch.tensor(ids, dtype=torch.long),
        member=(n[:, cols] > 0).to(torch.float32),
        specificity=spec[:, cols].to(torch.float32),
        source_counts=source.to(torch.float32),
    )


@dataclass(frozen=True)
class GroupTables:
    """A batch of token -> group maps as dense tensors, padded to the largest group count.

    Attributes:
        member: (B, V, G) membership A, laid out for gathering generated ids.
        specificity: (B, G, V) specificity S.
        target: (B, G) target distribution t (0 on padding and on groups without content).
        present: (B, G) groups with content words (the |G| of UER).
        groups: per example, its group names.
    """

    member: Any
    specificity: Any
    target: Any
    present: Any
    groups: tuple[tuple[str, ...], ...]

    @classmethod
    def build(
        cls, vocabs: Sequence[GroupVocab], vocab_size: int, fairness: Fairness, device: Any = "cpu"
    ) -> GroupTables:
        """Stack ``vocabs`` (one per example) for a model with ``vocab_size`` output logits."""
        import torch

        if not vocabs:
            raise ValueError("`vocabs` is empty; give one GroupVocab per example")
        b, g = len(vocabs), max(len(v.groups) for v in vocabs)
        too_big = [int(v.token_ids.max()) for v in vocabs if int(v.token_ids.max()) >= vocab_size]
        if too_big:
            raise ValueError(
                f"`vocab_size` {vocab_size} is smaller than token id {too_big[0]}; pass the "
                "model's output size (model.get_output_embeddings().weight.shape[0])"
            )
        member = torch.zeros(b, vocab_size, g)
        specificity = torch.zeros(b, g, vocab_size)
        target = torch.zeros(b, g)
        present = torch.zeros(b, g, dtype=torch.bool)
        for i, v in enumerate(vocabs):
            n = len(v.groups)
            member[i, v.token_ids, :n] = v.member.T
            specificity[i, :n, v.token_ids] = v.specificity
            target[i, :n] = v.target(fairness)
            present[i, :n] = v.source_counts > 0
        return cls(
            member=member.to(device),
            specificity=specificity.to(device),
            target=target.to(device),
            present=present.to(device),
            groups=tuple(v.groups for v in vocabs),
        )
