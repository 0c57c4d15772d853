"""``evenhand generate``: one summary per example, written to JSONL as it goes (resumable)."""

from __future__ import annotations

import argparse
import dataclasses

from evenhand.args import (
    add_common_options,
    add_dataclass_arguments,
    config_from_args,
    load_limited,
)

NAME = "generate"
HELP = "Summarize every example of a data file into a JSONL file (one line per example)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Data, model and output options plus every GenerateConfig field."""
    from evenhand.decoding.generate import GenerateConfig

    add_common_options(parser, "data")
    parser.add_argument("--out", required=True, help="Output JSONL: {id, summary, model} per line.")
    add_common_options(
        parser, "model", "limit", "device", "no_resume",
        model="Generator: embedded alias, local folder, LoRA adapter folder, cached HF id, or server URL http://HOST:PORT/v1[#MODEL] (docs/serving.md).",
    )
    add_dataclass_arguments(parser, GenerateConfig)
    from evenhand.commands._scoring import add_server_options

    add_server_options(parser)
    # short spellings of the fairness options (--fair-beam and --fair-prompt are the field names)
    parser.add_argument("--fair", dest="fairness", default=None, help="Same as --fairness.")
    parser.add_argument(
        "--fair-strength", dest="fairness_strength", type=float, default=None,
        help="Same as --fairness-strength (α).",
    )


def run(args: argparse.Namespace) -> int:
    """Generate, appending each finished batch to --out."""
    from evenhand.decoding.generate import GenerateConfig, generate
    from evenhand.decoding.models import load_generator
    from evenhand.decoding.server import is_server_url
    from evenhand.evaluation.jsonl import ResumableJsonl

    config = config_from_args(GenerateConfig, args)
    if is_server_url(args.model):  # before any request or file: processors cannot run on a server
        from evenhand.decoding.server_generate import check_server_config

        check_server_config(config)
    examples = load_limited(args.data, args.limit)
    store = ResumableJsonl(args.out, resume=args.resume)
    todo = [ex for ex in examples if not store.done(ex.id)]
    if len(todo) < len(examples):
        print(f"resuming: {len(examples) - len(todo)} of {len(examples)} already in {args.out}")
    if todo:
        if is_server_url(args.model):
            from evenhand.commands._scoring import server_client

            model, tokenizer = server_client(args, args.model), None
        else:
            model, tokenizer = load_generator(args.model, device=args.device)
        settings = dataclasses.asdict(config)

        def write(batch, summaries):  # noqa: ANN001 - callback
            store.append(
                {"id": ex.id, "summary": s, "model": args.model, "config": settings}
                for ex, s in zip(batch, summaries)
            )

        generate(model, tokenizer, todo, config, on_batch=write)
    print(f"wrote {len(examples)} summaries to {args.out}")
    return 0
