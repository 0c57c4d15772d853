"""``evenhand compare``: two systems' summaries of the same examples, paired.

    evenhand compare A.jsonl B.jsonl --data FILE --metrics mint,fairsumm,equal-coverage --out cmp.html

Scores both files (any command's output with ``id`` and ``summary``: generate, rerank,
demo) on the examples they share, prints per metric the mean paired difference A − B
with a percentile bootstrap interval over examples (``evaluation.metrics.paired``) and a
verdict by the metric's direction, and writes ``cmp.html`` (the table, then summaries side
by side with their scores) and ``cmp.csv`` (the table).
"""

from __future__ import annotations

import argparse

NAME = "compare"
HELP = ("Compare two summary files on the same data: paired differences A - B with bootstrap "
        "intervals, and an HTML page of the summaries side by side.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from evenhand.args import add_common_options
    from evenhand.commands._scoring import add_scorer_options, scorers_help

    parser.add_argument("a", metavar="A.jsonl", help="System A's summaries: JSONL of {id, summary}.")
    parser.add_argument("b", metavar="B.jsonl", help="System B's summaries: JSONL of {id, summary}.")
    add_common_options(parser, "data")
    parser.add_argument("--metrics", default="mint,fragments",
                        help=scorers_help("Comma-separated registered scorer names (default: mint,fragments)."))
    parser.add_argument("--out", required=True,
                        help="The HTML page (e.g. cmp.html); the table goes beside it as .csv.")
    parser.add_argument("--resamples", type=int, default=2000, help="Bootstrap resamples (default: 2000).")
    parser.add_argument("--seed", type=int, default=0, help="Bootstrap seed (default: 0).")
    parser.add_argument("--show", type=int, default=5,
                        help="Examples shown side by side on the page; 0 shows none (default: 5).")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")
    add_scorer_options(parser)


def _labels(a: str, b: str) -> tuple[str, str]:
    from pathlib import Path

    la, lb = Path(a).stem, Path(b).stem
    return (la, lb) if la != lb else (a, b)


def run(args: argparse.Namespace) -> int:
    import math
    from pathlib import Path

    from evenhand.commands._scoring import build_scorers, check_model_flags, split_names
    from evenhand.compare_page import compare_page
    from evenhand.evaluation.data.checks import check_count, check_seed
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.io.atomic import atomic_write_bytes
    from evenhand.evaluation.io.csv_file import write_csv
    from evenhand.evaluation.io.locks import output_lock
    from evenhand.evaluation.io.output_checks import check_output, check_output_path
    from evenhand.evaluation.metrics.paired import paired_table
    from evenhand.evaluation.scoring.legend import meaning
    from evenhand.evaluation.scoring.report import evaluate, select_summaries

    names = split_names(args.metrics, "--metrics")
    check_model_flags(args)
    check_count(args.resamples, "--resamples")
    check_seed(args.seed, "--seed")
    if args.show < 0:
        raise DataError(f"--show must be 0 or more, got {args.show}")
    page = Path(args.out)
    table_path = page.with_suffix(".csv")
    for path in (page, table_path):
        check_output(path, {"--data": args.data, "A": args.a, "B": args.b})
        check_output_path(path, "--out")
    examples = load_examples(args.data, attribute=args.attribute)
    items = [select_summaries(examples, spec) for spec in (args.a, args.b)]
    shared = {i.id for i in items[0]} & {i.id for i in items[1]}
    if not shared:
        raise DataError(f"{args.a} and {args.b} share no example id; compare summaries of the same examples")
    items = [[i for i in its if i.id in shared] for its in items]
    if any(len(its) < 2 for its in items):
        raise DataError(f"only {len(shared)} shared example; a paired interval needs at least 2")
    labels = _labels(args.a, args.b)
    scorers = build_scorers(args, names)
    with output_lock(str(page), "--out"):
        reports = [evaluate(its, scorers, progress=not args.quiet) for its in items]
        metrics = [k for k, v in reports[0].rows[0].items()
                   if k not in ("id", "example_id") and isinstance(v, (int, float)) and not isinstance(v, bool)]
        directions = {m: (found.direction if (found := meaning(m)) else 1) for m in metrics}
        rows = {labels[0]: reports[0].rows, labels[1]: reports[1].rows}
        table = paired_table(rows, [labels], metrics, directions, args.resamples, seed=args.seed)
        note = (f"{len(shared)} shared examples of {args.data}; A − B per metric with a 95% percentile "
                f"paired bootstrap interval ({args.resamples} resamples of examples, seed {args.seed}); "
                "verdict better/worse when the interval excludes 0, by the metric's direction "
                "(higher/lower for descriptive metrics), else tie.")
        by_id = [{i.id: i.summary for i in its} for its in items]
        row_by_id = ({r["id"]: r for r in reports[0].rows}, {r["id"]: r for r in reports[1].rows})
        shown = [ex for ex in examples if ex.id in shared][: args.show]
        text = compare_page(labels, table, shown, (by_id[0], by_id[1]), row_by_id, metrics, note)
        write_csv(table_path, table)
        atomic_write_bytes(page, text.encode("utf-8"))
    print(f"A = {labels[0]}, B = {labels[1]}: {note}")
    width = max(len("metric"), *(len(m) for m in metrics))
    print(f"{'metric':<{width}}  {'A mean':>9}  {'B mean':>9}  {'A - B [95% interval]':<30}  {'verdict':<7}  range, direction")
    for r in table:
        found = meaning(r["metric"])
        diff = "n/a" if math.isnan(r["diff"]) else f"{r['diff']:+.4f} [{r['lower']:+.4f}, {r['upper']:+.4f}]"
        print(f"{r['metric']:<{width}}  {r['system_mean']:>9.4f}  {r['baseline_mean']:>9.4f}  {diff:<30}  "
              f"{r['verdict']:<7}  {found.short() if found else ''}".rstrip())
    print(f"wrote {page} and {table_path}")
    return 0
