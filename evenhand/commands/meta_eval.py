"""``evenhand meta-eval``: how well scorers track ground-truth coverage and faithfulness."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

NAME = "meta-eval"
HELP = (
    "Meta-evaluate scorers on controlled summaries (Spearman rho and winrate with 95 percent "
    "bootstrap intervals against ground-truth coverage and faithfulness) or on binary-labelled "
    "(document, summary, label) files such as SummEdits and FRANK (balanced accuracy on test with the "
    "threshold chosen on evaluation, and ROC AUC, per domain, beside the published figures)."
)
FORMATS = ("auto", "controlled", "labelled")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Data, scorers and bootstrap options."""
    from evenhand.commands._scoring import add_scorer_options, scorers_help

    parser.add_argument(
        "--data", required=True, nargs="+",
        help="Controlled-summaries JSON ({source, summaries} list), or one or more binary-labelled files "
        "(JSON list or .jsonl of {doc, summary, label 1/0, split evaluation/test}, e.g. SummEdits' "
        "summedits_<domain>.json; one domain per file unless rows name a `domain`).",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="auto",
        help="Input format (default: auto). auto reads a .jsonl file, or a JSON list whose first row has `label`, "
        "as labelled, anything else as controlled.",
    )
    parser.add_argument(
        "--split", choices=("test", "evaluation"), default="test",
        help="Labelled files: `test` (default) chooses each domain's threshold on the evaluation split and "
        "reports the test split (the published protocol); `evaluation` scores only the evaluation rows, "
        "to choose settings without touching test.",
    )
    parser.add_argument("--scorers", required=True, help=scorers_help("Comma-separated registered scorer names."))
    parser.add_argument(
        "--out", required=True,
        help="Results JSONL, one line per scorer (labelled files: per scorer and domain) with the table "
        "values and per-summary scores; resumable. Labelled files also get the table as <out>.csv. "
        "Seconds per summary go to <out>.timings.json, so the same inputs and seed give the same bytes.",
    )
    parser.add_argument(
        "--limit", type=int, default=None,
        help="Only the first N sources (labelled files: the first N rows of each domain and split).",
    )
    parser.add_argument("--n-bootstrap", type=int, default=1000, help="Bootstrap draws (default: 1000).")
    parser.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")
    parser.add_argument("--device", default=None, help="cpu, cuda... for model-backed scorers.")
    from evenhand.args import add_common_options

    add_common_options(
        parser, "no_resume", "force_resume",
        no_resume="Recompute scorers already in --out; the old file moves to <out>.bak once the "
        "first new result is ready.",
    )
    add_scorer_options(parser)


def run(args: argparse.Namespace) -> int:
    """Score every summary with every scorer, one scorer at a time, appending to --out."""
    from evenhand.commands._scoring import check_model_flags, split_names
    from evenhand.decoding.models import check_device
    from evenhand.evaluation.data.checks import check_count, check_seed
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.io.output_checks import check_output

    names = split_names(args.scorers)
    check_model_flags(args)
    if len(set(names)) != len(names):
        raise DataError(f"--scorers lists a scorer twice: {', '.join(names)}")
    check_count(args.n_bootstrap, "--n-bootstrap")
    check_count(args.limit, "--limit", high=10**9, none_ok=True)
    check_seed(args.seed, "--seed")
    check_device(args.device)
    for path in args.data:
        check_output(args.out, {"--data": path})
    fmt = args.format if args.format != "auto" else detect_format(args.data[0])
    if fmt == "labelled":
        return run_labelled(args, names)
    if len(args.data) != 1:
        raise DataError(f"--data: controlled summaries are read from one file, got {len(args.data)}; give one")
    if args.split != "test":
        raise DataError("--split applies to labelled files (SummEdits, FRANK); drop it for controlled summaries")
    args.data = args.data[0]
    return run_controlled(args, names)


def detect_format(path: str) -> str:
    """``labelled`` for a ``.jsonl`` file or a JSON list whose first row has a ``label`` (and no
    ``summaries``); else ``controlled``, whose loader names what is wrong with the file."""
    from evenhand.evaluation.io.parsing import parse_json
    from evenhand.evaluation.io.utf8 import read_utf8

    if Path(path).suffix == ".jsonl":
        return "labelled"
    data = parse_json(read_utf8(path, "--data"), str(path))  # the loaders' own errors, if any
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, dict) and "label" in first and "summaries" not in first:
        return "labelled"
    return "controlled"


def run_controlled(args: argparse.Namespace, names: list[str]) -> int:
    """Controlled summaries: Spearman rho and winrate against coverage and faithfulness, per scorer."""
    import time

    from evenhand.commands._outputs import check_results_path, locked, open_results
    from evenhand.commands._scoring import build_scorers, scorer_options
    from evenhand.evaluation.io.json_file import write_json
    from evenhand.evaluation.metrics.meta_eval import (
        TRUTHS,
        check_spread,
        load_controlled,
        meta_evaluate,
    )

    timings = timings_path(args.out)
    check_results_path(args.out, extra=(timings,))
    data = load_controlled(args.data)
    if args.limit is not None:
        data.first_sources(args.limit)
    check_spread(data, TRUTHS, args.data)
    options = scorer_options(args, names)
    sources = [data.sources[i] for i in data.source_index]
    with locked(args.out):  # a second writer on --out exits 2
        store = open_results(args, "meta-eval", {
            "limit": args.limit, "n_bootstrap": args.n_bootstrap, "seed": args.seed,
            "scorer_options": {
                n: {k: v for k, v in o.items() if k not in ("batch_size", "device")} for n, o in options.items()
            },
        }, key="scorer")
        seconds_per = read_timings(timings)
        for name in names:
            if store.done(name):
                print(f"{name}: already in {args.out}")
                continue
            [scorer] = build_scorers(args, [name])
            start = time.perf_counter()
            details = scorer.score_details(sources, data.summaries)
            seconds = time.perf_counter() - start
            scores = [d["score"] for d in details]
            row: dict[str, Any] = {"scorer": name, "n": len(scores)}
            for t in TRUTHS:
                result = meta_evaluate(scores, data.truth[t], data.source_index, args.n_bootstrap, args.seed)
                for stat, value in result.items():
                    row[f"{t}_{stat}"] = [value.value, value.low, value.high]
            backend = details[0].get("backend") or details[0].get("judge") or details[0].get("model")
            if backend:
                row["backend"] = backend
            row["scores"] = scores
            store.append([row])  # no timing in the row: same inputs and seed, same bytes
            seconds_per[name] = seconds / len(scores)
            write_json(timings, seconds_per)
    header = f"{'scorer':<20} {'cov rho':>22} {'cov winrate':>22} {'faith rho':>22} {'faith winrate':>22} {'s/summary':>9}"
    print(header)
    for name in names:
        row = store.records[name]
        cells = [
            "{:.3f} [{:.3f}, {:.3f}]".format(*row[f"{t}_{s}"])
            for t in TRUTHS for s in ("spearman", "winrate")
        ]
        timing = seconds_per.get(name)
        shown = f"{timing:>9.3f}" if isinstance(timing, (int, float)) else f"{'-':>9}"
        print(f"{name:<20} " + " ".join(f"{c:>22}" for c in cells) + f" {shown}")
    print(f"wrote {args.out}")
    return 0


def run_labelled(args: argparse.Namespace, names: list[str]) -> int:
    """Binary-labelled files: per scorer and domain, the threshold from evaluation, balanced accuracy
    and ROC AUC (on test unless ``--split evaluation``); one result row per scorer and domain."""
    import time

    from evenhand.commands._outputs import check_results_path, locked, open_results
    from evenhand.commands._scoring import build_scorers, scorer_options
    from evenhand.evaluation.io.csv_file import write_csv
    from evenhand.evaluation.io.json_file import write_json
    from evenhand.evaluation.metrics.binary_meta_eval import (
        check_labelled,
        evaluate_labelled,
        first_rows,
        load_labelled,
    )

    timings = timings_path(args.out)
    table = table_path(args.out)
    check_results_path(args.out, extra=(timings, table))
    data = load_labelled(args.data)
    splits = ("evaluation",) if args.split == "evaluation" else ("evaluation", "test")
    if args.limit is not None:
        data = first_rows(data, args.limit)
    check_labelled(data, splits, "--data")
    options = scorer_options(args, names)
    domains = data.domain_names()
    with locked(args.out):  # a second writer on --out exits 2
        store = open_results(args, "meta-eval", {
            "format": "labelled", "split": args.split, "limit": args.limit,
            "scorer_options": {
                n: {k: v for k, v in o.items() if k not in ("batch_size", "device")} for n, o in options.items()
            },
        }, key="run")
        seconds_per = read_timings(timings)
        for name in names:
            todo = [d for d in domains if not store.done(run_key(name, d))]
            if not todo:
                print(f"{name}: already in {args.out}")
                continue
            [scorer] = build_scorers(args, [name])
            for domain in todo:
                part = data.select([i for i in data.rows(domain) if data.splits[i] in splits])
                start = time.perf_counter()
                details = scorer.score_details([[d] for d in part.documents], part.summaries)
                seconds = time.perf_counter() - start
                scores = [float(d["score"]) for d in details]
                result = evaluate_labelled(part, scores, splits)[domain]
                row: dict[str, Any] = {"run": run_key(name, domain), "scorer": name, "domain": domain,
                                       **result.as_row()}
                backend = details[0].get("backend") or details[0].get("judge") or details[0].get("model")
                if backend:
                    row["backend"] = backend
                row["ids"] = part.ids
                row["scores"] = scores
                store.append([row])  # no timing in the row: same inputs, same bytes
                seconds_per[run_key(name, domain)] = seconds / len(part)
                write_json(timings, seconds_per)
                print(f"{name} on {domain}: {len(part)} summaries in {seconds:.1f} s")
    rows = [store.records[run_key(n, d)] for n in names for d in domains]
    write_csv(table, table_rows(rows, domains, args.split))
    print(labelled_table(rows, domains, args.split))
    print(f"wrote {args.out} and {table}")
    return 0


def run_key(scorer: str, domain: str) -> str:
    """The resume key of one scorer on one domain."""
    return f"{scorer} on {domain}"


def table_path(out: str | Path) -> Path:
    """The CSV table beside a labelled meta-eval output: ``<out>.csv``."""
    out = Path(out)
    return out.with_name(out.name + ".csv")


def table_rows(rows: list[dict[str, Any]], domains: list[str], split: str) -> list[dict[str, Any]]:
    """The CSV table: each measured (scorer, domain) row, then the published rows for these domains."""
    from evenhand.evaluation.metrics.binary_meta_eval import PUBLISHED

    columns = ("threshold", "n_evaluation", "evaluation_balanced_accuracy", "evaluation_roc_auc",
               "n_test", "test_balanced_accuracy", "test_roc_auc")
    out = [{"scorer": r["scorer"], "domain": r["domain"], "source": "measured",
            **{c: r[c] for c in columns if c in r}} for r in rows]
    if split == "test":
        out += [{"scorer": system, "domain": d, "source": "published (factualNLG README)",
                 "test_balanced_accuracy": round(figures[d] / 100, 4)}
                for system, figures in PUBLISHED.items() for d in domains if d in figures]
    return out


def labelled_table(rows: list[dict[str, Any]], domains: list[str], split: str) -> str:
    """The printed table: balanced accuracy (percent) per domain and their mean, then ROC AUC;
    the published rows beside the measured ones."""
    from evenhand.evaluation.metrics.binary_meta_eval import PUBLISHED

    stat = "test" if split == "test" else "evaluation"
    by = {(r["scorer"], r["domain"]): r for r in rows}
    scorers = list(dict.fromkeys(r["scorer"] for r in rows))
    width = max([20, *(len(s) + 2 for s in scorers)])

    def tenth(value: float) -> str:  # half up on the decimal value: the mean of 74.4, 63.6, 62.4, 72.6 is 68.3
        from decimal import ROUND_HALF_UP, Decimal

        return str(Decimal(f"{value:.6f}").quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))

    def line(label: str, values: list[float | None]) -> str:
        cells = [f"{tenth(v):>12}" if v is not None else f"{'-':>12}" for v in values]
        known = [v for v in values if v is not None]
        mean = f"{tenth(sum(known) / len(known)):>8}" if len(known) == len(values) else f"{'-':>8}"
        return f"{label:<{width}}" + "".join(cells) + mean

    header = f"{'':<{width}}" + "".join(f"{d:>12}" for d in domains) + f"{'mean':>8}"
    title = ("balanced accuracy (test split; threshold chosen on evaluation)" if split == "test" else
             "balanced accuracy (evaluation split, where the threshold was chosen: optimistic)")
    lines = [title, header]
    lines += [line(s, [100 * by[s, d][f"{stat}_balanced_accuracy"] for d in domains]) for s in scorers]
    published = [(system, figures) for system, figures in PUBLISHED.items() if any(d in figures for d in domains)]
    if published:
        lines.append("published (test split, factualNLG README):")
        lines += [line(f"  {system}", [figures.get(d) for d in domains]) for system, figures in published]
    lines += [f"ROC AUC ({stat} split)", header]
    lines += [line(s, [100 * by[s, d][f"{stat}_roc_auc"] for d in domains]) for s in scorers]
    return "\n".join(lines)


def timings_path(out: str | Path) -> Path:
    """The timing sidecar of a meta-eval output: ``<out>.timings.json``, {scorer: seconds per summary}.

    Timings vary from run to run, so they stay out of the result rows (which are
    byte-identical for the same inputs and seed) and live here.
    """
    out = Path(out)
    return out.with_name(out.name + ".timings.json")


def read_timings(path: Path) -> dict[str, float]:
    """The stored seconds per summary by scorer; {} when the sidecar is absent or unreadable."""
    import json

    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(stored, dict):
        return {}
    return {k: float(v) for k, v in stored.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
