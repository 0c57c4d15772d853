"""Per-example and corpus tables over a registry of text metrics.

A metric is registered once under a name (:func:`register`); the CLI's
``--metrics`` choices come from :data:`METRICS`, and an unknown name raises
:class:`UnknownMetricError` listing the available ones. Model-backed scorers
(``rerank/``) can register here too: a :class:`Metric` only needs a per-example
``score(example, summary) -> dict`` and a corpus ``aggregate(rows) -> dict``.

Row keys starting with ``_`` carry objects for ``aggregate`` (for example
FairSumm's per-value terms for SOF) and never reach the tables.

Summaries are given as :class:`Scored` items (row id, example, summary text),
so one example can be scored against several summaries (its references).

A metric may also give ``score_many(examples, summaries) -> rows``, which
:func:`evaluate` then calls on blocks of items instead of ``score`` one by
one: ``mint`` and ``fragments`` use it for the corpus path
(:mod:`evenhand.evaluation.corpus`: each distinct source tokenized once per
block, shared by the two metrics), with the same values as ``score``.

Tables written by :func:`write_tables` for ``--out runs/x.jsonl``:
``runs/x.jsonl`` and ``runs/x.csv`` (one row per summary: ``id``, ``example_id``
and the metrics' columns), ``runs/x.corpus.jsonl`` and ``runs/x.corpus.csv``
(one row per corpus statistic: ``metric``, ``value``, ``n``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from evenhand.evaluation.jsonl import write_csv, write_jsonl
from evenhand.evaluation.lists import split_list
from evenhand.evaluation.schema import DataError, Example

Row = dict[str, Any]


class UnknownMetricError(ValueError):
    """A metric name that is not registered; the message lists the available ones."""


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    Args:
        name: registry name (``--metrics`` choice).
        help: one line for ``--help``.
        score: ``score(example, summary) -> row`` with float columns (and ``_``-private objects).
        aggregate: ``aggregate(rows) -> {statistic: value}`` over this metric's rows.
        score_many: optional ``score_many(examples, summaries) -> rows``, the rows
            ``score`` gives one by one (a faster path for many items).
    """

    name: str
    help: str
    score: Callable[[Example, str], Row]
    aggregate: Callable[[list[Row]], dict[str, float]]
    score_many: Callable[[Sequence[Example], Sequence[str]], list[Row]] | None = None


METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS`; a second metric with the same name is an error."""
    if metric.name in METRICS:
        raise ValueError(f"a metric named {metric.name!r} is already registered")
    METRICS[metric.name] = metric
    return metric


def get_metric(name: str) -> Metric:
    """The registered metric ``name``, or :class:`UnknownMetricError` listing the available ones."""
    try:
        return METRICS[name]
    except KeyError:
        raise UnknownMetricError(
            f"Unknown metric {name!r}. Available: {', '.join(sorted(METRICS))}"
        ) from None


def resolve_metrics(names: str | Iterable[str]) -> list[Metric]:
    """Metrics from a comma-separated string or a list of names (duplicates removed, order kept)."""
    names = list(dict.fromkeys(split_list(names, "metrics", empty_ok=True)))
    if not names:
        raise UnknownMetricError(f"no metric given. Available: {', '.join(sorted(METRICS))}")
    return [get_metric(n) for n in names]


# ---------------------------------------------------------------- metrics

SOURCE_SEPARATOR = "\n"  # between documents for MINT and fragments: a spaCy whitespace token


def _mean_columns(rows: list[Row], columns: Sequence[str]) -> dict[str, float]:
    return {c: float(np.mean([r[c] for r in rows])) for c in columns}


@lru_cache(maxsize=64)
def _spacy_source(text: str) -> tuple[str, ...]:
    from evenhand.evaluation.text import spacy_tokens

    return tuple(spacy_tokens(text))


def _summary_tokens(example: Example, summary: str) -> tuple[tuple[str, ...], list[str]]:
    from evenhand.evaluation.text import spacy_tokens

    tokens = spacy_tokens(summary)
    if not any(t.strip() for t in tokens):
        raise DataError(f"example {example.id!r}: the summary is empty")
    return _spacy_source(example.source_text(SOURCE_SEPARATOR)), tokens


def _named_row(columns: Sequence[str], scores: Any) -> Row:
    """A score dataclass's fields, in order, under the report's column names."""
    from dataclasses import astuple

    values = astuple(scores)
    if len(values) != len(columns):
        raise ValueError(f"{type(scores).__name__} has {len(values)} fields, expected {len(columns)}: {columns}")
    return dict(zip(columns, values))


#: MintScore's fields in order (mint, p1..p4, lcsr) as report columns.
MINT_COLUMNS = ("mint", "mint_p1", "mint_p2", "mint_p3", "mint_p4", "mint_lcsr")


def _score_mint(example: Example, summary: str) -> Row:
    from evenhand.evaluation.mint import mint_tokens

    source, tokens = _summary_tokens(example, summary)
    return _named_row(MINT_COLUMNS, mint_tokens(source, tokens))


@lru_cache(maxsize=1)
def _pair_corpus(sources: tuple[str, ...], summaries: tuple[str, ...]) -> Any:
    """The corpus path's tokenized pairs, kept for the next metric on the same block."""
    from evenhand.evaluation.corpus import PairCorpus

    return PairCorpus(sources, summaries)


def _corpus_for(examples: Sequence[Example], summaries: Sequence[str]) -> Any:
    for example, summary in zip(examples, summaries):
        if not summary.strip():  # exactly when spaCy finds no non-whitespace token
            raise DataError(f"example {example.id!r}: the summary is empty")
    sources = tuple(ex.source_text(SOURCE_SEPARATOR) for ex in examples)
    return _pair_corpus(sources, tuple(summaries))


def _score_mint_many(examples: Sequence[Example], summaries: Sequence[str]) -> list[Row]:
    return [_named_row(MINT_COLUMNS, s) for s in _corpus_for(examples, summaries).mint()]


register(
    Metric(
        "mint",
        "MINT abstractiveness (Dreyer et al. 2023) and its components, corpus mean",
        _score_mint,
        lambda rows: _mean_columns(rows, MINT_COLUMNS),
        _score_mint_many,
    )
)


#: FragmentScores' fields in order as report columns.
FRAGMENT_COLUMNS = (
    "frag_coverage",
    "frag_density",
    "frag_compression",
    "novel_1",
    "novel_2",
    "novel_3",
    "novel_4",
)


def _score_fragments(example: Example, summary: str) -> Row:
    from evenhand.evaluation.fragments import fragment_scores_tokens

    source, tokens = _summary_tokens(example, summary)
    return _named_row(FRAGMENT_COLUMNS, fragment_scores_tokens(source, tokens))


def _score_fragments_many(examples: Sequence[Example], summaries: Sequence[str]) -> list[Row]:
    return [_named_row(FRAGMENT_COLUMNS, f) for f in _corpus_for(examples, summaries).fragments()]


register(
    Metric(
        "fragments",
        "extractive fragment coverage/density/compression (Grusky et al. 2018), novel n-grams",
        _score_fragments,
        lambda rows: _mean_columns(rows, FRAGMENT_COLUMNS),
        _score_fragments_many,
    )
)


@lru_cache(maxsize=64)
def _group_profile(
    groups: tuple[tuple[str, str], ...],
) -> tuple[dict[str, int], dict[str, frozenset]]:
    from evenhand.evaluation.fairsumm import group_profile

    return group_profile(dict(groups))


def _score_fairsumm(example: Example, summary: str) -> Row:
    from evenhand.evaluation.fairsumm import auc, ngram_target, sample_fairness
    from evenhand.evaluation.text import fairsumm_tokens

    missing = [i for i, d in enumerate(example.documents) if d.group is None]
    if missing:
        raise DataError(
            f"example {example.id!r}: documents {missing[:5]} have no `group`; "
            "fairsumm needs a group label on every document"
        )
    groups = example.group_texts(" ")
    if len(groups) < 2:
        raise DataError(
            f"example {example.id!r}: fairsumm needs at least two groups (attribute values), "
            f"got {list(groups)}; give `group_values` or documents from two groups"
        )
    counts, vocab = _group_profile(tuple(groups.items()))
    if sum(counts.values()) == 0:
        raise DataError(f"example {example.id!r}: the documents have no content words for fairsumm")
    target = ngram_target(vocab, fairsumm_tokens(summary))
    result = sample_fairness(counts, target)
    return {
        "fairsumm_uer": result.uer,
        "fairsumm_unfair": float(result.unfair),
        "fairsumm_auc": auc(counts, target),
        "fairsumm_groups": float(sum(c > 0 for c in counts.values())),
        "_fairsumm": result,
    }


def _aggregate_fairsumm(rows: list[Row]) -> dict[str, float]:
    from evenhand.evaluation.fairsumm import corpus_fairness

    corpus = corpus_fairness([r["_fairsumm"] for r in rows])
    multi = [r["fairsumm_unfair"] for r in rows if r["fairsumm_groups"] >= 2]
    return {
        "fairsumm_bur": corpus.bur,
        "fairsumm_uer": corpus.uer,
        "fairsumm_sof": corpus.sof,
        "fairsumm_auc": float(np.mean([r["fairsumm_auc"] for r in rows])),
        "fairsumm_bur_multigroup": float(np.mean(multi)) if multi else 0.0,
    }


register(
    Metric(
        "fairsumm",
        "FairSumm BUR/UER/SOF/AUC with the N-gram matching target (Zhang et al. 2024)",
        _score_fairsumm,
        _aggregate_fairsumm,
    )
)


# ---------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Scored:
    """One summary to score: its row id, its example, its text."""

    id: str
    example: Example
    summary: str


@dataclass
class EvaluationReport:
    """Per-summary rows and corpus statistics (``metric``, ``value``, ``n``)."""

    rows: list[Row] = field(default_factory=list)
    corpus: list[Row] = field(default_factory=list)


#: Items per block for metrics with ``score_many`` (progress is reported per block).
EVALUATE_BLOCK = 512


def evaluate(
    items: Sequence[Scored], metrics: str | Iterable[str], progress: bool = False
) -> EvaluationReport:
    """Score every item with every metric; aggregate each metric over the corpus.

    Metrics with ``score_many`` score blocks of :data:`EVALUATE_BLOCK` items
    at once (same values as one by one). Raises DataError (naming the example)
    for inputs a metric cannot score.
    """
    chosen = resolve_metrics(metrics)
    if not items:
        raise DataError("nothing to evaluate: no summaries were given")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(items), desc="evaluate", unit="summary")
    rows: list[Row] = []
    per_metric: dict[str, list[Row]] = {m.name: [] for m in chosen}
    try:
        for lo in range(0, len(items), EVALUATE_BLOCK):
            block = items[lo : lo + EVALUATE_BLOCK]
            block_rows: list[Row] = [{"id": i.id, "example_id": i.example.id} for i in block]
            for metric in chosen:
                if metric.score_many is not None:
                    scores = metric.score_many([i.example for i in block], [i.summary for i in block])
                else:
                    scores = [metric.score(i.example, i.summary) for i in block]
                per_metric[metric.name].extend(scores)
                for row, score in zip(block_rows, scores):
                    row.update(score)
            rows.extend({k: v for k, v in row.items() if not k.startswith("_")} for row in block_rows)
            if bar is not None:
                bar.update(len(block))
    finally:
        if bar is not None:
            bar.close()
    corpus = [
        {"metric": stat, "value": value, "n": len(items)}
        for metric in chosen
        for stat, value in metric.aggregate(per_metric[metric.name]).items()
    ]
    return EvaluationReport(rows=rows, corpus=corpus)


# ---------------------------------------------------------------- summaries


def read_summaries(path: str | Path) -> dict[str, str]:
    """``{id: summary}`` from a JSONL file of ``{"id": ..., "summary": ...}`` lines."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: summaries file not found")
    from evenhand.evaluation.jsonl import iter_jsonl

    out: dict[str, str] = {}
    for number, record in iter_jsonl(path):
        if not isinstance(record, dict) or "id" not in record or "summary" not in record:
            raise DataError(f"{path}:{number}: each line needs fields `id` and `summary`")
        if not isinstance(record["summary"], str):
            raise DataError(f"{path}:{number}: field `summary` must be a string")
        key = str(record["id"])
        if key in out:
            raise DataError(f"{path}:{number}: duplicate id {key!r}")
        out[key] = record["summary"]
    return out


def select_summaries(examples: Sequence[Example], spec: str) -> list[Scored]:
    """The summaries to score, from ``--summaries``.

    ``spec`` is a JSONL path (one summary per example id, every example needs
    one), ``references`` (each example's first reference), ``references:K``
    (its K-th reference, from 0) or ``references:all`` (every reference, rows
    ``<id>#ref<K>``).
    """
    if spec == "references" or spec.startswith("references:"):
        which = spec.partition(":")[2] or "0"
        if which != "all" and not which.isdigit():
            raise DataError(f"--summaries {spec!r}: use references, references:K or references:all")
        items = []
        for ex in examples:
            if not ex.references:
                raise DataError(f"example {ex.id!r} has no `references` for --summaries {spec}")
            if which == "all":
                items.extend(Scored(f"{ex.id}#ref{k}", ex, r) for k, r in enumerate(ex.references))
            elif int(which) >= len(ex.references):
                raise DataError(
                    f"example {ex.id!r} has {len(ex.references)} references; --summaries {spec} needs more"
                )
            else:
                items.append(Scored(ex.id, ex, ex.references[int(which)]))
        return items
    summaries = read_summaries(spec)
    ids = {ex.id for ex in examples}
    missing = [ex.id for ex in examples if ex.id not in summaries]
    unknown = [k for k in summaries if k not in ids]
    if missing:
        raise DataError(f"{spec}: no summary for {len(missing)} example(s), e.g. {missing[:5]}")
    if unknown:
        raise DataError(f"{spec}: ids not in the data: {unknown[:5]}")
    return [Scored(ex.id, ex, summaries[ex.id]) for ex in examples]


# ---------------------------------------------------------------- tables


def table_paths(out: str | Path) -> dict[str, Path]:
    """The four table paths for ``--out`` (a ``.jsonl`` suffix is optional)."""
    out = Path(out)
    base = out.with_suffix("") if out.suffix == ".jsonl" else out
    stem = base.name
    return {
        "rows_jsonl": base.with_name(stem + ".jsonl"),
        "rows_csv": base.with_name(stem + ".csv"),
        "corpus_jsonl": base.with_name(stem + ".corpus.jsonl"),
        "corpus_csv": base.with_name(stem + ".corpus.csv"),
    }


def _write(rows: list[Row], jsonl: Path, csv_path: Path) -> None:
    write_jsonl(jsonl, rows)
    write_csv(csv_path, rows)


def write_tables(report: EvaluationReport, out: str | Path) -> dict[str, Path]:
    """Write the per-summary and corpus tables (JSONL + CSV); return their paths."""
    paths = table_paths(out)
    paths["rows_jsonl"].parent.mkdir(parents=True, exist_ok=True)
    _write(report.rows, paths["rows_jsonl"], paths["rows_csv"])
    _write(report.corpus, paths["corpus_jsonl"], paths["corpus_csv"])
    return paths


def format_corpus(report: EvaluationReport) -> str:
    """The corpus statistics as an aligned text table."""
    width = max([len("metric"), *(len(r["metric"]) for r in report.corpus)])
    lines = [f"{'metric':<{width}}  {'value':>10}  {'n':>6}"]
    lines += [f"{r['metric']:<{width}}  {r['value']:>10.4f}  {r['n']:>6}" for r in report.corpus]
    return "\n".join(lines)
