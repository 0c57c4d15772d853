"""``evenhand build-checker``: train evenhand's offline faithfulness checker into the cache.

    evenhand build-checker                  # the default recipe (reused when already built)
    evenhand build-checker --seed 1 --force

Prints the checker's cache folder and how long the build took; the ``checker``
scorer uses the default recipe's folder, or the one given as ``checker`` config
``folder``. See ``evenhand.rerank.checker.model`` for what is trained on what.
"""

from __future__ import annotations

import argparse

NAME = "build-checker"
HELP = ("Train evenhand's offline faithfulness checker (a MiniLM cross-encoder, synthetic pairs from "
        "source texts) into the cache; print its folder.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The training options (``CheckerOptions``), the corpus, --force and --quiet."""
    from evenhand.args import add_dataclass_arguments
    from evenhand.rerank.checker.model import CheckerOptions

    add_dataclass_arguments(parser, CheckerOptions)
    parser.add_argument(
        "--corpus", default=None,
        help="JSONL of source examples ({\"documents\": [{\"text\", \"group\"}]}) to train on "
        "(default: the shipped corpus of source texts; never summaries).",
    )
    parser.add_argument("--force", action="store_true", help="Train anew even when the checker is cached.")
    parser.add_argument("--quiet", action="store_true", help="No progress lines while training.")


def run(args: argparse.Namespace) -> int:
    """Build (or find) the checker and print its folder and build time."""
    import json
    import time
    from pathlib import Path

    from evenhand.args import config_from_args
    from evenhand.evaluation.errors import DataError
    from evenhand.rerank.checker.model import CheckerOptions, build_checker, checker_dir

    options = config_from_args(CheckerOptions, args)
    if args.corpus is not None and not Path(args.corpus).is_file():
        raise DataError(f"--corpus {args.corpus}: no such file; give a JSONL of source examples")
    cached = not args.force and (checker_dir(options, args.corpus) / "checker.json").is_file()
    start = time.monotonic()
    folder = build_checker(options, args.corpus, progress=not args.quiet, force=args.force)
    seconds = time.monotonic() - start
    meta = json.loads((folder / "checker.json").read_text(encoding="utf-8"))
    if not cached:
        print(f"built {folder} in {seconds:.1f} s ({meta['steps']} steps on {meta['pairs']} pairs, "
              f"final loss {meta['final_loss']:.3f})")
    else:
        print(f"cached {folder} (built before in {meta['train_seconds']} s of training; --force to rebuild)")
    return 0
