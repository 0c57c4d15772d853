import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evenhand.evaluation.metrics.factuality import factuality_at, mint_adjusted_factuality
from evenhand.evaluation.metrics.fragments import (
    fragment_scores,
    fragment_scores_tokens,
    greedy_fragments,
)


def reference_greedy(article, summary):
    """Grusky et al.'s Algorithm 1 written plainly, as the oracle."""
    out, i = [], 0
    while i < len(summary):
        best, j = 0, 0
        while j < len(article):
            if summary[i] == article[j]:
                i2, j2 = i, j
                while i2 < len(summary) and j2 < len(article) and summary[i2] == article[j2]:
                    i2, j2 = i2 + 1, j2 + 1
                best = max(best, i2 - i)
                j = j2
            else:
                j += 1
        if best:
            out.append((i, best))
        i += max(best, 1)
    return out


def test_hand_computed_scores():
    # article "a b c d", summary "a b x": fragments [a b]; 2/3, 4/3, 4/3
    s = fragment_scores("a b c d", "a b x")
    assert (s.coverage, s.density, s.compression) == pytest.approx((2 / 3, 4 / 3, 4 / 3))
    # novel: unigram x (1/3), bigram b-x of 2 (1/2), trigram (1/1), no 4-grams → 0
    assert (s.novel_1, s.novel_2, s.novel_3, s.novel_4) == pytest.approx((1 / 3, 1 / 2, 1.0, 0.0))


def test_greedy_skip_is_reproduced():
    # jumping past the match "a a" at article position 0 misses "a a b" at position 1
    assert greedy_fragments("a a a b".split(), "a a b".split()) == [(0, 2), (2, 1)]


def test_extractive_summary_has_full_coverage():
    s = fragment_scores_tokens("x y z w".split(), "y z w".split())
    assert (s.coverage, s.density) == (1.0, 3.0)
    assert s.novel_1 == 0.0


def test_empty_summary_raises():
    with pytest.raises(ValueError, match="empty summary"):
        fragment_scores_tokens(["a"], [])


tokens = st.lists(st.sampled_from("abcd"), max_size=40)


@settings(max_examples=120, deadline=None)
@given(tokens, tokens.filter(bool))
def test_greedy_matches_plain_algorithm_and_ranges(article, summary):
    assert greedy_fragments(article, summary) == reference_greedy(article, summary)
    s = fragment_scores_tokens(article, summary)
    assert 0.0 <= s.coverage <= 1.0
    assert s.coverage <= s.density <= len(summary)
    for v in (s.novel_1, s.novel_2, s.novel_3, s.novel_4):
        assert 0.0 <= v <= 1.0


def test_mint_adjusted_factuality():
    assert mint_adjusted_factuality(0.9, 0.3) == pytest.approx((1.8 + 0.3) / 3)
    assert mint_adjusted_factuality(0.9, 0.3, phi=0) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="`phi`"):
        mint_adjusted_factuality(0.9, 0.3, phi=-1)


def test_f_at_50():
    assert factuality_at([0.2, 0.4, 0.6], [0.9, 0.8, 0.7]) == pytest.approx(0.75)
    # least squares through (0,0), (1,1), (2,1): slope 1/2, intercept 1/6 → at 1: 2/3
    assert factuality_at([0, 1, 2], [0, 1, 1], at=1) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="two points"):
        factuality_at([0.5, 0.5], [0.1, 0.2])
