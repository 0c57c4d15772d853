"""The engine-agnostic beam step loop equals transformers' (fair) beam search token for token."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import (
    LogitsProcessorList,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
)

from evenhand.decoding.beam.hf_loop import fair_beam_search
from evenhand.decoding.beam.objective import FairBeamSettings
from evenhand.decoding.beam.step_loop import (
    TransformersNextToken,
    beam_search_steps,
    candidate_processors,
)
from evenhand.decoding.processors.group_vocab import GroupTables, build_group_vocab
from evenhand.evaluation.data.schema import Document, Example

EXAMPLES = [
    Example("e1", [Document("great battery", "pos"), Document("awful battery died", "neg")]),
    Example("e2", [Document("lovely screen", "pos"), Document("slow screen", "neg")]),
]
PROMPTS = ["Summarize: great battery", "Reviews say the screen is slow and dim"]


class Boost:
    """Adds fixed amounts to a few tokens' log-probs (group words compete with the random model's)."""

    def __init__(self, amounts):
        self.ids = torch.tensor(list(amounts))
        self.amounts = torch.tensor(list(amounts.values()))

    def __call__(self, input_ids, scores):
        scores = scores.clone()
        scores[:, self.ids] += self.amounts
        return scores


def _boost(tok):
    words = {" great": 8.0, " awful": 7.0, " battery": 7.5, " died": 7.2, " lovely": 7.1, " slow": 7.6, " screen": 7.4}
    return Boost({tok.convert_tokens_to_ids(tok.tokenize(w)[0]): v for w, v in words.items()})


def _transformers(model, tok, enc, fair=None, **extra):
    # evenhand's repetition penalty: generated tokens only
    penalty = RepetitionPenaltyLogitsProcessor(1.2, prompt_ignore_length=enc["input_ids"].shape[1])
    kwargs: dict[str, Any] = dict(max_new_tokens=10, num_beams=4, do_sample=False, no_repeat_ngram_size=3,
                  logits_processor=LogitsProcessorList([_boost(tok), penalty]), **extra)
    if fair is not None:
        kwargs.update(custom_generate=fair_beam_search, fair_beam=fair)
    out = model.generate(**enc, **kwargs)
    return out[:, enc["input_ids"].shape[1]:]


def _steps(model, tok, enc, fair=None, in_engine=True, **extra):
    # the order of the reference (n-gram blocking commutes): boost, then the generated-only penalty
    processors = LogitsProcessorList([_boost(tok), RepetitionPenaltyLogitsProcessor(1.2, prompt_ignore_length=enc["input_ids"].shape[1]),
                                      NoRepeatNGramLogitsProcessor(3)])
    engine = TransformersNextToken(model, processors if in_engine else None, pad_token_id=tok.pad_token_id)
    prompts = [row[mask.bool()].tolist() for row, mask in zip(enc["input_ids"], enc["attention_mask"])]
    if not in_engine:
        engine.logits_processor = LogitsProcessorList([_boost(tok)])
    adjust = None if in_engine else candidate_processors(1.2, 3)
    out = beam_search_steps(engine, prompts, num_beams=4, max_new_tokens=10, eos_token_ids=[tok.eos_token_id],
                            pad_token_id=tok.pad_token_id, fair=fair, adjust=adjust, **extra)
    return out, engine


def _assert_same(reference, steps, fill):
    rows = [h for hyps in steps for h in hyps]
    assert len(rows) == reference.shape[0]
    for ref, hyp in zip(reference.tolist(), rows):
        assert hyp == ref[: len(hyp)]
        assert all(t == fill for t in ref[len(hyp):])


@pytest.fixture(scope="module")
def setup(tiny_causal):
    model, tok = tiny_causal
    enc = tok(PROMPTS, return_tensors="pt", padding=True)
    tables = GroupTables.build([build_group_vocab(ex, tok) for ex in EXAMPLES], len(tok), "ratio")
    return model, tok, enc, tables


@pytest.mark.parametrize("returns", [1, 3])
def test_plain_step_loop_equals_transformers_beam_search(setup, returns):
    model, tok, enc, _ = setup
    reference = _transformers(model, tok, enc, num_return_sequences=returns)
    steps, engine = _steps(model, tok, enc, num_return_sequences=returns)
    _assert_same(reference, steps, tok.pad_token_id)
    assert engine.calls == 10  # one batched request per generated token (10 tokens, no early eos)
    assert [len(h) for h in steps] == [returns, returns]


@pytest.mark.parametrize("beta", [1.0, 3.0])
def test_fair_step_loop_equals_fair_beam_search(setup, beta):
    model, tok, enc, tables = setup
    fair = FairBeamSettings(tables, beta=beta)
    reference = _transformers(model, tok, enc, fair=fair)
    steps, _ = _steps(model, tok, enc, fair=fair)
    _assert_same(reference, steps, tok.pad_token_id)
    # and fairness changed the search: β differs from plain beam search here
    plain = _transformers(model, tok, enc)
    assert reference.shape == plain.shape and not torch.equal(reference, plain)


def test_candidate_processors_after_the_engine_match_processors_inside_it(setup):
    model, tok, enc, tables = setup
    fair = FairBeamSettings(tables, beta=1.0)
    inside, _ = _steps(model, tok, enc, fair=fair)
    after, _ = _steps(model, tok, enc, fair=fair, in_engine=False)
    assert after == inside


def test_candidate_processors_hand_values():
    adjust = candidate_processors(repetition_penalty=2.0, no_repeat_ngram_size=2)
    # prefix: prompt [5, 6] + generated [7, 5]; the bigram (5, 6) was seen, so after 5, 6 is banned
    ids = torch.tensor([[6, 7, 9]])
    lps = torch.tensor([[-1.0, -2.0, -3.0]])
    assert adjust is not None
    out = adjust([[5, 6, 7, 5]], 2, ids, lps)
    assert out.tolist() == [[float("-inf"), -4.0, -3.0]]  # 7 generated: ×2; 9 untouched
    assert candidate_processors() is None


def test_step_loop_validates():
    with pytest.raises(ValueError, match="num_beams"):
        beam_search_steps(None, [[1]], num_beams=1, max_new_tokens=3)  # type: ignore[arg-type]
    assert beam_search_steps(None, [], num_beams=2, max_new_tokens=3) == []  # type: ignore[arg-type]


class EosWhere:
    """Raises eos on the rows that hold ``marker`` (here: every beam of the first example)."""

    def __init__(self, marker: int, eos: int, amount: float) -> None:
        self.marker, self.eos, self.amount = marker, eos, amount

    def __call__(self, input_ids, scores):
        scores = scores.clone()
        scores[(input_ids == self.marker).any(dim=1), self.eos] += self.amount
        return scores


def test_an_example_whose_search_is_over_sends_no_more_requests(setup):
    """The first example finishes within a few tokens, the second runs all 10: the loop returns
    transformers' hypotheses for both and, once the first is closed, asks only for the second's beams."""
    model, tok, enc, _ = setup
    battery = tok.convert_tokens_to_ids(tok.tokenize(" battery")[0])
    early = EosWhere(battery, tok.eos_token_id, 30.0)
    assert battery in enc["input_ids"][0].tolist() and battery not in enc["input_ids"][1].tolist()
    reference = model.generate(**enc, max_new_tokens=10, num_beams=4, do_sample=False,
                               logits_processor=LogitsProcessorList([early]))[:, enc["input_ids"].shape[1]:]
    sizes: list[int] = []

    class Counting(TransformersNextToken):
        def next_token_logprobs(self, prefix_token_ids, k):
            sizes.append(len(prefix_token_ids))
            return super().next_token_logprobs(prefix_token_ids, k)

    engine = Counting(model, LogitsProcessorList([early]), pad_token_id=tok.pad_token_id)
    prompts = [row[mask.bool()].tolist() for row, mask in zip(enc["input_ids"], enc["attention_mask"])]
    steps = beam_search_steps(engine, prompts, num_beams=4, max_new_tokens=10, eos_token_ids=[tok.eos_token_id],
                              pad_token_id=tok.pad_token_id)
    _assert_same(reference, steps, tok.pad_token_id)
    assert len(steps[0][0]) < 4 and len(steps[1][0]) == 10
    # first step: one request per example; then 4 beams each, until the first example closes
    assert sizes[0] == 2 and sizes[1] == 8 and sizes[-1] == 4 and len(sizes) == 10
