"""Which options belong to which mode: the one table every command checks its options against.

An option that has no effect in the mode a run is in (``--temperature`` without
``--do-sample``, ``--device`` with a server URL as ``--model``) is refused before
any work, exit 2 with one line naming the option and what makes it meaningful,
or, where a shared YAML file may well set it (``train``'s method options), warned
in one line that is always shown (:class:`IgnoredOptionWarning`).

:data:`MODES` is the table. The CLI checks every command's parsed options
against it (:func:`check_args`); rows marked ``by_config`` are checked by the
config class itself, because a YAML file sets them as well as a flag
(``training.config.DPO_ONLY`` / ``GRPO_ONLY``). ``tests/test_option_modes.py``
walks every command's parser against this table.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evenhand.evaluation.errors import DataError, IgnoredOptionWarning

Values = Mapping[str, Any]


@dataclass(frozen=True)
class Mode:
    """An option that matters only in one mode.

    Attributes:
        command: the subcommand (``generate``).
        dest: the option's argparse dest, which is also its config field (``temperature``).
        needs: what makes it meaningful, as a user reads it (``--do-sample``).
        active: whether parsed values put the run in that mode.
        matters: command-line words that turn the mode on (the parser walk adds them).
        outside: command-line words that leave it, where the default is in it (``--list``).
        used: whether the values use the option in a way that needs the mode (default: it is set).
        fix: the end of the message (default: set what it needs, or drop the option).
        warn: warn in one line instead of refusing.
        by_config: checked by the config class (a YAML file sets it too), not by :func:`check_args`.
    """

    command: str
    dest: str
    needs: str
    active: Callable[[Values], bool]
    matters: tuple[str, ...]
    outside: tuple[str, ...] = ()
    used: Callable[[Values], bool] | None = None
    fix: str = ""
    warn: bool = False
    by_config: bool = False

    @property
    def flag(self) -> str:
        """The option as typed."""
        return "--" + self.dest.replace("_", "-")

    def message(self) -> str:
        """The one line: the option, what makes it meaningful, the fix."""
        fix = self.fix or f"add {self.needs} or drop {self.flag}"
        return f"{self.flag} has no effect without {self.needs}: {fix}"


def _url(value: Any) -> bool:
    from evenhand.decoding.engines.http import is_server_url

    return is_server_url(value)


def _sampling(values: Values) -> bool:
    return values.get("do_sample") is True


def _server_model(values: Values) -> bool:
    return _url(values.get("model"))


def _local_model(values: Values) -> bool:
    return not _url(values.get("model"))


def _running(values: Values) -> bool:
    return not values.get("list")


def _more_than_one_candidate(values: Values) -> bool:
    return str(values.get("floors", "")).strip().lower() != "none" or bool(values.get("quote"))


def _method(name: str) -> Callable[[Values], bool]:
    return lambda values: (values.get("method") or "dpo-rr") == name


_URL = "http://127.0.0.1:9/v1"

MODES: tuple[Mode, ...] = (
    *(Mode("generate", dest, "--do-sample", _sampling, ("--do-sample",),
           fix=f"add --do-sample to sample, or drop --{dest.replace('_', '-')} (without it decoding is beam "
           "search, or greedy with --num-beams 1)")
      for dest in ("temperature", "top_p", "top_k")),
    Mode("generate", "device", "a local --model", _local_model, (), ("--model", _URL),
         fix="a server URL as --model decodes on the server's own device; drop --device"),
    *(Mode(command, "server_processors", "a server URL as --model", _server_model, ("--model", _URL),
           fix="it says the --model server runs evenhand's logits processors; give a URL "
           "http://HOST:PORT/v1 as --model or drop --server-processors")
      for command in ("generate", "rerank")),
    *(Mode("generate", dest, "a server URL as --model", _server_model, ("--model", _URL),
           fix=f"it paces requests to a server; give a URL http://HOST:PORT/v1 as --model or drop "
           f"--{dest.replace('_', '-')}")
      for dest in ("max_concurrency", "server_timeout")),
    Mode("rerank", "candidates", "floors or --quote", _more_than_one_candidate, (), ("--floors", "none"),
         used=lambda values: values.get("candidates") == 1,
         fix="with --floors none, --candidates 1 leaves one candidate and nothing to rank; give "
         "--candidates 2 or more, or keep the floors (the plain beam-search summary joins the candidates)"),
    *(Mode("sweep", dest, "a run (not --list)", _running, (), ("--list",),
           fix=f"--list only prints the cells; drop --{dest} or --list")
      for dest in ("quiet", "merge")),
)


def _train_rows() -> tuple[Mode, ...]:
    """``train``'s method options, from the training config's own lists (checked there: YAML sets them too)."""
    from evenhand.training.config import DPO_ONLY, GRPO_ONLY

    return (
        *(Mode("train", dest, "--method dpo-rr", _method("dpo-rr"), ("--method", "dpo-rr"), warn=True,
               by_config=True) for dest in DPO_ONLY),
        *(Mode("train", dest, "--method grpo", _method("grpo"), ("--method", "grpo"), warn=True, by_config=True)
          for dest in GRPO_ONLY),
    )


def modes(command: str | None = None) -> tuple[Mode, ...]:
    """The table's rows (of ``command`` when given)."""
    rows = (*MODES, *_train_rows())
    return tuple(row for row in rows if command is None or row.command == command)


def given(args: argparse.Namespace, parser: argparse.ArgumentParser) -> set[str]:
    """The dests the command line set: those whose value differs from the parser's default."""
    return {dest for dest, value in vars(args).items()
            if not dest.startswith("_") and value != parser.get_default(dest)}


def check_values(command: str, set_options: set[str], values: Values) -> None:
    """Refuse (DataError) or warn for each option of ``set_options`` that has no effect with ``values``."""
    import warnings

    for row in modes(command):
        if row.by_config or row.dest not in set_options:
            continue
        if row.used is not None and not row.used(values):
            continue
        if row.active(values):
            continue
        if row.warn:
            warnings.warn(row.message(), IgnoredOptionWarning, stacklevel=2)
        else:
            raise DataError(row.message())


def check_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """The CLI's check of a parsed command line against :data:`MODES` (before the command runs)."""
    check_values(args.command, given(args, parser), vars(args))
