"""``evenhand meta-eval``: how well scorers track ground-truth coverage and faithfulness."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

NAME = "meta-eval"
HELP = (
    "Meta-evaluate scorers on controlled summaries: Spearman rho and winrate with 95 percent "
    "bootstrap intervals against ground-truth coverage and faithfulness."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Data, scorers and bootstrap options."""
    from evenhand.commands._scoring import add_scorer_options, scorers_help

    parser.add_argument("--data", required=True, help="Controlled-summaries JSON ({source, summaries} list).")
    parser.add_argument("--scorers", required=True, help=scorers_help("Comma-separated registered scorer names."))
    parser.add_argument(
        "--out", required=True,
        help="Results JSONL, one line per scorer (table values, per-summary scores); resumable. "
        "Seconds per summary go to <out>.timings.json, so the same inputs and seed give the same bytes.",
    )
    parser.add_argument("--limit", type=int, default=None, help="Only the first N sources.")
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
    import time

    from evenhand.commands._outputs import check_results_path, locked, open_results
    from evenhand.commands._scoring import (
        build_scorers,
        check_model_flags,
        scorer_options,
        split_names,
    )
    from evenhand.decoding.models import check_device
    from evenhand.evaluation.data.checks import check_count, check_seed
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.io.json_file import write_json
    from evenhand.evaluation.io.output_checks import check_output
    from evenhand.evaluation.metrics.meta_eval import (
        TRUTHS,
        check_spread,
        load_controlled,
        meta_evaluate,
    )

    names = split_names(args.scorers)
    check_model_flags(args)
    if len(set(names)) != len(names):
        raise DataError(f"--scorers lists a scorer twice: {', '.join(names)}")
    check_count(args.n_bootstrap, "--n-bootstrap")
    check_count(args.limit, "--limit", high=10**9, none_ok=True)
    check_seed(args.seed, "--seed")
    check_device(args.device)
    check_output(args.out, {"--data": args.data})
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
