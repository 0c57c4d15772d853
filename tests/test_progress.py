"""evaluation.io.progress: per-unit bars with an estimate, work in flight inside a batch, end_line."""

from __future__ import annotations

import io

import pytest

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.io import progress as prog
from evenhand.evaluation.io.progress import (
    Progress,
    end_line,
    eta_text,
    report_fraction,
    report_part,
)


def test_fractions_move_the_innermost_shown_bar_within_its_work_in_flight():
    out = io.StringIO()
    with Progress(4, "generate", "ex", file=out) as bar:
        hidden = Progress(2, "inner", disable=True)  # an inner call's hidden bar takes no fractions
        bar.begin(2)
        report_fraction(0.5)
        assert bar.shown == pytest.approx(1.0)  # half of the 2 examples in flight
        report_fraction(0.25)
        assert bar.shown == pytest.approx(1.0)  # never backwards
        report_part(1, 2)  # second of two steps of the work in flight
        report_fraction(0.5)
        assert bar.shown == pytest.approx(1.5)
        bar.update(2)
        assert bar.shown == 2.0 and bar.in_flight == 0
        report_fraction(0.9)  # nothing in flight: nothing moves
        assert bar.shown == 2.0
        hidden.close()
    assert prog.open_bars() == 0
    text = out.getvalue()
    assert "1.5/4 ex" in text and "2.0/4 ex" in text and "<" in text  # elapsed<remaining: an estimate


def test_end_line_ends_an_open_line_once():
    out = io.StringIO()
    bar = Progress(3, "rerank", file=out)
    bar.update(1)
    before = out.getvalue()
    end_line()
    assert out.getvalue() == before + "\n"
    bar.close()
    end_line()  # nothing open: nothing written
    assert out.getvalue().count("\n") == before.count("\n") + 2  # end_line's and close's


def test_eta_text():
    assert eta_text(0, 12, 5) == "0/12, 0:05 elapsed"
    assert eta_text(3, 12, 80) == "3/12, 1:20 elapsed, about 4:00 left"
    assert prog.format_seconds(3725) == "1:02:05"


def test_generate_moves_the_bar_inside_a_batch(tiny_causal):
    """One batch of 2 examples: the decoding steps show 0 < n < 2 before the batch ends."""
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.generate import generate

    model, tok = tiny_causal
    examples = [Example(id=str(i), documents=[Document("The food was good.", "5"), Document("Slow service.", "1")],
                        attribute="rating") for i in range(2)]
    seen: list[float] = []
    out = io.StringIO()
    with Progress(2, "generate", file=out) as bar:
        bar.begin(2)
        original = bar.fraction

        def spy(fraction: float) -> None:
            original(fraction)
            seen.append(bar.shown)

        bar.fraction = spy  # type: ignore[method-assign]
        config = GenerateConfig(max_new_tokens=8, num_beams=2, batch_size=2, no_repeat_ngram_size=0)
        first = generate(model, tok, examples, config, progress=False)
        bar.update(2)
    assert len(seen) >= 4 and 0 < seen[0] < 2 and seen == sorted(seen)  # steps of the batch, in order
    assert first == generate(model, tok, examples, config, progress=False)  # the criterion changes nothing


def test_a_delayed_bar_prints_nothing_for_work_that_ends_within_the_delay():
    """evaluate's bar over a few summaries waits, so a mistake found while scorers load stays one line."""
    import io

    from evenhand.evaluation.io.progress import Progress

    quiet, shown = io.StringIO(), io.StringIO()
    for stream, delay in ((quiet, 30.0), (shown, 0.0)):
        with Progress(3, "evaluate", "summary", file=stream, delay=delay) as bar:
            bar.update(1)
    assert quiet.getvalue() == ""
    assert "evaluate" in shown.getvalue() and "3/3" not in shown.getvalue().split("\r")[1]


def test_end_line_close_all_closes_every_bar_libraries_too():
    """After a signal (evenhand.interrupts): evenhand's bars and a library's plain tqdm bar are all closed."""
    from tqdm import tqdm

    ours_out, theirs_out = io.StringIO(), io.StringIO()
    ours = Progress(4, "generate", file=ours_out)
    ours.update(1)
    theirs = tqdm(total=10, desc="Loading weights", file=theirs_out)
    theirs.update(3)
    end_line(close_all=True)
    assert ours.bar.disable and theirs.disable  # tqdm marks a closed bar disabled
    assert ours_out.getvalue().endswith("\n") and theirs_out.getvalue().endswith("\n")
    assert "1.0/4 ex" in ours_out.getvalue() and "3/10" in theirs_out.getvalue()
    ours.close()  # still idempotent after end_line closed its bar
    assert prog.open_bars() == 0


def test_a_silent_step_is_redrawn_by_the_heartbeat_with_its_status(monkeypatch):
    """``status`` names the step after the count; the heartbeat thread redraws a line silent for
    ``heartbeat`` seconds (on a fake clock: the test waits for the thread, it times nothing)."""
    import threading

    now = [0.0]
    monkeypatch.setattr(prog, "clock", lambda: now[0])
    monkeypatch.setattr(prog, "HEARTBEAT_POLL", 0.01)
    out = io.StringIO()
    with Progress(3, "demo x", "step", file=out, heartbeat=10.0) as bar:
        bar.begin(1)
        bar.status("scoring the candidates")
        assert bar.drawn_at == 0.0 and "scoring the candidates" in out.getvalue()
        now[0] = 9.0
        assert bar.keepalive() is False  # drawn 9 s ago: not yet
        now[0] = 25.0
        drawn = threading.Event()
        for _ in range(2000):  # the thread polls every 0.01 s: wait for it to redraw
            if bar.drawn_at == 25.0:
                drawn.set()
                break
            drawn.wait(0.01)
        assert drawn.is_set()
    assert out.getvalue().count("scoring the candidates") >= 2
