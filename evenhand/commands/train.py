"""``evenhand train``: DPO+RR preference tuning of a LoRA on self-generated, reranked candidates, or GRPO.

    evenhand train --config run.yaml [--iterations 3 ...]
    evenhand train --method grpo --data train.jsonl --out runs/g [--scorers calibrated:coverage ...]
    evenhand train --data train.jsonl --out runs/a [--scorers rouge-l-recall --iterations 2 ...]
    evenhand train --config run.yaml --engine vllm   # sample and evaluate through vLLM (LoRA per iteration)
    accelerate launch --multi_gpu --num_processes 2 -m evenhand.cli train --config run.yaml

(``--multi_gpu`` runs torchrun; on a CPU-only machine the processes train over gloo.)

Flags override the YAML file's values; unknown YAML keys are errors. A run
continues from its last finished iteration when started again on the same
``--out``. The adapter of iteration K (``OUT/iter_K/adapter``) loads with
``evenhand generate --model OUT/iter_K/adapter``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evenhand.args import add_dataclass_arguments, config_from_args

if TYPE_CHECKING:
    from evenhand.training.config import DPORRConfig

NAME = "train"
HELP = ("DPO+RR (sample, rerank, DPO on preference pairs) or --method grpo (online RL rewarded by the "
        "scorers): train a LoRA, iteratively (resumable).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--config, --data, --out and one override flag per DPORRConfig field."""
    from evenhand.training.config import DPORRConfig

    parser.add_argument("--config", default=None, help="YAML file of DPORRConfig fields.")
    parser.add_argument("--data", default=None, help="Training examples (.jsonl, .csv, FairSumm/TheFlipSide .json).")
    parser.add_argument("--out", dest="out_dir", default=None, help="Run folder (iter_K/ per iteration).")
    add_dataclass_arguments(parser, DPORRConfig, skip=("data", "out_dir"))


def run(args: argparse.Namespace) -> int:
    """Build the config (YAML defaults, flags over them), train, print one line per finished iteration."""
    from evenhand.commands._scoring import split_names
    from evenhand.decoding.models import check_device, check_local
    from evenhand.evaluation.errors import DataError
    from evenhand.training.config import DPORRConfig
    from evenhand.training.loop import train_dpo_rr

    if args.config is None and (args.data is None or args.out_dir is None):
        raise DataError("give --config FILE, or both --data FILE and --out DIR")
    config = config_from_args(DPORRConfig, args, config_file=args.config)
    if config.data is None:  # an empty or comments-only --config, and no --data
        raise DataError(f"--config {args.config}: sets no `data`; add `data: FILE` to it or pass --data FILE")
    if config.scorers:
        split_names(config.scorers, "scorers")  # registered names, before any model loads
    if config.weights is not None and config.scorer_names:
        from evenhand.rerank.scorers.composite import check_weights

        try:
            check_weights(config.weights, config.scorer_names)
        except ValueError as err:
            raise DataError(str(err)) from None
    check_device(config.device, "`device`")
    from evenhand.training.vllm_policy import check_engine_config

    check_engine_config(config, int(os.environ.get("WORLD_SIZE", "1")))  # before the model check: a URL
    check_local(config.model, "`model`")
    manifest = _train_locked(config, train_dpo_rr)
    names = ["composite", *config.scorer_names]
    print("iteration  pairs  " + "  ".join(f"dev {n}" for n in names) + "  seconds")
    for s in manifest["iterations"]:
        dev = s.get("dev", {})
        cells = "  ".join(f"{dev.get(n):.4f}" if dev.get(n) is not None else "-" for n in names)
        seconds = s.get("seconds", {})
        total = seconds.get("total", seconds.get("eval", 0.0))
        print(f"{s['iteration']:>9}  {s.get('pairs', '-'):>5}  {cells}  {total:.0f}")
    print(f"adapters and records in {config.out_dir}")
    return 0


def _train_locked(config: DPORRConfig, train: Callable[[DPORRConfig], dict[str, Any]]) -> dict[str, Any]:
    """Train with ``out_dir`` checked and locked: a second ``train`` on it exits 2 naming this one.

    Under ``accelerate launch`` only the rank-0 process takes the lock (the
    others write nothing but wait for it).
    """
    from pathlib import Path

    from evenhand.evaluation.io.locks import lock_path, output_lock
    from evenhand.evaluation.io.output_checks import (
        add_run_inputs,
        check_output_dir,
        check_output_path,
    )

    add_run_inputs({f"`{name}` {getattr(config, name)}": getattr(config, name) for name in ("data", "dev_data")
                    if getattr(config, name, None)})
    out = Path(config.out_dir)
    check_output_dir(out, "--out", files=("manifest.json",))
    check_output_path(lock_path(out), "--out")
    if os.environ.get("RANK", "0") != "0":
        return train(config)
    with output_lock(out, "--out"):
        return train(config)
