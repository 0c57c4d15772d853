"""Progress lines for every long command: per unit (example, summary, row), with an estimate.

One module for all of evenhand's progress display (commands, generation, reranking,
scoring, training's baseline):

- :class:`Progress` is a bar over ``total`` units (``generate: 37%|... 1.5/4 ex
  [00:12<00:20, ...]``) with elapsed time and an estimate of the time left.
- Work in flight is shown *inside* a batch: the command says which units are in
  flight (:meth:`Progress.begin`), and the code doing the work (a decoding step
  loop) reports how far it got with :func:`report_fraction`, without knowing which
  bar is open. A batch of 4 summaries at decoding step 32 of 128 shows 0.2/4 ex
  and an estimate, not 0/4 for minutes.
- Work made of named steps (a demo set: each candidate's decoding, the scoring, each floor)
  says which step runs (:meth:`Progress.status`, after the count), and with ``heartbeat``
  the line is redrawn at least that often while a step is silent (a scorer loading a model),
  so the elapsed time keeps moving and a long step is never mistaken for a hang.
- :func:`end_line` ends any open progress line (a newline on stderr), so an error
  message starts on a line of its own; ``end_line(close_all=True)`` closes every
  tqdm bar, libraries' too, after a signal (``evenhand.interrupts``).

The bars write to stderr (tqdm); ``disable=True`` (``--quiet``) shows nothing.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import IO, Any

#: Open bars, innermost last: :func:`report_fraction` moves the innermost one.
_OPEN: list[Progress] = []
_LOCK = threading.RLock()

#: The clock of progress lines (tests replace it with a fake one).
clock = time.monotonic
#: How often a heartbeat thread looks whether its line needs redrawing (seconds).
HEARTBEAT_POLL = 1.0

#: tqdm's default line with the count to one decimal (work in flight is a fraction).
BAR_FORMAT = "{l_bar}{bar}| {n:.1f}/{total_fmt} {unit} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


class Progress:
    """A progress bar over ``total`` units, with elapsed time and an estimate of the rest.

    Args:
        total: the units to do (examples, summaries, rows).
        desc: what is being done (``generate``, ``rerank``...).
        unit: the unit's name, shown after the count.
        disable: show nothing (the calls still work).
        file: where the line goes (default: stderr).
        delay: seconds of work before the line first shows (so work that ends, or fails on a
            user's mistake, within them prints no bar).
        heartbeat: with a positive value, a daemon thread redraws the line whenever it has not
            been drawn for that many seconds (``keepalive``), until ``close``.
    """

    def __init__(self, total: int, desc: str, unit: str = "ex", disable: bool = False,
                 file: IO[str] | None = None, delay: float = 0.0, heartbeat: float = 0.0) -> None:
        from tqdm.auto import tqdm

        self.done = 0
        self.heartbeat = heartbeat
        self.drawn_at = clock()
        self._stop = threading.Event()
        self.in_flight = 0
        self.part: tuple[int, int] = (0, 1)  # fractions reported refer to part i of n of the work in flight
        self.disable = disable
        self._shows_from = time.monotonic() + delay  # no line before (tqdm's close keeps to it too)
        self.bar: Any = tqdm(total=total, desc=desc, unit=unit, disable=disable, bar_format=BAR_FORMAT,
                             file=file if file is not None else sys.stderr, dynamic_ncols=True,
                             delay=delay)
        if not disable:  # a hidden bar (an inner call's) leaves the fractions to the bar shown
            with _LOCK:
                _OPEN.append(self)
            if heartbeat > 0:
                threading.Thread(target=self._beat, name=f"progress {desc}", daemon=True).start()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def shown(self) -> float:
        """The count on the line: units done plus the finished part of those in flight."""
        return float(self.bar.n)

    def begin(self, units: int) -> None:
        """The next ``units`` units are in flight: :func:`report_fraction` shows how far they got."""
        self.in_flight = max(0, int(units))
        self.part = (0, 1)

    def update(self, n: int = 1) -> None:
        """``n`` more units are done (those in flight first)."""
        self.done += n
        self.in_flight = max(0, self.in_flight - n)
        self.part = (0, 1)
        self._show(float(self.done))

    def fraction(self, fraction: float) -> None:
        """The units in flight are ``fraction`` (0..1) done; never moves the line backwards."""
        if self.in_flight <= 0:
            return
        i, n = self.part
        value = self.done + (i + min(max(fraction, 0.0), 1.0)) / n * self.in_flight
        if value > self.bar.n:
            self._show(value)

    def status(self, text: str) -> None:
        """Say what the work in flight is doing now (``decoding fair beam β=3``), after the count."""
        self.bar.set_postfix_str(text, refresh=False)
        self._show(float(self.bar.n))

    def keepalive(self) -> bool:
        """Redraw the line when it has not been drawn for ``heartbeat`` seconds; whether it did."""
        if self.heartbeat <= 0 or clock() - self.drawn_at < self.heartbeat:
            return False
        self._show(float(self.bar.n))
        return True

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_POLL):
            with contextlib.suppress(Exception):  # a closed stream: the next close ends the thread
                self.keepalive()

    def _show(self, value: float) -> None:
        self.bar.n = value
        if not self.disable and time.monotonic() >= self._shows_from:
            self.bar.refresh()
            self.drawn_at = clock()

    def close(self) -> None:
        """End the line (idempotent)."""
        self._stop.set()
        with _LOCK:
            if self in _OPEN:
                _OPEN.remove(self)
        self.bar.close()


def format_seconds(seconds: float) -> str:
    """``m:ss`` (``h:mm:ss`` past an hour), as tqdm shows times."""
    total = max(0, round(seconds))
    h, rest = divmod(total, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def eta_text(done: int, total: int, elapsed: float) -> str:
    """``3/12, 1:20 elapsed, about 3:40 left`` (no estimate before the first unit is done)."""
    head = f"{done}/{total}, {format_seconds(elapsed)} elapsed"
    if done <= 0:
        return head
    return f"{head}, about {format_seconds(elapsed / done * (total - done))} left"


def report_fraction(fraction: float) -> None:
    """The work in flight on the innermost open bar is ``fraction`` (0..1) done; no bar: nothing."""
    with _LOCK:
        bar = _OPEN[-1] if _OPEN else None
    if bar is not None:
        bar.fraction(fraction)


def report_part(index: int, parts: int) -> None:
    """The work in flight on the innermost open bar has ``parts`` steps; step ``index`` starts.

    Fractions reported next (:func:`report_fraction`) move the bar within that step: a
    rerank of one example is 3 sampling calls and the scoring, each a quarter of it.
    """
    with _LOCK:
        bar = _OPEN[-1] if _OPEN else None
    if bar is not None and parts > 0:
        bar.part = (min(max(index, 0), parts - 1), parts)
        bar.fraction(0.0)


def report_status(text: str) -> None:
    """Name the step the innermost open bar's work is in (``Progress.status``); no bar: nothing."""
    with _LOCK:
        bar = _OPEN[-1] if _OPEN else None
    if bar is not None:
        bar.status(text)


def end_line(close_all: bool = False) -> None:
    """End any half-drawn progress line, so the next message starts a line of its own.

    The one way evenhand ends a progress line, for error messages and signals alike.
    By default evenhand's open bars get one newline and stay usable (a later update
    starts a fresh line). With ``close_all`` (a run stopped by a signal: nothing will
    be drawn again) every tqdm bar of the process is closed, libraries' bars too (a
    weights download, vLLM's), each leaving its last state on a line of its own.
    Takes no lock of this module then, so a signal handler may call it.
    """
    if close_all:
        for progress in list(_OPEN):  # a copy of a list: safe while the interrupted code holds _LOCK
            with contextlib.suppress(Exception):  # a closed stream, a half-built bar
                progress.bar.close()
        tqdm = sys.modules.get("tqdm.std")
        for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", ())):
            with contextlib.suppress(Exception):  # a closed stream, a half-built bar
                bar.close()
        return
    with _LOCK:
        bars = list(_OPEN)
    ended = False
    for progress in bars:
        if progress.disable or ended:
            continue
        try:
            progress.bar.fp.write("\n")
            progress.bar.fp.flush()
            ended = True
        except (OSError, ValueError):  # a closed stream: nothing to end
            pass


def open_bars() -> int:
    """How many progress bars are open (tests)."""
    with _LOCK:
        return len(_OPEN)
