import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evenhand.evaluation.metrics.fairsumm import (
    auc,
    corpus_fairness,
    kept_values,
    ngram_target_counts,
    sample_fairness,
    second_order_fairness,
    similarity_target,
    source_counts,
)
from evenhand.evaluation.text.fairsumm_words import content_tokens, word_tokenize
from evenhand.evaluation.text.tokens import fairsumm_tokens

# Computed with the authors' code (issue 3).
AUTHOR_VECTORS = [
    ({0: 60, 1: 40}, {0: 9, 1: 3}, 0.075, True, 0.35),
    ({0: 50, 1: 50}, {0: 5, 1: 4}, 0.02778, False, 0.0),
    ({0: 30, 1: 70}, {}, 0.1, True, 0.25),
]


@pytest.mark.parametrize(("source", "target", "uer", "unfair", "area"), AUTHOR_VECTORS)
def test_authors_vectors(source, target, uer, unfair, area):
    result = sample_fairness(source, target)
    assert result.uer == pytest.approx(uer, abs=5e-6)
    assert result.unfair is unfair
    assert auc(source, target) == pytest.approx(area)


def test_float_bug_not_reproduced():
    # ten equal values sum to 0.9999999999999999 in floats; the empty value must still be dropped
    source = {i: 1 for i in range(10)} | {10: 0}
    assert 10 not in sample_fairness(source, {0: 1}).terms
    assert (
        kept_values(source_array := __import__("numpy").array(list(source.values()), float)).size
        == 10
    )
    assert source_array.sum() == 10


def test_float_cutoff_of_the_authors():
    # the authors' running float sum of ten 0.1 shares is 0.9999999999999999 < 1, so the
    # value without source tokens stays: it is unfair (t = 0 <= 0.8·0) and UER divides by 11
    source = {i: 1 for i in range(10)} | {10: 0}
    r = sample_fairness(source, {0: 1}, cumulative="float")
    assert list(r.terms) == list(range(11))
    assert r.terms[10] == 0.0 and r.terms[1] == pytest.approx(0.1)
    assert r.uer == pytest.approx(0.9 / 11) and r.unfair
    tolerant = sample_fairness(source, {0: 1})
    assert 10 not in tolerant.terms and tolerant.uer == pytest.approx(0.09)
    # when the sum reaches 1.0 exactly, both agree: (3, 1, 0) -> 0.75 + 0.25
    a = sample_fairness([3, 1, 0], [1, 1, 0], cumulative="float")
    b = sample_fairness([3, 1, 0], [1, 1, 0])
    assert (a.uer, a.unfair, sorted(a.terms)) == (b.uer, b.unfair, sorted(b.terms)) == (0.125, True, [0, 1])
    with pytest.raises(ValueError, match="`cumulative`"):
        sample_fairness(source, {0: 1}, cumulative="exact")  # type: ignore[arg-type]


def test_hand_computed_three_values():
    # s = (0.5, 0.3, 0.2), t = (0.25, 0.25, 0.5): terms (0.25, 0.05, 0); unfair (0.25 <= 0.4)
    r = sample_fairness({"a": 5, "b": 3, "c": 2}, {"a": 1, "b": 1, "c": 2})
    assert r.uer == pytest.approx(0.1)
    assert r.unfair
    assert r.terms == pytest.approx({"a": 0.25, "b": 0.05, "c": 0.0})
    # cutoff 0.5 keeps only "a": trivially fair
    assert (
        sample_fairness({"a": 5, "b": 3, "c": 2}, {"a": 1, "b": 1, "c": 2}, cutoff=0.5).uer == 0.0
    )


def test_equal_and_user_reference():
    # equal reference (0.5, 0.5) vs t = (0.75, 0.25): terms (0, 0.25), 0.25 <= 0.4: unfair
    r = sample_fairness({0: 90, 1: 10}, {0: 3, 1: 1}, reference="equal")
    assert r.uer == pytest.approx(0.125) and r.unfair
    r = sample_fairness({0: 90, 1: 10}, {0: 3, 1: 1}, reference={0: 3, 1: 1})
    assert r.uer == pytest.approx(0.0) and not r.unfair


def test_auc_over_tau_paper_variant():
    # s = (0.6, 0.4), t = (0.75, 0.25): unfair iff 0.25 <= 0.4·τ, i.e. τ >= 0.625 → τ ∈ {0.7, …, 1}
    assert auc({0: 60, 1: 40}, {0: 9, 1: 3}, over="tau") == pytest.approx(0.35)


def test_second_order_fairness_hand():
    a = sample_fairness({0: 60, 1: 40}, {0: 9, 1: 3})  # terms 0, 0.15
    b = sample_fairness({0: 50, 1: 50}, {0: 1, 1: 1})  # terms 0, 0
    sof, per_value = second_order_fairness([a, b])
    assert per_value == pytest.approx({0: 0.0, 1: 0.075})
    assert sof == pytest.approx(0.0375)
    corpus = corpus_fairness([a, b])
    assert (corpus.bur, corpus.uer, corpus.n) == (0.5, pytest.approx(0.0375), 2)


@pytest.mark.parametrize(
    ("source", "message"),
    [({0: 5}, "at least two values"), ({}, "at least two values"), ({0: 0, 1: 0}, "sums to 0")],
)
def test_empty_or_one_group_raises(source, message):
    with pytest.raises(ValueError, match=message):
        sample_fairness(source, {})


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="same values"):
        sample_fairness({0: 1, 1: 1}, {2: 1})
    with pytest.raises(ValueError, match="`tau`"):
        sample_fairness({0: 1, 1: 1}, {}, tau=1.5)
    with pytest.raises(ValueError, match="`cutoff`"):
        sample_fairness({0: 1, 1: 1}, {}, cutoff=-0.1)
    with pytest.raises(ValueError, match="`over`"):
        auc({0: 1, 1: 1}, {}, over="x")


counts = st.lists(st.integers(0, 50), min_size=2, max_size=6)


@settings(max_examples=80, deadline=None)
@given(counts, counts, st.randoms(use_true_random=False))
def test_ranges_and_value_order_invariance(source, target, rnd):
    target = (target * 3)[: len(source)]
    if sum(source) == 0:
        source[0] = 1
    keys = list(range(len(source)))
    base = sample_fairness(dict(zip(keys, source)), dict(zip(keys, target)))
    assert 0.0 <= base.uer <= 1.0
    assert 0.0 <= auc(source, target) <= 1.0
    shuffled = keys[:]
    rnd.shuffle(shuffled)
    other = sample_fairness({k: source[k] for k in shuffled}, {k: target[k] for k in shuffled})
    assert other.uer == pytest.approx(base.uer)
    assert other.unfair == base.unfair


def test_text_pipeline_hand():
    # stop words and punctuation go; "shoes" and "shoe" share the stem
    assert fairsumm_tokens("The shoes are great. People love them!") == ["shoe", "great", "love"]
    groups = {"pos": "Great shoes, great fit.", "neg": "Bad shoes.", "neu": ""}
    assert source_counts(groups, text="evenhand") == {"pos": 4, "neg": 2, "neu": 0}
    # summary words: shoe (both), great (pos), bad (neg), price (none)
    assert ngram_target_counts(groups, "Great shoes but a bad price.", text="evenhand") == {
        "pos": 2,
        "neg": 2,
        "neu": 0,
    }


def test_authors_text_pipeline_hand():
    # the released code drops every NLTK language's stop words: "bad" (Hinglish), "man", "son",
    # "die" (Danish, Dutch, German...), "em" (Portuguese); English contractions stay
    assert content_tokens("Bad shoes.") == ["shoe"]
    assert content_tokens(
        "The man's son didn't die; I'd buy 'em again... Mr. Smith's dogs were running."
    ) == ["'s", "n't", "'d", "buy", "mr.", "smith", "'s", "dog", "run"]
    # Punkt keeps "mr." whole (an abbreviation) and splits the final period
    assert word_tokenize("mr. smith's dogs were running.")[:2] == ["mr.", "smith"]
    groups = {"pos": "Great shoes, great fit.", "neg": "Bad shoes.", "neu": ""}
    assert source_counts(groups) == {"pos": 4, "neg": 1, "neu": 0}
    # summary tokens great, shoe, price: great (pos), shoe (pos, neg)
    assert ngram_target_counts(groups, "Great shoes but a bad price.") == {"pos": 2, "neg": 1, "neu": 0}
    with pytest.raises(ValueError, match="`text`"):
        source_counts(groups, text="spacy")  # type: ignore[arg-type]


def test_similarity_target():
    groups = {"a": "x", "b": "y", "c": ""}
    probs = similarity_target(groups, "s", {"a": 0.0, "b": 2.0}, temperature=2.0)
    e = __import__("math").e
    assert probs == pytest.approx({"a": 1 / (1 + e), "b": e / (1 + e), "c": 0.0})
    calls = []
    similarity_target(groups, "s", lambda g, s: calls.append(g) or 0.0)
    assert calls == ["x", "y"]
    assert similarity_target(groups, "s", {"a": 1.0, "b": 1.0}, temperature=0) == {
        "a": 0.5,
        "b": 0.5,
        "c": 0.0,
    }


@settings(max_examples=150, deadline=None)
@given(counts, counts, st.sampled_from(["float", "tolerant"]))
def test_auc_equals_the_per_cutoff_definition(source, target, cumulative):
    # auc finds every cutoff's kept prefix at once; it must equal the flag of each cutoff's sample
    target = (target * 3)[: len(source)]
    if sum(source) == 0:
        source[0] = 1
    import numpy as np

    from evenhand.evaluation.metrics.fairsumm import GRID

    flags = [sample_fairness(source, target, cutoff=c, cumulative=cumulative).unfair for c in GRID]
    assert auc(source, target, cumulative=cumulative) == float(np.trapezoid(np.asarray(flags, float), GRID))
