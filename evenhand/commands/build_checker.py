"""``evenhand build-checker``: train evenhand's checker models.

    evenhand build-checker                  # the issue-33 checker into the cache (reused when already built)
    evenhand build-checker --seed 1 --force
    evenhand build-checker --force --out rerank/checker/weights   # rebuild the shipped checker
    evenhand build-checker --train-file train.jsonl --out rerank/entail/weights --max-pairs 6000

With ``--train-file`` (a JSONL of ``{"premise", "hypothesis", "label": 1|0}``
rows) it trains the entailment model (``evenhand.rerank.entail.model``) and
writes ``entail.safetensors`` + ``entail.json`` into ``--out``: the same file,
options and ``--threads`` rebuild the same ``entail.safetensors`` byte for byte
(``entail.json`` also records the timings, which differ). Without it, it
builds the issue-33 checker (``evenhand.rerank.checker.model``) into the cache
and prints its folder (a fresh cache takes the package's shipped build when its
key matches; ``--force`` trains anew), and with ``--out`` copies it there.
"""

from __future__ import annotations

import argparse

NAME = "build-checker"
HELP = ("Train evenhand's entailment model from a labelled pair file (--train-file, --out), or the issue-33 "
        "checker (synthetic pairs from source texts) into the cache; print its folder.")
#: Options of the entailment model (``EntailOptions``) that the issue-33 checker does not have.
_ENTAIL_ONLY = ("max_pairs", "threads", "device")
_CHECKER_ONLY = ("rounds", "epochs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The training options of both models, the inputs, --force and --quiet."""
    import dataclasses

    from evenhand.args import add_dataclass_arguments
    from evenhand.rerank.checker.model import CheckerOptions
    from evenhand.rerank.entail.model import EntailOptions

    add_dataclass_arguments(parser, CheckerOptions)
    shared = tuple(f.name for f in dataclasses.fields(EntailOptions) if f.name not in _ENTAIL_ONLY)
    add_dataclass_arguments(parser, EntailOptions, skip=shared)
    defaults = ", ".join(f"{f.name}={f.default}" for f in dataclasses.fields(EntailOptions))
    parser.add_argument(
        "--train-file", default=None,
        help="JSONL of {premise, hypothesis, label 1/0} rows: train the entailment model on it (needs --out; "
        f"defaults then: {defaults}).",
    )
    parser.add_argument("--out", default=None, help="Folder to write the entailment model to (with --train-file), "
                        "or to copy the issue-33 checker to (without: it stays in the cache).")
    parser.add_argument(
        "--corpus", default=None,
        help="JSONL of source examples ({\"documents\": [{\"text\", \"group\"}]}) to train the issue-33 checker "
        "on (default: the shipped corpus of source texts; never summaries).",
    )
    parser.add_argument("--force", action="store_true", help="Train anew even when the checker is cached.")
    parser.add_argument("--quiet", action="store_true", help="No progress lines while training.")


def _build_entail(args: argparse.Namespace) -> int:
    import shlex
    import sys
    from pathlib import Path

    from evenhand.args import config_from_args
    from evenhand.decoding.models import check_device, minilm_path
    from evenhand.evaluation.errors import DataError
    from evenhand.rerank.entail.model import (
        EntailOptions,
        read_pairs,
        save_model,
        stderr_log,
        train,
    )

    for name in (*_CHECKER_ONLY, "corpus"):
        if getattr(args, name) is not None:
            raise DataError(f"--{name.replace('_', '-')} is an option of the issue-33 checker; drop it with "
                            "--train-file")
    if not args.out:
        raise DataError("--train-file needs --out: the folder to write entail.safetensors and entail.json to")
    if not Path(args.train_file).is_file():
        raise DataError(f"--train-file {args.train_file}: no such file; give a JSONL of "
                        "{premise, hypothesis, label} rows")
    options = config_from_args(EntailOptions, args)
    check_device(options.device)  # a GPU this machine lacks: one line, before the file is read
    pairs = read_pairs(args.train_file)
    base = minilm_path()
    model, stats = train(options, pairs, base, log=None if args.quiet else stderr_log)
    command = "evenhand build-checker " + shlex.join(sys.argv[2:]) if len(sys.argv) > 2 else ""
    folder = save_model(args.out, model, options, stats, args.train_file, base, command=command)
    print(f"built {folder} in {stats['train_seconds']} s ({stats['steps']} steps on {stats['pairs']} pairs, "
          f"{stats['pairs_per_second']} pairs/s, final loss {stats['final_loss']:.3f})")
    return 0


def run(args: argparse.Namespace) -> int:
    """Build the entailment model (``--train-file``), or build (or find) the issue-33 checker."""
    import json
    import time
    from pathlib import Path

    from evenhand.args import config_from_args
    from evenhand.evaluation.errors import DataError
    from evenhand.rerank.checker.model import CheckerOptions, build_checker, checker_dir

    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise DataError(f"--out {args.out}: not a folder; give a folder to write the model into (it is created, "
                        "or replaced whole)")
    if args.train_file is not None:
        return _build_entail(args)
    for name in _ENTAIL_ONLY:
        if getattr(args, name) is not None:
            raise DataError(f"--{name.replace('_', '-')} is an option of the entailment model; give --train-file")
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
    if args.out:
        from evenhand.rerank.checker.model import copy_checker

        copy_checker(folder, args.out)
        print(f"copied it to {args.out}")
    return 0
