"""Alignment backends on tiny random models: AlignScore checkpoint, NLI classifier, MiniLM fallback."""

import shutil

import pytest
import torch

from evenhand.decoding.models import minilm_path
from evenhand.evaluation.scoring.registry import get_scorer
from evenhand.rerank.alignment import (
    FALLBACK_NAME,
    AlignScoreCheckpoint,
    NliClassifier,
    entailment_index,
    load_backend,
    read_state_dict,
)

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
SOURCE = "The council approved the budget. Taxes will rise next year. Parks get more money."
SUMMARY = "The council approved the budget. Parks get less money."


def _copy_tokenizer(folder):
    for name in TOKENIZER_FILES:
        shutil.copy(minilm_path() / name, folder / name)


@pytest.fixture(scope="module")
def tiny_alignscore(tmp_path_factory):
    """A tiny RoBERTa folder (config + MiniLM's BERT tokenizer) and an AlignScore-format .ckpt."""
    from transformers import RobertaConfig, RobertaModel

    folder = tmp_path_factory.mktemp("tiny-roberta")
    config = RobertaConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=600, pad_token_id=0, type_vocab_size=1,
    )
    config.save_pretrained(folder)
    _copy_tokenizer(folder)
    torch.manual_seed(0)
    encoder = RobertaModel(config)
    tri = torch.nn.Linear(32, 3)
    state = {f"base_model.{k}": v for k, v in encoder.state_dict().items()}
    state.update({"tri_layer.weight": tri.weight.detach(), "tri_layer.bias": tri.bias.detach()})
    state.update({"bin_layer.weight": torch.zeros(2, 32), "mlm_head.dense.weight": torch.zeros(32, 32)})
    ckpt = folder / "AlignScore-tiny.ckpt"
    torch.save({"state_dict": state, "epoch": 3, "global_step": 10}, ckpt)
    return folder, ckpt, encoder.eval(), tri.eval()


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    """A tiny BERT NLI classifier whose entailment label sits at index 2."""
    from transformers import BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("tiny-nli")
    config = BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, num_labels=3,
        id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
        label2id={"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2},
    )
    torch.manual_seed(1)
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(folder)
    _copy_tokenizer(folder)
    return folder, model


def test_checkpoint_reader_unwraps_lightning_state(tiny_alignscore, tmp_path):
    _, ckpt, _, _ = tiny_alignscore
    state = read_state_dict(ckpt)
    assert "tri_layer.weight" in state and "epoch" not in state
    bad = tmp_path / "bad.pt"
    torch.save({"something": torch.zeros(2)}, bad)
    with pytest.raises(ValueError, match="not an AlignScore checkpoint"):
        AlignScoreCheckpoint(bad, base_model=str(tiny_alignscore[0]), device="cpu")


def test_alignscore_checkpoint_matches_a_manual_forward(tiny_alignscore):
    from transformers import AutoTokenizer

    folder, ckpt, encoder, tri = tiny_alignscore
    backend = AlignScoreCheckpoint(ckpt, base_model=str(folder), device="cpu")
    assert backend.name == "alignscore:AlignScore-tiny.ckpt"
    premises, hyps = ["Taxes will rise.", "Parks get more money."], ["Taxes rise.", "Parks lose."]
    probs = backend.pair_probs(premises, hyps, batch_size=2)
    tok = AutoTokenizer.from_pretrained(folder)
    for p, h, got in zip(premises, hyps, probs):
        enc = tok(p, h, return_tensors="pt")
        enc.pop("token_type_ids")
        with torch.no_grad():
            want = tri(encoder(**enc).pooler_output).softmax(-1)[0, 0].item()
        assert got == pytest.approx(want, abs=1e-5)


def test_alignscore_scorer_on_checkpoint_is_max_mean_and_batch_invariant(tiny_alignscore):
    folder, ckpt, _, _ = tiny_alignscore
    scorer = get_scorer("alignscore", model=str(ckpt), base_model=str(folder), chunk_words=5,
                        device="cpu", progress=False)
    backend = scorer.backend
    chunks = ["The council approved the budget.", "Taxes will rise next year.", "Parks get more money."]
    sents = ["The council approved the budget.", "Parks get less money."]
    grid = [[backend.pair_probs([c], [s])[0] for s in sents] for c in chunks]
    want = sum(max(grid[i][j] for i in range(3)) for j in range(2)) / 2
    batch = scorer.score([SOURCE, SOURCE, SOURCE], [SUMMARY, "Taxes will rise.", "Parks."])
    assert batch[0] == pytest.approx(want, abs=1e-5)
    scorer.cache_clear()
    single = [scorer.score_one(SOURCE, s) for s in [SUMMARY, "Taxes will rise.", "Parks."]]
    assert single == pytest.approx(batch, abs=1e-5)
    assert scorer.score_details([SOURCE], [SUMMARY])[0]["backend"] == backend.name


def test_nli_backend_reads_the_entailment_label(tiny_nli):
    from transformers import AutoTokenizer

    folder, model = tiny_nli
    backend = NliClassifier(str(folder), device="cpu")
    assert backend.index == 2
    tok = AutoTokenizer.from_pretrained(folder)
    enc = tok(["Taxes will rise.", "Parks."], ["Taxes rise.", "Parks get money."],
              return_tensors="pt", padding=True)
    with torch.no_grad():
        want = model(**enc).logits.softmax(-1)[:, 2].tolist()
    got = backend.pair_probs(["Taxes will rise.", "Parks."], ["Taxes rise.", "Parks get money."])
    assert got == pytest.approx(want, abs=1e-5)
    scorer = get_scorer("equal-coverage", model=str(folder), device="cpu", progress=False)
    (d,) = scorer.score_details([["Taxes will rise.", "Parks get more money."]], [SUMMARY])
    assert d["backend"] == f"nli:{folder}" and -0.5 <= d["score"] <= 0


def test_entailment_label_is_required():
    assert entailment_index({0: "entailment", 1: "not_entailment"}) == 0
    with pytest.raises(ValueError, match="cannot find the entailment class"):
        entailment_index({0: "LABEL_0", 1: "LABEL_1"})


@pytest.mark.slow
def test_minilm_fallback_is_named_and_ranks_copies_first():
    backend = load_backend("fallback", device="cpu")
    assert backend.name == FALLBACK_NAME
    same, other = backend.pair_probs(["Taxes will rise next year."] * 2,
                                     ["Taxes will rise next year.", "Penguins swim in cold water."])
    assert same == pytest.approx(1.0, abs=1e-4) and 0 <= other < same
    scorer = get_scorer("alignscore", progress=False)
    details = scorer.score_details([SOURCE, SOURCE], [SUMMARY, "Penguins swim in cold water."])
    assert all(d["backend"] == FALLBACK_NAME for d in details)
    assert details[0]["score"] > details[1]["score"]


def test_cross_encoder_sorts_by_length_but_keeps_pair_order(tiny_alignscore):
    folder, ckpt, _, _ = tiny_alignscore
    backend = AlignScoreCheckpoint(ckpt, base_model=str(folder), device="cpu")
    premises = ["Taxes will rise next year because the council voted for it.", "Parks.", "Taxes rise."]
    hyps = ["Taxes rise.", "Parks lose money.", "The council voted."]
    single = [backend.pair_probs([p], [h])[0] for p, h in zip(premises, hyps)]
    assert backend.pair_probs(premises, hyps, batch_size=2) == pytest.approx(single, abs=1e-5)


@pytest.mark.slow
def test_minilm_embed_batches_by_length_in_input_order():
    backend = load_backend("fallback", device="cpu")
    texts = [SOURCE, "Taxes rise.", "Penguins swim in cold water near the coast.", "Parks."]
    alone = torch.cat([backend.embed([t]) for t in texts])
    batched = backend.embed(texts, batch_size=2)  # batches: the two shortest, then the two longest
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=0)
    assert backend.embed([]).shape == (0, alone.shape[1])


class _StubChecker:
    """Stands in for the trained checker: p = share of the claim's words found in the premise."""

    def probs(self, premises, claims, batch_size=32):
        import re

        def words(text):
            return re.findall(r"\w+", text.lower())

        return [len(set(words(c)) & set(words(p))) / len(words(c)) for p, c in zip(premises, claims)]


def test_checker_backend_feeds_the_scorers_and_is_named(monkeypatch, tmp_path):
    """`model="checker"`: evenhand's checker scores the pairs; every output names it."""
    import evenhand.rerank.alignment as alignment
    import evenhand.rerank.checker.model as checker_model
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.rerank.scorers.equal_coverage import EqualCoverageScorer

    folder = tmp_path / "checker" / "abc123"
    monkeypatch.setattr(checker_model, "load_checker", lambda folder, device, max_length: _StubChecker())
    monkeypatch.setattr(checker_model, "checker_dir", lambda: folder)
    monkeypatch.setattr(alignment, "_LOADED", {})
    ex = Example("x", [Document("the battery lasts a week", "5"), Document("the case is flimsy", "1")])
    scorer = get_scorer("alignscore", model="checker", progress=False)
    (record,) = scorer.score_details([ex], ["The battery lasts. The case broke."])
    # one chunk (the whole source); claims: 3/3 words found, 2/3 ("the", "case")
    assert record["score"] == pytest.approx((1.0 + 2 / 3) / 2)
    name = "evenhand-checker abc123 (MiniLM cross-encoder trained by evenhand, not NLI)"
    assert record["backend"] == name and scorer.backend_label == name
    ec = get_scorer("equal-coverage", model="checker", progress=False)
    assert isinstance(ec, EqualCoverageScorer)
    (rec,) = ec.score_details([ex], ["The battery lasts a week."])
    # P = [[1.0 (group 5), 1/5 ("the")]]: the 5-star group covers it, the 1-star group barely; Li et al.'s
    # definition by hand: c = (1.0, 0.2), mean 0.6, group means 1.0 and 0.2, EC = (0.4 + 0.4) / 2 = 0.4
    assert rec["backend"] == name
    assert rec["ec"] == pytest.approx(0.4) and rec["score"] == pytest.approx(-0.4)
    assert ec.coverage_matrix(ex, "The battery lasts a week.")[0] == [[1.0, pytest.approx(0.2)]]


def test_a_pair_already_read_is_not_run_through_the_model_again():
    from evenhand.rerank.alignment import AlignBackend

    class Counting(AlignBackend):
        MEMO_PAIRS = 4

        def __init__(self):
            self.calls: list[list[tuple[str, str]]] = []

        def _pair_probs(self, premises, hypotheses, batch_size):
            self.calls.append(list(zip(premises, hypotheses)))
            return [10.0 * len(p) + len(h) for p, h in zip(premises, hypotheses)]  # not a probability: which pair

    backend = Counting()
    assert backend.pair_probs(["ab", "c", "ab"], ["x", "yy", "x"]) == [21.0, 12.0, 21.0]
    assert backend.calls == [[("ab", "x"), ("c", "yy")]]  # the repeated pair read once
    assert backend.pair_probs(["c", "dddd"], ["yy", "z"]) == [12.0, 41.0]
    assert backend.calls[1:] == [[("dddd", "z")]]  # only the new pair
    # over MEMO_PAIRS the memory starts afresh, so a long run does not grow without bound
    assert backend.pair_probs(["e", "f"], ["1", "2"]) == [11.0, 11.0]
    assert backend.pair_probs(["ab"], ["x"]) == [21.0] and backend.calls[-1] == [("ab", "x")]
    with pytest.raises(ValueError, match="2 premises but 1 hypotheses"):
        backend.pair_probs(["a", "b"], ["c"])
