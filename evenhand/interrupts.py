"""Ctrl-C, ``kill`` and a closed terminal: every command stops the same way.

:func:`handling` (used by ``evenhand.cli.main`` around every command) turns
SIGINT, SIGTERM and SIGHUP into :class:`Interrupted`, a ``KeyboardInterrupt``
raised in the main thread. It unwinds like one: the batch being computed is
abandoned (a resumable output truncates a half-written append, so it ends at its
last complete record), whole-file outputs are never renamed into place, locks
are released and servers the command started are stopped by their ``finally``
blocks. The CLI then prints one line — what was kept and the exact command
that resumes — and exits 128 + the signal's number: 130 (SIGINT), 143 (SIGTERM),
129 (SIGHUP). A second signal while the first unwinds ends child processes and
exits at once. Child processes (``evenhand.process_tree``: found through ``/proc``, orphans
re-parented here while a command runs) are ended in both cases. See ``docs/reliability.md``.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from evenhand.evaluation.errors import error_chain
from evenhand.evaluation.io.progress import end_line
from evenhand.process_tree import adopt_orphans

#: the signals handled, by name
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}
if hasattr(signal, "SIGHUP"):
    SIGNALS["SIGHUP"] = signal.SIGHUP

#: flags dropped from the resume command: they would throw the kept results away
_DROPPED = ("--no-resume",)
#: commands whose output is written whole at the end: an interrupted run kept nothing of its own
_WHOLE_FILE = ("evaluate", "calibrate", "report", "demo")


def signal_name(signum: int) -> str:
    """``SIGINT`` for 2, and so on."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Interrupted(KeyboardInterrupt):
    """A handled signal, raised where the main thread was; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process that the signal ended."""
        return 128 + self.signum


def interrupted_by(err: BaseException) -> Interrupted | None:
    """The :class:`Interrupted` that ``err`` is, or was raised while handling, if any.

    A library's clean-up can fail as the signal unwinds it and replace the interrupt with an error
    of its own (vLLM's tokenizer pool: ``finally: pool.put(tok)`` with ``tok`` never bound gives an
    ``UnboundLocalError``); the interrupt is still the reason the command stopped.
    """
    return next((e for e in error_chain(err) if isinstance(e, Interrupted)), None)


def end_children() -> None:
    """End the processes this one started (servers, engine workers and their children, orphans it adopted):
    SIGTERM, SIGKILL 5 s later for those left (``evenhand.process_tree``)."""
    from evenhand.process_tree import end_descendants

    end_descendants(grace=5.0)


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM/SIGHUP raise :class:`Interrupted`; a second one exits at once."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread (an embedding caller's thread)
        return
    state: dict[str, int] = {}

    def first(signum: int, frame: Any) -> None:  # noqa: ARG001
        if state.pop("reraise", 0):  # the first one was swallowed (below): raise it again
            raise Interrupted(state["signum"])
        if "signum" in state:
            again(signum)
        state["signum"] = signum
        raise Interrupted(signum)

    def swallowed(unraisable: Any) -> None:
        """An Interrupted raised inside a ``__del__`` or a callback is printed and dropped by Python: raise
        it again in the main thread (``_thread.interrupt_main``) right after, so the run still stops."""
        if isinstance(unraisable.exc_value, Interrupted) and "signum" in state:
            state["reraise"] = 1  # from another thread, once this callback has returned (again if swallowed again)
            threading.Timer(0.05, _thread.interrupt_main, (state["signum"],)).start()
            return
        previous_hook(unraisable)

    def again(signum: int) -> None:
        end_line(close_all=True)
        with contextlib.suppress(Exception):
            sys.stderr.write(f"evenhand: interrupted again ({signal_name(signum)}); "
                             "stopped at once without cleaning up\n")
            sys.stderr.flush()
        end_children()
        os._exit(128 + state.get("signum", signum))

    previous = {}
    for number in SIGNALS.values():
        with contextlib.suppress(OSError, ValueError):
            previous[number] = signal.signal(number, first)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = swallowed
    try:
        with adopt_orphans():  # a worker whose parent died first is still ours to end
            try:
                yield
            except BaseException as err:
                signalled = interrupted_by(err)
                if signalled is None:
                    raise
                # ended while this process is still the subreaper: an engine that the same Ctrl-C kills
                # a moment later leaves its workers here, not to init (out of reach)
                end_children()
                if signalled is err:
                    raise
                # a library's clean-up failed while the signal unwound it: stop as interrupted all the same
                raise Interrupted(signalled.signum) from err
    finally:
        sys.unraisablehook = previous_hook
        for number, handler in previous.items():
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(number, handler)


def resume_command(argv: Sequence[str]) -> str:
    """The command line that continues the interrupted run: the same one, less ``--no-resume``."""
    kept = [a for a in argv if a not in _DROPPED]
    return shlex.join(["evenhand", *kept])


def _count_records(path: Path) -> int:
    try:
        with path.open("rb") as file:
            return sum(1 for line in file if line.endswith(b"\n") and line.strip())
    except OSError:
        return 0


def kept(command: str, args: Any) -> str:
    """What an interrupted ``command`` leaves behind, in a few words."""
    if command in ("generate", "rerank", "meta-eval"):
        out = Path(args.out)
        noun = "scorer" if command == "meta-eval" else "record"
        done = _count_records(out)
        if not done:
            return f"no {noun} finished yet"
        return f"kept {done} finished {noun}{'' if done == 1 else 's'} in {out}"
    if command == "sweep":
        results = getattr(args, "results", None)
        if not results:
            return "kept the finished batches"
        from evenhand.sweep.store import count_rows

        rows = count_rows(results)
        return f"kept {rows} finished rows in {results}" if rows is not None else f"kept the finished batches in {results}"
    if command == "train":
        out = getattr(args, "out_dir", None)
        if out:
            done = sorted(p.name for p in Path(out).glob("iter_*") if p.is_dir())
            return f"kept {len(done)} finished iteration{'' if len(done) == 1 else 's'} in {out}"
        return "kept the finished iterations in the run folder"
    if command == "report" and getattr(args, "out", None):
        return (f"{Path(args.out) / 'index.html'} was not written (the page is written last; an older page "
                "is unchanged)")
    if command in _WHOLE_FILE:
        out = getattr(args, "out", None)
        if out:
            return f"nothing was written ({out} is written whole at the end; an older one is unchanged)"
        return "nothing was written"
    return "results finished before are kept"


def message(command: str, args: Any, argv: Sequence[str], err: Interrupted) -> str:
    """The one line printed for an interrupted command: the signal, what was kept, how to resume."""
    again = "run again" if command in _WHOLE_FILE else "resume"
    return (f"evenhand {command}: interrupted ({signal_name(err.signum)}); "
            f"{kept(command, args)}; {again} with: {resume_command(argv)}")
