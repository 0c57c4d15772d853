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
import importlib.util

NAME = "evaluate"
HELP = "score summaries (MINT, fragments, FairSumm, ...) and write per-example and corpus tables"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from evenhand.args import add_common_options

    add_common_options(parser, "data")
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
    from evenhand.decoding.engines.base import engine_names

    parser.add_argument(
        "--engine", choices=engine_names(), default=None,
        help="Engine of lm-likelihood/lm-pmi/fluency and the llm-* judges: transformers (default) or vllm "
        "(prompt log-probs and judge prompts through one in-process vLLM engine; needs vLLM).",
    )
    add_scorer_options(parser)


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse an --out whose tables would overwrite --data or --summaries."""
    from evenhand.evaluation.io.output_checks import check_output
    from evenhand.evaluation.scoring.report import table_paths

    inputs = {"--data": args.data}
    if not args.summaries.startswith("references"):
        inputs["--summaries"] = args.summaries
    from evenhand.evaluation.io.locks import lock_path
    from evenhand.evaluation.io.output_checks import check_output_path

    check_output_path(args.out, "--out")  # /dev/null or a folder as --out: refused, not written beside
    for path in table_paths(args.out).values():
        check_output(path, inputs)
        check_output_path(path, "--out")  # each table: a regular file or absent, in a writable folder
    check_output_path(lock_path(args.out), "--out")


def check_lengths(examples: list, path: str) -> None:  # noqa: ANN001
    """Refuse sources longer than the word tokenizer takes (spaCy's ``max_length``), naming the example."""
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.scoring.scorers.abstractiveness import SOURCE_SEPARATOR
    from evenhand.evaluation.text.tokens import MAX_TEXT_CHARS

    for ex in examples:
        n = len(ex.source_text(SOURCE_SEPARATOR))
        if n > MAX_TEXT_CHARS:
            raise DataError(
                f"{path}: example {ex.id!r}: `documents` hold {n:,} characters, more than the "
                f"{MAX_TEXT_CHARS:,} the word tokenizer takes; split it into several examples"
            )


def run(args: argparse.Namespace) -> int:
    from evenhand.commands._scoring import build_scorers, check_model_flags, split_names
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.io.locks import output_lock
    from evenhand.evaluation.scoring.report import (
        evaluate,
        format_corpus,
        select_summaries,
        write_tables,
    )

    names = split_names(args.metrics, "--metrics")
    check_model_flags(args)
    if len(set(names)) != len(names):
        from evenhand.evaluation.errors import DataError

        raise DataError(f"--metrics lists a metric twice: {', '.join(names)}")
    if args.engine == "vllm":  # before anything loads: vLLM installed?
        from evenhand.evaluation.errors import DataError

        if importlib.util.find_spec("vllm") is None:
            raise DataError("--engine vllm needs vLLM, which is not installed; see docs/serving.md (make setup-vllm)")
    check_outputs(args)
    examples = load_examples(args.data, attribute=args.attribute)
    check_lengths(examples, args.data)
    items = select_summaries(examples, args.summaries)
    scorers = build_scorers(args, names)
    with output_lock(args.out, "--out"):  # a second writer on --out exits 2; no two runs mix tables
        report = evaluate(items, scorers, progress=not args.quiet)
        paths = write_tables(report, args.out)
    print(format_corpus(report))
    print(f"wrote {paths['rows_jsonl']} (+ .csv) and {paths['corpus_jsonl']} (+ .csv)")
    return 0
