"""``evenhand demo``: the main job on the bundled demo data with the embedded default model."""

from __future__ import annotations

import argparse

NAME = "demo"
HELP = "Summarize a bundled multi-perspective demo example with the embedded model and score it."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Which demo example, model and length."""
    parser.add_argument(
        "--example", default="headphones",
        help="Demo example id (see `evenhand demo --list`), or 'all'.",
    )
    parser.add_argument("--list", action="store_true", help="List the demo examples and exit.")
    parser.add_argument("--explain", action="store_true",
                        help="Print how the evenhand column is made and why these defaults (the dev sweep), and exit.")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="Generator model.")
    from evenhand.args import add_common_options
    from evenhand.decoding.prompts.templates import FAIR_PROMPTS

    add_common_options(parser, "engine")
    parser.add_argument("--max-new-tokens", type=int, default=72, help="Summary length cap.")
    parser.add_argument(
        "--candidates", type=int, default=0,
        help="Sampled candidates reranked with the fair beam ones (default 0: on the dev sweep none was kept).",
    )
    parser.add_argument(
        "--fair-prompt", default=None, choices=FAIR_PROMPTS,
        help="Give every evenhand candidate this fair prompt ('labels': group labels shown, Equal Coverage; "
        "'definition': FairSumm's definition) and add plain beam search under it (recipe beam+PROMPT); "
        "default: none.",
    )
    parser.add_argument(
        "--groupwise", action="store_true",
        help="Add the group-wise candidate (recipe group-wise): each group's documents summarized on their "
        "own in one sentence that names the group, the sentences joined; default: off.",
    )
    parser.add_argument(
        "--interleave", action="store_true",
        help="Add plain beam search over the documents interleaved by group, the smallest group first "
        "(recipe beam+interleaved); default: off.",
    )
    parser.add_argument(
        "--no-quote", dest="quote", action="store_false",
        help="Leave out the candidate 'plain summary + one sentence quoted verbatim, its writer's group named, "
        "from a group the plain summary shortchanges' (recipe beam+quote; default: in the pool).",
    )
    parser.add_argument("--seed", type=int, default=0, help="Random seed.")
    parser.add_argument("--out", default=None, help="Also write the results as JSONL here (`summary` = evenhand's; `evenhand evaluate --data demo "
                        "--summaries OUT --metrics ...` scores them) and a CSV table beside it.")


def run(args: argparse.Namespace) -> int:
    """Generate and print the summary (and its scores) of the chosen demo example(s)."""
    from evenhand.demo import demo_examples, run_demo

    examples = demo_examples()
    if args.list:
        for ex in examples:
            counts = {g: ex.labels.count(g) for g in ex.groups}
            print(f"{ex.id:22s} {ex.attribute:10s} {counts}")
        return 0
    if args.explain:  # the reasons for the defaults, on request; nothing loads
        from evenhand.demo import demo_config, explain_text

        print(explain_text(demo_config(args)))
        return 0
    return run_demo(args)
