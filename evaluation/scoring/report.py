"""Per-example and corpus tables of any registered scorers (:mod:`evenhand.evaluation.scoring.registry`).

:func:`evaluate` scores every summary with every scorer: each scorer's
``columns`` make the per-summary rows (the metrics' several columns, or one
column named after a scorer), and its ``aggregate`` makes the corpus
statistics (FairSumm's BUR/UER/SOF, or a scorer's mean).

Summaries are given as :class:`Scored` items (row id, example, summary text),
so one example can be scored against several summaries (its references).
Items are scored in blocks of :data:`EVALUATE_BLOCK` (``mint`` and
``fragments`` then share one tokenization of each block's sources).

Tables written by :func:`write_tables` for ``--out runs/x.jsonl``:
``runs/x.jsonl`` and ``runs/x.csv`` (one row per summary: ``id``, ``example_id``
and the scorers' columns), ``runs/x.corpus.jsonl`` and ``runs/x.corpus.csv``
(one row per corpus statistic: ``metric``, ``value``, ``n``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.schema import Example
from ..errors import DataError
from ..io.csv_file import write_csv
from ..io.jsonl import write_jsonl
from .registry import check_names, get_scorer
from .scorer import Scorer

Row = dict[str, Any]


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
#: Fewer summaries than this: evaluate's progress bar waits ``SMALL_DELAY`` seconds before it shows.
SMALL_RUN, SMALL_DELAY = 50, 2.0


def resolve_scorers(scorers: str | Iterable[str | Scorer]) -> list[Scorer]:
    """Scorers from a comma-separated string of names, or a list of names and built scorers.

    Names are checked against the registry first (UnknownScorerError lists the
    available ones) and built with their defaults; duplicates are dropped.
    """
    if isinstance(scorers, str):
        scorers = check_names(scorers, "metrics")
    built: dict[str, Scorer] = {}
    for item in scorers:
        scorer = item if isinstance(item, Scorer) else get_scorer(check_names([item], "metrics")[0])
        built.setdefault(scorer.label, scorer)
    if not built:
        check_names([], "metrics")  # raises: no scorer given
    return list(built.values())


def evaluate(
    items: Sequence[Scored], scorers: str | Iterable[str | Scorer], progress: bool = False
) -> EvaluationReport:
    """Score every item with every scorer; aggregate each scorer over the corpus.

    ``scorers``: registered names (comma-separated or a list) or built scorers.
    Items are scored in blocks of :data:`EVALUATE_BLOCK` (progress is reported
    per block). Raises DataError (naming the example) for inputs a scorer cannot score.
    """
    chosen = resolve_scorers(scorers)
    if not items:
        raise DataError("nothing to evaluate: no summaries were given")
    from ..io.progress import Progress, report_part

    # a few summaries: the bar shows after SMALL_DELAY seconds, so a mistake found while the
    # scorers load (a bad --align-model) stays one line; many: at once
    bar = Progress(len(items), "evaluate", "summary", disable=not progress,
                   delay=0.0 if len(items) >= SMALL_RUN else SMALL_DELAY)
    rows: list[Row] = []
    records: dict[str, list[Row]] = {s.label: [] for s in chosen}
    try:
        for lo in range(0, len(items), EVALUATE_BLOCK):
            block = items[lo : lo + EVALUATE_BLOCK]
            block_rows: list[Row] = [{"id": i.id, "example_id": i.example.id} for i in block]
            bar.begin(len(block))
            for k, scorer in enumerate(chosen):
                report_part(k, len(chosen))  # each scorer a share of the block in flight
                details = scorer.score_details([i.example for i in block], [i.summary for i in block])
                records[scorer.label].extend(details)
                for row, detail in zip(block_rows, details):
                    row.update(scorer.columns(detail))
            rows.extend(block_rows)
            bar.update(len(block))
    finally:
        bar.close()
    corpus = [
        {"metric": stat, "value": value, "n": len(items)}
        for scorer in chosen
        for stat, value in scorer.aggregate(records[scorer.label]).items()
    ]
    return EvaluationReport(rows=rows, corpus=corpus)


# ---------------------------------------------------------------- summaries


def read_summaries(path: str | Path) -> dict[str, str]:
    """``{id: summary}`` from a JSONL file of ``{"id": ..., "summary": ...}`` lines."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: summaries file not found")
    from ..data.checks import expect
    from ..io.jsonl import iter_jsonl
    from ..io.limits import check_text_size

    out: dict[str, str] = {}
    for number, record in iter_jsonl(path):
        if not isinstance(record, dict) or "id" not in record or "summary" not in record:
            raise DataError(f"{path}:{number}: each line needs fields `id` and `summary`")
        if not isinstance(record["summary"], str):
            raise DataError(f"{path}:{number}: field `summary` must be a string")
        expect(record["id"], (str, int), f"{path}:{number}", "id", "a string or an integer")
        key = str(record["id"])
        if key in out:
            raise DataError(f"{path}:{number}: duplicate id {key!r}")
        check_text_size(record["summary"], f"{path}:{number}", "summary")
        out[key] = record["summary"]
    return out


def select_summaries(examples: Sequence[Example], spec: str) -> list[Scored]:
    """The summaries to score, from ``--summaries``.

    ``spec`` is a JSONL path (one summary per example id; examples without one are
    left out with a warning, none at all is an error), ``references`` (each example's first reference), ``references:K``
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
    if unknown:
        raise DataError(f"{spec}: ids not in the data: {unknown[:5]}")
    if len(missing) == len(examples):
        raise DataError(f"{spec}: no summary for {len(missing)} example(s), e.g. {missing[:5]}")
    if missing:  # a --limit run, one demo set: scored, and said so
        import warnings

        warnings.warn(
            f"{spec}: scoring the {len(examples) - len(missing)} of {len(examples)} examples it has summaries "
            f"for; no summary for {len(missing)}, e.g. {missing[:3]}", UserWarning, stacklevel=2,
        )
    return [Scored(ex.id, ex, summaries[ex.id]) for ex in examples if ex.id in summaries]


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
    """The corpus statistics as an aligned text table, each with its range and direction."""
    from .legend import meaning

    width = max([len("metric"), *(len(r["metric"]) for r in report.corpus)])
    lines = [f"{'metric':<{width}}  {'value':>10}  {'n':>6}  range, direction"]
    for r in report.corpus:
        found = meaning(r["metric"])
        lines.append(f"{r['metric']:<{width}}  {r['value']:>10.4f}  {r['n']:>6}  {found.short() if found else ''}".rstrip())
    return "\n".join(lines)
