"""Options shared by the commands that build scorers (evaluate, rerank, meta-eval, calibrate).

Which scorer a flag such as ``--judge-model`` reaches is declared by the scorer
class itself (``Scorer.cli_options``: argparse dest -> config field), so a new
scorer needs no edit here.
"""

from __future__ import annotations

import argparse
from typing import Any

#: The shared flags: (flag, help). Each one's dest is what ``Scorer.cli_options`` maps.
SCORER_FLAGS = (
    ("--judge-model", "Judge for llm-coverage/llm-faithfulness: alias, folder, cached HF id or server URL "
     "http://HOST:PORT/v1[#MODEL] (default: embedded smollm2-135m-instruct)."),
    ("--align-model", "AlignScore .ckpt, NLI classifier folder/id, 'checker' (evenhand's trained checker), a folder "
     "made by `evenhand build-checker` (an entailment model or a checker) or 'fallback' (embedded MiniLM, default)."),
    ("--align-base", "Config+tokenizer folder of an AlignScore .ckpt's encoder (roberta-large/-base)."),
    ("--lm-model", "Causal or seq2seq LM for lm-likelihood/lm-pmi/fluency/fairsumm-bartscore, or a vLLM server URL "
     "http://HOST:PORT/v1[#MODEL] (prompt log-probs; default: embedded smollm2-135m-instruct)."),
    ("--embed-model", "Encoder for fairsumm-bertscore: folder/HF id (roberta-large as in FairSumm) or 'minilm' (embedded, default)."),
    ("--fairsumm-text", "Text pipeline of fairsumm, fairsumm-bertscore, fairsumm-bartscore: 'authors' (FairSumm's "
     "released eval.py, default) or 'evenhand' (the earlier pipeline)."),
    ("--score-cache", "Folder for the on-disk score cache (default: <evenhand cache>/scores; 'none' disables)."),
)


def scorers_help(text: str) -> str:
    """``text`` followed by the registry's names: every command's scorer choices come from it."""
    from evenhand.evaluation.scoring.registry import described

    return f"{text} Available: {described()}.".replace("%", "%%")


def add_scorer_options(parser: argparse.ArgumentParser) -> None:
    """--judge-model, --align-model, --align-base, --lm-model, --embed-model, --score-cache, --scorer-batch-size."""
    for flag, help_text in SCORER_FLAGS:
        parser.add_argument(flag, default=None, help=help_text)
    parser.add_argument("--scorer-batch-size", type=int, default=None, help="Batch size of every scorer.")
    parser.add_argument(
        "--scorer-option", action="append", default=None, metavar="SCORER.FIELD=VALUE",
        help="Set one config field of a scorer (repeatable; also reaches a calibration's components), e.g. "
        "checker.folder=DIR (an entailment model made by `evenhand build-checker --train-file`) and "
        "checker.rules=false (its plain max-mean); the fields are each scorer's Config (docs/extending.md).",
    )
    add_server_options(parser)


def parse_scorer_options(values: list[str] | None) -> dict[str, dict[str, Any]]:
    """``--scorer-option SCORER.FIELD=VALUE`` values -> {scorer name: {field: value}}, each value read as its
    field's type (bool: true/false, int, finite float, else text); a malformed one raises DataError naming it.

    >>> parse_scorer_options(["checker.rules=false", "checker.k=3", "checker.folder=m"])
    {'checker': {'rules': False, 'k': 3, 'folder': 'm'}}
    """
    import dataclasses
    import math

    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.scoring.registry import UnknownScorerError, scorer_class

    out: dict[str, dict[str, Any]] = {}
    for value in values or []:
        where = f"--scorer-option {value}"
        head, eq, text = value.partition("=")
        name, dot, field = head.strip().rpartition(".")
        if not eq or not dot or not name or not field:
            raise DataError(f"{where}: write SCORER.FIELD=VALUE, e.g. checker.rules=false")
        try:
            config = scorer_class(name).Config
        except UnknownScorerError as err:
            raise DataError(f"{where}: {err}") from None
        fields = {f.name: f for f in dataclasses.fields(config)}
        if field not in fields:
            raise DataError(f"{where}: {name} has no field {field!r}; its fields: {', '.join(sorted(fields))}")
        default, annotation = fields[field].default, str(fields[field].type)
        if default is dataclasses.MISSING or any(t in annotation for t in ("list", "dict", "tuple", "Sequence")):
            raise DataError(f"{where}: {field} is not a single value; --scorer-option sets text, numbers and "
                            "true/false only")
        # the annotation's first type (`int | None` -> int), else the default's
        first = annotation.split("|")[0].strip()
        kind = {"bool": bool, "int": int, "float": float, "str": str}.get(first, type(default) if default is not None else str)
        text = text.strip()
        parsed: Any = text
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise DataError(f"{where}: {field} is true or false, got {text!r}")
            parsed = text.lower() in ("true", "1", "yes")
        elif kind in (int, float):
            try:
                parsed = int(text) if kind is int else float(text)
            except ValueError:
                raise DataError(f"{where}: {field} is {'an integer' if kind is int else 'a number'}, "
                                f"got {text!r}") from None
            if isinstance(parsed, float) and not math.isfinite(parsed):
                raise DataError(f"{where}: {field} must be a finite number, got {text!r}")
        elif not text:
            raise DataError(f"{where}: give a value after '='")
        out.setdefault(name, {})[field] = parsed
    return out


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """--max-concurrency and --server-timeout: how requests to a server URL are paced."""
    parser.add_argument(
        "--max-concurrency", type=int, default=None,
        help="Requests in flight at once to a server URL (--model, --judge-model, --lm-model; default: 4).",
    )
    parser.add_argument(
        "--server-timeout", type=float, default=None,
        help="Seconds to wait for one response of a server URL (default: 120).",
    )


def add_server_processors_option(parser: argparse.ArgumentParser) -> None:
    """--server-processors: the --model server is vLLM running evenhand's logits processors."""
    parser.add_argument(
        "--server-processors", action="store_true",
        help="The --model URL is a vLLM server started with `--logits-processors "
        "evenhand.vllm:EvenhandLogitsProcessor`: --abstractiveness/--extractiveness/--fair-strength "
        "run there (checked by one probe request; docs/serving.md).",
    )


def server_config(args: argparse.Namespace) -> Any:
    """The ``ServerConfig`` of --max-concurrency and --server-timeout (DataError naming the flag)."""
    from evenhand.decoding.engines.http import ServerConfig
    from evenhand.evaluation.errors import DataError

    values = {"max_concurrency": getattr(args, "max_concurrency", None),
              "timeout": getattr(args, "server_timeout", None)}
    try:
        return ServerConfig(**{k: v for k, v in values.items() if v is not None})
    except ValueError as err:
        raise DataError(str(err).replace("`max_concurrency`", "--max-concurrency")
                        .replace("`timeout`", "--server-timeout")) from None


def server_client(args: argparse.Namespace, url: str) -> Any:
    """A ``ServerClient`` for ``url`` paced by --max-concurrency and --server-timeout (no request sent);
    ``--server-processors`` (generate, rerank) marks a vLLM server running evenhand's processors."""
    from evenhand.decoding.engines.http import ServerClient

    return ServerClient(url, server_config(args), processors=bool(getattr(args, "server_processors", False)))


def open_generator(args: argparse.Namespace, config: Any) -> Any:
    """The engine of --model/--engine (``open_engine``), checked against ``config`` before any file:
    what the engine cannot do raises here (one line), and a server is probed once (fair beam
    search's top log-probs, or evenhand's processors with --server-processors). Nothing loads."""
    from evenhand.decoding.engines.base import open_engine, refuse_unsupported

    engine = open_engine(
        args.model, args.engine, device=getattr(args, "device", None), server=server_config(args),
        processors=bool(getattr(args, "server_processors", False)),
    )
    refuse_unsupported(engine.capabilities, config)
    engine.prepare(config)
    return engine


def scorer_options(args: argparse.Namespace, names: list[str]) -> dict[str, dict[str, Any]]:
    """Per scorer name the config fields the command line sets (from each class's ``cli_options``).

    A ``calibrated:X`` name passes the options on to its components (``options``).
    """
    from evenhand.evaluation.data.checks import check_count
    from evenhand.evaluation.scoring.registry import scorer_class, split_name

    check_count(args.scorer_batch_size, "--scorer-batch-size", limit="batch_size", none_ok=True)
    options: dict[str, dict[str, Any]] = {}
    for name in names:
        if split_name(name)[0] == "calibrated":
            from evenhand.rerank.scorers.calibrated import load_calibration

            components = load_calibration(split_name(name)[1] or "").scorers
            inner = {c: o for c, o in scorer_options(args, components).items() if o}
            options[name] = {"options": inner} if inner else {}
            continue
        opts = {
            field: getattr(args, dest)
            for dest, field in scorer_class(name).cli_options.items()
            if getattr(args, dest, None)
        }
        if args.scorer_batch_size is not None:
            opts["batch_size"] = args.scorer_batch_size
        opts.update(parse_scorer_options(getattr(args, "scorer_option", None)).get(name, {}))
        options[name] = opts
    return options


def check_model_flags(args: argparse.Namespace) -> None:
    """Every model a scorer flag names exists locally and holds a model, errors naming that flag.

    ``--lm-model``, ``--judge-model`` (or a server URL), ``--embed-model`` (or
    ``minilm``), ``--align-model`` (``fallback``, an AlignScore checkpoint file or a
    classifier folder) and ``--align-base``: checked before any model loads, so a
    missing ``--lm-model`` is reported as ``--lm-model``, not as ``--model``.
    """
    from evenhand.decoding.engines.http import is_server_url
    from evenhand.decoding.models import check_device, check_local

    check_device(getattr(args, "device", None))
    server_config(args)  # --max-concurrency, --server-timeout in range, whether or not a URL is given
    for flag, _ in SCORER_FLAGS:
        dest = flag[2:].replace("-", "_")
        value = getattr(args, dest, None)
        if value is None or dest in ("score_cache", "fairsumm_text"):  # not model flags
            continue
        if dest in ("judge_model", "lm_model") and is_server_url(value):  # a server URL: probed on first use
            continue
        if dest == "align_model":
            from evenhand.rerank.alignment import (
                _CHECKPOINT_SUFFIXES,
                CHECKER_ALIASES,
                FALLBACK_ALIASES,
                is_trained_folder,
            )

            if value in FALLBACK_ALIASES or value in CHECKER_ALIASES or is_trained_folder(value):
                continue
            check_local(value, flag, files=_CHECKPOINT_SUFFIXES)
        else:
            check_local(value, flag)


def score_cache(args: argparse.Namespace) -> Any:
    """The score cache folder chosen on the command line (None when disabled)."""
    if args.score_cache == "none":
        return None
    if args.score_cache:
        from pathlib import Path

        from evenhand.evaluation.errors import DataError

        if Path(args.score_cache).exists() and not Path(args.score_cache).is_dir():
            raise DataError(f"--score-cache {args.score_cache} is not a directory; give a folder or 'none'")
        return args.score_cache
    from evenhand.decoding.models import cache_dir

    return cache_dir() / "scores"


def build_scorers(args: argparse.Namespace, names: list[str]) -> list[Any]:
    """Each named scorer built with the command line's options and score cache."""
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.scoring.registry import get_scorer, scorer_class

    options = scorer_options(args, names)
    cache = score_cache(args)  # its own error names --score-cache, not a scorer's flags
    scorers = []
    for name in names:
        try:
            scorers.append(get_scorer(name, cache_dir=cache, **options[name]))
        except ValueError as err:  # a setting the scorer's config refuses: one line, exit 2
            flags = [
                "--" + dest.replace("_", "-")
                for dest in getattr(scorer_class(name), "cli_options", {})
                if getattr(args, dest, None)
            ]
            flags += [f"--scorer-option {v}" for v in getattr(args, "scorer_option", None) or []
                      if v.partition("=")[0].strip().rpartition(".")[0] == name]
            where = f" (from {', '.join(flags)})" if flags else ""
            raise DataError(f"{name}: {err}{where}") from None
    return scorers


def split_names(text: str | list[str], flag: str = "--scorers") -> list[str]:
    """Comma-separated scorer names, each checked against the registry (errors name ``flag``).

    An unknown name raises DataError ("--scorers: Unknown scorer 'x'. Available: ..."),
    which the CLI prints as one line with exit status 2. A ``calibrated:X`` name's
    calibration file is read now, before any model loads.
    """
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.scoring.registry import UnknownScorerError, check_names, split_name

    try:
        names = check_names(text, flag)
    except UnknownScorerError as err:
        raise DataError(str(err)) from None
    for name in names:
        base, argument = split_name(name)
        if base == "calibrated":
            from evenhand.rerank.scorers.calibrated import load_calibration

            load_calibration(argument or "")
    return names
