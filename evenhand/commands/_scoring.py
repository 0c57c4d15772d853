"""Options shared by the commands that build scorers (rerank, meta-eval)."""

from __future__ import annotations

import argparse
from typing import Any

#: Scorers whose config has a judge ``model`` / an alignment ``model`` / a scoring LM ``model``.
JUDGES = ("llm-coverage", "llm-faithfulness")
ALIGNERS = ("alignscore", "equal-coverage")
LMS = ("lm-likelihood", "lm-pmi", "fluency")


def add_scorer_options(parser: argparse.ArgumentParser) -> None:
    """--judge-model, --align-model, --align-base, --lm-model, --scorer-batch-size, --score-cache."""
    parser.add_argument(
        "--judge-model", default=None,
        help="Judge for llm-coverage/llm-faithfulness (default: embedded smollm2-135m-instruct).",
    )
    parser.add_argument(
        "--align-model", default=None,
        help="AlignScore .ckpt, NLI classifier folder/id, or 'fallback' (embedded MiniLM, default).",
    )
    parser.add_argument(
        "--align-base", default=None,
        help="Config+tokenizer folder of an AlignScore .ckpt's encoder (roberta-large/-base).",
    )
    parser.add_argument(
        "--lm-model", default=None,
        help="Causal or seq2seq LM for lm-likelihood/lm-pmi/fluency (default: embedded smollm2-135m-instruct).",
    )
    parser.add_argument("--scorer-batch-size", type=int, default=None, help="Batch size of every scorer.")
    parser.add_argument(
        "--score-cache", default=None,
        help="Folder for the on-disk score cache (default: <evenhand cache>/scores; 'none' disables).",
    )


def scorer_options(args: argparse.Namespace, names: list[str]) -> dict[str, dict[str, Any]]:
    """Per scorer name the config fields the command line sets.

    A ``calibrated:X`` name passes the options on to its components (``options``).
    """
    from evenhand.evaluation.schema import DataError
    from evenhand.rerank.registry import split_name

    if args.scorer_batch_size is not None and args.scorer_batch_size < 1:
        raise DataError(f"--scorer-batch-size must be a positive int, got {args.scorer_batch_size}")
    options: dict[str, dict[str, Any]] = {}
    for name in names:
        if split_name(name)[0] == "calibrated":
            from evenhand.rerank.scorers.calibrated import load_calibration

            components = load_calibration(split_name(name)[1] or "").scorers
            inner = {c: o for c, o in scorer_options(args, components).items() if o}
            options[name] = {"options": inner} if inner else {}
            continue
        opts: dict[str, Any] = {}
        if name in JUDGES and args.judge_model:
            opts["model"] = args.judge_model
        if name in ALIGNERS and args.align_model:
            opts["model"] = args.align_model
        if name in LMS and args.lm_model:
            opts["model"] = args.lm_model
        if name in ALIGNERS and args.align_base:
            opts["base_model"] = args.align_base
        if args.scorer_batch_size is not None:
            opts["batch_size"] = args.scorer_batch_size
        if getattr(args, "device", None) and name in (*JUDGES, *ALIGNERS, *LMS):
            opts["device"] = args.device
        options[name] = opts
    return options


def score_cache(args: argparse.Namespace) -> Any:
    """The score cache folder chosen on the command line (None when disabled)."""
    if args.score_cache == "none":
        return None
    if args.score_cache:
        return args.score_cache
    from evenhand.decoding.models import cache_dir

    return cache_dir() / "scores"


def split_names(text: str, flag: str = "--scorers") -> list[str]:
    """Comma-separated scorer names, each checked against the registry (errors name ``flag``)."""
    from evenhand.evaluation.lists import split_list
    from evenhand.evaluation.schema import DataError
    from evenhand.rerank.registry import UnknownScorerError, scorer_class, split_name

    names = split_list(text, flag, empty_ok=True)
    if not names:
        raise DataError(f"`{flag}` is empty; give comma-separated scorer names")
    for name in names:
        try:
            scorer_class(name)
        except UnknownScorerError as err:  # one-line CLI error: "Unknown scorer 'x'. Available: ..."
            raise DataError(f"{flag}: {err}") from None
        base, argument = split_name(name)
        if base == "calibrated":  # read the calibration now, before any model loads
            from evenhand.rerank.scorers.calibrated import load_calibration

            load_calibration(argument or "")
    return names
