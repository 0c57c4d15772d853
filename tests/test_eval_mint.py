import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evenhand.evaluation import mint, mint_tokens
from evenhand.evaluation.metrics.corpus import mint_batch
from evenhand.evaluation.metrics.lcs import lcs_length, lcs_length_dp, token_ids
from evenhand.evaluation.metrics.mint import mean_mint, ngram_match_counts, smooth_counts

SOURCE = "The Supreme Court Thursday reserved its decision on a batch of pleas that have raised questions"
CLOSE = "The Supreme Court Thursday reserved its verdict on a batch of pleas which have raised questions"
FAR = "Supreme Court has reserved a verdict on the batch of the pleas which have raised some questions"


# The authors' doctests (mintscore/mint.py), on whitespace-split tokens.
@pytest.mark.parametrize(
    ("source", "summary", "expected"),
    [
        ("a", "a a a b b c", 0.9232456140350878),
        (SOURCE, CLOSE, 0.3710535235740673),
        (SOURCE, FAR, 0.9033765130600977),
        ("x", "a b c d", 1.0),
    ],
)
def test_mint_tokens_matches_authors_doctests(source, summary, expected):
    assert mint_tokens(source.split(), summary.split()).mint == pytest.approx(expected, abs=1e-15)


def test_mint_components_match_authors_doctest():
    s = mint_tokens(SOURCE.split(), FAR.split())
    assert (s.p1, s.p2, s.p3, s.p4, s.lcsr) == pytest.approx(
        (
            0.5098039215686274,
            0.24305555555555555,
            0.08641975308641975,
            0.030864197530864196,
            0.5882352941176471,
        )
    )


def test_mint_lowercases_with_spacy():
    assert mint(SOURCE, FAR).mint == pytest.approx(0.8925974884335757, abs=1e-15)


def test_mint_tokens_is_case_sensitive():
    assert mint_tokens(["A"], ["a"]).mint == 1.0
    assert mint("A", "a") == mint_tokens(["a"], ["a"])


def test_identical_text_has_mint_zero():
    assert mint_tokens("a b c d".split(), "a b c d".split()).mint == pytest.approx(0.0)


def test_hand_computed_smoothing():
    # raw m = (3, 0, 0, 0, 0): m0 = 4; m1 = (4+3+0)/3 = 7/3; m2 = (7/3)/3 = 7/9; m3 = 7/27; m4 = 7/81
    assert smooth_counts([3, 0, 0, 0, 0]) == pytest.approx([7 / 3, 7 / 9, 7 / 27, 7 / 81])


@pytest.mark.parametrize("n", [1, 2, 3])
def test_short_summaries_divide_by_at_least_one(n):
    # summary = source, n tokens: raw m = (n, n-1, ..., 0); denominators max(n-k+1, 1)
    tokens = list("abc")[:n]
    raw = [max(n - k, 0) for k in range(5)]
    smoothed = smooth_counts(raw)
    s = mint_tokens(tokens, tokens)
    expected = [smoothed[k - 1] / max(n - k + 1, 1) for k in range(1, 5)]
    assert [s.p1, s.p2, s.p3, s.p4] == pytest.approx(expected)
    assert s.lcsr == 1.0
    parts = [*expected, 1.0]
    assert s.mint == pytest.approx(1 - len(parts) / sum(1 / p for p in parts))


def test_empty_summary_raises():
    with pytest.raises(ValueError, match="empty summary"):
        mint_tokens(["a"], [])


def test_whitespace_tokens_are_kept():
    # a double space is a spaCy token; it is absent from the source, so p1 < 1
    assert mint("a b", "a  b").p1 < mint("a b", "a b").p1


def test_every_occurrence_counts():
    x, y = token_ids(["a", "b"], ["a", "a", "a", "b"])
    assert ngram_match_counts(x, y, 2).tolist() == [4, 1]


def test_batch_and_mean():
    scores = mint_batch([SOURCE, SOURCE], [CLOSE, FAR])
    assert scores == [mint(SOURCE, CLOSE), mint(SOURCE, FAR)]
    assert mean_mint(scores).mint == pytest.approx((scores[0].mint + scores[1].mint) / 2)
    with pytest.raises(ValueError, match="same length"):
        mint_batch([SOURCE], [])


tokens = st.lists(st.sampled_from("abcde"), max_size=60)


@settings(max_examples=150, deadline=None)
@given(tokens, tokens)
def test_bit_parallel_lcs_equals_dp(a, b):
    assert lcs_length(a, b) == lcs_length_dp(a, b) == lcs_length(b, a)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from("abcde"), min_size=1, max_size=40),
    st.lists(st.sampled_from("abcdef"), min_size=1, max_size=30),
)
def test_mint_in_unit_interval(source, summary):
    s = mint_tokens(source, summary)
    for value in (s.mint, s.p1, s.p2, s.p3, s.p4, s.lcsr):
        assert 0.0 <= value <= 1.0 + 1e-12
