"""The one repetition-penalty / n-gram-ban math (``processors/repetition.py``) equals transformers'
processors, on hand-made rows and random ones (the vLLM processor and the step loop apply it)."""

import pytest
import torch
from transformers import NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor

from evenhand.decoding.processors.repetition import ngram_bans, penalize_seen


def test_penalty_by_hand():
    scores = torch.tensor([[-1.0, 2.0, -3.0, 4.0]])
    seen = torch.tensor([[True, True, False, False]])
    before = scores.clone()
    assert penalize_seen(scores, seen, 2.0).tolist() == [[-2.0, 1.0, -3.0, 4.0]]
    assert torch.equal(scores, before)  # input not modified


def test_ngram_bans_by_hand():
    history = torch.tensor([[5, 6, 7, 5, 6, -1], [1, 2, 3, -1, -1, -1], [4, 4, 4, 4, -1, -1]])
    tokens, banned = ngram_bans(history, torch.tensor([5, 3, 4]), 3)
    assert [t[b].tolist() for t, b in zip(tokens, banned)] == [[7], [], [4, 4]]
    tokens, banned = ngram_bans(history[:, :2], torch.tensor([2, 2, 2]), 3)
    assert tokens.shape == (3, 0) and banned.shape == (3, 0)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ngram_bans_equal_transformers(n):
    gen = torch.Generator().manual_seed(n)
    vocab, width = 6, 12
    lengths = torch.randint(0, width + 1, (16,), generator=gen)
    history = torch.randint(0, vocab, (16, width), generator=gen)
    history[torch.arange(width)[None, :] >= lengths[:, None]] = -1
    tokens, banned = ngram_bans(history, lengths, n)
    ours = torch.zeros((16, vocab + 1), dtype=torch.bool)
    if tokens.shape[1]:
        ours = ours.scatter(1, torch.where(banned, tokens.clamp(min=0), vocab), True)
    for row in range(16):
        ids = history[row, : lengths[row]][None, :]
        expected = NoRepeatNGramLogitsProcessor(n)(ids, torch.zeros((1, vocab))) == float("-inf")
        assert ours[row, :vocab].tolist() == expected[0].tolist(), (row, ids.tolist())


def test_penalty_equals_transformers():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn((4, 9), generator=gen)
    ids = torch.randint(0, 9, (4, 5), generator=gen)
    seen = torch.zeros((4, 9), dtype=torch.bool).scatter(1, ids, True)
    expected = RepetitionPenaltyLogitsProcessor(1.3)(ids, scores.clone())
    assert torch.allclose(penalize_seen(scores, seen, 1.3), expected)
