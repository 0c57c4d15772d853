"""The checker model: a seeded build is byte-for-byte reproducible, cached by content (real MiniLM)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evenhand.rerank.checker.model import CheckerOptions, build_checker, freeze_lower, load_checker

pytestmark = pytest.mark.slow

TINY = CheckerOptions(seed=3, rounds=1, batch_size=8, max_length=32, train_layers=1)
EXAMPLES = [
    {"id": "lamp", "attribute": "rating", "documents": [
        {"text": "The lamp is bright and the arm holds its angle.", "group": "5"},
        {"text": "The switch broke after two weeks.", "group": "1"}]},
    {"id": "cafe", "attribute": "rating", "documents": [
        {"text": "The staff were friendly, but the cake was stale.", "group": "3"},
        {"text": "Great coffee and a quiet corner to read.", "group": "5"}]},
]


def write_corpus(path: Path) -> Path:
    path.write_text("".join(json.dumps(ex) + "\n" for ex in EXAMPLES), encoding="utf-8")
    return path


def test_same_seed_builds_identical_weights(tiny_checker, tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    first = tiny_checker  # the same options and corpus, trained in a cache of its own
    monkeypatch.setenv("EVENHAND_CACHE", str(tmp_path / "b"))
    second = build_checker(TINY, corpus, progress=False)
    assert first != second and first.name == second.name  # same content key, two caches
    assert (first / "model.safetensors").read_bytes() == (second / "model.safetensors").read_bytes()
    meta = json.loads((first / "checker.json").read_text())
    assert meta["options"]["train_layers"] == 1 and meta["steps"] == -(-meta["pairs"] // 8)
    # cached: a second call reuses the folder without training
    stamp = (second / "model.safetensors").stat().st_mtime_ns
    assert build_checker(TINY, corpus, progress=False) == second
    assert (second / "model.safetensors").stat().st_mtime_ns == stamp
    # another seed is another checker
    other = build_checker(CheckerOptions(seed=4, rounds=1, batch_size=8, max_length=32, train_layers=1), corpus,
                          progress=False)
    assert other.name != second.name
    model = load_checker(first, device="cpu")
    probs = model.probs(["The switch broke after two weeks."] * 2, ["The switch broke.", "The lamp is bright."])
    assert all(0.0 < p < 1.0 for p in probs)


@pytest.fixture(scope="module")
def tiny_checker(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checker")
    corpus = write_corpus(root / "corpus.jsonl")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVENHAND_CACHE", str(root / "cache"))
        return build_checker(TINY, corpus, progress=False)


def test_checker_scorer_aggregates_claims_by_group_and_quantifier(tiny_checker):
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer

    ex = Example("lamp", [Document("The lamp is bright.", "5"), Document("The lamp is bright and warm.", "5"),
                          Document("The switch broke.", "1")], attribute="rating")
    scorer = get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False)
    summary = "Most reviewers say the lamp is bright, but one-star reviewers say the switch broke."
    [record] = scorer.score_details([ex], [summary])
    model = load_checker(tiny_checker, device="cpu", max_length=128)
    first, second = "Most reviewers say the lamp is bright", "but one-star reviewers say the switch broke."
    p1 = model.probs([d.text for d in ex.documents], [first] * 3)
    p2 = model.probs(["The switch broke."], [second])
    expected = (sorted(p1, reverse=True)[1] + p2[0]) / 2  # "most": 2nd best of 3; one-star: its one document
    assert record["claims"] == 2
    assert record["score"] == pytest.approx(expected, abs=1e-6)
    assert record["weakest"] == pytest.approx(min(sorted(p1, reverse=True)[1], p2[0]), abs=1e-6)
    assert record["backend"].startswith(f"evenhand-checker {tiny_checker.name}") and "not NLI" in record["backend"]
    assert scorer.score([ex], [""]) == [0.0]
    # a number no document of the claim's group states: the claim's score times number_factor (0.25)
    wrong = "One-star reviewers say the switch broke after 9 weeks."
    [numbered] = scorer.score_details([ex], [wrong])
    assert numbered["score"] == pytest.approx(0.25 * model.probs(["The switch broke."], [wrong])[0], abs=1e-6)
    # a claim longer than max_length (128 tokens) is cut with its premise instead of failing
    long = "One-star reviewers say " + "the switch broke and " * 30 + "the lamp died."
    assert 0.0 < scorer.score([ex], [long])[0] < 1.0


def test_a_claim_whose_quantifier_the_documents_contradict_scores_minus_one(tiny_checker):
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer

    texts = ["The lamp is bright.", "Bright and warm light.", "The switch broke.", "A lovely bright lamp."]
    ex = Example("lamp", [Document(t, g) for t, g in zip(texts, ("5", "4", "1", "5"))], attribute="rating")
    model = load_checker(tiny_checker, device="cpu", max_length=128)
    # "most" for what one one-star document says: the claim scores -1, the other claim its support
    summary = "Most reviewers say the switch broke; one reviewer says the lamp is bright."
    bright = model.probs(texts, ["one reviewer says the lamp is bright."] * 4)
    scorer = get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False)
    [record] = scorer.score_details([ex], [summary])
    assert record["claims"] == 2
    assert record["score"] == pytest.approx((-1.0 + max(bright)) / 2, abs=1e-6)
    assert record["weakest"] == -1.0
    # off: the "most" claim is the 2nd largest support of its 4 documents, as any majority claim
    off = get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False, quantity_check=False)
    most = sorted(model.probs(texts, ["Most reviewers say the switch broke"] * 4), reverse=True)[1]
    assert off.score([ex], [summary])[0] == pytest.approx((most + max(bright)) / 2, abs=1e-6)
    # another score for such claims
    half = get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False, quantity_score=0.0)
    assert half.score([ex], [summary])[0] == pytest.approx(max(bright) / 2, abs=1e-6)
    for bad in (-1.5, 2, float("nan"), True):
        with pytest.raises(ValueError, match="quantity_score"):
            get_scorer("checker", quantity_score=bad)


def test_a_verbatim_quotation_scores_by_its_attribution(tiny_checker):
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.scorers.checker import QUOTED_SCORE

    texts = ["The lamp is bright and warm.", "A lovely bright lamp for reading.", "The switch broke after a week."]
    ex = Example("lamp", [Document(t, g) for t, g in zip(texts, ("5", "5", "1"))], attribute="rating")
    scorer = get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False)
    model = load_checker(tiny_checker, device="cpu", max_length=128)
    plain = "Reviewers say the lamp is bright."
    said = max(model.probs(texts, [plain] * 3))
    # the right group, word for word (case and punctuation aside): QUOTED_SCORE, no model reading
    right = plain + ' The one-star reviewer wrote: "the switch broke after a week"'
    [record] = scorer.score_details([ex], [right])
    assert record["claims"] == 2 and record["score"] == pytest.approx((said + QUOTED_SCORE) / 2, abs=1e-6)
    # a semicolon inside the quotation does not split it
    semi = 'One of the five-star reviewers wrote: "The lamp is bright; warm too."'
    assert scorer.score_details([ex], [semi])[0]["claims"] == 1
    # given to the wrong group: a conflict (quantity_score)
    wrong = plain + ' One of the five-star reviewers wrote: "The switch broke after a week."'
    assert scorer.score([ex], [wrong])[0] == pytest.approx((said - 1.0) / 2, abs=1e-6)
    # words no document has: the model reads the claim as any other
    made_up = 'The one-star reviewer wrote: "The switch broke after a month."'
    assert scorer.score([ex], [made_up])[0] == pytest.approx(model.probs([texts[2]], [made_up])[0], abs=1e-6)


def test_a_claim_about_several_that_one_document_states_alone_scores_minus_one(tiny_checker, monkeypatch):
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.checker import claims
    from evenhand.rerank.scorers import checker as checker_scorer

    texts = ["The lamp is bright.", "Bright and warm light.", "The box was dented.", "A lovely bright lamp."]
    ex = Example("lamp", [Document(t, g) for t, g in zip(texts, ("5", "4", "3", "5"))], attribute="rating")
    model = load_checker(tiny_checker, device="cpu", max_length=128)
    claim = "Several reviewers say the box held a lamp"  # no opinion; 3 of 4 documents share a word
    p = [float(x) for x in model.probs(texts, [claim] * 4)]
    seen: list[list[float]] = []

    def alone(c, e, docs, support):  # the real rule, recording what the scorer gives it
        seen.append([float(x) for x in support])
        return claims.concentrated(c, e, docs, support)

    monkeypatch.setattr(checker_scorer, "concentrated", alone)

    def scorer():  # a fresh one each time: a scorer keeps the scores it computed (the LM test apart: below)
        return get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False, lm_check=False)

    # the rule reads each document's support (one window each) and decides between -1 and the majority score
    monkeypatch.setattr(claims, "CONCENTRATION", 0.0)
    expected = -1.0 if sum(x >= max(p) / 3 for x in p) == 1 else sorted(p, reverse=True)[1]
    assert scorer().score([ex], [claim])[0] == pytest.approx(expected, abs=1e-6)
    assert seen == [pytest.approx(p, abs=1e-6)]
    # a threshold above any support: never -1, the 2nd largest support of the 4 documents
    monkeypatch.setattr(claims, "CONCENTRATION", 1.01)
    assert scorer().score([ex], [claim])[0] == pytest.approx(sorted(p, reverse=True)[1], abs=1e-6)
    # forced: -1; and quantity_check=false never asks
    monkeypatch.setattr(checker_scorer, "concentrated", lambda *a: True)
    assert scorer().score([ex], [claim])[0] == -1.0
    off = get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False, quantity_check=False)
    assert off.score([ex], [claim])[0] == pytest.approx(sorted(p, reverse=True)[1], abs=1e-6)


def test_a_claim_about_several_that_the_lm_reads_in_one_document_only_scores_minus_one(tiny_checker, model_dir):
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.checker.claims import one_writer

    texts = ["The lamp is bright.", "Bright and warm light.", "The box was dented.", "A lovely bright lamp."]
    ex = Example("lamp", [Document(t, g) for t, g in zip(texts, ("5", "4", "3", "5"))], attribute="rating")
    claim = "Several reviewers say the box held a lamp"

    def scorer(**options) -> Any:  # the LM test on (it is off by default); Any: its private state is read
        return get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False,
                          lm_model=str(model_dir), **{"lm_check": True, **options})

    off = scorer(lm_check=False)
    plain = off.score([ex], [claim])[0]
    assert plain != -1.0 and off._lm is None  # no LM test, no LM loaded
    assert get_scorer("checker").config.lm_check is False  # the default: off (its cost, docs/reranking.md)
    # the LM's mean log-prob of "A reviewer say the box held a lamp" after each document alone (tiny random LM)
    lm = scorer().lm()
    assert one_writer(claim) == "A reviewer say the box held a lamp"
    means = sorted((float(lm.token_logprobs(lm.prefix_ids(t), [lm.summary_ids(one_writer(claim))])[0].mean())
                    for t in texts), reverse=True)
    gap = means[0] - means[1]
    assert gap > 0
    # one document leads the next by more than lm_gap: -1; by less: the checker's own score
    below = scorer(lm_gap=gap * 0.99)
    assert below.score([ex], [claim])[0] == -1.0
    assert sorted(below._lm_means.values(), reverse=True) == pytest.approx(means, abs=1e-5)
    assert scorer(lm_gap=gap * 1.01).score([ex], [claim])[0] == pytest.approx(plain, abs=1e-6)
    # a claim about one writer, or a test switched off by quantity_check, never reads the LM
    one = scorer(lm_gap=gap * 0.99)
    assert one.score([ex], ["One reviewer says the box held a lamp"])[0] != -1.0 and not one._lm_means
    unchecked = scorer(lm_gap=gap * 0.99, quantity_check=False)
    assert unchecked.score([ex], [claim])[0] != -1.0 and not unchecked._lm_means
    # the gap keys the score cache; bad values are refused by name
    assert scorer(lm_gap=1.0)._fingerprint() != scorer(lm_gap=2.0)._fingerprint()
    for bad in (0, -1.0, float("inf"), float("nan"), True, "2"):
        with pytest.raises(ValueError, match="lm_gap"):
            get_scorer("checker", lm_gap=bad)
    for name, bad in (("lm_check", "yes"), ("lm_model", "")):
        with pytest.raises(ValueError, match=name):
            get_scorer("checker", **{name: bad})


def test_checker_checks_a_claim_against_its_closest_windows_only(tiny_checker):
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer

    texts = ["The lamp is bright.", "The box was dented.", "Delivery took a week.", "The switch broke.",
             "The lamp is warm and bright."]
    ex = Example("lamp", [Document(t, "5") for t in texts], attribute="rating")
    model = load_checker(tiny_checker, device="cpu", max_length=128)
    claim = "The lamp is bright and warm."
    p = model.probs(texts, [claim] * 5)
    every = get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False, max_windows=0)
    assert every.score([ex], [claim])[0] == pytest.approx(max(p), abs=1e-6)
    # 2 windows: the two lamp sentences (3 and 2 shared content words), the best of the two
    two = get_scorer("checker", folder=str(tiny_checker), device="cpu", progress=False, max_windows=2)
    assert two.score([ex], [claim])[0] == pytest.approx(max(p[0], p[4]), abs=1e-6)
    # a majority claim still reads every document (one window each here): the 3rd largest of 5
    most = "Most reviewers say the lamp is bright and warm."
    pm = sorted(model.probs(texts, [most] * 5), reverse=True)
    assert two.score([ex], [most])[0] == pytest.approx(pm[2], abs=1e-6)
    with pytest.raises(ValueError, match="max_windows"):
        get_scorer("checker", max_windows=-1)


def test_build_checker_cli(tiny_checker, tmp_path, monkeypatch, capsys):
    from evenhand.cli import main

    corpus = write_corpus(tmp_path / "corpus.jsonl")
    monkeypatch.setenv("EVENHAND_CACHE", str(tiny_checker.parent.parent))
    flags = ["--seed", "3", "--rounds", "1", "--batch-size", "8", "--max-length", "32", "--train-layers", "1"]
    assert main(["build-checker", "--corpus", str(corpus), *flags]) == 0
    assert capsys.readouterr().out.startswith(f"cached {tiny_checker} ")
    assert main(["build-checker", "--corpus", str(corpus), "--seed", "-1"]) == 2
    assert "seed" in capsys.readouterr().err
    assert main(["build-checker", "--corpus", str(corpus), *flags[:-1], "7", "--quiet"]) == 2
    assert capsys.readouterr().err.strip().endswith("pass at most 6")


def test_only_the_top_layers_train(tmp_path):
    from evenhand.decoding.models import minilm_path
    from evenhand.rerank.checker.model import CrossEncoder

    model = CrossEncoder(minilm_path())
    trained = freeze_lower(model, 2)
    names = [n for n, p in model.modules().named_parameters() if p.requires_grad]
    assert names and all(n.startswith(("encoder.encoder.layer.4.", "encoder.encoder.layer.5.", "head."))
                         for n in names)
    assert any(n.startswith("encoder.encoder.layer.4.") for n in names) and "head.weight" in names
    assert len(trained) == len(names)


def test_a_folder_stores_only_the_trained_layers_and_the_head(tiny_checker):
    from safetensors.torch import load_file

    names = sorted(load_file(str(tiny_checker / "model.safetensors")))
    assert names[-2:] == ["head.bias", "head.weight"]
    assert {n.split(".")[3] for n in names[:-2]} == {"5"}  # train_layers=1: the top layer of six only


def test_the_shipped_checker_is_the_default_recipe_and_a_fresh_cache_takes_it(tmp_path, monkeypatch):
    import torch
    from safetensors.torch import load_file

    from evenhand.decoding.models import minilm_path
    from evenhand.rerank.checker import model as checker_model
    from evenhand.rerank.checker.model import full_checker_key, shipped_checker_dir, shipped_key

    shipped = shipped_checker_dir()
    # the shipped build answers today's recipe: options, corpus and base-model content (else rebuild it
    # with `evenhand build-checker --force --out rerank/checker/weights`)
    assert shipped_key(shipped) == full_checker_key()
    assert shipped_key(tmp_path) is None
    monkeypatch.setenv("EVENHAND_CACHE", str(tmp_path / "cache"))

    def no_training(*args, **kwargs):
        raise AssertionError("trained although the shipped checker matches")

    monkeypatch.setattr(checker_model, "train", no_training)
    folder = build_checker(progress=False)
    assert folder.parent == tmp_path / "cache" / "checker" and folder.name == full_checker_key()[:20]
    assert (folder / "model.safetensors").read_bytes() == (shipped / "model.safetensors").read_bytes()
    stored = load_file(str(shipped / "model.safetensors"))
    assert {n.split(".")[3] for n in stored if n.startswith("encoder.")} == {"4", "5"}  # train_layers=2
    # loaded on the base model: the stored layers are the model's, the frozen ones are MiniLM's own
    model = load_checker(folder, device="cpu")
    state = model.encoder.state_dict()
    assert all(torch.equal(state[n[len("encoder."):]], stored[n]) for n in stored if n.startswith("encoder."))
    base = load_file(str(minilm_path() / "model.safetensors"))
    query = "encoder.layer.0.attention.self.query.weight"
    assert torch.equal(state[query], base[query])
    # another recipe is not the shipped one: it trains (here: refused by the stub)
    with pytest.raises(AssertionError, match="trained although"):
        build_checker(CheckerOptions(seed=1), progress=False)


def test_the_shipped_checker_rebuilds_from_its_recipe(tmp_path, monkeypatch):
    """`evenhand build-checker --force --out DIR` retrains the default recipe; on the CPU kind the shipped
    file was built on the bytes are the same (torch's kernels may round differently on another CPU)."""
    from safetensors.torch import load_file

    from evenhand.cli import main
    from evenhand.rerank.checker.model import shipped_checker_dir

    monkeypatch.setenv("EVENHAND_CACHE", str(tmp_path / "cache"))
    assert main(["build-checker", "--force", "--quiet", "--out", str(tmp_path / "out")]) == 0
    shipped = load_file(str(shipped_checker_dir() / "model.safetensors"))
    rebuilt = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert sorted(rebuilt) == sorted(shipped)
    assert max(float((rebuilt[k] - shipped[k]).abs().max()) for k in shipped) < 1e-3

