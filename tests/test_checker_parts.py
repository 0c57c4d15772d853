"""The checker's text parts: claims, quantifiers, groups, corruptions, pairs (no model)."""

from __future__ import annotations

import json
import random
from collections import Counter

from evenhand.evaluation.data.schema import Document, Example
from evenhand.rerank.checker.claims import (
    aggregate,
    is_majority,
    named_groups,
    numbers,
    split_claims,
    unsupported_numbers,
    windows,
)
from evenhand.rerank.checker.model import CheckerOptions, checker_key, read_corpus
from evenhand.rerank.checker.pairs import build_pairs, negate, polarity, swap_number, swap_opinion


def test_claims_split_at_contrast():
    assert split_claims("Most like the bass, but one found the strap loose. The box was dented.") == [
        "Most like the bass", "but one found the strap loose.", "The box was dented."]


def test_claims_split_where_a_new_subject_is_coordinated():
    assert split_claims("A four-star guest found the bed hard, and a one-star guest said the lift broke and "
                        "nobody came. Most loved it, and the staff were kind, and Okafor disagrees.") == [
        "A four-star guest found the bed hard", "and a one-star guest said the lift broke and nobody came.",
        "Most loved it, and the staff were kind", "and Okafor disagrees."]


def test_a_framed_news_sentence_loses_its_frame_and_splits_into_its_points():
    summary = ("The article argues that the council cut bus lines, raised fares by 20 percent, and ignored "
               "the riders. The author warns that service will fall. Most riders said the buses were late.")
    assert split_claims(summary) == [
        "the council cut bus lines", "raised fares by 20 percent", "ignored the riders.", "service will fall.",
        "Most riders said the buses were late."]
    # items under three words join the point before them; an unframed list stays one claim
    assert split_claims("The columnist insists that the plan works, mostly, and saves the city money.") == [
        "the plan works, mostly", "saves the city money."]
    assert split_claims("Reviewers liked the bass, the case, and the app.") == [
        "Reviewers liked the bass, the case, and the app."]


def test_quantifier_is_read_in_the_subject():
    assert is_majority("but nearly all guests praised the view")
    assert is_majority("Reviewers were generally happy with it")
    assert not is_majority("one said the dentist explained every step of the filling")


def test_numbers_are_facts_with_what_they_count():
    assert numbers("Two reviewers paid 300,000 euros for 2.1 kg; a four-star guest stayed twenty-five nights "
                   "and one left after 3 hundred days.") == [
        (300000.0, "euros"), (2.1, "kg"), (25.0, "nights"), (300.0, "days")]
    docs = ["It broke after four months.", "Delivery took 10 days and cost 30 euros."]
    assert unsupported_numbers("It broke after ten days and cost 30 euros", docs) == []
    assert unsupported_numbers("It broke after four days", docs) == [4.0]
    assert unsupported_numbers("It cost 40 euros, 30 in all", docs) == [40.0]
    assert unsupported_numbers("Three reviewers rated it two stars", docs) == []


def test_majority_aggregates_over_half_the_documents():
    assert is_majority("Nearly all guests praised the view") and not is_majority("One guest praised the view")
    assert aggregate([0.1, 0.8, 0.3], majority=False) == 0.8
    assert aggregate([0.1, 0.8, 0.3], majority=True) == 0.3  # 2nd largest of 3
    assert aggregate([], majority=True) == 0.0


def test_named_groups_map_aliases_to_labels():
    ex = Example("x", [Document("a", "1"), Document("b", "5"), Document("c", "3")], attribute="rating")
    assert named_groups("Five-star reviewers loved it", ex) == ["5"]
    assert named_groups("Unhappy reviewers returned it", ex) == ["1"]
    assert named_groups("Reviewers loved it", ex) == []
    debate = Example("d", [Document("a", "Mayor Lindgren"), Document("b", "Resident Chen")], attribute="speaker")
    assert named_groups("Chen says parking is too dear", debate) == ["Resident Chen"]


def test_windows_keep_whole_sentences():
    assert windows("A b c. D e f. G h.", words=6) == ["A b c. D e f.", "G h."]


def test_corruptions():
    rng = random.Random(0)
    assert negate("The lid is stiff.", rng) in ("The lid is not stiff.", "The lid is never stiff.")
    assert negate("The app isn't stable.", rng) == "The app is stable."
    assert swap_opinion("The staff were friendly.", rng) == "The staff were rude."
    swapped = swap_number("It lasted 8 months.", rng)
    assert swapped is not None and swapped != "It lasted 8 months." and "months" in swapped
    assert polarity("The soup was delicious") == 1 and polarity("The soup was not delicious") == -1


def test_pairs_deterministic_and_both_labels():
    examples = read_corpus()[:6]
    a, b = build_pairs(examples, seed=3), build_pairs(examples, seed=3)
    assert a == b and a != build_pairs(examples, seed=4)
    labels = Counter(p.label for p in a)
    assert labels[0] > 0 and labels[1] > 0
    kinds = {p.kind for p in a if p.label == 0}
    assert {"negation", "polarity", "aspect", "other"} <= kinds


def test_training_texts_are_not_demo_texts():
    from importlib import resources

    demo = resources.files("evenhand") / "data" / "demo.jsonl"
    demo_texts = {d["text"] for line in demo.read_text().splitlines() if line.strip()
                  for d in json.loads(line)["documents"]}
    corpus_texts = {d["text"] for ex in read_corpus() for d in ex["documents"]}
    assert corpus_texts and not corpus_texts & demo_texts


def test_key_changes_with_options_and_texts(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    k = checker_key(CheckerOptions(), "t", base)
    assert k == checker_key(CheckerOptions(), "t", base)
    assert k != checker_key(CheckerOptions(seed=1), "t", base) != checker_key(CheckerOptions(), "u", base)
