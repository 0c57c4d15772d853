"""LLM judges on a tiny random model: expected digit from the next-token distribution, shared prefix."""

import pytest
import torch

from evenhand.decoding.models import tiny_model
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.registry import get_scorer
from evenhand.rerank.judge_scores import expected_digit

SOURCE = ["The council approved the budget.", "Critics said taxes will rise."]
OTHER = "Wages rose last year. Prices rose faster."
SUMMARIES = ["The budget passed.", "Taxes will rise, critics said, after the council vote.", "x"]


@pytest.fixture(scope="module")
def judge():
    model, tok = tiny_model("causal", seed=0)
    scorer = get_scorer("llm-coverage", progress=False)
    return scorer.use_model(model, tok, "tiny-llama")


def _full_probs(judge, source, summary):
    from evenhand.evaluation.scoring.scorer import as_example

    prefix, (suffix,) = judge.prompt_parts(as_example(source), [summary])
    with torch.no_grad():
        logits = judge._model(input_ids=torch.tensor([prefix + suffix])).logits[0, -1]
    return logits.float().softmax(-1)[judge.digit_ids()].tolist()


def test_score_is_the_expected_digit_of_an_unpadded_forward(judge):
    details = judge.score_details([SOURCE] * 3, SUMMARIES)
    for summary, d in zip(SUMMARIES, details):
        probs = _full_probs(judge, SOURCE, summary)
        value, argmax = expected_digit(probs)
        assert d["score"] == pytest.approx(value, abs=1e-5)
        assert d["argmax"] == argmax
        assert d["digit_mass"] == pytest.approx(sum(probs), rel=1e-4)
        assert d["judge"] == "tiny-llama"
        assert 1.0 <= d["score"] <= 5.0


def test_mixed_sources_in_a_batch_match_single_pairs(judge):
    judge.cache_clear()
    sources = [SOURCE, OTHER, SOURCE, OTHER]
    outputs = ["The budget passed.", "Prices rose.", "Critics said taxes will rise.", "Wages fell."]
    batch = judge.score(sources, outputs)
    judge.cache_clear()
    single = [judge.score_one(s, o) for s, o in zip(sources, outputs)]
    assert batch == pytest.approx(single, abs=1e-5)


def test_prompt_holds_rubric_article_and_summary_and_respects_the_budget(judge):
    example = Example("e", [Document("Alpha beta gamma. " * 400)])
    prefix, (suffix,) = judge.prompt_parts(example, ["Alpha."])
    tok = judge._tokenizer
    text = tok.decode(prefix + suffix)
    assert "Coverage scale" in text and "Alpha." in tok.decode(suffix)
    assert len(prefix) + len(suffix) <= judge.config.max_prompt_tokens
    small = get_scorer("llm-coverage", max_prompt_tokens=600).use_model(judge._model, tok, "tiny")
    prefix, (suffix,) = small.prompt_parts(example, ["Alpha."])
    assert len(prefix) + len(suffix) <= 600


def test_faithfulness_prompt_differs_and_parse_mode_returns_integers(judge):
    faith = get_scorer("llm-faithfulness", mode="parse", progress=False)
    faith.use_model(judge._model, judge._tokenizer, "tiny-llama")
    (d,) = faith.score_details([SOURCE], ["The budget passed."])
    assert d["score"] in (1.0, 2.0, 3.0, 4.0, 5.0) and isinstance(d["reply"], str)
    prefix, _ = faith.prompt_parts(Example("e", [Document("Text.")]), ["S."])
    assert "Faithfulness scale" in faith._tokenizer.decode(prefix)


@pytest.mark.slow
def test_embedded_judge_scores_in_range():
    scorer = get_scorer("llm-faithfulness", progress=False, device="cpu")
    details = scorer.score_details(["The council approved the budget on Monday."] * 2,
                                   ["The council approved the budget.", "The council rejected it."])
    for d in details:
        assert 1.0 <= d["score"] <= 5.0 and 0.0 < d["digit_mass"] <= 1.0
    assert details[0]["judge"] == "smollm2-135m-instruct"


def test_a_source_cut_to_fit_is_stated_in_the_row_and_warned_once(judge):
    """Never silent: the judge's budget is its model's context at most, and a cut source says so."""
    from evenhand.decoding.engines.transformers import context_limit

    cutting = get_scorer("llm-coverage", max_prompt_tokens=100_000, progress=False)
    cutting.use_model(judge._model, judge._tokenizer, "tiny")
    context = context_limit(judge._model)
    assert context is not None and cutting.prompt_limit() == context - 8
    long = Example("long", [Document("Alpha beta gamma. " * 3000)])
    with pytest.warns(UserWarning, match=r"read only the start of 1 source\(s\) longer than its prompt budget") as seen:
        d_long, d_short = cutting.score_details([long, SOURCE], ["Alpha.", "The budget passed."])
        cutting.cache_clear()
        cutting.score_details([long], ["Beta."])
    assert len([w for w in seen if "read only the start" in str(w.message)]) == 1  # once per scorer
    kept, total = (int(x) for x in d_long["source_cut"].split()[3:6:2])
    assert d_long["source_cut"].startswith("read the first ") and kept < total and total > 9000
    assert "source_cut" not in d_short
