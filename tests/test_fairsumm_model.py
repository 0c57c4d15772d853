"""fairsumm-bertscore and fairsumm-bartscore: hand-computed target distributions, the N-gram
source distribution, and the N-gram path's aggregation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.metrics.fairsumm import (
    corpus_fairness,
    greedy_precision,
    rescale,
    sample_fairness,
    source_counts,
)
from evenhand.evaluation.scoring.registry import get_scorer

EX = Example(
    "e1",
    [Document("Great battery and great screen.", "5"), Document("The strap broke quickly.", "1"),
     Document("Battery lasts long.", "5")],
)


def test_greedy_precision_and_rescale_by_hand():
    cand = np.array([[1.0, 0.0], [0.0, 2.0]])  # rows normalized inside
    ref = np.array([[1.0, 0.0], [1.0, 1.0]])
    # token 1 matches ref 0 exactly (1.0); token 2's best is ref 1: cos = 1/sqrt(2)
    assert greedy_precision(cand, ref) == pytest.approx((1 + 1 / math.sqrt(2)) / 2)
    assert greedy_precision(cand, ref, weights=[0.0, 1.0]) == pytest.approx(1 / math.sqrt(2))
    assert rescale(0.9, 0.8) == pytest.approx(0.5) and rescale(0.9, None) == 0.9
    with pytest.raises(ValueError, match="weights"):
        greedy_precision(cand, ref, weights=[0.0, 0.0])
    with pytest.raises(ValueError, match="hidden size"):
        greedy_precision(cand, np.ones((2, 3)))


class FakeEncoder:
    """Token states by text: 'S' summary tokens, value texts each one reference token."""

    def __init__(self, states):
        self.states = states

    def token_states(self, texts, batch_size=16):
        import torch

        out = []
        for t in texts:
            h = torch.tensor(self.states[t], dtype=torch.float32)
            special = torch.zeros(len(h), dtype=torch.bool)
            special[0] = True  # a CLS row: dropped from the candidate, kept in the reference
            out.append((torch.nn.functional.normalize(h, dim=-1), special))
        return out


def test_bertscore_target_is_softmax_of_precision_over_values_with_ngram_source():
    summary = "A summary."
    texts = EX.group_texts(" || ")
    assert texts == {"5": "Great battery and great screen. || Battery lasts long.", "1": "The strap broke quickly."}
    enc = FakeEncoder({
        summary: [[0, 0, 1], [1, 0, 0], [0, 1, 0]],      # CLS, then two content tokens
        texts["5"]: [[0, 0, 1], [1, 0, 0], [0, 1, 0]],   # both content tokens match: P = 1
        texts["1"]: [[0, 0, 1], [1, 0, 0]],              # second token's best is CLS: cos 0 -> P = 0.5
    })
    scorer = get_scorer("fairsumm-bertscore", temperature=0.5, progress=False)
    scorer._encoder = enc
    assert scorer.precisions([summary], [texts["5"], texts["1"]]) == [[pytest.approx(1.0), pytest.approx(0.5)]]
    (row,) = scorer.score_details([EX], [summary])
    t5 = math.exp(2) / (math.exp(2) + math.exp(1))  # softmax([1, 0.5] / 0.5)
    counts = source_counts(EX.group_texts(" "))  # N-gram source distribution, as the authors' eval.py
    expected = sample_fairness(counts, {"5": t5, "1": 1 - t5})
    assert row["fairsumm_bertscore_uer"] == pytest.approx(expected.uer)
    assert row["fairsumm_bertscore_unfair"] == float(expected.unfair)
    assert row["score"] == pytest.approx(-expected.uer)
    assert row["fairsumm_bertscore_backend"] == "minilm-fallback|layer=None|raw"
    # content tokens: great battery great screen battery lasts long | strap broke quickly
    assert counts == {"5": 7, "1": 3}
    assert expected.uer == pytest.approx(max(0, 0.3 - (1 - t5)) / 2 + max(0, 0.7 - t5) / 2)
    # T = 0 (argmax): all mass on '5' -> '1' under-represented by its whole share
    hard = get_scorer("fairsumm-bertscore", temperature=0.0, progress=False)
    hard._encoder = enc
    assert hard.score_details([EX], [summary])[0]["fairsumm_bertscore_uer"] == pytest.approx(0.3 / 2)


def test_bertscore_sentence_method_averages_per_sentence_softmax():
    s1, s2 = "Battery is great.", "Strap broke."
    texts = EX.group_texts(" || ")
    enc = FakeEncoder({
        s1: [[0, 0, 1], [1, 0, 0]], s2: [[0, 0, 1], [0, 1, 0]],
        texts["5"]: [[0, 0, 1], [1, 0, 0]], texts["1"]: [[0, 0, 1], [0, 1, 0]],
    })
    scorer = get_scorer("fairsumm-bertscore", temperature=1.0, method="sentence", progress=False)
    scorer._encoder = enc
    (row,) = scorer.score_details([EX], [f"{s1} {s2}"])
    # each sentence: softmax([1, 0]) for its own value; the mean is uniform (1/2, 1/2)
    expected = sample_fairness({"5": 7, "1": 3}, {"5": 0.5, "1": 0.5})
    assert row["fairsumm_bertscore_uer"] == pytest.approx(expected.uer)
    assert expected.uer == pytest.approx((0.7 - 0.5) / 2)


def test_aggregate_agrees_with_the_ngram_path(tmp_path):
    """Model variants aggregate exactly as fairsumm: corpus BUR/UER/SOF of the same SampleFairness."""
    from evenhand.evaluation.scoring.scorers.fairsumm import distribution_row

    targets = [{"5": 0.9, "1": 0.1}, {"5": 0.2, "1": 0.8}, {"5": 0.7, "1": 0.3}]
    counts = {"5": 7, "1": 3}
    records = [distribution_row("fairsumm_bertscore", counts, t) for t in targets]
    scorer = get_scorer("fairsumm-bertscore")
    corpus = corpus_fairness([sample_fairness(counts, t) for t in targets])
    stats = scorer.aggregate(records)
    assert stats["fairsumm_bertscore_bur"] == pytest.approx(corpus.bur) == pytest.approx(2 / 3)
    assert stats["fairsumm_bertscore_uer"] == pytest.approx(corpus.uer)
    assert stats["fairsumm_bertscore_sof"] == pytest.approx(corpus.sof)
    ngram = get_scorer("fairsumm").aggregate([distribution_row("fairsumm", counts, t) for t in targets])
    assert [ngram[k.replace("_bertscore", "")] for k in stats] == pytest.approx(list(stats.values()))


def test_bertscore_real_tiny_encoder_token_states(tmp_path):
    """TextEncoder: unit-norm states of the chosen layer and a mask of the special tokens."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from evenhand.decoding.beam.embeddings import TextEncoder
    from evenhand.decoding.models import minilm_path

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=32))
    model.eval().save_pretrained(tmp_path / "enc")
    tok.save_pretrained(tmp_path / "enc")
    enc = TextEncoder(str(tmp_path / "enc"), layer=1, device="cpu")
    (states, special), _ = enc.token_states(["Battery lasts long.", "Strap broke."])
    ids = tok("Battery lasts long.", return_tensors="pt")
    with torch.no_grad():
        hidden = model(**ids, output_hidden_states=True).hidden_states[1][0]
    assert torch.allclose(states, torch.nn.functional.normalize(hidden, dim=-1), atol=1e-5)
    assert special.tolist() == [True] + [False] * (len(states) - 2) + [True]
    scorer = get_scorer("fairsumm-bertscore", encoder=str(tmp_path / "enc"), layer=1, device="cpu",
                        progress=False)
    (row,) = scorer.score_details([EX], ["Battery lasts long."])
    assert row["fairsumm_bertscore_backend"].startswith(str(tmp_path / "enc"))
    assert 0 <= row["fairsumm_bertscore_uer"] <= 1


def test_bartscore_target_is_softmax_of_value_likelihoods(tiny_causal):
    model, tok = tiny_causal
    # the code's BARTScore scores the summary's end token too (score_end, on by default here)
    lm = get_scorer("lm-likelihood", score_end=True, progress=False).use_model(model, tok, "tiny")
    scorer = get_scorer("fairsumm-bartscore", temperature=0.5, progress=False).use_model(model, tok, "tiny")
    summary = "The battery is great but the strap broke."
    (row,) = scorer.score_details([EX], [summary])
    # per value: lm-likelihood of the summary given that value's documents only
    five = lm.score([[d.text for d in EX.documents if d.group == "5"]], [summary])[0]
    one = lm.score(["The strap broke quickly."], [summary])[0]
    assert scorer.value_scores([EX], [summary]) == [{"5": pytest.approx(five, abs=1e-4), "1": pytest.approx(one, abs=1e-4)}]
    z = np.exp(np.array([five, one]) / 0.5 - max(five, one) / 0.5)
    t = z / z.sum()
    expected = sample_fairness({"5": 7, "1": 3}, {"5": t[0], "1": t[1]})
    assert row["fairsumm_bartscore_uer"] == pytest.approx(expected.uer, abs=1e-5)
    assert row["fairsumm_bartscore_backend"] == "tiny"


def test_score_end_adds_the_end_tokens_log_prob(tiny_causal):
    import torch

    from evenhand.decoding.prompts.templates import format_documents

    model, tok = tiny_causal
    off = get_scorer("lm-likelihood", progress=False).use_model(model, tok, "tiny")
    on = get_scorer("lm-likelihood", score_end=True, progress=False).use_model(model, tok, "tiny")
    ex = Example("e", [Document("The strap broke quickly. Battery lasts long. The screen is bright and sharp. Shipping took two weeks.", "1")])
    summary = "The strap broke. The battery lasts."
    (a,), (b,) = off.conditional([ex], [summary]), on.conditional([ex], [summary])
    prefix = on.prefix_ids(format_documents(ex))
    body = on.summary_ids(summary)
    assert body[-1] == tok.convert_tokens_to_ids("<|im_end|>") and body[:-1] == off.summary_ids(summary)
    with torch.no_grad():
        logits = model(torch.tensor([prefix + body])).logits[0]
    end = float(torch.log_softmax(logits[len(prefix) + len(body) - 2].double(), -1)[body[-1]])
    assert b.n_tokens == a.n_tokens + 1
    assert b.total == pytest.approx(a.total + end, abs=1e-3)
    # chunked sources: the end token joins the last sentence, so its total is the same sum
    chunked = get_scorer("lm-likelihood", score_end=True, max_source_tokens=16, chunk_words=6,
                         progress=False).use_model(model, tok, "tiny")
    (c,) = chunked.conditional([ex], [summary])
    assert c.n_tokens == b.n_tokens and c.chunks > 1


def test_bert_score_baseline_follows_the_code_for_roberta_large():
    from evenhand.decoding.beam.embeddings import default_layer
    from evenhand.rerank.scorers.fairsumm_model import bert_score_baseline

    # one table of bert_score's default layers serves the encoder and the baseline lookup,
    # for HF ids and for local folders of that name
    assert default_layer("roberta-large") == default_layer("/models/roberta-large/") == 17
    assert default_layer("/m/deberta-xlarge-mnli") == default_layer("microsoft/deberta-xlarge-mnli") == 40
    assert default_layer("minilm") is None

    # bert_score's rescale_baseline/en/roberta-large.tsv, layer 17 (its default), column P
    assert bert_score_baseline("roberta-large", None) == 0.83150584
    assert bert_score_baseline("/models/roberta-large/", 17) == 0.83150584
    assert bert_score_baseline("roberta-large", 16) is None
    assert bert_score_baseline("minilm", None) is None
    assert "rescaled:0.83150584" in get_scorer("fairsumm-bertscore", encoder="/m/roberta-large").model_id
    assert get_scorer("fairsumm-bertscore", encoder="/m/roberta-large", rescale=False).model_id.endswith("|raw")
    assert get_scorer("fairsumm-bertscore", baseline=0.5).model_id.endswith("rescaled:0.5")
    assert get_scorer("fairsumm-bertscore").model_id.endswith("|raw")


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [("fairsumm-bertscore", "temperature", -1.0), ("fairsumm-bertscore", "method", "token"),
     ("fairsumm-bertscore", "baseline", 1.0), ("fairsumm-bartscore", "temperature", -0.1)],
)
def test_bad_config_names_the_field(name, field, value):
    with pytest.raises(ValueError, match=f"`{field}`"):
        get_scorer(name, **{field: value})


def test_one_group_is_a_data_error():
    from evenhand.evaluation.errors import DataError

    scorer = get_scorer("fairsumm-bertscore", progress=False)
    with pytest.raises(DataError, match="at least two groups"):
        scorer.score_details([Example("x", [Document("Only one.", "a")])], ["s"])
