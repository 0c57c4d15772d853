"""The checker's text parts: claims, quantifiers, groups, corruptions, pairs (no model)."""

from __future__ import annotations

import json
import random
from collections import Counter

from evenhand.evaluation.data.schema import Document, Example
from evenhand.rerank.checker.claims import (
    aggregate,
    concentrated,
    is_majority,
    is_minority,
    named_groups,
    numbers,
    quantity_conflict,
    split_claims,
    stated_count,
    subject,
    unsupported_numbers,
    windows,
)
from evenhand.rerank.checker.lexicon import group_polarity
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


def test_everyday_quantifiers_and_posters_are_read():
    # "plenty of" is a majority, "a handful" a minority; "posters" name the writers (the subject ends there)
    assert is_majority("Plenty of reviewers sent it back") and is_majority("Lots of guests loved the pool")
    assert is_minority("A handful of guests complained") and not is_majority("A handful of guests complained")
    assert subject("Only a couple of posters support the ban") == "Only a couple of posters"
    ratings = ("5", "5", "4", "5", "3", "1")
    texts = ("Sturdy and quiet.", "Quick to assemble.", "Good desk, a bit wobbly at full height.", "Love it.",
             "Assembly took three hours.", "Arrived scratched and I sent it back.")
    desk = Example("desk", [Document(t, g) for t, g in zip(texts, ratings)], attribute="rating")
    # one one-star review: "plenty of ... one star" counts the one-star documents
    assert quantity_conflict("Plenty of reviewers, giving one star, sent it back", desk, list(texts)) \
        == "count against the labels"
    assert quantity_conflict("One reviewer, giving one star, sent it back", desk, list(texts)) is None
    stances = ("for", "for", "against", "for", "against", "for", "against")
    posts = ("Phones out of class is right.", "Children talk again at lunch.", "Parents need to reach them.",
             "Grades will rise, I support it.", "Pouches are a waste of money.", "Good call by the school.",
             "It punishes the careful pupils.")
    ban = Example("ban", [Document(t, g) for t, g in zip(posts, stances)], attribute="stance")
    # four of seven posts are for the ban: "only a couple" of them support it is wrong, "more than half" is not
    assert quantity_conflict("Only a couple of posters support the ban", ban, list(posts)) \
        == "count against the labels"  # "support" states the label "for"
    assert quantity_conflict("More than half of the posters support the ban", ban, list(posts)) is None


def test_a_majority_claim_stating_one_reviews_detail_conflicts():
    ratings = ("5", "4", "5", "2", "4", "1")
    texts = ("Dries glasses well after every wash.", "Quiet, and the eco cycle is good value.",
             "Clean plates every time.", "The basket wheels came off in the second month.",
             "Quiet wash, easy to load.", "Leaked twice and the door seal smells.")
    ex = Example("dishwasher", [Document(t, g) for t, g in zip(texts, ratings)], attribute="rating")
    docs = list(texts)
    # "basket", "wheels" and "came" are in the two-star review only; "wash" is in three reviews, so the
    # spread rule (fewer than 30% of the documents share a word) does not see it: "most" cannot have said it
    claim = "Most reviewers say the basket wheels came off in the wash"
    assert quantity_conflict(claim, ex, docs) == "most from one document"
    assert quantity_conflict(claim.replace("Most reviewers say", "One reviewer says"), ex, docs) is None
    assert quantity_conflict("Most reviewers say the wash is quiet", ex, docs) is None
    # a quantifier inside what one writer reports is not the claim's
    assert quantity_conflict("and one says most friends saw the basket wheels came off", ex, docs) is None


def test_numbers_are_facts_with_what_they_count():
    assert numbers("Two reviewers paid 300,000 euros for 2.1 kg; a four-star guest stayed twenty-five nights "
                   "and one left after 3 hundred days.") == [
        (300000.0, "euros"), (2.1, "kg"), (25.0, "nights"), (300.0, "days")]
    docs = ["It broke after four months.", "Delivery took 10 days and cost 30 euros."]
    assert unsupported_numbers("It broke after ten days and cost 30 euros", docs) == []
    assert unsupported_numbers("It broke after four days", docs) == [4.0]
    assert unsupported_numbers("It cost 40 euros, 30 in all", docs) == [40.0]
    assert unsupported_numbers("Three reviewers rated it two stars", docs) == []
    # 1,836.18 raised ValueError on a SummEdits news document; a dotted version is no number
    assert numbers("Revenue was 1,836.18 euros in release 1.2.3 and costs 4 million dollars") == [
        (1836.18, "euros"), (4000000.0, "dollars")]


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


def test_opinion_of_a_claim_by_its_first_opinion_word_and_lemmas():
    assert polarity("Most guests disliked their stay, praising the cheap rooms") == 0  # "praising" unread
    assert polarity("Most guests disliked their stay, praising the cheap rooms", lemmas=True) == 1  # 2 to 1
    assert polarity("Most guests disliked their stay, praising the cheap rooms", lemmas=True, first=True) == -1
    assert polarity("complaining about the fit") == 0 and polarity("complaining about the fit", lemmas=True) == -1
    assert polarity("Most players did not enjoy the puzzles", first=True) == -1
    assert polarity("Not far from the station, guests loved the quiet rooms", first=True) == 1  # 4 words away
    assert polarity("The reviews cover the menu", first=True) == 0
    assert [group_polarity(g) for g in ("1", "2", "3", "4", "5", "pos", "neu", "favor")] == [-1, -1, 0, 1, 1, 1, 0, 0]


def test_quantity_conflicts_read_subject_groups_and_spread():
    ratings = ("5", "5", "4", "1", "5")
    texts = ("The guide was patient and the kayaks were stable.", "Calm water, lovely cliffs, a patient guide.",
             "Good tour, though my seat strap was torn.", "The guide was rude and we waited an hour.",
             "We saw seals and the guide was friendly.")
    ex = Example("kayak", [Document(t, g) for t, g in zip(texts, ratings)], attribute="rating")

    def conflict(claim: str) -> str | None:
        return quantity_conflict(claim, ex, list(texts))

    # "most" against the ratings: 4 of 5 documents are 4-5 stars, the claim complains
    assert subject("Most paddlers said the tour was bad") == "Most paddlers"  # no writers' noun: two words
    assert conflict("Most guests said the tour was bad") == "most against the groups"
    assert conflict("Most guests did not enjoy the tour") == "most against the groups"
    assert conflict("Most guests enjoyed the tour") is None
    # "only one" for what most say (at least two, and more than half, of the subject's documents)
    assert conflict("Only one guest enjoyed the tour") == "one against the groups"
    assert conflict("Only one guest complained about the guide") is None
    # a detail one document states, said of "most": fewer than 30 % of the documents share a content word
    assert conflict("Most guests said the seat strap was torn") == "most from one document"
    assert conflict("Most guests mentioned the guide") is None  # 4 of 5 name the guide
    # the quantifier must be the subject's; fewer than 3 documents are never counted
    assert conflict("The reviews cover every part of the seat strap") is None
    assert conflict("but there were a few areas to improve") is None
    assert quantity_conflict("Most guests said the tour was bad", ex, list(texts[:2])) is None
    # a subject that names a group counts that group's documents only
    assert quantity_conflict("Most one-star guests said the tour was bad", ex, [texts[3]]) is None
    # debates have no rated groups: only the spread rule reads them
    debate = Example("d", [Document(t, f"Speaker {i}") for i, t in enumerate(texts)], attribute="speaker")
    assert quantity_conflict("Most speakers said the guide was rude", debate, list(texts)) is None  # 4 of 5
    assert quantity_conflict("Most speakers said the seat strap was torn", debate, list(texts)) == (
        "most from one document")
    assert subject("and most guests said so") == "and most guests" and subject("Calm water everywhere") == "Calm water"
    assert is_minority("A minority of posts oppose it") and not is_minority("Most posts oppose a minority view")


def test_quantity_conflicts_count_labels_half_and_stances():
    ratings = ("5", "5", "4", "2", "1", "3")
    texts = ("Sharp picture.", "Easy to set up.", "Good value.", "The remote died.", "Dead on arrival.", "It is fine.")
    ex = Example("tv", [Document(t, g) for t, g in zip(texts, ratings)], attribute="rating")

    def conflict(claim: str, example: Example = ex) -> str | None:
        return quantity_conflict(claim, example, [d.text for d in example.documents])

    assert (stated_count("Three of the six reviewers"), stated_count("Only two five-star guests"),
            stated_count("Nearly all six posts"), stated_count("Most reviewers")) == (3, 2, None, None)
    # a claim stating the label itself, by count: 3 of 6 are 4-5 stars, 2 are 1-2 stars, 1 is 3 stars
    assert conflict("Three of the six reviewers were clearly positive") is None
    assert conflict("Five of the six reviewers were clearly positive") == "count against the labels"
    assert conflict("Two of the six reviewers are negative") is None
    assert conflict("Nearly all six reviewers are negative") == "count against the labels"
    assert conflict("Only one reviewer was neutral") is None
    assert conflict("Three of the six reviewers rate it four or five stars") is None
    assert conflict("Only two of the six reviewers rate it four or five stars") == "count against the labels"
    assert conflict("Two reviewers gave it one or two stars") is None
    # a rating stated in words: "highly"/"well" is four or five stars (3 of 6 here), "poorly" one or two (2 of 6)
    assert conflict("Only a couple of reviewers rate the TV highly") is None  # 3 of 6: not more than half
    fans = Example("tv", [Document(t, g) for t, g in zip(texts, ("5", "5", "4", "4", "1", "3"))], attribute="rating")
    assert conflict("Only a couple of reviewers rate the TV highly", fans) == "count against the labels"  # 4 of 6
    assert conflict("Most reviewers rate the TV highly", fans) is None  # it states the labels: no spread rule
    assert conflict("Most reviewers rate it four or five stars", fans) is None
    assert conflict("Most reviewers did not rate the TV highly", fans) == "count against the labels"
    assert conflict("Most reviewers didn't rate the TV highly") == "count against the labels"  # 3 of 6: not most
    assert conflict("Half of the reviewers rated it well") is None
    assert conflict("Most reviewers rated the TV highly") == "count against the labels"  # 3 of 6: not more than half
    assert conflict("Only a couple of reviewers rated it poorly") is None
    assert conflict("Most reviewers rated it poorly") == "count against the labels"
    # "several" of a group that holds one document: checked against that group's documents (the one 3-star)
    assert quantity_conflict("Several neutral reviews say it is fine", ex, ["It is fine."]) == "several of one"
    assert quantity_conflict("Two of the neutral reviewers say it is fine", ex, ["It is fine."]) == "several of one"
    assert quantity_conflict("The neutral review says it is fine", ex, ["It is fine."]) is None
    assert quantity_conflict("Several reviewers say it is fine", ex, ["It is fine."]) is None  # names no group
    # "half": its opinion must be that of a third to two thirds of the documents
    assert conflict("Half of the reviewers were happy") is None  # 3 of 6
    assert conflict("Half of the reviewers complained about the remote") is None  # 2 of 6
    low = Example("tv", [Document(t, g) for t, g in zip(texts, ("5", "5", "4", "5", "1", "3"))], attribute="rating")
    assert conflict("Half of the reviewers complained about the remote", low) == "half against the groups"  # 1 of 6
    # stances: "favour" counts the favor posts, "oppose" the against ones; "a couple" is at most two
    taxes = ("The tax works.", "Tax the sugar.", "The tax hurts.", "Keep the tax.", "A good tax.", "No tax.")
    stances = Example("tax", [Document(t, g) for t, g in zip(taxes, ("favor", "favor", "against", "favor", "favor",
                                                                    "against"))], attribute="stance")
    assert conflict("Most posts favour the tax", stances) is None
    assert conflict("Most posts oppose the tax", stances) == "count against the labels"
    assert conflict("Only a couple of posts oppose the tax", stances) is None
    assert conflict("Only a couple of posts favour the tax", stances) == "count against the labels"
    assert conflict("Most posts did not support the tax", stances) == "count against the labels"
    # labels that are not stances, or a claim without a stance word, are not counted
    parties = Example("tax", [Document(t, g) for t, g in zip(taxes, ("left", "right") * 3)], attribute="party")
    assert conflict("Only a couple of posts favour the tax", parties) is None
    assert conflict("Most posts want the tax", stances) is None
    # "all but N" counts the subject's documents less N: 4 of the 6 posts favour the tax, 2 oppose it
    assert conflict("All but two of the posts favour the tax", stances) is None
    assert conflict("All but one of the posts favour the tax", stances) == "count against the labels"
    assert conflict("And all but one of the six reviews are four or five stars") == "count against the labels"
    assert conflict("All but three of the six reviews are four or five stars") is None  # 3 of 6
    # writers named after "from" are a quantified subject too ("… come from several reviewers who …")
    from evenhand.rerank.scorers.checker import quantity_conflicts

    docs = [d.text for d in ex.documents]
    happy = Example("tv", [Document(t, g) for t, g in zip(texts, ("5", "5", "4", "5", "1", "4"))], attribute="rating")
    assert quantity_conflicts("The complaints come from several reviewers who hated the remote", happy, docs)
    assert not quantity_conflicts("The complaints come from one reviewer who hated the remote", happy, docs)
    assert not quantity_conflicts("The praise comes from most reviewers, who loved the picture", happy, docs)
    # "all but one" is one quantifier, not a contrast
    assert split_claims("All but one of the speakers spoke for it, but Byrne did not.") == [
        "All but one of the speakers spoke for it", "but Byrne did not."]


def test_a_claim_about_several_that_one_document_states_alone():
    texts = ("Pigeons scatter the seed.", "Nice feeder.", "Fine for the money.", "Good.", "Lovely colour.")
    ex = Example("feeder", [Document(t, g) for t, g in zip(texts, ("3", "5", "4", "5", "2"))], attribute="rating")
    docs = list(texts)
    alone = [0.9, 0.02, 0.05, 0.01, 0.29]  # every other document below a third of 0.9
    assert concentrated("Several reviewers say pigeons scatter the seed", ex, docs, alone)
    assert concentrated("Most reviewers say pigeons scatter the seed", ex, docs, alone)
    assert concentrated("Three of the reviewers say pigeons scatter the seed", ex, docs, alone)
    assert not concentrated("One reviewer says pigeons scatter the seed", ex, docs, alone)  # about one
    assert not concentrated("Several reviewers say pigeons scatter the seed", ex, docs, [0.9, 0.02, 0.05, 0.01, 0.3])
    assert not concentrated("Several reviewers say pigeons scatter the seed", ex, docs, [0.14, 0, 0, 0, 0])  # weak
    assert not concentrated("Several reviewers say pigeons scatter the seed", ex, docs[:2], alone[:2])  # < 3 docs
    assert not concentrated("Most say pigeons scatter the seed", ex, docs, alone)  # the subject names no writers
    # a claim whose opinion is that of most groups states their ratings, not one review's detail
    assert not concentrated("Most reviewers loved the feeder", ex, docs, alone)
    assert concentrated("Most reviewers hated the feeder", ex, docs, alone)


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


def test_one_table_names_groups_for_the_checker_and_for_group_wise_summaries():
    from evenhand.decoding.groupwise import group_phrase
    from evenhand.evaluation.text.group_names import LABEL_NAMES, rating_aliases, rating_name
    from evenhand.rerank.checker.lexicon import group_aliases

    for label, names in LABEL_NAMES.items():
        assert group_aliases("stance", label, [label]) == names.aliases
        assert group_phrase(Example("x", [], "stance"), label, 1) == f"The {names.singular}"
        assert group_phrase(Example("x", [], "stance"), label, 3) == f"The {names.plural}"
    # the phrase a group-wise summary writes is one the checker reads back as that group
    assert group_phrase(Example("x", [], "rating"), "5", 2) == "The five-star reviewers" == f"The {rating_name('5', True)}"
    assert group_aliases("rating", "5", ["1", "5"]) == rating_aliases("5") and "five-star" in rating_aliases("5")
    ex = Example("x", [Document("Fine.", "favour"), Document("No.", "against")], attribute="stance")
    assert named_groups("The supporters say it is fine", ex) == ["favour"]
    assert named_groups("The opponents say no", ex) == ["against"]
