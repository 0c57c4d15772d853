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
    from evenhand.commands._scoring import add_scorer_options, scorers_help

    parser.add_argument(
        "--metrics",
        default="mint,fragments",
        help=scorers_help("comma-separated registered scorer names (default: mint,fragments)."),
    )
    parser.add_argument(
        "--out",
        required=True,
        help="per-example table path (.jsonl); .csv and .corpus.jsonl/.corpus.csv go next to it",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_scorer_options(parser)


def run(args: argparse.Namespace) -> int:
    from evenhand.commands._scoring import build_scorers, split_names
    from evenhand.evaluation.loaders import load_examples
    from evenhand.evaluation.report import evaluate, format_corpus, select_summaries, write_tables

    names = split_names(args.metrics, "--metrics")
    examples = load_examples(args.data)
    items = select_summaries(examples, args.summaries)
    scorers = build_scorers(args, names)
    report = evaluate(items, scorers, progress=not args.quiet and len(items) > 50)
    paths = write_tables(report, args.out)
    print(format_corpus(report))
    print(f"wrote {paths['rows_jsonl']} (+ .csv) and {paths['corpus_jsonl']} (+ .csv)")
    return 0
