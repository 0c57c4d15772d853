"""decoding.quote: the plain summary + one source sentence quoted verbatim from a group it shortchanges."""

import pytest

from evenhand.decoding.quote import (
    MAX_WORDS,
    attribution,
    quote_sentence,
    quoted_summary,
    shortfall,
)
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.scorers.fairsumm import fairsumm_row


def _tent() -> Example:
    return Example("tent", [
        Document("The tent stayed dry in the storm. Pitching took five minutes.", "5"),
        Document("The tent stayed dry all week.", "5"),
        Document("Fine. The zipper broke on the second night out.", "1"),
        Document("Too short. The poles bent in light wind and the zipper jammed.", "1"),
    ], "rating")


def test_shortfall_is_the_fairsumm_uer_by_hand():
    ex = _tent()
    # the authors' content words: five-star "tent stay dri storm pitch minut || tent stay dri week" = 10,
    # one-star "fine zipper broke night short pole bent light wind zipper jam" = 11 -> s = (10/21, 11/21)
    # "tent" and "dry" count for the five-star group only: t = (1, 0); UER = mean of the terms (0, 11/21)
    assert shortfall(ex, "A dry tent.") == (pytest.approx(11 / 42), ["1"])
    # three five-star words (dri tent storm), one one-star word ("broken" is not "broke"): t = (3/4, 1/4)
    assert shortfall(ex, "A dry tent in a storm, a broken zipper.") == (pytest.approx((11 / 21 - 1 / 4) / 2), ["1"])
    # no counted word: t uniform, as the authors' code has it
    assert shortfall(ex, "Nothing here matches.") == (pytest.approx((11 / 21 - 1 / 2) / 2), ["1"])
    assert shortfall(ex, "A dry tent.", "equal") == (pytest.approx(1 / 4), ["1"])
    row = fairsumm_row(ex, "A dry tent.")
    assert row["fairsumm_uer"] == shortfall(ex, "A dry tent.")[0]  # the metric's own number


def test_the_quote_is_a_verbatim_sentence_of_the_group_that_falls_short():
    ex = _tent()
    found = quote_sentence(ex, "The tent stayed dry.")
    assert found is not None
    index, group, sentence = found
    assert group == "1" and ex.documents[index].group == "1" and sentence in ex.documents[index].text
    # the summary counts 3 five-star words (tent stay dri), the attribution none; "zipper broke night" adds
    # 3 one-star words: t = (1/2, 1/2), UER (11/21 - 1/2) / 2 = 0.012; "pole bent light wind zipper jam" adds 6
    # and overshoots: t = (1/3, 2/3), UER (10/21 - 1/3) / 2 = 0.071 -> the first one
    assert sentence == "The zipper broke on the second night out."
    text = quoted_summary(ex, "The tent stayed dry")
    assert text == ('The tent stayed dry. One of the one-star reviewers wrote: '
                    '"The zipper broke on the second night out."')
    assert shortfall(ex, text)[0] == pytest.approx((11 / 21 - 1 / 2) / 2)
    assert shortfall(ex, "The tent stayed dry")[0] == pytest.approx(11 / 42)


def test_no_quote_when_no_group_falls_short_or_no_sentence_helps():
    ex = _tent()
    # five-star "tent stay dri storm" = 4, one-star "zipper broke pole bent" = 4: t = (1/2, 1/2), and a
    # summary word in both groups' documents would count for both; the one-star group still falls short
    # (11/21 > 1/2) but no sentence lowers the UER further
    balanced = "The tent stayed dry in the storm, but the zipper broke and the poles bent."
    assert shortfall(ex, balanced)[1] == ["1"]
    even = Example("e", [Document("The tent stayed dry in the storm.", "5"),
                         Document("The zipper broke on the second night.", "1")], "rating")
    # s: "tent stay dri storm" 4, "zipper broke night" 3 ("second" is a stop word); the summary has them all
    fair = "The tent stayed dry in the storm, but the zipper broke at night."  # t = s: no group falls short
    assert shortfall(even, fair) == (0.0, []) and quote_sentence(even, fair) is None
    assert quote_sentence(ex, balanced) is None and quoted_summary(ex, balanced) is None
    # every one-star sentence has fewer than MIN_WORDS words, starts in lower case, holds a double quote or
    # runs into the next one without a space
    short = Example("s", [Document("The tent stayed dry in the storm.", "5"), Document("Zipper broke.", "1"),
                          Document("poles bent in the wind on night two.", "1"),
                          Document('The "waterproof" zipper broke on night two.', "1"),
                          Document("The zipper broke on night two.Tent pegs bent.", "1")], "rating")
    assert quote_sentence(short, "The tent stayed dry.") is None
    one_group = Example("o", [Document("The tent stayed dry in the storm.", "5")], "rating")
    assert quote_sentence(one_group, "Dry.") is None


def test_long_sentences_are_not_quoted():
    long = " ".join(["zipper"] * (MAX_WORDS + 1)).capitalize() + "."
    ex = Example("l", [Document("The tent stayed dry in the storm.", "5"), Document(long, "1")], "rating")
    assert quote_sentence(ex, "The tent stayed dry.") is None


def test_a_speaker_label_of_the_group_is_not_quoted_twice():
    ex = Example("d", [Document("Mayor Lindqvist: The pool costs too much to repair this year.", "Mayor Lindqvist"),
                       Document("Coach Adeyemi: Four hundred children learn to swim here every year.",
                                "Coach Adeyemi")], "speaker")
    text = quoted_summary(ex, "The mayor said the pool costs too much to repair.")
    assert text == ('The mayor said the pool costs too much to repair. Coach Adeyemi said: '
                    '"Four hundred children learn to swim here every year."')


def test_attribution_names_the_group_in_number():
    ex = _tent()
    assert attribution(ex, "1") == "One of the one-star reviewers wrote"
    single = Example("x", [Document("a", "pos"), Document("b", "neg")], "sentiment")
    assert attribution(single, "neg") == "The negative reviewer wrote"
    stance = Example("y", [Document("a", "favor"), Document("b", "against"), Document("c", "against")], "stance")
    assert attribution(stance, "against") == "One of the opponents said"


def test_a_group_the_summary_leaves_out_is_quoted_first():
    from evenhand.decoding.quote import quote_candidate

    ex = Example("lamp", [
        Document("The lamp is bright and the arm holds its angle.", "5"),
        Document("Bright light and a sturdy arm for reading.", "5"),
        Document("The shade rattles whenever the fan is on.", "3"),
        Document("The switch broke after two weeks of daily use.", "1"),
    ], "rating")
    plain = "The lamp is bright and the arm is sturdy."
    uer, short = shortfall(ex, plain)
    assert short == ["3", "1"]  # both small groups fall short of their share
    free = quote_candidate(ex, plain)
    assert free is not None and free["quote_for"] == "shortfall"
    other = "3" if free["quoted_group"] == "1" else "1"
    # the reader's coverage says `other` is left out: its sentence is quoted, though the UER alone chose the first
    led = quote_candidate(ex, plain, groups=[other])
    assert led is not None and led["quoted_group"] == other and led["quote_for"] == "uncovered"
    assert shortfall(ex, led["text"])[0] < uer  # it still lowers the UER, as every quote must
    # a left-out group that is not short (the five-star one) cannot lower the UER, and quoting a covered
    # group would add to it while that group stays out: no quote
    assert quote_candidate(ex, plain, groups=["5"]) is None
    assert quote_candidate(ex, plain, groups=[]) == free  # every group covered: the UER terms alone
