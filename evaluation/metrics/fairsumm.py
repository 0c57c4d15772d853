"""FairSumm's value-distribution fairness: BUR, UER, AUC, SOF (Zhang et al. 2024).

"Fair Abstractive Summarization of Diverse Perspectives", NAACL 2024;
reference implementation ``metrics/eval.py`` and ``metrics/score/bur_uer.py``
in psunlpgroup/FairSumm. Where the code and the paper differ we follow the
code and offer the paper's variant as an option.

Per sample, with one value v per group (the social attribute's values):

* source distribution s_v ∝ content tokens of v's documents
  (:func:`source_counts`: lowercased, stop words and punctuation removed);
* target distribution t_v ∝ either
  - N-gram matching (:func:`ngram_target_counts`): every summary content
    token adds 1 to every value whose documents contain it (lemmatized and
    Porter-stemmed on both sides), or
  - similarity (:func:`similarity_target`): softmax(score(text_v, summary)/T)
    for a score callable: BERTScore precision (:func:`greedy_precision`,
    ``fairsumm-bertscore``) or BARTScore log-likelihood (``fairsumm-bartscore``).
    The code uses T = 2 (default), the paper T = 0.1. In every variant the
    *source* distribution stays the N-gram one (the authors' ``eval.py``);
    only the target is replaced;
* long-tail cutoff c: keep values by descending source share until the
  cumulative share reaches c (at least one), renormalize s and t over them
  (t uniform when the summary hits none of them);
* UER = (1/|V|) Σ_v max(0, s_v - t_v);  the sample is unfair when some kept
  value has t_v <= τ·s_v (τ = 0.8);
* AUC = area under the sample's unfair indicator over the cutoffs
  c ∈ {0, 0.1, …, 1} (trapezoid rule); the paper's variant integrates over
  τ ∈ {0, 0.1, …, 1} at c = 1 (``auc(..., over="tau")``);
* corpus: BUR = share of unfair samples, UER = mean UER, SOF (second-order
  fairness) = mean absolute deviation, over values, of each value's average
  max(0, s_v - t_v) term.

``reference`` replaces s in UER and the unfair test: ``"ratio"`` (the source
distribution, the default), ``"equal"`` (uniform over kept values) or a user
distribution over the values. The cutoff always uses the source counts.

The long-tail cutoff, two ways (``cumulative``): ``"float"`` is the authors'
code — add s_v/Σs in descending order as Python floats and stop once the sum
reaches c; the sum can stop short of 1.0 (ten equal values sum to
0.9999999999999999), and then every value is kept, the ones without source
tokens included (they count as unfair when the summary misses them).
``"tolerant"`` compares cumulative counts against ``c·total`` with a relative
tolerance of 1e-9 instead, so a value without source tokens is never kept
(the earlier evenhand behaviour, the default of these counts-level functions;
the ``fairsumm`` scorer uses ``"float"`` unless ``text="evenhand"``). Samples
whose documents all share one value are fair with UER 0 in the authors' code
(30 of Yelp's 100 gold samples); the corpus functions keep that convention and
also report BUR over samples with at least two represented values.

Text: :func:`group_profile`, :func:`source_counts` and
:func:`ngram_target_counts` take ``text="authors"`` (default: the released
code's word processing, :mod:`evenhand.evaluation.text.fairsumm_words`; give each
value's documents joined by :data:`AUTHORS_SEPARATOR`, as the authors'
``value_input``) or ``text="evenhand"`` (:func:`evenhand.evaluation.text.tokens.fairsumm_tokens`:
English stop words and lemminflect lemmas, the earlier pipeline).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import numpy as np

Counts = Union[Mapping[Any, float], Sequence[float], np.ndarray]  # any hashable value name as key
Reference = Union[Literal["ratio", "equal"], Counts]

DEFAULT_TAU = 0.8
DEFAULT_TEMPERATURE = 2.0
PAPER_TEMPERATURE = 0.1
GRID = np.round(np.linspace(0.0, 1.0, 11), 10)
#: How the authors' data joins one value's documents (``value_input``).
AUTHORS_SEPARATOR = " || "
#: The word processing choices of the text-level functions.
TEXT_PIPELINES = ("authors", "evenhand")
Cumulative = Literal["tolerant", "float"]
Text = Literal["authors", "evenhand"]


@dataclass(frozen=True)
class SampleFairness:
    """One sample's FairSumm result.

    Attributes:
        uer: mean over kept values of max(0, s_v - t_v).
        unfair: whether some kept value has t_v <= τ·s_v.
        terms: per kept value, max(0, s_v - t_v) (the SOF input).
    """

    uer: float
    unfair: bool
    terms: dict[Hashable, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CorpusFairness:
    """Corpus FairSumm statistics (rates in [0, 1]; the paper prints ×100)."""

    bur: float
    uer: float
    sof: float
    value_uer: dict[Hashable, float]
    n: int


def _as_arrays(source_counts: Counts, target_counts: Counts) -> tuple[list, np.ndarray, np.ndarray]:
    if isinstance(source_counts, Mapping):
        keys = list(source_counts)
        s = np.array([source_counts[k] for k in keys], dtype=float)
        if isinstance(target_counts, Mapping):
            unknown = [k for k in target_counts if k not in source_counts]
            if unknown:
                raise ValueError(
                    f"`target_counts` has values {unknown[:5]} that `source_counts` lacks; "
                    "both must be keyed by the same values"
                )
            t = np.array([target_counts.get(k, 0.0) for k in keys], dtype=float)
        else:
            t = np.asarray(target_counts, dtype=float)
    else:
        s = np.asarray(source_counts, dtype=float)
        keys = list(range(len(s)))
        t = (
            np.array([target_counts.get(k, 0.0) for k in keys], dtype=float)
            if isinstance(target_counts, Mapping)
            else np.asarray(target_counts, dtype=float)
        )
    if s.ndim != 1 or len(s) < 2:
        raise ValueError(
            f"`source_counts` must give at least two values (groups), got {len(keys)}; "
            "fairness compares values of an attribute"
        )
    if t.shape != s.shape:
        raise ValueError(
            f"`target_counts` must have {len(s)} entries like `source_counts`, got {t.shape}"
        )
    if not (np.isfinite(s).all() and np.isfinite(t).all()) or (s < 0).any() or (t < 0).any():
        raise ValueError("counts must be finite and non-negative")
    if s.sum() <= 0:
        raise ValueError("`source_counts` sums to 0; the source has no content tokens")
    return keys, s, t


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"`{name}` must be a float in [0, 1], got {value!r}")


def uer_terms(source_share: Any, summary_share: Any) -> Any:
    """max(0, s_v − t_v) per value: how far the summary's share t_v falls short of the source's s_v.

    The one UER core: numpy arrays here, torch tensors in the decoders
    (the decoding layer's fair beam search), elementwise.

    >>> uer_terms(np.array([0.6, 0.4]), np.array([0.75, 0.25])).tolist()
    [0.0, 0.15000000000000002]
    """
    return (source_share - summary_share).clip(min=0)


def unfair_error_rate(source_share: Any, summary_share: Any, present: Any = None) -> Any:
    """UER = (1/|V|) Σ_v max(0, s_v − t_v) along the last axis, over the ``present`` values (0/1 mask).

    Numpy arrays or torch tensors; without ``present`` every value counts.
    """
    terms = uer_terms(source_share, summary_share)
    if present is None:
        return terms.mean(-1)
    return (terms * present).sum(-1) / present.sum(-1).clip(min=1)


def kept_values(source: np.ndarray, cutoff: float = 1.0, cumulative: Cumulative = "tolerant") -> np.ndarray:
    """Indices kept by the long-tail cutoff, by descending source count (ties: input order).

    ``cumulative="float"``: the authors' running float sum of shares (see the module
    docstring), which keeps every value when it stops short of ``cutoff``;
    ``"tolerant"``: cumulative counts against ``cutoff·total`` with a 1e-9 relative tolerance.
    """
    _check_unit("cutoff", cutoff)
    order = np.argsort(-source, kind="stable")
    if cumulative == "float":
        # np.cumsum adds left to right like the authors' `ratio_count += s / total`
        reached = np.cumsum(source[order] / source.sum()) >= cutoff
        return order[: int(np.argmax(reached)) + 1] if reached.any() else order
    if cumulative != "tolerant":
        raise ValueError(f"`cumulative` must be 'tolerant' or 'float', got {cumulative!r}")
    running = np.cumsum(source[order])
    total = running[-1]
    reached = running >= cutoff * total - 1e-9 * total
    return order[: int(np.argmax(reached)) + 1]


def _reference_array(reference: Reference, keys: list, n: int) -> np.ndarray | None:
    if isinstance(reference, str):
        if reference not in ("ratio", "equal"):
            raise ValueError(
                f"`reference` must be 'ratio', 'equal' or a distribution, got {reference!r}"
            )
        return None if reference == "ratio" else np.ones(n)
    r = (
        np.array([reference.get(k, 0.0) for k in keys], dtype=float)
        if isinstance(reference, Mapping)
        else np.asarray(reference, dtype=float)
    )
    if r.shape != (n,) or (r < 0).any() or r.sum() <= 0:
        raise ValueError(f"`reference` must be {n} non-negative weights with a positive sum")
    return r


def sample_fairness(
    source_counts: Counts,
    target_counts: Counts,
    tau: float = DEFAULT_TAU,
    cutoff: float = 1.0,
    reference: Reference = "ratio",
    cumulative: Cumulative = "tolerant",
) -> SampleFairness:
    """UER and the unfair flag of one sample (see the module docstring for the formulas).

    Args:
        source_counts: per value, its content-token count in the source (a mapping or a sequence).
        target_counts: per value, the summary's count or probability; missing values count 0.
        tau: unfairness threshold τ; a value is under-represented when t_v <= τ·s_v.
        cutoff: long-tail cutoff c in [0, 1].
        reference: ``"ratio"``, ``"equal"`` or a distribution that replaces s_v.
        cumulative: ``"tolerant"`` or the authors' ``"float"`` cutoff sum (:func:`kept_values`);
            with ``"float"`` the UER terms are also summed in the values' input order, as the
            authors' ``compare_distribution`` does, so the float result is theirs bit for bit.

    Example: ``sample_fairness({0: 60, 1: 40}, {0: 9, 1: 3})`` has uer 0.075 and is unfair.
    """
    _check_unit("tau", tau)
    keys, s, t = _as_arrays(source_counts, target_counts)
    ref = _reference_array(reference, keys, len(s))
    kept = kept_values(s, cutoff, cumulative)
    if cumulative == "float":
        kept = np.sort(kept)
    terms, unfair = _kept_terms(s if ref is None else ref, t, kept, tau)
    return SampleFairness(
        uer=float(terms.mean()),
        unfair=unfair,
        terms={keys[i]: float(v) for i, v in zip(kept, terms)},
    )


def _kept_terms(s: np.ndarray, t: np.ndarray, kept: np.ndarray, tau: float) -> tuple[np.ndarray, bool]:
    """UER terms and the unfair flag over the ``kept`` values (s, t renormalized over them)."""
    s_k = s[kept]
    s_k = s_k / s_k.sum() if s_k.sum() > 0 else np.full(len(kept), 1.0 / len(kept))
    t_tot = t[kept].sum()
    t_k = t[kept] / t_tot if t_tot else np.full(len(kept), 1.0 / len(kept))
    return uer_terms(s_k, t_k), bool((t_k <= s_k * tau).any())


def auc(
    source_counts: Counts,
    target_counts: Counts,
    tau: float = DEFAULT_TAU,
    over: Literal["cutoff", "tau"] = "cutoff",
    reference: Reference = "ratio",
    cumulative: Cumulative = "tolerant",
) -> float:
    """Area under the unfair indicator over cutoffs (code) or over τ at cutoff 1 (paper).

    Grid {0, 0.1, …, 1}, trapezoid rule; in [0, 1]. Averaged over samples it
    is the corpus AUC of BUR.

    Example: ``auc({0: 60, 1: 40}, {0: 9, 1: 3})`` is 0.35.
    """
    if over == "cutoff":
        _check_unit("tau", tau)
        keys, s, t = _as_arrays(source_counts, target_counts)
        ref = _reference_array(reference, keys, len(s))
        # every cutoff keeps a prefix of the values in descending order: find each prefix's
        # length at once (kept_values' two rules), then one flag per distinct prefix
        order = np.argsort(-s, kind="stable")
        if cumulative == "float":
            reached = np.cumsum(s[order] / s.sum())[None, :] >= GRID[:, None]
        elif cumulative == "tolerant":
            running = np.cumsum(s[order])
            reached = running[None, :] >= (GRID * running[-1] - 1e-9 * running[-1])[:, None]
        else:
            raise ValueError(f"`cumulative` must be 'tolerant' or 'float', got {cumulative!r}")
        lengths = np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, len(order))
        by_length = {
            n: _kept_terms(s if ref is None else ref, t, order[:n], tau)[1] for n in set(lengths.tolist())
        }
        flags = [by_length[n] for n in lengths.tolist()]
    elif over == "tau":
        flags = [
            sample_fairness(source_counts, target_counts, x, 1.0, reference, cumulative).unfair
            for x in GRID
        ]
    else:
        raise ValueError(f"`over` must be 'cutoff' or 'tau', got {over!r}")
    return float(np.trapezoid(np.asarray(flags, dtype=float), GRID))


def second_order_fairness(samples: Sequence[SampleFairness]) -> tuple[float, dict[Hashable, float]]:
    """SOF and its per-value average UER terms.

    SOF = (1/|V|) Σ_v |ū_v - mean_w ū_w|, ū_v the mean of max(0, s_v - t_v)
    over the samples where value v was kept.
    """
    collected: dict[Hashable, list[float]] = {}
    for sample in samples:
        for key, term in sample.terms.items():
            collected.setdefault(key, []).append(term)
    if not collected:
        raise ValueError("`samples` is empty; SOF needs at least one sample")
    value_uer = {k: float(np.mean(v)) for k, v in collected.items()}
    means = np.array(list(value_uer.values()))
    return float(np.abs(means - means.mean()).mean()), value_uer


def corpus_fairness(samples: Sequence[SampleFairness]) -> CorpusFairness:
    """BUR (share unfair), mean UER and SOF over samples."""
    if not samples:
        raise ValueError("`samples` is empty; corpus fairness needs at least one sample")
    sof, value_uer = second_order_fairness(samples)
    return CorpusFairness(
        bur=float(np.mean([s.unfair for s in samples])),
        uer=float(np.mean([s.uer for s in samples])),
        sof=sof,
        value_uer=value_uer,
        n=len(samples),
    )


def content_tokenizer(text: Text = "authors") -> Callable[[str], list[str]]:
    """The content-token function of a text pipeline: ``"authors"`` (the released code's) or ``"evenhand"``."""
    if text == "authors":
        from ..text.fairsumm_words import content_tokens

        return content_tokens
    if text == "evenhand":
        from ..text.tokens import fairsumm_tokens

        return fairsumm_tokens
    raise ValueError(f"`text` must be one of {TEXT_PIPELINES}, got {text!r}")


def group_profile(
    group_texts: Mapping[str, str], text: Text = "authors"
) -> tuple[dict[str, int], dict[str, frozenset[str]]]:
    """Per value, its FairSumm content-token count (every occurrence) and its content-token set."""
    tokenize = content_tokenizer(text)
    tokens = {g: tokenize(t) if t else [] for g, t in group_texts.items()}
    return {g: len(t) for g, t in tokens.items()}, {g: frozenset(t) for g, t in tokens.items()}


def source_counts(group_texts: Mapping[str, str], text: Text = "authors") -> dict[str, int]:
    """Per value, the number of FairSumm content tokens (every occurrence) in its documents."""
    return group_profile(group_texts, text)[0]


def ngram_target(vocab: Mapping[str, Collection[str]], summary_tokens: Sequence[str]) -> dict[str, int]:
    """N-gram matching target from each value's content-token set and the summary's content tokens."""
    return {g: sum(tok in words for tok in summary_tokens) for g, words in vocab.items()}


def ngram_target_counts(group_texts: Mapping[str, str], summary: str, text: Text = "authors") -> dict[str, int]:
    """N-gram matching target: each summary content token adds 1 to every value containing it."""
    return ngram_target(group_profile(group_texts, text)[1], content_tokenizer(text)(summary))


def similarity_target(
    group_texts: Mapping[str, str],
    summary: str,
    score: Callable[[str, str], float] | Mapping[str, float],
    temperature: float = DEFAULT_TEMPERATURE,
) -> dict[str, float]:
    """Similarity target: softmax over values of score(text_v, summary) / T.

    Args:
        group_texts: per value, its documents' text ("" for a value without documents).
        summary: the summary.
        score: a callable ``score(group_text, summary) -> float`` (higher = closer), or
            precomputed scores per value.
        temperature: T >= 0; the authors' code uses 2 (default), the paper 0.1; T = 0 puts
            all mass uniformly on the best-scoring values.

    Values without documents get probability 0 without calling ``score``: the
    cutoff drops them and t is renormalized over kept values, so the result is
    the same as the authors' softmax over all values.
    """
    if not temperature >= 0:
        raise ValueError(f"`temperature` must be a non-negative float, got {temperature!r}")
    groups = [g for g, text in group_texts.items() if text]
    if not groups:
        raise ValueError("every value's text is empty; the similarity target needs source text")
    if isinstance(score, Mapping):
        raw = np.array([score[g] for g in groups], dtype=float)
    else:
        raw = np.array([score(group_texts[g], summary) for g in groups], dtype=float)
    if temperature == 0:
        probs = (raw == raw.max()).astype(float)
    else:
        z = raw / temperature
        probs = np.exp(z - z.max())
    probs /= probs.sum()
    out = dict.fromkeys(group_texts, 0.0)
    out.update({g: float(p) for g, p in zip(groups, probs)})
    return out


def greedy_precision(candidate: Any, reference: Any, weights: Any = None) -> float:
    """BERTScore precision (Zhang et al. 2020): mean over candidate tokens of the best cosine
    with a reference token.

    Args:
        candidate: (n, h) token embeddings of the candidate (the summary), its special
            tokens already dropped (bert_score gives them idf weight 0).
        reference: (m, h) token embeddings of the reference (a value's text); bert_score
            keeps the reference's special tokens as match candidates, so they belong here.
        weights: optional (n,) idf weights of the candidate tokens (bert_score's ``idf=False``
            = all ones, the FairSumm setting).

    Rows need not be unit-norm (they are normalized here); numpy arrays or torch tensors.

    >>> greedy_precision(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [1.0, 1.0]]))
    0.8535533905932737
    """
    c = np.asarray(candidate, dtype=float)
    r = np.asarray(reference, dtype=float)
    if c.ndim != 2 or r.ndim != 2 or c.shape[1] != r.shape[1] or not len(c) or not len(r):
        raise ValueError(
            f"`candidate` and `reference` must be non-empty (tokens, hidden) matrices of one "
            f"hidden size, got shapes {c.shape} and {r.shape}"
        )
    c = c / np.linalg.norm(c, axis=1, keepdims=True).clip(min=1e-12)
    r = r / np.linalg.norm(r, axis=1, keepdims=True).clip(min=1e-12)
    best = (c @ r.T).max(axis=1)
    w = np.ones(len(c)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(c),) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"`weights` must be {len(c)} non-negative weights with a positive sum")
    return float((best * w).sum() / w.sum())


def rescale(score: float, baseline: float | None) -> float:
    """bert_score's ``rescale_with_baseline``: (P − b) / (1 − b); ``None`` leaves P as it is.

    Affine, so it changes softmax(P/T) as a temperature would: T(1 − b) on raw P.
    """
    if baseline is None:
        return score
    if not baseline < 1:
        raise ValueError(f"`baseline` must be a float below 1, got {baseline!r}")
    return (score - baseline) / (1 - baseline)
