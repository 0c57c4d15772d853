"""``evenhand evaluate``: score summaries with the evaluation metrics.

    evenhand evaluate --data FILE --summaries FILE --metrics mint,fragments,fairsumm --out runs/x.jsonl

``--summaries`` is a JSONL file of ``{"id": ..., "summary": ...}`` lines (what
``evenhand generate`` writes; every example needs one), or ``references``
(each example's first reference), ``references:K`` (its K-th, from 0) or
``references:all`` (every reference as its own row ``<id>#ref<K>``).

Writes ``x.jsonl`` and ``x.csv`` (one row per summary) and ``x.corpus.jsonl``
and ``x.corpus.csv`` (one row per corpus statistic) next to each other, and
prints the corpus table. Bad input exits with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import sys

NAME = "evaluate"
HELP = "score summaries (MINT, fragments, FairSumm, ...) and write per-example and corpus tables"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data", required=True, help="examples file (any format load_examples reads)"
    )
    parser.add_argument(
        "--summaries",
        required=True,
        help="JSONL of {id, summary}; or references, references:K, references:all",
    )
    parser.add_argument(
        "--metrics",
        default="mint,fragments",
        help="comma-separated metric names (default: mint,fragments; also: fairsumm) and "
        "registered scorer names (alignscore, equal-coverage, llm-coverage, rouge-l-recall...)",
    )
    parser.add_argument(
        "--out",
        required=True,
        help="per-example table path (.jsonl); .csv and .corpus.jsonl/.corpus.csv go next to it",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    from evenhand.commands._scoring import add_scorer_options

    add_scorer_options(parser)


def split_metrics(names: str) -> tuple[list[str], list[str]]:
    """(evaluation metric names, rerank scorer names); unknown names raise listing both."""
    from evenhand.evaluation.lists import split_list
    from evenhand.evaluation.report import METRICS, UnknownMetricError
    from evenhand.rerank.registry import available, is_registered

    metrics, scorers = [], []
    for name in split_list(names, "--metrics", empty_ok=True):
        if name in METRICS:
            metrics.append(name)
        elif is_registered(name):
            scorers.append(name)
        else:
            raise UnknownMetricError(
                f"Unknown metric {name!r}. Available: {', '.join([*METRICS, *available()])}"
            )
    return metrics, scorers


def add_scorer_columns(report, items, scorers, args) -> None:  # noqa: ANN001
    """Score every item with each rerank scorer; add per-row columns and corpus means."""
    from evenhand.commands._scoring import score_cache, scorer_options
    from evenhand.rerank.registry import get_scorer

    options = scorer_options(args, scorers)
    examples = [item.example for item in items]
    summaries = [item.summary for item in items]
    for name in scorers:
        scorer = get_scorer(name, cache_dir=score_cache(args), **options[name])
        details = scorer.score_details(examples, summaries)
        for row, detail in zip(report.rows, details):
            row[name] = float(detail["score"])
            if scorer.model_id:
                row[f"{name}_backend"] = scorer.model_id
        values = [float(d["score"]) for d in details]
        report.corpus.append({"metric": name, "value": sum(values) / len(values), "n": len(values)})


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse an --out whose tables would overwrite --data or --summaries."""
    from evenhand.evaluation.jsonl import check_output
    from evenhand.evaluation.report import table_paths

    inputs = {"--data": args.data}
    if not args.summaries.startswith("references"):
        inputs["--summaries"] = args.summaries
    for path in table_paths(args.out).values():
        check_output(path, inputs)


def check_lengths(examples: list, path: str) -> None:  # noqa: ANN001
    """Refuse sources longer than the word tokenizer takes (spaCy's ``max_length``), naming the example."""
    from evenhand.evaluation.report import SOURCE_SEPARATOR
    from evenhand.evaluation.schema import DataError
    from evenhand.evaluation.text import MAX_TEXT_CHARS

    for ex in examples:
        n = len(ex.source_text(SOURCE_SEPARATOR))
        if n > MAX_TEXT_CHARS:
            raise DataError(
                f"{path}: example {ex.id!r}: `documents` hold {n:,} characters, more than the "
                f"{MAX_TEXT_CHARS:,} the word tokenizer takes; split it into several examples"
            )


def run(args: argparse.Namespace) -> int:
    from evenhand.evaluation.loaders import load_examples
    from evenhand.evaluation.report import (
        EvaluationReport,
        UnknownMetricError,
        evaluate,
        format_corpus,
        resolve_metrics,
        select_summaries,
        write_tables,
    )
    from evenhand.evaluation.schema import DataError

    try:
        names, scorers = split_metrics(args.metrics)
        if not names and not scorers:
            raise DataError("--metrics is empty; give comma-separated metric or scorer names")
        check_outputs(args)
        examples = load_examples(args.data)
        check_lengths(examples, args.data)
        items = select_summaries(examples, args.summaries)
        if names:
            metrics = [m.name for m in resolve_metrics(names)]
            report = evaluate(items, metrics, progress=not args.quiet and len(items) > 50)
        else:  # scorers only
            report = EvaluationReport(
                rows=[{"id": it.id, "example_id": it.example.id} for it in items]
            )
        if scorers:
            add_scorer_columns(report, items, scorers, args)
    except (DataError, UnknownMetricError) as err:
        print(f"evenhand evaluate: error: {err}", file=sys.stderr)
        return 2
    paths = write_tables(report, args.out)
    print(format_corpus(report))
    print(f"wrote {paths['rows_jsonl']} (+ .csv) and {paths['corpus_jsonl']} (+ .csv)")
    return 0
