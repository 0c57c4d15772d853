"""Build argparse options from config dataclasses, and configs back from parsed args.

The CLI side of the one config loader (:mod:`evenhand.evaluation.data.configs`): a
``--config`` YAML file of fields sets the defaults, the flags given on the
command line override them, unknown YAML keys are errors naming the key.
A ``list[X]`` field is one flag taking a comma-separated value
(``--scorers rouge-l-recall,alignscore``); YAML takes a list or that string.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from typing import TYPE_CHECKING, Any, TypeVar

from evenhand.decoding.engines.base import DEFAULT_ENGINE, engine_names

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def _base_type(annotation: Any) -> tuple[Any, bool]:
    """(the non-None type, whether None is allowed) of a field annotation."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else str), True
    return annotation, False


def add_dataclass_arguments(
    parser: argparse.ArgumentParser, cls: type, skip: tuple[str, ...] = ()
) -> None:
    """One ``--field-name`` option per dataclass field, help from ``metadata['help']``.

    Defaults are left as None on the parser, so ``config_from_args`` can tell set
    flags from unset ones (unset ones keep the dataclass's own default).
    """
    from evenhand.evaluation.data.configs import list_fields

    hints = typing.get_type_hints(cls)
    lists = list_fields(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip or not f.init:
            continue
        typ, _ = _base_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else None
        if f.default_factory is not dataclasses.MISSING and f.name in lists:
            default = ",".join(str(v) for v in f.default_factory())
        help_text = f.metadata.get("help", "")
        if f.name in lists:
            help_text = f"{help_text} Comma-separated."
        if f.metadata.get("scorers"):
            from evenhand.evaluation.scoring.registry import described

            help_text = f"{help_text} Available: {described()}."
        help_text = f"{help_text} (default: {default})" if default is not None else help_text
        help_text = help_text.replace("%", "%%")
        if f.name in lists:
            parser.add_argument(flag, dest=f.name, default=None, help=help_text, metavar="A,B")
        elif typ is bool:
            parser.add_argument(
                flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None,
                help=help_text,
            )
        elif typ in (int, float, str):
            parser.add_argument(
                flag, dest=f.name, type=typ, default=None, help=help_text,
                choices=f.metadata.get("choices"),
            )


def config_from_args(
    cls: type[T], args: argparse.Namespace, config_file: str | None = None, **extra: Any
) -> T:
    """Instantiate ``cls`` from a YAML file of fields, the options set on the command line, and ``extra``.

    ``config_file`` (the ``--config`` YAML, optional) gives the defaults; flags
    set on the command line override it, and ``extra`` (not None) overrides
    both. An unknown YAML key, or a ``ValueError`` of the config (a bad or
    contradictory option), becomes a ``DataError``, which the CLI prints as
    one line and exits with status 2.
    """
    from evenhand.evaluation.data.configs import load_config
    from evenhand.evaluation.errors import DataError

    values = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if getattr(args, f.name, None) is not None
    }
    values.update({k: v for k, v in extra.items() if v is not None})
    try:
        return load_config(cls, config_file, **values)
    except ValueError as err:
        raise DataError(str(err)) from None


#: Options several commands share: name -> (flag, argparse keywords). See ``add_common_options``.
COMMON_OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "data": ("--data", {
        "required": True, "type": lambda value: resolve_data(value),
        "help": "Examples: .jsonl, .csv, FairSumm or TheFlipSide .json; `demo`: the bundled demo sets.",
    }),
    "attribute": ("--attribute", {
        "default": None,
        "help": "What the groups are (rating, sentiment, speaker, stance, party, gender...): a CSV's column "
        "holding them (default: `group`, else the one column named after a known attribute), and the "
        "attribute of JSONL examples without one; it picks the prompt kind (--prompt-kind auto).",
    }),
    "model": ("--model", {
        "default": "smollm2-135m-instruct",
        "help": "Generator: embedded alias, local folder, LoRA adapter folder or cached HF id.",
    }),
    "engine": ("--engine", {
        "default": DEFAULT_ENGINE,  # choices: the engine registry's names when the parser is built
        "help": "Decoding engine: transformers (in-process, default) or vllm (in-process vLLM with "
        "evenhand's logits processors; beam search, plain and fair, runs as a step loop over its "
        "log-probs with the same summaries as transformers; with --abstractiveness/--extractiveness/"
        "--fair-strength a beam search decodes greedily there, and says so; needs vLLM: "
        "`make setup-vllm`, docs/serving.md).",
    }),
    "limit": ("--limit", {"type": int, "default": None, "help": "Only the first N examples."}),
    "device": ("--device", {"default": None, "help": "cpu, cuda, cuda:1... (default: auto)."}),
    "no_resume": ("--no-resume", {
        "dest": "resume", "action": "store_false",
        "help": "Start afresh instead of skipping examples already in --out; the old file moves to "
        "<out>.bak once the first new result is ready.",
    }),
    "force_resume": ("--force-resume", {
        "action": "store_true",
        "help": "Resume even though --out was written with other settings (its manifest differs).",
    }),
}


def resolve_data(value: str) -> str:
    """``--data``: a path, or ``demo`` for the bundled demo sets (unless a file ``demo`` exists)."""
    from pathlib import Path

    if value == "demo" and not Path(value).exists():
        from importlib import resources

        return str(resources.files("evenhand") / "data" / "demo.jsonl")
    return value


def add_common_options(parser: argparse.ArgumentParser, *names: str, **helps: str) -> None:
    """Add the shared options ``names`` (keys of :data:`COMMON_OPTIONS`); ``helps`` rewords their help."""
    for name in names:
        flag, keywords = COMMON_OPTIONS[name]
        if name == "engine":  # an engine registered after import is a choice too
            keywords = {**keywords, "choices": engine_names()}
        parser.add_argument(flag, **{**keywords, "help": helps.get(name, keywords["help"])})
        if name == "data":  # what the data's groups are travels with the data
            add_common_options(parser, "attribute")


def load_limited(path: str, limit: int | None, attribute: str | None = None) -> list[Any]:
    """The examples of ``--data`` (groups named by ``--attribute``), only the first ``--limit`` when given."""
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.errors import DataError

    if limit is not None and limit < 1:
        raise DataError(f"`--limit` must be a positive int, got {limit}")
    examples = load_examples(path, attribute=attribute)
    return examples if limit is None else examples[:limit]
