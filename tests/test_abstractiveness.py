"""Abstractiveness constraints: reference vectors, processor parity, beam safety, generate wiring."""

from __future__ import annotations

import argparse
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LogitsProcessor

from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.generate import generate
from evenhand.decoding.processors.abstractiveness import (
    AbstractivenessProcessor,
    fragment_increment,
    fragment_penalties,
    log_lambda,
)
from evenhand.decoding.processors.builders import (
    PromptBatch,
    abstractiveness_builder,
    constraint_builders,
    source_token_ids,
)
from evenhand.decoding.prompts.source_tokens import prompt_source_ids
from evenhand.evaluation.data.schema import Document, Example

# The authors' tests use f(x) = x**2 / c**2 with c = 1, i.e. ln2 * x**2 / h**2 with h = sqrt(ln2).
H_AUTHORS = math.sqrt(math.log(2))
A, B, C, D, X = 0, 1, 2, 3, 9
SOURCE = [A, B, C, B, C, D]


def total(hyp, reward=False, h=H_AUTHORS):
    return sum(fragment_penalties(SOURCE, hyp, h, reward))


# --- reference -----------------------------------------------------------------------------


def test_authors_vectors():
    assert total([B, C, D]) == pytest.approx(-9.0)  # 1 + 3 + 5
    assert total([B, C, D, A]) == pytest.approx(-10.0)  # 3**2 + 1**2
    assert total([B, C, D, A], reward=True) == pytest.approx(10.0)  # their -10 as a penalty
    assert total([B, C, X]) == pytest.approx(-4.0)  # fragment b c, then a token not in the source


def test_per_token_increments_and_log_lambda():
    assert fragment_penalties(SOURCE, [B, C, D, A], H_AUTHORS) == pytest.approx([-1, -3, -5, -1])
    assert log_lambda(2, 2.0) == pytest.approx(-math.log(2))  # λ_h(h) = 1/2
    assert fragment_increment(3, 2.0) == pytest.approx(-math.log(2) * 5 / 4)
    assert fragment_increment(3, 2.0, reward=True) == pytest.approx(math.log(2) * 5 / 4)
    # long fragments: 2**(l**2/h**2) would overflow a float, log λ does not
    assert log_lambda(100, 1.0) == pytest.approx(-math.log(2) * 1e4)


def test_reward_uses_shortest_alignment_by_default():
    # source x y z y: after "x y", z extends to length 3 only; y aligns at 1 (l=1) and 3 (l=1)
    src = [0, 1, 2, 1]
    # hypothesis y z y: the last y extends "y z" at position 3 (l=3) or starts at 1 (l=1)
    pen = fragment_penalties(src, [1, 2, 1], 1.0)
    rew = fragment_penalties(src, [1, 2, 1], 1.0, reward=True)
    rew_long = fragment_penalties(src, [1, 2, 1], 1.0, reward=True, reward_longest=True)
    ln2 = math.log(2)
    assert pen[-1] == pytest.approx(-5 * ln2)  # longest alignment penalized
    assert rew[-1] == pytest.approx(1 * ln2)  # authors: max of negative penalties = smallest reward
    assert rew_long[-1] == pytest.approx(5 * ln2)


def test_special_and_negative_ids_never_match():
    assert fragment_penalties([5, -1, 5, 7], [5, 7], 1.0, special_ids=[7]) == [
        pytest.approx(-math.log(2)),
        0.0,
    ]
    assert fragment_penalties([5, 6], [-1, 6], 1.0) == [0.0, pytest.approx(-math.log(2))]


@pytest.mark.parametrize("h", [0, -1.0, float("nan"), True, "2"])
def test_bad_h_rejected(h):
    with pytest.raises(ValueError, match="`h` must be a positive float"):
        fragment_penalties([1], [1], h)
    with pytest.raises(ValueError, match="`h` must be a positive float"):
        AbstractivenessProcessor([[1]], h)


# --- processor on a handful of tokens --------------------------------------------------------


def test_processor_exact_values():
    ln2 = math.log(2)
    proc = AbstractivenessProcessor([SOURCE], H_AUTHORS)
    scores = torch.zeros(1, 10)
    out = proc(torch.tensor([[B, C]]), scores)
    # after "b c": M[2] = M[4] = 2; a@0 -> l=1; b@1 -> 1, b@3 -> M[2]+1 = 3; c@2,4 -> 1; d@5 -> 3
    # increments -(2l - 1) with ln2/h**2 = 1: the longest alignment wins
    expected = torch.zeros(10)
    expected[A], expected[B], expected[C], expected[D] = -1, -5, -1, -5
    assert math.isclose(ln2 / H_AUTHORS**2, 1.0)
    assert torch.allclose(out[0], expected, atol=1e-5)


def test_processor_does_not_modify_input_and_keeps_dtype():
    proc = AbstractivenessProcessor([SOURCE], 1.0)
    ids = torch.tensor([[B, C]])
    scores = torch.randn(1, 10, dtype=torch.float64)
    before, ids_before = scores.clone(), ids.clone()
    out = proc(ids, scores)
    assert out is not scores and out.dtype == torch.float64
    assert torch.equal(scores, before) and torch.equal(ids, ids_before)
    assert not torch.equal(out, scores)


def test_prompt_positions_never_form_fragments():
    proc = AbstractivenessProcessor([SOURCE], H_AUTHORS, prompt_length=2)
    out = proc(torch.tensor([[B, C]]), torch.zeros(1, 10))  # "b c" is prompt: nothing generated
    assert out[0, D].item() == pytest.approx(-1.0)


def test_rows_must_divide_by_sources():
    proc = AbstractivenessProcessor([SOURCE, SOURCE], 1.0)
    with pytest.raises(ValueError, match="not a multiple of the 2 sources"):
        proc(torch.tensor([[1], [2], [3]]), torch.zeros(3, 10))


def test_source_id_outside_vocab_rejected():
    proc = AbstractivenessProcessor([[50]], 1.0)
    with pytest.raises(ValueError, match="outside the model's vocabulary of 10"):
        proc(torch.tensor([[1]]), torch.zeros(1, 10))


def test_same_as_applying_one_by_one():
    sources = [[1, 2, 3, 1, 2], [4, 4, 5, 6]]
    ids = torch.tensor([[1, 2], [2, 3], [4, 4], [4, 5]])  # 2 examples x 2 beams
    scores = torch.randn(4, 8)
    together = AbstractivenessProcessor(sources, 1.5)(ids, scores)
    for b, src in enumerate(sources):
        alone = AbstractivenessProcessor([src], 1.5)(ids[2 * b : 2 * b + 2], scores[2 * b : 2 * b + 2])
        assert torch.allclose(together[2 * b : 2 * b + 2], alone)


# --- parity with the reference on random sequences -------------------------------------------


def reference_row(src, generated, h, reward, vocab, special=()):
    """Reference increment of every candidate token after ``generated``."""
    return [fragment_penalties(src, [*generated, v], h, reward, special_ids=special)[-1] for v in range(vocab)]


tokens = st.lists(st.integers(0, 4), min_size=1, max_size=14)


@settings(max_examples=60, deadline=None)
@given(
    sources=st.lists(tokens, min_size=1, max_size=2),
    hyps=st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=10), min_size=3, max_size=3),
    h=st.floats(0.5, 4.0),
    reward=st.booleans(),
    special=st.sampled_from([(), (4,)]),
    order=st.randoms(use_true_random=False),
)
def test_incremental_and_recomputed_match_reference(sources, hyps, h, reward, special, order):
    """Beams regrouped every step (rows permuted, duplicated) still get the reference values."""
    vocab, beams, steps = 7, 3, 10
    rows = len(sources) * beams
    proc = AbstractivenessProcessor(sources, h, reward, prompt_length=1, special_ids=special)
    current: list[list[int]] = [[] for _ in range(rows)]
    for t in range(steps + 1):
        if t > 0:  # each row extends a random row of its example by a token from `hyps`
            parents = [r - r % beams + order.randrange(beams) for r in range(rows)]
            current = [current[p] + [(hyps[r % 3] + [r % 6] * steps)[t - 1]] for r, p in enumerate(parents)]
        ids = torch.tensor([[6] + c for c in current], dtype=torch.long)
        out = proc(ids, torch.zeros(rows, vocab))
        fresh = AbstractivenessProcessor(sources, h, reward, prompt_length=1, special_ids=special)(
            ids, torch.zeros(rows, vocab)
        )
        for r in range(rows):
            want = reference_row(sources[r // beams], current[r], h, reward, vocab, special)
            assert out[r].tolist() == pytest.approx(want, abs=1e-5)
            assert fresh[r].tolist() == pytest.approx(want, abs=1e-5)


# --- generation with tiny models ------------------------------------------------------------


class Checker(LogitsProcessor):
    """Wraps a processor; checks every row's added values against the reference."""

    def __init__(self, inner, h, reward, special):
        self.inner, self.h, self.reward, self.special = inner, h, reward, list(special)
        self.calls, self.regrouped, self.extended = 0, False, 0
        self.previous = None

    def __call__(self, input_ids, scores):
        out = self.inner(input_ids, scores)
        assert out is not scores
        beams = input_ids.shape[0] // self.inner.num_sources
        p = self.inner.prompt_length
        src_all = self.inner._host[0].tolist()
        finite = torch.isfinite(scores)
        added = torch.where(finite, out - scores, torch.zeros_like(out))
        for r in range(input_ids.shape[0]):
            src = [t for t in src_all[r // beams]]
            gen = input_ids[r, p:].tolist()
            if self.previous is not None and gen[:-1] != self.previous[r]:
                self.regrouped = True
            candidates = sorted({t for t in src if t >= 0} | set(gen) | {self.special[0], 5})
            for v in candidates:
                if not finite[r, v]:
                    continue
                want = fragment_penalties(src, [*gen, v], self.h, self.reward, special_ids=self.special)[-1]
                assert added[r, v].item() == pytest.approx(want, abs=1e-4), (r, gen, v)
                longest = fragment_penalties(src, [*gen, v], self.h, special_ids=self.special)[-1]
                self.extended += abs(longest) > math.log(2) / self.h**2 + 1e-6  # some l >= 2
        self.previous = [input_ids[r, p:].tolist() for r in range(input_ids.shape[0])]
        self.calls += 1
        return out


EXAMPLES = [
    Example(
        id="a",
        documents=[
            Document("the cat saw the cat and the dog saw the cat."),
            Document("the dog ran, the cat ran."),
        ],
    ),
    Example(id="b", documents=[Document("red fish, blue fish, red fish, old fish, new fish.")]),
]


@pytest.fixture(scope="module", params=["causal", "seq2seq"])
def tiny(request, tokenizer):
    import copy

    from evenhand.decoding.models import tiny_model

    model, tok = tiny_model(request.param, seed=0, tokenizer=copy.deepcopy(tokenizer))
    if request.param == "causal":
        tok.padding_side = "left"
    return model, tok


@pytest.mark.parametrize("mode", ["greedy", "sample", "beam3"])
@pytest.mark.parametrize("reward", [False, True])
def test_generate_increments_match_reference(tiny, mode, reward):
    model, tok = tiny
    h = 0.3 if reward else 1.0  # a reward of 7.7 per source token makes even sampling copy
    checkers = []

    def build(batch):
        procs = abstractiveness_builder(h, reward)(batch)
        checkers.extend(Checker(p, h, reward, tok.all_special_ids) for p in procs)
        return checkers[-len(procs) :]

    num_beams = 3 if mode == "beam3" else 1
    config = GenerateConfig(
        max_new_tokens=6, num_beams=num_beams, do_sample=mode == "sample", batch_size=2
    )
    generate(model, tok, EXAMPLES, config, processor_builders=[build], progress=False)
    assert len(checkers) == 1 and checkers[0].calls >= 6
    if reward:  # the reward makes the model copy source tokens: candidates extend fragments
        assert checkers[0].extended > 0
    if num_beams > 1:
        assert checkers[0].regrouped  # beams were reordered at least once


def test_strong_reward_copies_and_strong_penalty_avoids_source(tiny):
    from transformers import LogitsProcessorList

    from evenhand.decoding.engines.transformers import encode_prompts, hf_kwargs

    model, tok = tiny
    config = GenerateConfig(max_new_tokens=6, num_beams=1, no_repeat_ngram_size=0)
    enc = encode_prompts(model, tok, EXAMPLES, config)
    batch = PromptBatch(EXAMPLES, enc["input_ids"], enc["attention_mask"], tok, model, config)
    sources = [set(s) for s in source_token_ids(batch)]
    for reward in (True, False):
        procs = LogitsProcessorList(abstractiveness_builder(0.1, reward)(batch))
        out = model.generate(**enc, **hf_kwargs(config), logits_processor=procs,
                             pad_token_id=tok.pad_token_id)
        new = out if model.config.is_encoder_decoder else out[:, enc["input_ids"].shape[1] :]
        for row, src in zip(new.tolist(), sources):
            generated = [t for t in row if t not in tok.all_special_ids]
            in_source = sum(t in src for t in generated)
            # a reward of ln2/0.01 per copied token beats any log-prob; so does the penalty
            assert in_source == (len(generated) if reward else 0), tok.decode(row)


def test_prompt_source_ids_are_the_documents_as_they_appear(tiny):
    _, tok = tiny
    prompt = "Summarize.\n\nThe cat sat.\n\nA dog ran."
    ids = prompt_source_ids(tok, prompt, ["The  cat sat.", "A dog ran."])
    assert -1 in ids
    first, second = ids[: ids.index(-1)], ids[ids.index(-1) + 1 :]
    assert tok.decode(first).strip() == "The cat sat."
    assert tok.decode(second).strip() == "A dog ran."
    whole = tok(prompt, add_special_tokens=False)["input_ids"]
    assert set(first) <= set(whole) and set(second) <= set(whole)


def test_prompt_source_ids_falls_back_to_own_tokenization(tiny):
    _, tok = tiny
    with pytest.warns(UserWarning, match="not found verbatim"):
        ids = prompt_source_ids(tok, "nothing here", ["Elsewhere entirely."])
    assert ids == tok("Elsewhere entirely.", add_special_tokens=False)["input_ids"]


# --- config and CLI -------------------------------------------------------------------------


def test_config_validation():
    with pytest.raises(ValueError, match="set only one of them"):
        GenerateConfig(abstractiveness=2.0, extractiveness=2.0)
    with pytest.raises(ValueError, match="`abstractiveness` must be a positive float"):
        GenerateConfig(abstractiveness=-1.0)
    assert constraint_builders(GenerateConfig()) == []
    assert len(constraint_builders(GenerateConfig(extractiveness=2.0))) == 1


def test_cli_flags_from_dataclass():
    from evenhand.args import add_dataclass_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_dataclass_arguments(parser, GenerateConfig)
    config = config_from_args(GenerateConfig, parser.parse_args(["--abstractiveness", "2"]))
    assert config.abstractiveness == 2.0 and config.extractiveness is None
    config = config_from_args(GenerateConfig, parser.parse_args(["--extractiveness", "1.5"]))
    assert config.extractiveness == 1.5
