"""benchmarks/sentiment_forms.py: the forms tried, by hand-computed tones, and the shipped one's parity."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ is a folder of the checkout, not an installed package

from benchmarks.sentiment_forms import forms  # noqa: E402

DOCS = ["Great battery.", "Awful case."]  # tones 0.804 and -0.75 (mean 0.027); compounds 0.6249 and -0.4588


def test_forms_by_hand() -> None:
    f = forms()
    summary = "The battery is great."  # tone 0.577, compound 0.6249
    assert f["tone"](DOCS, summary) == pytest.approx(-(0.577 - 0.027))
    assert f["tone-dz-0.1"](DOCS, summary) == pytest.approx(-(0.577 - 0.027 - 0.1))
    assert f["tone-dz-0.15"](DOCS, summary) == pytest.approx(-(0.577 - 0.027 - 0.15))
    assert f["compound"](DOCS, summary) == pytest.approx(-(0.6249 - (0.6249 - 0.4588) / 2))
    assert f["compound-dz-0.7"](DOCS, summary) == 0.0  # a gap of 0.54 is inside the dead zone
    # a sign flip only: the documents' mean compound is positive, so a positive summary costs nothing
    assert f["clipped-product"](DOCS, summary) == 0.0
    assert f["clipped-product"](DOCS, "Awful.") == pytest.approx(-0.4588 * (0.6249 - 0.4588) / 2)
    # two sentences of the same tone average to that tone
    assert f["compound-sentences"](DOCS, summary + " " + summary) == pytest.approx(f["compound"](DOCS, summary))


def test_the_shipped_form_is_the_scorer() -> None:
    from evenhand.evaluation.scoring.registry import get_scorer

    summaries = ["The battery is great.", "Awful.", "The battery is great and the case is awful."]
    scores = get_scorer("sentiment-agreement").score([DOCS] * 3, summaries)
    assert scores == pytest.approx([forms()["tone-dz-0.1"](DOCS, s) for s in summaries])
