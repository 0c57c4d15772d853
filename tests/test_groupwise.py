"""Group-wise summarization (issue 33): one sentence per group, named by its group, in a fixed order."""

from __future__ import annotations

import pytest

from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.groupwise import (
    MIN_GROUP_TOKENS,
    first_sentence,
    group_budget,
    group_config,
    group_examples,
    group_order,
    group_phrase,
    groupwise_summary,
    join_sentences,
    leading_sentences,
    name_group,
    names_group,
    own_group,
    sentence_counts,
)
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError

TENT = Example("tent", [Document("Stayed dry all night.", "5"), Document("Easy to pitch.", "5"),
                        Document("Poles bent.", "1"), Document("Good value.", "4")],
               attribute="rating", group_values=["1", "2", "3", "4", "5"])
DEBATE = Example("pool", [Document("Keep it open in summer.", "Mayor Lindqvist"),
                          Document("The club needs it all year.", "Swim coach Adeyemi"),
                          Document("Fix the roof first.", "Mayor Lindqvist")], attribute="speaker")


def test_group_order_rates_high_to_low_and_keeps_other_orders():
    assert group_order(TENT) == ["5", "4", "1"]  # 2 and 3 have no documents
    assert group_order(DEBATE) == ["Mayor Lindqvist", "Swim coach Adeyemi"]  # first appearance
    yelp = Example("y", [Document("Bad.", "neg"), Document("Good.", "pos")], attribute="sentiment",
                   group_values=["pos", "neu", "neg"])
    assert group_order(yelp) == ["pos", "neg"]  # the example's value order, not the documents'


def test_group_examples_hold_each_groups_documents_only():
    parts = group_examples(TENT)
    assert [g for g, _ in parts] == ["5", "4", "1"]
    five = parts[0][1]
    assert five.texts == ["Stayed dry all night.", "Easy to pitch."] and five.attribute == "rating"
    assert five.id == "tent#5" and five.prompt is None and five.references == []
    with pytest.raises(DataError, match="only one group"):
        group_examples(Example("one", [Document("a", "5"), Document("b", "5")], attribute="rating"))


def test_group_phrases():
    assert group_phrase(TENT, "5", 2) == "The five-star reviewers"
    assert group_phrase(TENT, "1", 1) == "The one-star reviewer"
    assert group_phrase(TENT, "4.5", 3) == "The 4.5-star reviewers"
    assert group_phrase(DEBATE, "Mayor Lindqvist", 2) == "Mayor Lindqvist"
    sentiment = Example("s", [], attribute="sentiment")
    assert group_phrase(sentiment, "neg", 1) == "The negative reviewer"
    assert group_phrase(Example("s", [], attribute="stance"), "favor", 3) == "The supporters"
    assert group_phrase(Example("s", [], attribute="party"), "left", 2) == "The left-leaning posts"
    assert group_phrase(Example("s", [], attribute="gender"), "female", 2) == "The texts with gender female"


def test_the_naming_rule_adds_the_phrase_only_where_the_sentence_lacks_it():
    assert names_group("The five-star reviewers loved the tent.", "The five-star reviewers")
    assert names_group("Both five-star reviewers loved it.", "The five-star reviewers")
    assert not names_group("The four-star reviewers loved it.", "The five-star reviewers")
    assert not names_group("Reyesville is far.", "Reyes")  # whole words only
    assert name_group("Mayor Lindqvist wants it open.", "Mayor Lindqvist") == "Mayor Lindqvist wants it open."
    assert name_group("The poles bent.", "The one-star reviewer") == "The one-star reviewer said that the poles bent."
    assert name_group("GPS failed.", "Kim") == "Kim said that GPS failed."  # an acronym keeps its case
    assert name_group("McDonald's was closed.", "Kim") == "Kim said that McDonald's was closed."


def test_first_sentence_and_the_cut_off_one():
    assert first_sentence("The staff were kind. Parking was hard.") == "The staff were kind."
    assert first_sentence("Mr. Lee liked it! Others did not.") == "Mr. Lee liked it!"
    assert first_sentence("The staff were kind, and the") == "The staff were kind."
    assert first_sentence("The tent kept them dry with") == "The tent kept them dry."
    # cut off in a later clause: back to the last comma
    assert first_sentence("The lining tore, while the other said they were too") == "The lining tore."
    assert first_sentence("   ") == ""


def test_sentence_counts_follow_the_groups_word_shares():
    # words: five-star 4 + 3 = 7, four-star 2, one-star 2 of 11; 3 slots -> 1.91, 0.55, 0.55
    assert sentence_counts(TENT, ["5", "4", "1"], "ratio") == [2, 1, 1]
    assert sentence_counts(TENT, ["5", "4", "1"]) == [1, 1, 1]  # the default: one each
    # 4 groups -> 4 slots; a group with a tiny share still gets one sentence
    many = Example("m", [Document("w " * 30, "5"), Document("w", "4"), Document("w", "2"), Document("w", "1")],
                   attribute="rating")
    assert sentence_counts(many, ["5", "4", "2", "1"], "ratio") == [4, 1, 1, 1]
    with pytest.raises(ValueError, match="`per_group` must be one of"):
        sentence_counts(TENT, ["5"], "equal")


def test_leading_sentences_drop_a_cut_off_later_one_and_repair_the_first():
    assert leading_sentences("It was fine. The staff were kind. Parking was hard.", 2) == [
        "It was fine.", "The staff were kind."]
    assert leading_sentences("It was fine. The staff were", 2) == ["It was fine."]
    assert leading_sentences("The staff were kind, and the", 2) == ["The staff were kind."]
    assert leading_sentences("", 2) == []


def test_join_and_budget():
    assert join_sentences(["The five-star reviewers liked it.", " ", "Kim disagreed."]) == (
        "The five-star reviewers liked it. Kim disagreed.")
    assert group_budget(72, 2) == 36 and group_budget(72, 4) == MIN_GROUP_TOKENS == 24 and group_budget(10, 1) == 24


def test_a_clause_about_another_group_is_dropped():
    assert own_group("The one-star reviewer complained about the price, while the other reviewer praised it.") == (
        "The one-star reviewer complained about the price.")
    assert own_group("The two-star reviewer liked the box, while the three-starred reviewer did not!") == (
        "The two-star reviewer liked the box!")
    assert own_group("The five-star reviewers liked it, whereas others did not") == "The five-star reviewers liked it."
    kept = "Kim argued that the pool should stay open while repairs go ahead."
    assert own_group(kept) == kept
    assert own_group("While others left.") == "While others left."  # nothing would be left: unchanged


def test_group_config_is_plain_beam_search_starting_with_the_phrase():
    steered = GenerateConfig(max_new_tokens=72, seed=7, abstractiveness=4.0, fairness="ratio",
                             fairness_strength=3.0, fair_beam=1.0, fair_prompt="labels", num_beams=2)
    config = group_config(steered, 24, "The five-star reviewers")
    assert (config.num_beams, config.max_new_tokens, config.seed) == (4, 24, 7)
    assert group_config(GenerateConfig(instruction="List faults."), 24, "Kim").instruction == "List faults."
    assert config.abstractiveness is None and config.fairness is None and config.fair_prompt is None
    assert config.fair_beam == GenerateConfig().fair_beam and config.response_prefix == "The five-star reviewers"


def test_tiny_model_run_is_the_joined_group_sentences(tiny_causal):
    from evenhand.decoding.generate import generate

    model, tok = tiny_causal
    config = GenerateConfig(max_new_tokens=40, seed=0)
    for per_group in ("one", "ratio"):
        summary = groupwise_summary(model, tok, TENT, config, per_group)
        assert summary == groupwise_summary(model, tok, TENT, config, per_group)  # deterministic
        expected = []
        counts = sentence_counts(TENT, ["5", "4", "1"], per_group)
        for (group, sub), count in zip(group_examples(TENT), counts):
            phrase = group_phrase(TENT, group, len(sub.documents))
            text = generate(model, tok, [sub], group_config(config, 24 * count, phrase), progress=False)[0]
            assert text.startswith(phrase)  # the reply continues the phrase
            said = [own_group(s) for s in leading_sentences(text, count)]
            if said and said[0].rstrip(".").strip() == phrase:
                said = said[1:]
            expected += [name_group(said[0], phrase), *said[1:]] if said else []
        assert summary == " ".join(expected) and summary
        positions = [summary.find(p) for p in ("The five-star reviewers", "The four-star reviewer",
                                               "The one-star reviewer") if p in summary]
        assert positions == sorted(positions) and positions[0] == 0
