"""Which vocabulary tokens speak for which group: a per-example token -> group map.

The map counts words the way FairSumm's N-gram measure does (Zhang et al. 2024,
:mod:`evenhand.evaluation.metrics.fairsumm`), so that what the decoder steers is what the metric
measures afterwards. For an example whose documents carry group labels:

* **keys** are FairSumm's content words (:func:`evenhand.evaluation.text.tokens.fairsumm_tokens`:
  lowercased NLTK tokens, stop words and punctuation dropped, lemmatized,
  Porter-stemmed); n_{g,k} counts key k in group g's documents and
  N_g = Σ_k n_{g,k} is exactly FairSumm's source count of g;
* a **vocabulary token** maps to the key of the word it starts: every token
  that is a word-start marker (``Ġ`` of byte-level BPE, ``▁`` of SentencePiece)
  plus at least two ASCII letters, or a capitalized all-letter token (a word at
  the very start of the text), maps to ``normalize_word(word.lower())`` unless
  that word is a FairSumm filter word — so " works", " worked" and " Working"
  all count for the key "work", as they do in the metric; contraction pieces
  ("'m", "'s", "'t"...) map to the Treebank tokens FairSumm counts for them.
  This index of the whole vocabulary is built once per tokenizer;
* a source word the tokenizer splits into several pieces (" unbelie" +
  "vable") also maps its **first piece** to the word's key (the piece the
  generator has to emit to write it), when that piece is itself no filter
  word and has at least three letters.

With the prior π_g = N_g / Σ_h N_h, per token v with keys K(v):

* membership   A[g, v] = 1 if n_{g,k} > 0 for some k in K(v) — FairSumm's
  N-gram target counts a summary word for every group whose documents contain it;
* specificity  S[g, v] = max_{k in K(v)} max(0, p(g|k) − π_g) / (1 − π_g), with
  p(g|k) = (n_{g,k} + λ·π_g) / (n_k + λ) smoothed towards the prior (λ =
  ``smoothing``): near 1 for a word seen often and only in g, 0 for a word
  spread over the groups like the text itself;
* source counts N_g — FairSumm's source distribution s_g ∝ N_g.

What stays approximate: a generated multi-piece word counts through its first
piece only; a summary word whose first piece is also the first piece of an
unrelated source word is counted for that word's groups. :class:`GroupTables`
stacks a batch of maps into dense tensors (built once per batch) together with
each example's target distribution.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Union, overload

from ...evaluation.data.schema import Example
from ...evaluation.errors import DataError
from ...evaluation.text.tokens import FAIRSUMM_FILTER_WORDS, fairsumm_tokens, normalize_word

#: A fairness target: "ratio" (source distribution), "equal" (uniform) or shares per group.
Fairness = Union[str, Mapping[str, float]]
FAIRNESS_MODES = ("ratio", "equal")
DEFAULT_SMOOTHING = 1.0
_WORD_STARTS = ("Ġ", "▁")
_LETTERS = re.compile(r"[A-Za-z]{3,}")
#: Contraction pieces of byte-level BPE -> the NLTK Treebank token FairSumm counts for them
#: ("I'm" -> "i" "'m"; "don't" -> "do" "n't", which BPE splits as " don" "'t").
_CONTRACTIONS = {"'m": "'m", "'re": "'re", "'s": "'s", "'ve": "'ve", "'ll": "'ll", "'d": "'d", "'t": "n't"}


@overload
def parse_fairness(value: None) -> None: ...
@overload
def parse_fairness(value: Fairness) -> Literal["ratio", "equal"] | dict[str, float]: ...
def parse_fairness(value: Fairness | None) -> Literal["ratio", "equal"] | dict[str, float] | None:
    """Normalize a fairness target: "ratio", "equal", a mapping, or a JSON object string.

    Returns ``None``, ``"ratio"``, ``"equal"`` or a ``{group: share}`` dict with
    string keys (ratings 1..5 become "1".."5") and non-negative shares with a
    positive sum (they need not sum to 1).
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text == "ratio" or text == "equal":
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
        from ...evaluation.data.checks import check_number

        check_number(share, f"`fairness` share of group {group!r}", low=0)
        shares[str(group)] = float(share)
    if sum(shares.values()) <= 0:
        raise ValueError(f"`fairness` shares must have a positive sum, got {shares}")
    return shares


def _word_of(piece: str) -> str | None:
    """The word a vocabulary piece starts, or None when it starts no word (see module doc)."""
    for marker in _WORD_STARTS:
        if piece.startswith(marker):
            word = piece[len(marker) :]
            return word if len(word) >= 2 and word.isascii() and word.isalpha() else None
    if len(piece) >= 2 and piece.isascii() and piece.isalpha() and piece[0].isupper():
        return piece
    return None


@lru_cache(maxsize=8)
def key_index(tokenizer: Any) -> dict[str, tuple[int, ...]]:
    """FairSumm key -> the vocabulary ids of the tokens that start a word with that key.

    Built once per tokenizer (a few seconds: every word-start token is lemmatized and
    stemmed). Filter words (stop words, punctuation) have no key; the contraction
    pieces ``'m 're 's 've 'll 'd 't`` map to the key of the Treebank token FairSumm
    counts for them (``'t`` to ``n't``).
    """
    index: dict[str, list[int]] = {}
    for piece, token_id in tokenizer.get_vocab().items():
        if piece in _CONTRACTIONS:
            index.setdefault(normalize_word(_CONTRACTIONS[piece]), []).append(token_id)
            continue
        word = _word_of(piece)
        if word is None:
            continue
        low = word.lower()
        if low not in FAIRSUMM_FILTER_WORDS:
            index.setdefault(normalize_word(low), []).append(token_id)
    return {key: tuple(sorted(ids)) for key, ids in index.items()}


def first_pieces(tokenizer: Any, text: str) -> list[tuple[int, str]]:
    """(first piece id, key) of each word of ``text`` the tokenizer splits into several pieces.

    Words are runs of ASCII letters (punctuation around them dropped); a word is kept
    when neither it nor its first piece is a filter word and that piece has at least
    three letters (" unbelie" + "vable" -> (id of " unbelie", key of "unbelievable")).
    """
    words = _LETTERS.findall(text)
    if not words:
        return []
    encoded = tokenizer([" " + w for w in words], add_special_tokens=False)["input_ids"]
    out: list[tuple[int, str]] = []
    for word, ids in zip(words, encoded):
        piece = _word_of(tokenizer.convert_ids_to_tokens(ids[0])) if len(ids) > 1 else None
        low = word.lower()
        if piece and len(piece) >= 3 and not {piece.lower(), low} & FAIRSUMM_FILTER_WORDS:
            out.append((ids[0], normalize_word(low)))
    return out


@dataclass(frozen=True)
class GroupVocab:
    """One example's token -> group map over its K content tokens (each id once).

    Attributes:
        groups: the example's groups, in ``Example.groups`` order (G of them).
        token_ids: (K,) vocabulary ids of the tokens that start a source content word.
        member: (G, K) 1.0 where the token's word (key) occurs in the group's documents.
        specificity: (G, K) in [0, 1], how specific the token is to the group.
        source_counts: (G,) FairSumm content-word count of each group's documents.
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


def build_group_vocab(example: Example, tokenizer: Any, smoothing: float = DEFAULT_SMOOTHING) -> GroupVocab:
    """The token -> group map of ``example`` (formulas in the module docstring).

    Args:
        example: documents with a group label each and at least two groups.
        tokenizer: the generator's tokenizer (word starts marked with ``Ġ`` or ``▁``).
        smoothing: λ >= 0, pseudo-count pulling p(g|k) towards the prior π_g.

    Raises:
        DataError: a document lacks a group, fewer than two groups have documents, or
            no source word maps to a vocabulary token.
    """
    import torch

    if not smoothing >= 0:
        raise ValueError(f"`smoothing` must be a non-negative float, got {smoothing!r}")
    groups = tuple(example.require_groups())
    index = {g: i for i, g in enumerate(groups)}
    counts: dict[str, list[int]] = {}
    extra: dict[int, set[str]] = {}  # first pieces of multi-piece source words -> their keys
    for doc in example.documents:
        group = doc.group
        assert group is not None  # require_groups() checked that every document has one
        for key in fairsumm_tokens(doc.text):
            counts.setdefault(key, [0] * len(groups))[index[group]] += 1
        for token_id, key in first_pieces(tokenizer, doc.text):
            extra.setdefault(token_id, set()).add(key)
    vocab = key_index(tokenizer)
    keys = sorted(counts)
    column = {k: j for j, k in enumerate(keys)}
    token_keys: dict[int, set[int]] = {}
    for key in keys:
        for token_id in vocab.get(key, ()):
            token_keys.setdefault(token_id, set()).add(column[key])
    for token_id, words in extra.items():
        known = {column[k] for k in words if k in column}
        if known:
            token_keys.setdefault(token_id, set()).update(known)
    if not token_keys:
        raise DataError(
            f"example {example.id!r}: the documents have no content words (only stop words, "
            "numbers or punctuation); fairness-aware decoding needs words to attribute"
        )
    n = torch.tensor([counts[k] for k in keys], dtype=torch.float64).T  # (G, keys)
    source = n.sum(dim=1)
    prior = source / source.sum()
    p_group = (n + smoothing * prior[:, None]) / (n.sum(dim=0, keepdim=True) + smoothing)
    spec = ((p_group - prior[:, None]).clamp(min=0) / (1 - prior[:, None]).clamp(min=1e-12)).clamp(
        max=1
    )
    token_ids = sorted(token_keys)
    # (tokens, keys) incidence; a token with several keys takes the max over them
    incidence = torch.zeros(len(token_ids), len(keys), dtype=torch.bool)
    for row, token_id in enumerate(token_ids):
        incidence[row, sorted(token_keys[token_id])] = True
    member = ((n > 0)[:, None, :] & incidence[None]).any(dim=-1)
    specificity = torch.where(incidence[None], spec[:, None, :], 0.0).amax(dim=-1)
    return GroupVocab(
        groups=groups,
        token_ids=torch.tensor(token_ids, dtype=torch.long),
        member=member.to(torch.float32),
        specificity=specificity.to(torch.float32),
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


def group_tables(
    examples: Sequence[Example], tokenizer: Any, vocab_size: int,
    fairness: Fairness, device: Any = "cpu",
) -> GroupTables:
    """The :class:`GroupTables` of a batch: each example's group vocabulary under one target.

    Every engine builds them here (the group-coverage bonus and fair beam search share them).
    """
    vocabs = [build_group_vocab(ex, tokenizer) for ex in examples]
    return GroupTables.build(vocabs, vocab_size, fairness, device=device)
