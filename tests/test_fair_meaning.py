"""Meaning-level fair beam search (W): the coverage penalty by hand, W = 0 is plain beam search,
W > 0 brings in the group the words alone miss, and the config / hookup."""

from __future__ import annotations

import pytest
import torch

from evenhand.decoding.beam.hf_loop import fair_beam_search
from evenhand.decoding.beam.meaning import MeaningCoverage
from evenhand.decoding.beam.objective import FairBeamSettings
from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.generate import generate
from evenhand.decoding.processors.group_vocab import GroupTables, build_group_vocab
from evenhand.evaluation.data.schema import Document, Example
from tests.test_fair_decoding import FixedNextToken, beam_kwargs

EXAMPLE = Example("e1", [Document("great battery", "pos"), Document("awful battery died", "neg")])
OTHER = Example("e2", [Document("lovely screen", "pos"), Document("slow screen", "neg")])


class WordAxes:
    """A fake sentence encoder: axis 0 counts pos words, axis 1 neg words, axis 2 a small constant."""

    def sentence_embeddings(self, texts, batch_size=32, max_length=256):
        rows = []
        for t in texts:
            words = [w.strip(".,!?") for w in t.lower().split()]
            rows.append([sum(w in ("great", "lovely") for w in words),
                         sum(w in ("awful", "died", "slow") for w in words), 1e-3])
        return torch.nn.functional.normalize(torch.tensor(rows, dtype=torch.float32), dim=-1)


def _meaning(tok, examples, weight=1.0, **kw):
    tables = GroupTables.build([build_group_vocab(ex, tok) for ex in examples], len(tok), "equal")
    return tables, MeaningCoverage.build(examples, tables, WordAxes(), tok, weight, **kw)


def test_penalty_by_hand(tokenizer):
    _, m = _meaning(tokenizer, [EXAMPLE], measure="ec")
    # docs pos, neg: coverage (1, 0) -> group means 1, 0, mean 0.5 -> EC 0.5; (.7, .7) -> 0
    cov = torch.tensor([[[1.0, 0.0], [0.7, 0.7]]])
    assert m.penalty_from_coverage(cov).tolist() == [[pytest.approx(0.5), pytest.approx(0.0)]]
    _, u = _meaning(tokenizer, [EXAMPLE], measure="uer", temperature=0.1)
    q_neg = 1 / (1 + torch.exp(torch.tensor(10.0))).item()  # softmax((1, 0) / 0.1)[1]
    # target 'equal' (0.5, 0.5): UER = (0 + (0.5 - q_neg)) / 2
    assert u.penalty_from_coverage(cov)[0, 0].item() == pytest.approx((0.5 - q_neg) / 2, abs=1e-6)
    _, both = _meaning(tokenizer, [EXAMPLE], measure="both", temperature=0.1)
    assert both.penalty_from_coverage(cov)[0, 0].item() == pytest.approx((0.5 + (0.5 - q_neg) / 2) / 2, abs=1e-6)


def test_document_coverage_is_max_over_blocks_and_text_penalty(tokenizer):
    ex = Example("e", [Document("Great one. Word " + "word " * 120 + "end.", "pos"), Document("Awful.", "neg")])
    _, m = _meaning(tokenizer, [ex], block_words=100)
    assert m.block_mask.sum().item() == 3  # doc 0 is two blocks, doc 1 one
    emb = WordAxes().sentence_embeddings(["great"])[None]
    cov = m.document_coverage(emb)
    assert cov[0, 0].tolist() == [pytest.approx(1.0, abs=2e-3), pytest.approx(0.0, abs=2e-3)]
    ids = tokenizer([" great awful", " great great"], add_special_tokens=False, return_tensors="pt")["input_ids"]
    pen = m.penalty(ids[None])
    assert pen[0].tolist() == [pytest.approx(0.0, abs=2e-3), pytest.approx(0.5, abs=2e-3)]
    assert m.final_ec(ids[None])[0].tolist() == [pytest.approx(0.0, abs=2e-3), pytest.approx(0.5, abs=2e-3)]


def test_weight_zero_is_plain_beam_search(tiny_causal):
    model, tok = tiny_causal
    enc = tok(["Summarize: great battery", "Reviews say the screen is slow and dim"],
              return_tensors="pt", padding=True)
    tables, meaning = _meaning(tok, [EXAMPLE, OTHER], weight=0.0, every=2)
    for n in (1, 3):
        plain = model.generate(**enc, **beam_kwargs(num_return_sequences=n))
        fair = model.generate(**enc, **beam_kwargs(num_return_sequences=n), custom_generate=fair_beam_search,
                              fair_beam=FairBeamSettings(tables, beta=0.0, meaning=meaning))
        assert torch.equal(plain, fair)


def test_meaning_term_brings_in_the_group_words_miss(tiny_causal):
    model, tok = tiny_causal
    great, awful = (tok.convert_tokens_to_ids(p) for p in ("Ġgreat", "Ġawful"))
    kw = dict(max_new_tokens=3, do_sample=False, num_beams=4,
              logits_processor=[FixedNextToken({great: -0.5, awful: -1.0, tok.eos_token_id: -4.0})])
    enc = tok(["Summarize:"], return_tensors="pt")
    start = enc["input_ids"].shape[1]
    assert model.generate(**enc, **kw)[0, start:].tolist() == [great] * 3
    tables, meaning = _meaning(tok, [EXAMPLE], weight=5.0, every=1)
    fair = model.generate(**enc, **kw, custom_generate=fair_beam_search,
                          fair_beam=FairBeamSettings(tables, beta=0.0, meaning=meaning))[0, start:].tolist()
    assert awful in fair and great in fair


def test_config_and_generate_hookup(tiny_causal, monkeypatch):
    model, tok = tiny_causal
    with pytest.raises(ValueError, match="need a target"):
        GenerateConfig(fair_meaning=1.0)
    with pytest.raises(ValueError, match="num_beams"):
        GenerateConfig(fairness="ratio", fair_meaning=1.0, num_beams=1)
    with pytest.raises(ValueError, match="fair_meaning_measure"):
        GenerateConfig(fairness="ratio", fair_meaning=1.0, fair_meaning_measure="bleu")
    cfg = GenerateConfig(fairness="ratio", fair_meaning=1.0, num_beams=2, max_new_tokens=4)
    assert cfg.active and cfg.beam_search and cfg.parts()["fairness"].fair_meaning == 1.0
    import evenhand.decoding.beam.embeddings as embeddings

    monkeypatch.setattr(embeddings, "load_encoder", lambda *a, **k: WordAxes())
    out = generate(model, tok, [EXAMPLE, OTHER], cfg, progress=False)
    assert len(out) == 2 and all(isinstance(s, str) for s in out)
