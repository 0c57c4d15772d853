"""Fairness-aware decoding: token -> group map, group-coverage bonus, fair beam search, hookup."""

from __future__ import annotations

import argparse

import pytest
import torch

from evenhand.decoding.beam.hf_loop import fair_beam_search
from evenhand.decoding.beam.objective import FairBeamSettings, keep_alive_order
from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.generate import generate
from evenhand.decoding.processors.group_coverage import GroupCoverageProcessor
from evenhand.decoding.processors.group_vocab import GroupTables, build_group_vocab, parse_fairness
from evenhand.decoding.prompts.templates import build_prompt
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError

# pos: great, battery (N=2); neg: awful, battery, died (N=3); prior π = (0.4, 0.6).
# Specificity with λ = 1: great → pos (1.4/2 − 0.4)/0.6 = 0.5; battery → pos
# (1.4/3 − 0.4)/0.6 = 1/9, neg 0; awful, died → neg (1.6/2 − 0.6)/0.4 = 0.5.
EXAMPLE = Example(
    "e1",
    [Document("great battery", "pos"), Document("awful battery died", "neg")],
    attribute="sentiment",
)
OTHER = Example("e2", [Document("lovely screen", "pos"), Document("slow screen", "neg")])


@pytest.fixture
def tiny(tiny_causal):
    return tiny_causal


@pytest.fixture
def tok(tokenizer):
    return tokenizer


def ids(tok, *pieces):
    return [tok.convert_tokens_to_ids(p) for p in pieces]


def test_group_vocab_hand_values(tok):
    gv = build_group_vocab(EXAMPLE, tok)
    assert gv.groups == ("pos", "neg")
    assert gv.source_counts.tolist() == [2.0, 3.0]
    col = {int(t): j for j, t in enumerate(gv.token_ids)}
    great, battery, awful, died = ids(tok, "Ġgreat", "Ġbattery", "Ġawful", "Ġdied")
    assert gv.member[:, col[great]].tolist() == [1.0, 0.0]
    assert gv.member[:, col[battery]].tolist() == [1.0, 1.0]
    assert gv.member[:, col[died]].tolist() == [0.0, 1.0]
    torch.testing.assert_close(gv.specificity[:, col[great]], torch.tensor([0.5, 0.0]))
    torch.testing.assert_close(gv.specificity[:, col[battery]], torch.tensor([1 / 9, 0.0]))
    torch.testing.assert_close(gv.specificity[:, col[awful]], torch.tensor([0.0, 0.5]))
    # surface forms: "Great" at the start of the text maps like " great"; the bare
    # continuation piece "great" (as in "ingreat") does not start a word
    for form in ("Great", "ĠGreat"):
        assert tok.convert_tokens_to_ids(form) in col
    assert tok.convert_tokens_to_ids("great") not in col
    # inflections share FairSumm's key (lemma + Porter stem): " dies", " dying" count like " died"
    for form in ("Ġdie", "Ġdies", "Ġdying", "Ġbatteries"):
        assert tok.convert_tokens_to_ids(form) in col, form
    assert gv.member[:, col[tok.convert_tokens_to_ids("Ġdying")]].tolist() == [0.0, 1.0]
    torch.testing.assert_close(gv.target("ratio"), torch.tensor([0.4, 0.6]))
    torch.testing.assert_close(gv.target("equal"), torch.tensor([0.5, 0.5]))
    torch.testing.assert_close(gv.target({"pos": 3, "neg": 1}), torch.tensor([0.75, 0.25]))


def test_group_vocab_first_pieces_contractions_and_no_content(tok):
    from evenhand.decoding.processors.group_vocab import first_pieces, key_index
    from evenhand.evaluation.text.tokens import normalize_word

    # " unbelievable" is " unbelie" + "vable": the first piece stands for the word;
    # "don" is a stop word, digits and "!" are no words, one-piece words are left out
    text = "The battery is unbelievable, don't 42 !!"
    assert first_pieces(tok, text) == [(tok.convert_tokens_to_ids("Ġunbelie"), "unbeliev")]
    index = key_index(tok)
    assert tok.convert_tokens_to_ids("'m") in index[normalize_word("'m")]
    assert tok.convert_tokens_to_ids("'t") in index["n't"]
    assert "the" not in index and normalize_word("the") not in index
    ex = Example("s", [Document("The, and 42 !!", "a"), Document("it is what it is", "b")])
    with pytest.raises(DataError, match="no content words"):
        build_group_vocab(ex, tok)


def test_decoder_counts_equal_fairsumm_ngram_target(tok):
    """Counting generated tokens with the map gives FairSumm's N-gram target counts."""
    from evenhand.decoding.processors.group_coverage import group_counts
    from evenhand.evaluation.metrics.fairsumm import ngram_target_counts, source_counts

    ex = Example(
        "m",
        [Document("The batteries died fast. I'm not happy, it works badly.", "neg"),
         Document("Great battery, it worked for days and I love the screen.", "pos"),
         Document("Screens are bright; the sound is fine.", "pos")],
    )
    summary = "Reviewers love the bright screen, but the battery dies and it barely works. I'm unsure."
    gv = build_group_vocab(ex, tok)
    tables = GroupTables.build([gv], len(tok), "ratio")
    generated = torch.tensor([tok(" " + summary, add_special_tokens=False)["input_ids"]])
    counts = group_counts(tables.member, generated)[0].tolist()
    texts = ex.group_texts()
    expected = ngram_target_counts(texts, summary, text="evenhand")  # the decoder's word attribution
    assert counts == [float(expected[g]) for g in gv.groups]
    # by hand: neg: batteri die work 'm; pos: love bright screen batteri work ("worked")
    assert dict(zip(gv.groups, counts)) == {"neg": 4.0, "pos": 5.0}
    src = source_counts(texts, text="evenhand")
    assert gv.source_counts.tolist() == [float(src[g]) for g in gv.groups]


def test_group_vocab_needs_groups(tok):
    with pytest.raises(DataError, match="no `group` label"):
        build_group_vocab(Example("x", [Document("great"), Document("bad", "neg")]), tok)
    with pytest.raises(DataError, match="only one group"):
        build_group_vocab(Example("x", [Document("great", "a"), Document("bad", "a")]), tok)


def test_target_rejects_unknown_groups(tok):
    gv = build_group_vocab(EXAMPLE, tok)
    with pytest.raises(DataError, match=r"\['neutral'\]"):
        gv.target({"pos": 1, "neutral": 1})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("ratio", "ratio"), (" equal ", "equal"), ('{"1": 1, "5": 3}', {"1": 1.0, "5": 3.0}),
     ({1: 0.5, 2: 0.5}, {"1": 0.5, "2": 0.5}), (None, None)],
)
def test_parse_fairness(value, expected):
    assert parse_fairness(value) == expected


@pytest.mark.parametrize("value", ["fair", '{"a": -1}', '{"a": 0}', "{oops", {}])
def test_parse_fairness_rejects(value):
    with pytest.raises(ValueError, match="`fairness`"):
        parse_fairness(value)


def processor(tok, fairness="ratio", alpha=2.0, start=1, examples=(EXAMPLE,)):
    vocabs = [build_group_vocab(ex, tok) for ex in examples]
    tables = GroupTables.build(vocabs, len(tok), fairness)
    return GroupCoverageProcessor(tables, alpha=alpha, tau=0.8, generated_start=start)


def test_bonus_lands_on_underrepresented_group(tok):
    # after "awful": c = (0, 1), q = ((0 + .4)/2, (1 + .6)/2) = (.2, .8); τ t = (.32, .48)
    # u_pos = 1 - .2/.32 = .375, u_neg = 0; bonus = 2 · .375 · S_pos
    proc = processor(tok)
    great, battery, awful, died = ids(tok, "Ġgreat", "Ġbattery", "Ġawful", "Ġdied")
    input_ids = torch.tensor([[0, awful]])
    scores = torch.zeros(1, len(tok))
    out = proc(input_ids, scores)
    assert out[0, great].item() == pytest.approx(0.375)
    assert out[0, tok.convert_tokens_to_ids("Great")].item() == pytest.approx(0.375)
    assert out[0, battery].item() == pytest.approx(2 * 0.375 / 9)
    assert out[0, awful].item() == 0 and out[0, died].item() == 0
    assert torch.count_nonzero(out).item() == torch.count_nonzero(proc.tables.specificity[0, 0]).item()
    assert torch.count_nonzero(scores).item() == 0  # input not modified


def test_bonus_equal_target_and_nothing_before_content(tok):
    proc = processor(tok, fairness="equal", alpha=1.0)
    great, awful = ids(tok, "Ġgreat", "Ġawful")
    scores = torch.randn(2, len(tok))
    # row 0: nothing generated yet, q = t, no deficit; row 1: "great" → c = (1, 0),
    # q = (1.5/2, .5/2) = (.75, .25), u_neg = 1 - .25/.4 = .375, bonus on awful .375 · .5
    out = proc(torch.tensor([[0, 0], [0, great]]), scores) - scores
    assert torch.count_nonzero(out[0]).item() == 0
    assert out[1, awful].item() == pytest.approx(0.375 * 0.5)
    assert out[1, great].item() == 0


def test_alpha_zero_is_identity(tok):
    proc = processor(tok, alpha=0.0)
    scores = torch.randn(1, len(tok))
    assert proc(torch.tensor([[0, 5]]), scores) is scores


def test_rows_regrouped_by_beam_search_keep_their_state(tok):
    # two examples × three beams; beam search permutes rows within an example
    proc = processor(tok, examples=(EXAMPLE, OTHER), start=1)
    great, awful, died, lovely, slow = ids(tok, "Ġgreat", "Ġawful", "Ġdied", "Ġlovely", "Ġslow")
    input_ids = torch.tensor(
        [[0, awful, died], [0, great, great], [0, 7, 8], [0, lovely, 9], [0, slow, slow], [0, 3, 3]]
    )
    scores = torch.randn(6, len(tok))
    out = proc(input_ids, scores)
    perm = torch.tensor([2, 0, 1, 4, 5, 3])
    out_perm = proc(input_ids[perm], scores[perm])
    torch.testing.assert_close(out_perm, out[perm], rtol=0, atol=0)
    # and the state differs by row: row 0 (neg content) boosts pos tokens, row 1 the reverse
    assert (out - scores)[0, great] > 0 and (out - scores)[1, great] == 0
    assert (out - scores)[1, awful] > 0 and (out - scores)[0, awful] == 0
    assert (out - scores)[4, lovely] > 0 and (out - scores)[3, slow] > 0


def test_processor_validates(tok):
    tables = GroupTables.build([build_group_vocab(EXAMPLE, tok)], len(tok), "ratio")
    with pytest.raises(ValueError, match="`alpha` must be a non-negative float, got -1.0"):
        GroupCoverageProcessor(tables, alpha=-1.0)
    with pytest.raises(ValueError, match="`tau`"):
        GroupCoverageProcessor(tables, alpha=1.0, tau=1.5)
    proc = GroupCoverageProcessor(tables, alpha=1.0)
    with pytest.raises(ValueError, match="output size"):
        proc(torch.tensor([[1]]), torch.zeros(1, 10))


def beam_kwargs(**extra):
    return dict(max_new_tokens=10, num_beams=4, do_sample=False, no_repeat_ngram_size=3,
                repetition_penalty=1.2, **extra)


def test_fair_beam_beta_zero_is_plain_beam_search(tiny):
    model, tok = tiny
    enc = tok(["Summarize: great battery", "Reviews say the screen is slow and dim"],
              return_tensors="pt", padding=True)
    tables = GroupTables.build(
        [build_group_vocab(EXAMPLE, tok), build_group_vocab(OTHER, tok)], len(tok), "ratio"
    )
    plain = model.generate(**enc, **beam_kwargs())
    fair = model.generate(**enc, **beam_kwargs(), custom_generate=fair_beam_search,
                          fair_beam=FairBeamSettings(tables, beta=0.0))
    assert torch.equal(plain, fair)
    # with the α = 0 processor in the list too, and three returned sequences
    proc = GroupCoverageProcessor(tables, alpha=0.0, generated_start=enc["input_ids"].shape[1])
    plain3 = model.generate(**enc, **beam_kwargs(num_return_sequences=3))
    fair3 = model.generate(**enc, **beam_kwargs(num_return_sequences=3), logits_processor=[proc],
                           custom_generate=fair_beam_search,
                           fair_beam=FairBeamSettings(tables, beta=0.0))
    assert torch.equal(plain3, fair3)


class FixedNextToken:
    """Replace the model's log-probs by a fixed distribution over a few tokens."""

    def __init__(self, logprobs: dict[int, float]):
        self.logprobs = logprobs

    def __call__(self, input_ids, scores):
        out = torch.full_like(scores, -float("inf"))
        for token, lp in self.logprobs.items():
            out[:, token] = lp
        return out


def test_fair_beam_and_bonus_bring_in_the_missing_group(tiny):
    model, tok = tiny
    great, awful = ids(tok, "Ġgreat", "Ġawful")
    fixed = FixedNextToken({great: -0.5, awful: -1.0, tok.eos_token_id: -4.0})
    enc = tok(["Summarize:"], return_tensors="pt")
    start = enc["input_ids"].shape[1]
    tables = GroupTables.build([build_group_vocab(EXAMPLE, tok)], len(tok), "equal")
    kw = dict(max_new_tokens=3, do_sample=False, logits_processor=[fixed])
    plain = model.generate(**enc, num_beams=4, **kw)[0, start:].tolist()
    assert plain == [great] * 3
    fair = model.generate(**enc, num_beams=4, **kw, custom_generate=fair_beam_search,
                          fair_beam=FairBeamSettings(tables, beta=5.0))[0, start:].tolist()
    assert awful in fair and great in fair
    # greedy with the bonus: after "great", awful gets 4 · .375 · .5 = .75 > the .5 gap
    bonus = GroupCoverageProcessor(tables, alpha=4.0, generated_start=start)
    kw["logits_processor"] = [fixed, bonus]
    greedy = model.generate(**enc, num_beams=1, **kw)[0, start:].tolist()
    assert greedy[:2] == [great, awful]


def test_keep_alive_reserves_a_beam_for_the_needy_group():
    # pool of 4 sorted by rank; best (0) under-represents group 1; candidate 2 serves it
    shares = torch.tensor([[[0.9, 0.1], [0.85, 0.15], [0.5, 0.5], [0.6, 0.4]]])
    target = torch.tensor([[[0.5, 0.5]]])
    present = torch.ones(1, 1, 2, dtype=torch.bool)
    hits = torch.tensor([[False, False, False, False]])
    keep = keep_alive_order(hits, shares, target, present, tau=0.8, k=2)
    assert keep.tolist() == [[0, 2]]
    # a finished candidate is never reserved: the next one serving group 1 (.4 >= .8 · .5) is
    done = torch.tensor([[False, False, True, False]])
    assert keep_alive_order(done, shares, target, present, 0.8, 2).tolist() == [[0, 3]]
    # none serves: rank order among unfinished, finished last
    done = torch.tensor([[False, False, True, True]])
    assert keep_alive_order(done, shares, target, present, 0.8, 3).tolist() == [[0, 1, 2]]
    # without needy groups, rank order
    fair = torch.tensor([[[0.5, 0.5]] * 4])
    assert keep_alive_order(hits, fair, target, present, 0.8, 3).tolist() == [[0, 1, 2]]


def test_fair_beam_settings_validate(tok):
    tables = GroupTables.build([build_group_vocab(EXAMPLE, tok)], len(tok), "ratio")
    with pytest.raises(ValueError, match="`beta` must be a non-negative float, got -0.5"):
        FairBeamSettings(tables, beta=-0.5)
    with pytest.raises(ValueError, match="`pool`"):
        FairBeamSettings(tables, beta=1.0, pool=0)


def test_config_fairness_fields():
    cfg = GenerateConfig(fairness='{"pos": 1, "neg": 1}', fairness_strength=1.0, fair_beam=0.5)
    assert cfg.fairness == {"pos": 1.0, "neg": 1.0}
    with pytest.raises(ValueError, match="need a target"):
        GenerateConfig(fairness_strength=1.0)
    with pytest.raises(ValueError, match="`num_beams` >= 2"):
        GenerateConfig(fairness="ratio", fair_beam=1.0, num_beams=1)
    with pytest.raises(ValueError, match="`fairness_tau`"):
        GenerateConfig(fairness="ratio", fairness_strength=1.0, fairness_tau=2.0)
    with pytest.warns(UserWarning, match="no effect"):
        GenerateConfig(fairness="ratio")


def test_generate_with_fairness(tiny):
    model, tok = tiny
    cfg = GenerateConfig(max_new_tokens=4, num_beams=2, batch_size=2)
    plain = generate(model, tok, [EXAMPLE, OTHER], cfg, progress=False)
    off = generate(model, tok, [EXAMPLE, OTHER], cfg, progress=False, fairness_strength=0.0)
    assert plain == off
    fair = generate(model, tok, [EXAMPLE, OTHER], cfg, progress=False,
                    fairness="ratio", fairness_strength=1.0, fair_beam=1.0)
    assert len(fair) == 2 and all(isinstance(s, str) for s in fair)
    one_group = Example("x", [Document("great", "pos"), Document("fine", "pos")])
    with pytest.raises(DataError, match=r"examples\[1\].*only one group"):
        generate(model, tok, [EXAMPLE, one_group], cfg, progress=False,
                 fairness="ratio", fairness_strength=1.0)


def test_cli_aliases():
    from evenhand.args import config_from_args
    from evenhand.commands import generate as command

    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    args = parser.parse_args(
        ["--data", "d", "--out", "o", "--fair", "equal", "--fair-strength", "2", "--fair-beam", "1"]
    )
    cfg = config_from_args(GenerateConfig, args)
    assert (cfg.fairness, cfg.fairness_strength, cfg.fair_beam) == ("equal", 2.0, 1.0)


def test_fair_prompts():
    labels = build_prompt(EXAMPLE, fair_prompt="labels")
    assert "[sentiment: pos] great battery" in labels and "50% pos, 50% neg" in labels
    assert "do not mention the sentiment labels" in labels
    definition = build_prompt(EXAMPLE, fair_prompt="definition")
    assert "any sentiment value" in definition and "[sentiment:" not in definition
