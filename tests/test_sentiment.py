"""sentiment-agreement: VADER's tone of a summary against its documents' mean (hand-computed values)."""

from __future__ import annotations

import math

import pytest

from evenhand.evaluation.scoring.registry import get_scorer
from evenhand.rerank.scorers.sentiment import REPORTING, sentiment_gap, tone

# VADER counts a word rated v > 0 as v + 1, one rated v < 0 as v - 1, every other word as 1 neutral; its
# ``pos`` and ``neg`` are those sums over the total (rounded to 3 places); tone = pos - neg.
GREAT, AWFUL = 3.1, -2.0  # their ratings in vader_lexicon.txt


def test_tone_is_the_positive_share_minus_the_negative_share() -> None:
    assert tone("The battery is great.") == round((GREAT + 1) / (GREAT + 1 + 3), 3)  # 0.577
    assert tone("Awful case.") == -round((-AWFUL + 1) / (-AWFUL + 1 + 1), 3)  # -0.75
    assert tone("The case is blue.") == 0.0  # no rated word ("grey" is rated 0.2)
    # shares do not grow with length: the same praise said twice keeps its tone
    assert tone("The battery is great. The battery is great.") == tone("The battery is great.")
    # VADER's "but": what comes before counts half, what comes after one and a half times
    pos, neg = GREAT * 0.5 + 1, -AWFUL * 1.5 + 1
    assert tone("The battery is great but the case is awful.") == pytest.approx(
        round(pos / (pos + neg + 7), 3) - round(neg / (pos + neg + 7), 3))


def test_reporting_verbs_are_not_read_as_sentiment() -> None:
    assert "argues" in REPORTING
    assert tone("The article argues that the plan works.") == 0.0
    argues = -1.6  # VADER's rating ("argue" as in quarrel)
    assert tone("The article argues that the plan works.", reporting_verbs=True) == -round((-argues + 1) / 8.6, 3)


def test_gap_counts_only_beyond_the_dead_zone() -> None:
    docs = ["Great battery.", "Awful case."]  # tones 4.1 / 5.1 = 0.804 and -0.75: mean 0.027
    mean = (0.804 - 0.75) / 2
    assert sentiment_gap(docs, "The battery is great.") == pytest.approx(0.577 - mean - 0.1)
    assert sentiment_gap(docs, "The battery is great.", dead_zone=0.0) == pytest.approx(0.577 - mean)
    assert sentiment_gap(docs, "The battery is great and the case is awful.") == 0.0  # tone 0.078
    # a complaint as far below the mean as praise is above it: the same gap
    assert sentiment_gap(["Fine."], "Awful.", dead_zone=0.0) == pytest.approx(abs(tone("Awful.") - tone("Fine.")))


def test_scorer_is_minus_the_gap_and_names_its_lexicon() -> None:
    scorer = get_scorer("sentiment-agreement")
    docs = ["Great battery.", "Awful case."]
    summaries = ["The battery is great.", "The battery is great and the case is awful.", "Awful."]
    scores = scorer.score([docs] * 3, summaries)
    assert scores == pytest.approx([-sentiment_gap(docs, s) for s in summaries])
    assert scores[1] == 0.0 and scores[0] < 0 and scores[2] < scores[0]  # -0.9 vs -0.45: further from the mean
    assert scorer.model_id.startswith("vaderSentiment-")
    assert get_scorer("sentiment-agreement", dead_zone=0.0).score([docs], summaries[1:2])[0] < 0


@pytest.mark.parametrize("bad", [math.nan, -0.1, 2.5, True, "0.1"])
def test_dead_zone_must_be_a_number_in_range(bad: object) -> None:
    with pytest.raises(ValueError, match="dead_zone"):
        get_scorer("sentiment-agreement", dead_zone=bad)


def test_reporting_verbs_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="reporting_verbs"):
        get_scorer("sentiment-agreement", reporting_verbs="no")
