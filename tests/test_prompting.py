"""Prompt kinds, response prefixes and the summary clean-up (no model needed)."""

import pytest

from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.prompts.templates import (
    PROMPT_KINDS,
    build_prompt,
    clean_summary,
    prompt_kind,
    response_prefix,
)
from evenhand.evaluation.data.schema import Document, Example


def _ex(attribute, groups=("a", "b"), **kwargs):
    docs = [Document(f"Text number {i}.", g) for i, g in enumerate(groups)]
    return Example("e", docs, attribute=attribute, **kwargs)


@pytest.mark.parametrize("attribute, kind", [
    ("rating", "reviews"), ("sentiment", "reviews"), ("Speaker", "debate"),
    ("stance", "stances"), ("party", "posts"), ("gender", "texts"), (None, "texts"),
])
def test_auto_kind_follows_the_attribute(attribute, kind):
    ex = _ex(attribute)
    assert prompt_kind(ex).name == kind
    assert build_prompt(ex).endswith(PROMPT_KINDS[kind].instruction)
    assert response_prefix(ex) == PROMPT_KINDS[kind].response_prefix


def test_explicit_kind_overrides_the_attribute_and_is_validated():
    ex = _ex("rating")
    assert build_prompt(ex, kind="debate").endswith(PROMPT_KINDS["debate"].instruction)
    assert response_prefix(ex, kind="stances") == PROMPT_KINDS["stances"].response_prefix
    with pytest.raises(ValueError, match="`prompt_kind` must be one of auto, reviews, debate"):
        build_prompt(ex, kind="tweets")
    with pytest.raises(ValueError, match="`prompt_kind` must be one of"):
        GenerateConfig(prompt_kind="tweets")


def test_debate_shows_speakers_but_labels_prompt_keeps_brackets():
    ex = Example("d", [Document("Bike lanes save lives.", "Councillor Reyes"),
                       Document("Shops need parking.", "Councillor Okafor")], attribute="speaker")
    text = build_prompt(ex)
    assert text.startswith("Councillor Reyes: Bike lanes save lives.\n\nCouncillor Okafor: Shops")
    labelled = build_prompt(ex, fair_prompt="labels")
    assert labelled.startswith("[speaker: Councillor Reyes] Bike lanes save lives.\n\n")
    assert "Councillor Reyes:" not in labelled
    # reviews never show their labels unless asked
    assert build_prompt(_ex("rating", ("5", "1"))).startswith("Text number 0.\n\nText number 1.\n\n")


def test_response_prefix_explicit_empty_and_own_instructions():
    ex = _ex("party")
    assert response_prefix(ex) == PROMPT_KINDS["posts"].response_prefix != ""
    assert response_prefix(ex, prefix="") == ""  # "" turns the default off
    assert response_prefix(ex, prefix="The tweets") == "The tweets"
    assert response_prefix(ex, instruction="List the claims.") == ""  # user's task: no default
    assert response_prefix(_ex("party", instruction="Summarize.")) == ""
    assert response_prefix(_ex("party", prompt="Full prompt.")) == ""
    assert build_prompt(_ex("party", prompt="Full prompt.")) == "Full prompt."
    assert build_prompt(ex, instruction="List the claims.").endswith("\n\nList the claims.")


@pytest.mark.parametrize("raw, clean", [
    # preamble sentences
    ("Here's a rewritten version of the text with a focus on only the positive opinions:\n\n"
     "Reviewers like the sound.", "Reviewers like the sound."),
    ("Here is a summary of the texts: The staff was friendly. The room was loud.",
     "The staff was friendly. The room was loud."),
    ("Sure! Here is a summary:\nThe pizza is good.", "The pizza is good."),
    ("Certainly. The pizza is good.", "The pizza is good."),
    # heading lines and labels
    ("Title: The Bike Lane Debate\n\nCouncillor Reyes wants bike lanes.",
     "Councillor Reyes wants bike lanes."),
    ("# Summary\nThe museum is popular.", "The museum is popular."),
    ("**Summary**\n\nThe museum is popular.", "The museum is popular."),
    ("Summary: The museum is popular.", "The museum is popular."),
    ("Text 1: The dinosaur hall is stunning.", "The dinosaur hall is stunning."),
    ("Summary:\nText 1:\nThe hall is big.", "The hall is big."),
    # whitespace and a cut-off tail
    ("Reviewers  like it.\n\nSome   complain.", "Reviewers like it. Some complain."),
    ("Reviewers like it. The microphone can't", "Reviewers like it."),
    ("Reviewers like it! Others ask \"why?\" Then they", "Reviewers like it! Others ask \"why?\""),
    ("Guests were kept awake until 3 a.m. every night. The gym", "Guests were kept awake until 3 a.m. every night."),
    # nothing to do, or nothing complete to keep
    ("Reviewers like the sound.", "Reviewers like the sound."),
    ("Reviewers like the sound but the", "Reviewers like the sound but the"),
    ("The texts say: prices rose. Shops closed.", "The texts say: prices rose. Shops closed."),
    ("Here is a summary:", "Here is a summary:"),  # never empties a summary
    ("   ", ""),
])
def test_clean_summary(raw, clean):
    assert clean_summary(raw) == clean


def test_clean_summary_is_idempotent():
    raw = "Sure, here is a summary of the reviews:\n\nTitle: Headphones\n\nReviewers praise the sound. The mic"
    once = clean_summary(raw)
    assert once == "Reviewers praise the sound."
    assert clean_summary(once) == once
