"""The ``evenhand`` command line: one subcommand per module in ``evenhand.commands``.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``, and imports its heavy dependencies inside ``run`` so that
``evenhand --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from evenhand.evaluation.schema import DataError

#: Subcommand modules under ``evenhand.commands``, in help order.
COMMANDS = [
    "demo", "generate", "evaluate", "rerank", "meta_eval", "calibrate", "train", "sweep", "report",
]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand's arguments."""
    parser = argparse.ArgumentParser(
        prog="evenhand",
        description="Fair, faithful and controllably abstractive summaries with language models.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"evenhand.commands.{name}")
        cmd = sub.add_parser(
            module.NAME, help=module.HELP.replace("%", "%%"), description=module.HELP
        )
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; bad input exits with status 2 and a one-line message."""
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except (DataError, FileNotFoundError) as err:
        print(f"evenhand {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
