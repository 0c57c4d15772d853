"""The ``evenhand`` command line: one subcommand per module in ``evenhand.commands``.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``, and imports its heavy dependencies inside ``run`` so that
``evenhand --help`` is instant.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from evenhand.decoding.models import VERBOSE_ENV, verbose_env
from evenhand.evaluation.errors import DataError, error_chain

#: Subcommand modules under ``evenhand.commands``, in help order.
COMMANDS = [
    "demo", "generate", "evaluate", "compare", "rerank", "meta_eval", "calibrate", "train", "sweep", "report",
    "build_checker",
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
        cmd.add_argument(
            "-v", "--verbose", action="store_true",
            help="Also show the libraries' own warnings, logs and weight-loading bars (hidden by "
            f"default; or set {VERBOSE_ENV}=1).",
        )
        cmd.set_defaults(_run=module.run, _parser=cmd)  # _parser: its defaults tell set options (option_modes)
    return parser


def _our_folders() -> tuple[Path, ...]:
    """The folders of evenhand's code: the package and its layers (links resolved)."""
    package = Path(__file__).resolve().parent
    layers = ("evaluation", "decoding", "rerank", "training")
    return (package, *((Path(__file__).parent / layer).resolve() for layer in layers))


def _one_line_warnings(command: str, verbose: bool) -> None:
    """Print each Python warning as one line, ``evenhand CMD: warning: ...`` (no source line).

    A user's option that has no effect warns; the default format spans two lines
    (file:line and the source), which reads like a traceback next to an error.
    Unless ``verbose``, only evenhand's own warnings are shown: a library's
    deprecation notice is nothing a user of the command can act on. An option
    that has no effect (``IgnoredOptionWarning``) is always shown, wherever the
    warning was raised from (a dataclass's generated ``__init__`` is no file of ours).
    """
    import warnings

    from evenhand.evaluation.errors import IgnoredOptionWarning

    ours = _our_folders()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: object = None, line: str | None = None) -> None:
        shown = verbose or issubclass(category, IgnoredOptionWarning)
        if not shown and not any(Path(filename).resolve().is_relative_to(d) for d in ours):
            return
        _end_progress_line()  # a warning met while a bar is drawn starts a line of its own
        print(f"evenhand {command}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    warnings.showwarning = show


def _quiet_libraries() -> None:
    """Hide the libraries' logs below errors and their weight-loading bars (not evenhand's bars).

    Environment variables for libraries not imported yet (a user's own setting wins), the
    same through their APIs for those a caller already imported.
    """
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")  # its download retries: --allow-download fails in one line
    # vLLM's log lines only with -v, its ERROR lines too: a failed load ends in evenhand's one line, not its traceback
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "CRITICAL")
    if "vllm" in sys.modules:
        import logging

        logging.getLogger("vllm").setLevel(logging.CRITICAL)
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import logging as hub_logging

        hub_logging.set_verbosity_error()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()


def _check_cache_env() -> None:
    """``EVENHAND_CACHE`` must be a folder (or not exist yet): a file there is one line, not a traceback."""
    value = os.environ.get("EVENHAND_CACHE")
    if not value:
        return
    path = Path(value).expanduser()
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                what = "is" if folder == path else f"is under {folder}, which is"
                raise DataError(f"environment variable EVENHAND_CACHE={value}: {what} not a folder; point it at "
                                "a folder (created if missing) or unset it")
            return


#: argument names that are outputs (every other file named on the command line is an input)
_OUTPUT_DESTS = {"out", "out_dir", "score_cache"}


def _run_files(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """The link rule's view of this run: every file a flag names is an input, except the outputs."""
    from evenhand.evaluation.io.output_checks import run_files

    outputs = _OUTPUT_DESTS | ({"results"} if args.command == "sweep" else set())
    inputs: dict[str, str] = {}
    named: list[str] = []
    for dest, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if not isinstance(item, str | Path) or not str(item):
                continue
            if dest in outputs:
                named.append(str(item))
            elif os.path.isfile(item):
                inputs[f"--{dest.replace('_', '-')} {item}"] = str(item)
    return run_files(inputs, named)


def _safe_streams() -> None:
    """Never crash on the terminal's encoding: characters it cannot show are written escaped (``\\u2060``)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; bad input exits with status 2 and a one-line message.

    Offline unless ``--allow-download``: ``HF_HUB_OFFLINE=1`` for every library
    below, and ``evenhand.decoding.models`` loads with ``local_files_only``.
    SIGINT, SIGTERM and SIGHUP stop a command cleanly with one line saying what
    was kept and how to resume, exit 130 / 143 / 129 (``evenhand.interrupts``).
    """
    from evenhand import interrupts

    _safe_streams()
    given = list(argv) if argv is not None else sys.argv[1:]
    parsed: list[argparse.Namespace] = []
    try:
        with interrupts.handling():
            args = build_parser().parse_args(argv)
            parsed.append(args)
            return _run(args)
    except interrupts.Interrupted as err:
        # Ctrl-C, kill, a closed terminal: the run unwound (locks released, servers stopped); say what is kept
        _end_progress_line(close_all=True)  # every bar, libraries' too: nothing is drawn again
        if parsed:
            print(interrupts.message(parsed[0].command, parsed[0], given, err), file=sys.stderr)
        else:
            print(f"evenhand: interrupted ({interrupts.signal_name(err.signum)}) before starting; nothing was written",
                  file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:
        # `evenhand sweep --list | head`: the reader left; stop quietly, as a pipeline expects
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _end_progress_line(close_all: bool = False) -> None:
    """An error or a signal met while a progress bar is open: the message starts a line of its own
    (``evaluation.io.progress.end_line``, the one mechanism)."""
    from evenhand.evaluation.io.progress import end_line

    end_line(close_all)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; user mistakes and write errors become one line and exit 2."""
    verbose = args.verbose or verbose_env()
    _one_line_warnings(args.command, verbose)
    if verbose:
        os.environ[VERBOSE_ENV] = "1"
    else:
        _quiet_libraries()
    if not args.allow_download:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        _check_cache_env()
        from evenhand.option_modes import check_args

        check_args(args, args._parser)  # an option without effect in this mode: refused or warned, before any work
        with _run_files(args):
            return int(args._run(args) or 0)
    except BrokenPipeError:
        raise  # the reader of stdout left: `main` stops quietly
    except (DataError, OSError) as err:
        from evenhand.interrupts import interrupted_by

        if interrupted_by(err) is not None:
            raise  # raised while a signal unwound the run: `main` reports the interrupt
        # user mistakes and what the disk says: one line naming the file/field/flag and the fix, never a
        # traceback; on a fresh line after every progress bar, the libraries' too (the run ends here)
        _end_progress_line(close_all=True)
        if isinstance(err, OSError) and args.allow_download and _from_the_hub(err):
            # --allow-download without a reachable hub (or an id the hub does not have)
            first = " ".join(str(err).split()).split(". ")[0]
            message = (f"--allow-download: a model could not be fetched ({first}); check the network and the "
                       "model id, or give a local model folder")
        else:
            message = _one_line(err)
        print(f"evenhand {args.command}: error: {message}", file=sys.stderr)
        return 2


#: The fix of a raw OS error, by errno (the file is named before it).
_OS_FIXES = {
    errno.ENOENT: "it (or its folder) was moved or deleted while the command ran, or never existed; restore it "
    "or give another path and run again (results finished before are kept)",
    errno.ENOTDIR: "a part of the path is a file, not a folder; give another path",
    errno.EISDIR: "it is a folder; give a file path",
    errno.EACCES: "fix its permissions or give another path",
    errno.EPERM: "fix its permissions or give another path",
}


def _one_line(err: DataError | OSError) -> str:
    """The message of an error as one line: a DataError's own; an OS error's file, what happened and the fix.

    A raw OS error (``[Errno 2] No such file or directory: 'x'``, the text Python gives) names no fix;
    a write that failed for lack of space (disk full, quota, ``ulimit -f``, read-only) says what is kept.
    """
    from evenhand.evaluation.io.output_checks import WRITE_ERRNOS

    message = " ".join(str(err).split())
    if not isinstance(err, OSError) or err.errno is None or not err.strerror:
        if isinstance(err, OSError) and err.filename and str(err.filename) not in message:
            message = f"{err.filename}: {message}"
        return message  # an error evenhand raised with its own words
    where = f"{err.filename}: " if err.filename else ""
    if err.errno in _OS_FIXES:
        return f"{where}{err.strerror.lower()}; {_OS_FIXES[err.errno]}"
    if err.errno in WRITE_ERRNOS:
        return (f"{where}cannot write ({WRITE_ERRNOS[err.errno]}); results finished before are kept; free space "
                "and run again")
    return f"{where}{err.strerror.lower()}; check the file and run again (results finished before are kept)"


def _from_the_hub(err: BaseException) -> bool:
    """Whether ``err`` (or an error it was raised from) comes from ``huggingface_hub``: a download failed."""
    return any(type(e).__module__.split(".")[0] == "huggingface_hub" for e in error_chain(err))


if __name__ == "__main__":
    sys.exit(main())
