"""MINT and extractive fragments over many (source, summary) pairs at once.

Sources repeat: three references per FairSumm sample, N candidates per source
in reranking and sweeps. :class:`PairCorpus` tokenizes each *distinct* text
once (spaCy's lowercased tokens as 64-bit hashes,
:func:`evenhand.evaluation.text.tokens.spacy_lower_hashes`), numbers the tokens of all
texts densely, and then

* counts the summary n-grams found among their source's n-grams for every
  pair and order at once: n-grams are keyed order by order (the key of an
  n-gram combines the dense key of its (n-1)-gram prefix with its last token,
  re-numbered densely), a pair's queries are ``(source text, key)`` numbers,
  and one sorted membership test per order answers all pairs. Only n-grams
  whose prefix was found go on to the next order (a summary n-gram can occur
  in the source only if its (n-1)-gram prefix does), so the arrays shrink
  order by order;
* computes LCS lengths with the bit-parallel algorithm of
  :mod:`evenhand.evaluation.metrics.lcs`, building the match masks of each source once
  for all its summaries;
* smooths, divides and takes the harmonic mean as arrays, in the same
  floating-point operations as :func:`evenhand.evaluation.metrics.mint.mint_tokens`.

Values equal the per-pair functions :func:`evenhand.evaluation.metrics.mint.mint` and
:func:`evenhand.evaluation.metrics.fragments.fragment_scores` (the tests compare them to
1e-12 on the shared data; in practice they are bit-identical).

``n_jobs`` (:func:`mint_corpus`, :func:`fragment_scores_corpus`) splits the
pairs by source over worker processes (``spawn``: each worker imports spaCy
once, about 1.5 s, so it pays off from a few thousand pairs); off by default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from functools import cached_property

import numpy as np

from .fragments import FragmentScores, greedy_fragments_ids
from .mint import MintScore

#: Match-mask rows built at a time for one source (bounds the boolean block to ~4 MB).
_MASK_BLOCK_CELLS = 1 << 22


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for every (s, n), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(total, dtype=np.int64)


def _dense_codes(raw: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes 0..k-1 numbering the distinct values of ``raw`` in sorted order, and k.

    One argsort (numpy 2's hash-based ``np.unique`` is several times slower here).
    """
    if len(raw) == 0:
        return np.zeros(0, dtype=np.int64), 0
    order = np.argsort(raw)
    ordered = raw[order]
    new = np.empty(len(raw), dtype=np.int64)
    new[0] = 0
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    sorted_codes = np.cumsum(new)
    codes = np.empty_like(sorted_codes)
    codes[order] = sorted_codes
    return codes, int(sorted_codes[-1]) + 1


def _isin_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``np.isin(values, sorted_set)`` for an already sorted ``sorted_set`` (one binary search)."""
    if len(sorted_set) == 0:
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def _match_masks(x: np.ndarray, symbols: np.ndarray) -> dict[int, int]:
    """Bit-parallel LCS match masks over ``x`` for ``symbols`` (distinct token ids).

    Returns token id -> int with bit i set where ``x[i]`` is that token, for
    the symbols that occur in ``x`` (the others match nothing).
    """
    symbols = symbols[np.isin(symbols, x)]
    masks: dict[int, int] = {}
    block = max(1, _MASK_BLOCK_CELLS // max(len(x), 1))
    for lo in range(0, len(symbols), block):
        part = symbols[lo : lo + block]
        packed = np.packbits(x[None, :] == part[:, None], axis=1, bitorder="little")
        for symbol, row in zip(part.tolist(), packed):
            masks[symbol] = int.from_bytes(row.tobytes(), "little")
    return masks


class PairCorpus:
    """Aligned (source, summary) pairs, each distinct text tokenized once.

    Args:
        sources: source texts (repeats are tokenized once).
        summaries: summary texts, aligned with ``sources``.

    Use :meth:`from_tokens` for token sequences that are already tokenized
    (compared as they are, like :func:`evenhand.evaluation.metrics.mint.mint_tokens`).

    Example::

        corpus = PairCorpus(["a b c d"] * 2, ["a b x", "c d"])
        corpus.fragments()[0].coverage   # 2/3
        [s.mint for s in corpus.mint()]
    """

    def __init__(self, sources: Sequence[str], summaries: Sequence[str]) -> None:
        from ..text.tokens import spacy_lower_hashes

        self._init(sources, summaries, spacy_lower_hashes)

    @classmethod
    def from_tokens(
        cls, sources: Sequence[Sequence[Hashable]], summaries: Sequence[Sequence[Hashable]]
    ) -> PairCorpus:
        """A corpus of pre-tokenized pairs (tokens compared as they are, no lowercasing)."""
        vocab: dict[Hashable, int] = {}

        def encode(texts: list[tuple[Hashable, ...]]) -> list[np.ndarray]:
            return [
                np.fromiter((vocab.setdefault(t, len(vocab)) for t in tokens), np.int64, len(tokens))
                for tokens in texts
            ]

        corpus = cls.__new__(cls)
        corpus._init([tuple(s) for s in sources], [tuple(s) for s in summaries], encode)
        return corpus

    def _init(
        self, sources: Sequence, summaries: Sequence, tokenize: Callable[[list], list[np.ndarray]]
    ) -> None:
        """Index the distinct texts (sources and summaries together), tokenize each once."""
        if len(sources) != len(summaries):
            raise ValueError(
                f"`sources` and `summaries` must have the same length, got {len(sources)} and {len(summaries)}"
            )
        index: dict = {}
        self.source_index = np.fromiter(
            (index.setdefault(s, len(index)) for s in sources), np.int64, len(sources)
        )
        self.summary_index = np.fromiter(
            (index.setdefault(s, len(index)) for s in summaries), np.int64, len(summaries)
        )
        arrays = tokenize(list(index))
        lengths = np.array([len(a) for a in arrays], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.lengths = lengths
        all_tokens = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        self.ids, self.vocab_size = _dense_codes(all_tokens)
        if max(len(self.ids), len(lengths)) >= 2**31:  # keys multiply two such numbers in int64
            raise ValueError("the corpus has 2**31 tokens or more; score it in parts")
        self._cache: dict[str, np.ndarray] = {}
        empty = np.flatnonzero(self.lengths[self.summary_index] == 0)
        if len(empty):
            raise ValueError(
                f"summary {int(empty[0])} has no tokens; MINT and fragments are undefined for an "
                "empty summary (drop it or give it text)"
            )

    def __len__(self) -> int:
        return len(self.source_index)

    def tokens(self, text: int) -> np.ndarray:
        """Dense token ids of distinct text number ``text``."""
        return self.ids[self.starts[text] : self.starts[text + 1]]

    @cached_property
    def _remaining(self) -> np.ndarray:
        """Per corpus position, the tokens left in its text from there (itself included)."""
        text_of = np.repeat(np.arange(len(self.lengths)), self.lengths)
        return self.starts[text_of + 1] - np.arange(len(self.ids))

    def match_counts(self, max_n: int = 5) -> np.ndarray:
        """Raw m_1..m_max_n per pair, shape (pairs, max_n): summary n-grams (every occurrence)
        found among their source's n-grams (:func:`evenhand.evaluation.metrics.mint.ngram_match_counts`)."""
        if max_n < 1:
            raise ValueError(f"`max_n` must be a positive int, got {max_n}")
        cached = self._cache.get("counts")
        if cached is not None and max_n <= cached.shape[1]:
            return cached[:, :max_n].copy()
        pairs = len(self)
        counts = np.zeros((pairs, max_n), dtype=np.int64)
        if pairs == 0 or len(self.ids) == 0:
            return counts
        rem = self._remaining
        ids = self.ids
        # source entries: every position of every distinct source (text, position)
        sources = np.flatnonzero(np.bincount(self.source_index, minlength=len(self.lengths)))
        s_pos = _ranges(self.starts[sources], self.lengths[sources])
        s_text = np.repeat(sources, self.lengths[sources])
        # query entries: every position of every pair's summary (pair, position)
        q_lengths = self.lengths[self.summary_index]
        q_pos = _ranges(self.starts[self.summary_index], q_lengths)
        q_pair = np.repeat(np.arange(pairs), q_lengths)
        q_text = self.source_index[q_pair]
        if (len(s_pos) + len(q_pos)) * max(self.vocab_size, len(self.lengths)) >= 2**62:
            raise ValueError("too many tokens for int64 n-gram keys; score the pairs in parts")
        s_key, q_key, size = ids[s_pos], ids[q_pos], self.vocab_size
        for n in range(1, max_n + 1):
            # an n-gram is keyed (text it must be found in, its dense n-gram code)
            source_keys = np.sort(s_text * size + s_key)
            queries = q_text * size + q_key
            found = _isin_sorted(queries, source_keys)
            counts[:, n - 1] = np.bincount(q_pair[found], minlength=pairs)
            if n == max_n:
                break
            # only a found n-gram can start a found (n+1)-gram, in the source it was found in
            keep_s = (rem[s_pos] > n) & _isin_sorted(s_text * size + s_key, np.sort(queries[found]))
            keep_q = found & (rem[q_pos] > n)
            s_pos, s_text, s_key = s_pos[keep_s], s_text[keep_s], s_key[keep_s]
            q_pos, q_pair, q_text, q_key = q_pos[keep_q], q_pair[keep_q], q_text[keep_q], q_key[keep_q]
            if len(q_pos) == 0:
                break
            codes, size = _dense_codes(
                np.concatenate([s_key * self.vocab_size + ids[s_pos + n], q_key * self.vocab_size + ids[q_pos + n]])
            )
            s_key, q_key = codes[: len(s_pos)], codes[len(s_pos) :]
        self._cache["counts"] = counts
        return counts.copy()

    def lcs_lengths(self) -> np.ndarray:
        """LCS(source, summary) length per pair (bit-parallel; each source's masks built once,
        for the tokens of its summaries)."""
        if "lcs" in self._cache:
            return self._cache["lcs"].copy()
        out = np.zeros(len(self), dtype=np.int64)
        by_source: dict[int, list[int]] = {}
        for p, s in enumerate(self.source_index.tolist()):
            by_source.setdefault(s, []).append(p)
        summaries: dict[int, list[int]] = {}
        for s, pairs in by_source.items():
            m = int(self.lengths[s])
            if m == 0:
                continue
            texts = sorted({int(self.summary_index[p]) for p in pairs})
            wanted = np.unique(np.concatenate([self.tokens(t) for t in texts]))
            match = _match_masks(self.tokens(s), wanted)
            full = (1 << m) - 1
            for p in pairs:
                t = int(self.summary_index[p])
                if t not in summaries:
                    summaries[t] = self.tokens(t).tolist()
                v = full
                for mask in [match[k] for k in summaries[t] if k in match]:  # absent: no change
                    u = v & mask
                    v = ((v + u) | (v - u)) & full
                out[p] = m - v.bit_count()
        self._cache["lcs"] = out
        return out.copy()

    def mint(self) -> list[MintScore]:
        """MINT per pair (:func:`evenhand.evaluation.metrics.mint.mint_tokens`'s values)."""
        raw = self.match_counts(5).astype(np.float64)
        length = self.lengths[self.summary_index]
        m = np.empty((len(self), 6), dtype=np.float64)
        m[:, 0] = raw[:, 0] + 1.0
        m[:, 1:] = raw
        for i in range(1, 5):
            m[:, i] = (m[:, i - 1] + m[:, i] + m[:, i + 1]) / 3.0
        p = [m[:, n] / np.maximum(length - n + 1, 1) for n in range(1, 5)]
        lcsr = self.lcs_lengths() / length
        parts = [*p, lcsr]
        with np.errstate(divide="ignore"):
            inverse_sum = 1.0 / parts[0]  # = sum(1/v for v in parts), added left to right
            for v in parts[1:]:
                inverse_sum = inverse_sum + 1.0 / v
            value = 1.0 - len(parts) / inverse_sum
        value = np.where(np.stack(parts).min(axis=0) == 0.0, 1.0, value)
        rows = np.stack([value, *parts], axis=1).tolist()
        return [MintScore(*row) for row in rows]

    def fragments(self) -> list[FragmentScores]:
        """Coverage, density, compression and novel n-gram ratios per pair
        (:func:`evenhand.evaluation.metrics.fragments.fragment_scores_tokens`'s values)."""
        matched = self.match_counts(4)
        out = []
        for p, (s, t) in enumerate(zip(self.source_index.tolist(), self.summary_index.tolist())):
            n = int(self.lengths[t])
            fragments = greedy_fragments_ids(self.tokens(s), self.tokens(t))
            lengths = np.array([f[1] for f in fragments], float)
            novel = [1.0 - matched[p, k - 1] / (n - k + 1) if n >= k else 0.0 for k in range(1, 5)]
            out.append(
                FragmentScores(
                    coverage=float(lengths.sum() / n),
                    density=float((lengths**2).sum() / n),
                    compression=int(self.lengths[s]) / n,
                    novel_1=float(novel[0]),
                    novel_2=float(novel[1]),
                    novel_3=float(novel[2]),
                    novel_4=float(novel[3]),
                )
            )
        return out


# ---------------------------------------------------------------- processes


def _check_jobs(n_jobs: int | None) -> int:
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"`n_jobs` must be a positive int, -1 (all cores) or None, got {n_jobs!r}")
    return os.cpu_count() or 1 if n_jobs == -1 else n_jobs


def _chunks_by_source(sources: Sequence[str], parts: int) -> list[list[int]]:
    """Pair indices cut into ``parts`` chunks, every pair of one source in the same chunk."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(sources):
        groups.setdefault(s, []).append(i)
    chunks: list[list[int]] = [[] for _ in range(parts)]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(chunks, key=len).extend(group)
    return [sorted(c) for c in chunks if c]


def _score_chunk(args: tuple[str, list[str], list[str]]) -> list:
    what, sources, summaries = args
    corpus = PairCorpus(sources, summaries)
    return corpus.mint() if what == "mint" else corpus.fragments()


def _score(what: str, sources: Sequence[str], summaries: Sequence[str], n_jobs: int | None) -> list:
    jobs = _check_jobs(n_jobs)
    if len(sources) != len(summaries):
        raise ValueError(
            f"`sources` and `summaries` must have the same length, got {len(sources)} and {len(summaries)}"
        )
    chunks = _chunks_by_source(sources, jobs) if jobs > 1 else []
    if len(chunks) <= 1:
        return _score_chunk((what, list(sources), list(summaries)))
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    tasks = [(what, [sources[i] for i in c], [summaries[i] for i in c]) for c in chunks]
    out: list = [None] * len(sources)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(chunks), mp_context=context) as pool:
        for chunk, scores in zip(chunks, pool.map(_score_chunk, tasks)):
            for i, score in zip(chunk, scores):
                out[i] = score
    return out


def mint_corpus(
    sources: Sequence[str], summaries: Sequence[str], n_jobs: int | None = None
) -> list[MintScore]:
    """:func:`evenhand.evaluation.metrics.mint.mint` of every aligned pair, each distinct text tokenized once.

    Args:
        sources: source texts.
        summaries: summary texts (non-empty), aligned with ``sources``.
        n_jobs: worker processes (None or 1: this process; -1: one per core).
    """
    return _score("mint", sources, summaries, n_jobs)


def fragment_scores_corpus(
    sources: Sequence[str], summaries: Sequence[str], n_jobs: int | None = None
) -> list[FragmentScores]:
    """:func:`evenhand.evaluation.metrics.fragments.fragment_scores` of every aligned pair (see :func:`mint_corpus`)."""
    return _score("fragments", sources, summaries, n_jobs)


def mint_batch(
    sources: Sequence[str], summaries: Sequence[str], n_jobs: int | None = None
) -> list[MintScore]:
    """:func:`evenhand.evaluation.metrics.mint.mint` over aligned lists: the corpus path (:func:`mint_corpus`).

    Each distinct text is tokenized once and the n-grams of all pairs are
    matched at once; same values as :func:`mint` pair by pair. ``n_jobs``:
    worker processes (off by default).
    """
    return mint_corpus(sources, summaries, n_jobs=n_jobs)
