"""Reranker: the paper's sampling plan, argmax selection, determinism, resumable output."""

import json

import pytest
from evenhand.decoding.generate import GenerateConfig
from evenhand.decoding.models import tiny_model
from evenhand.evaluation.schema import Document, Example
from evenhand.rerank.reranker import RECIPES, RerankConfig, Reranker, select_best
from evenhand.rerank.scorer import Scorer


class CharCount(Scorer):
    """Score = number of characters (a stand-in with a known argmax)."""

    def _score_batch(self, sources, outputs):
        return [{"score": float(len(o))} for o in outputs]


@pytest.fixture(scope="module")
def tiny():
    return tiny_model("causal", seed=0)


def _examples():
    return [
        Example("a", [Document("The mayor praised the plan.", "left"), Document("Critics hated it.", "right")]),
        Example("b", [Document("Prices rose sharply.", "left"), Document("Wages rose too.", "right")]),
    ]


def test_plan_is_equal_thirds_of_the_paper_recipes():
    assert RerankConfig().plan() == ["nucleus", "top-k", "hybrid"] * 3
    assert RerankConfig(candidates=4).plan() == ["nucleus", "top-k", "hybrid", "nucleus"]
    assert RECIPES["hybrid"]["temperature"] == 1.2 and RECIPES["hybrid"]["no_repeat_ngram_size"] == 3
    assert RECIPES["nucleus"]["top_p"] == 0.9 and RECIPES["top-k"]["top_k"] == 100
    with pytest.raises(ValueError, match="unknown sampler"):
        RerankConfig(recipes="nucleus,beam")
    with pytest.raises(ValueError, match="`candidates` must be a positive int"):
        RerankConfig(candidates=0)


def test_select_best_is_argmax_first_on_ties():
    assert select_best([0.1, 0.7, 0.3]) == 1
    assert select_best([0.5, 0.2, 0.5]) == 0
    with pytest.raises(ValueError):
        select_best([])


def test_reranker_keeps_the_argmax_and_is_deterministic(tiny, tmp_path):
    model, tok = tiny
    gen = GenerateConfig(max_new_tokens=6, batch_size=8)
    reranker = Reranker(model, tok, CharCount(), RerankConfig(candidates=6, seed=3), gen)
    records = reranker.rerank(_examples(), out=tmp_path / "out.jsonl", progress=False)
    for record in records:
        scores = [c["score"] for c in record["candidates"]]
        assert len(scores) == 6
        assert record["best_index"] == select_best(scores)
        assert record["summary"] == record["candidates"][record["best_index"]]["text"]
        assert record["best_score"] == max(scores)
        assert [c["recipe"] for c in record["candidates"]] == ["nucleus", "top-k", "hybrid"] * 2
    texts = [c["text"] for c in records[0]["candidates"]]
    assert len(set(texts)) > 1  # distinct seeds and samplers give different candidates
    again = Reranker(model, tok, CharCount(), RerankConfig(candidates=6, seed=3), gen)
    assert again.rerank(_examples(), progress=False) == records
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "b"]


def test_reranker_resumes_without_regenerating(tiny, tmp_path):
    model, tok = tiny
    out = tmp_path / "out.jsonl"
    gen = GenerateConfig(max_new_tokens=4, batch_size=8)
    first = Reranker(model, tok, CharCount(), RerankConfig(candidates=3), gen)
    first.rerank(_examples()[:1], out=out, progress=False)
    calls = []
    second = Reranker(model, tok, CharCount(), RerankConfig(candidates=3), gen)
    second.rerank_one = lambda ex: calls.append(ex.id) or first.rerank_one(ex)
    records = second.rerank(_examples(), out=out, progress=False)
    assert calls == ["b"] and [r["id"] for r in records] == ["a", "b"]
    assert len(out.read_text().splitlines()) == 2
