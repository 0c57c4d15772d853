"""The ``evenhand`` command line: one subcommand per module in ``evenhand.commands``.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``, and imports its heavy dependencies inside ``run`` so that
``evenhand --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from evenhand.evaluation.errors import DataError

#: Subcommand modules under ``evenhand.commands``, in help order.
COMMANDS = [
    "demo", "generate", "evaluate", "rerank", "meta_eval", "calibrate", "train", "sweep", "report",
]


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line, ``evenhand CMD: error: ...``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand's arguments."""
    parser = OneLineParser(
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
        cmd.add_argument(
            "--allow-download", action="store_true",
            help="Let model loading reach the Hugging Face hub (default: offline, local files only).",
        )
        cmd.set_defaults(_run=module.run)
    return parser


def _one_line_warnings(command: str) -> None:
    """Print each Python warning as one line, ``evenhand CMD: warning: ...`` (no source line).

    A user's option that has no effect warns; the default format spans two lines
    (file:line and the source), which reads like a traceback next to an error.
    """
    import warnings

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: object = None, line: str | None = None) -> None:
        print(f"evenhand {command}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    warnings.showwarning = show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; bad input exits with status 2 and a one-line message.

    Offline unless ``--allow-download``: ``HF_HUB_OFFLINE=1`` for every library
    below, and ``evenhand.decoding.models`` loads with ``local_files_only``.
    """
    args = build_parser().parse_args(argv)
    _one_line_warnings(args.command)
    if not args.allow_download:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        return int(args._run(args) or 0)
    except (DataError, FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as err:
        # user mistakes: one line naming the file/field/flag and the fix, never a traceback
        message = " ".join(str(err).split())
        if isinstance(err, OSError) and err.filename and str(err.filename) not in message:
            message = f"{err.filename}: {message}"
        print(f"evenhand {args.command}: error: {message}", file=sys.stderr)
        return 2
    except OSError as err:
        from evenhand.evaluation.io.output_checks import WRITE_ERRNOS

        if err.errno not in WRITE_ERRNOS:
            raise
        # disk full, quota, read-only file system while writing: name the file, nothing finished is lost
        where = f"{err.filename}: " if err.filename else ""
        print(f"evenhand {args.command}: error: {where}cannot write ({WRITE_ERRNOS[err.errno]}); "
              "results finished before are kept; free space and run again", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
