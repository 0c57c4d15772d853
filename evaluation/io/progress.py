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
- :func:`end_line` ends any open progress line (a newline on stderr), so a signal
  handler or an error message starts on a line of its own.

The bars write to stderr (tqdm); ``disable=True`` (``--quiet``) shows nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any

#: Open bars, innermost last: :func:`report_fraction` moves the innermost one.
_OPEN: list[Progress] = []
_LOCK = threading.RLock()

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
    """

    def __init__(self, total: int, desc: str, unit: str = "ex", disable: bool = False,
                 file: IO[str] | None = None, delay: float = 0.0) -> None:
        from tqdm.auto import tqdm

        self.done = 0
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

    def _show(self, value: float) -> None:
        self.bar.n = value
        if not self.disable and time.monotonic() >= self._shows_from:
            self.bar.refresh()

    def close(self) -> None:
        """End the line (idempotent)."""
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


def end_line() -> None:
    """End every open progress line with a newline (for signal handlers and error messages).

    The bars stay usable; a later update starts a fresh line.
    """
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
