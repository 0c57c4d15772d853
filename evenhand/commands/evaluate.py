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
        help="comma-separated metric names (default: mint,fragments; also: fairsumm)",
    )
    parser.add_argument(
        "--out",
        required=True,
        help="per-example table path (.jsonl); .csv and .corpus.jsonl/.corpus.csv go next to it",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from evaluation.loaders import load_examples
    from evaluation.report import (
        UnknownMetricError,
        evaluate,
        format_corpus,
        resolve_metrics,
        select_summaries,
        write_tables,
    )
    from evaluation.schema import DataError

    try:
        metrics = [m.name for m in resolve_metrics(args.metrics)]
        examples = load_examples(args.data)
        items = select_summaries(examples, args.summaries)
        report = evaluate(items, metrics, progress=not args.quiet and len(items) > 50)
    except (DataError, UnknownMetricError) as err:
        print(f"evenhand evaluate: error: {err}", file=sys.stderr)
        return 2
    paths = write_tables(report, args.out)
    print(format_corpus(report))
    print(f"wrote {paths['rows_jsonl']} (+ .csv) and {paths['corpus_jsonl']} (+ .csv)")
    return 0
