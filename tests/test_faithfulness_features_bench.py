"""benchmarks/faithfulness_features.py: clause splitting, segment means and the nested choice."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ is a folder of the checkout, not an installed package

from benchmarks.faithfulness_features import (  # noqa: E402
    clause_of_tokens,
    cv_rho,
    nested_choice,
    segment_means,
)


def word_offsets(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for word in text.split():
        start = text.index(word, start)
        out.append((start, start + len(word)))
        start += len(word)
    return out


def test_clauses_split_at_separators_and_merge_short_ones() -> None:
    text = "the cat sat down while the dog slept all day, then it rained"
    # " while " starts clause 1 (5 tokens); ", " starts clause 2, and "day," (it ends at the
    # separator) belongs to it: "day, then it rained" (4 tokens)
    assert clause_of_tokens(text, word_offsets(text)) == [0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2]
    # with min_tokens 6 no clause after the first is long enough: all join the first
    assert clause_of_tokens(text, word_offsets(text), min_tokens=6) == [0] * 13
    assert clause_of_tokens("no separators here at all", word_offsets("no separators here at all")) == [0] * 5


def test_segment_means_extend_the_last_segment() -> None:
    d = np.array([1.0, 2.0, 6.0, 10.0])
    assert segment_means(d, [0, 0, 1, 1]).tolist() == [1.5, 8.0]
    assert segment_means(d, [0, 1]).tolist() == [1.0, 6.0]  # tokens 2, 3 join segment 1


def test_cv_rho_of_a_perfect_feature_is_one() -> None:
    rng = np.random.default_rng(0)
    y = rng.random(60)
    groups = [i // 6 for i in range(60)]
    assert cv_rho({"a": 3 * y + 1}, y, groups) == pytest.approx(1.0)


def test_nested_choice_picks_the_informative_set_in_every_fold() -> None:
    rng = np.random.default_rng(1)
    y = rng.random(80)
    groups = [i // 8 for i in range(80)]
    sets = {"noise": {"a": rng.random(80)}, "signal": {"a": y + 0.05 * rng.random(80)}}
    rho, choices = nested_choice(sets, y, groups)
    assert choices == ["signal"] * 5
    assert rho > 0.95
