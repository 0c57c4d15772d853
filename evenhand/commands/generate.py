"""``evenhand generate``: one summary per example, written to JSONL as it goes (resumable)."""

from __future__ import annotations

import argparse
import contextlib
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
    from evenhand.decoding.config import GenerateConfig

    add_common_options(parser, "data")
    parser.add_argument("--out", required=True, help="Output JSONL: {id, summary, model} per line.")
    add_common_options(
        parser, "model", "engine", "limit", "device", "no_resume", "force_resume",
        model="Generator: embedded alias, local folder, LoRA adapter folder, cached HF id, or server URL http://HOST:PORT/v1[#MODEL] (docs/serving.md).",
    )
    add_dataclass_arguments(parser, GenerateConfig)
    from evenhand.commands._scoring import add_server_options, add_server_processors_option

    add_server_options(parser)
    add_server_processors_option(parser)
    # short spellings of the fairness options (--fair-beam and --fair-prompt are the field names)
    parser.add_argument("--fair", dest="fairness", default=None, help="Same as --fairness.")
    parser.add_argument(
        "--fair-strength", dest="fairness_strength", type=float, default=None,
        help="Same as --fairness-strength (α).",
    )


def run(args: argparse.Namespace) -> int:
    """Generate, appending each finished batch to --out.

    Batches are cut from the full data (``--limit`` only drops the tail) and
    batch k is decoded with seed ``seed + its first example's index``, the
    sweep's rule: a resumed run regenerates an interrupted batch whole and
    writes exactly what an uninterrupted run writes, for every decoding mode.
    """
    from evenhand.commands._outputs import check_results_path, locked, open_results
    from evenhand.commands._scoring import open_generator
    from evenhand.decoding.config import GenerateConfig, check_examples
    from evenhand.decoding.engines.base import pending_batches
    from evenhand.decoding.generate import generate
    from evenhand.decoding.models import check_device
    from evenhand.decoding.prompts.templates import describe_kinds
    from evenhand.evaluation.data.checks import check_seed
    from evenhand.evaluation.data.schema import Example
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.io.output_checks import check_output
    from evenhand.evaluation.io.progress import Progress

    config = config_from_args(GenerateConfig, args)
    check_seed(config.seed)  # batches are decoded with seed + batch start
    check_output(args.out, {"--data": args.data})
    check_results_path(args.out)
    check_device(args.device)
    engine = open_generator(args, config)  # what the engine cannot do raises here, before any file
    if args.limit is not None and args.limit < 1:
        raise DataError(f"`--limit` must be a positive int, got {args.limit}")
    every = load_limited(args.data, None, args.attribute)  # batches are cut from the full data
    examples = every[: args.limit]
    check_examples(examples, config.parts()["fairness"])  # group labels, before any model loads
    print(describe_kinds(examples, config.prompt_kind), flush=True)
    wanted = {ex.id for ex in examples}
    settings = dataclasses.asdict(config)
    # the engine joins the manifest only when it is not the default (older outputs resume)
    if args.engine != "transformers":
        settings_key = {**settings, "engine": args.engine}
    else:
        settings_key = settings
    with locked(args.out), contextlib.ExitStack() as stack:  # a second writer on --out exits 2
        store = open_results(args, "generate", settings_key)

        def needed(ex: Example) -> bool:
            return ex.id in wanted and not store.done(ex.id)

        todo = pending_batches(every, config.batch_size, needed)
        if engine.capabilities.chunk:  # an engine that batches itself (vLLM): hand it up to 64 examples at once
            todo = merged_batches(todo, engine.capabilities.chunk)
        remaining = sum(needed(ex) for _, batch in todo for ex in batch)
        if remaining < len(examples):
            print(f"resuming: {len(examples) - remaining} of {len(examples)} already in {args.out}")
        if todo:
            engine.check_prompts([ex for _, b in todo for ex in b if needed(ex)], config)  # loads the model
            bar = Progress(remaining, "generate", "ex")  # per example, the batch in flight as it decodes
            stack.callback(bar.close)  # closed before an error is printed, so the error is a line of its own
            for start, batch in todo:
                bar.begin(sum(needed(ex) for ex in batch))
                summaries = generate(
                    engine, None, batch, dataclasses.replace(config, seed=config.seed + start), progress=False,
                )
                rows = [
                    {"id": ex.id, "summary": s, "model": args.model, "config": settings,
                     **({"engine": args.engine} if args.engine != "transformers" else {})}
                    for ex, s in zip(batch, summaries) if needed(ex)
                ]
                store.append(rows)
                bar.update(len(rows))
            bar.close()
        print(f"wrote {remaining} new summaries to {args.out} ({len(examples)} in all)")
        return 0


def merged_batches(batches: list[tuple[int, list]], size: int) -> list[tuple[int, list]]:
    """Consecutive pending batches joined into chunks of at most ``size`` examples (vLLM).

    Request i of a chunk starting at ``start`` is seeded ``seed + start + i``, the
    example's index in the data, so chunking does not change any summary.
    """
    merged: list[tuple[int, list]] = []
    for start, batch in batches:
        if merged and merged[-1][0] + len(merged[-1][1]) == start and len(merged[-1][1]) + len(batch) <= size:
            merged[-1] = (merged[-1][0], merged[-1][1] + batch)
        else:
            merged.append((start, list(batch)))
    return merged
