import pytest

from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.generate import generate
from evenhand.decoding.prompts.templates import (
    PROMPT_KINDS,
    build_prompt,
    chat_prompt,
    format_documents,
)
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError

EXAMPLES = [
    Example("a", [Document("The soup was cold.", "neg"), Document("Lovely staff.", "pos")],
            attribute="sentiment"),
    Example("b", [Document("Battery lasts two days.", "5")], attribute="rating"),
    Example("c", [Document("Too loud.", "x"), Document("Fine.", "y"), Document("Ok.", "y")]),
]


def test_prompt_plain_text_no_numbering():
    text = build_prompt(EXAMPLES[0])
    assert "The soup was cold.\n\nLovely staff." in text
    assert "1." not in text and "[sentiment" not in text
    labelled = build_prompt(EXAMPLES[0], fair_prompt="labels")
    assert "[sentiment: neg] The soup was cold." in labelled
    assert "fair" in build_prompt(EXAMPLES[0], fair_prompt="definition").lower()
    with pytest.raises(ValueError, match="`fair_prompt` must be one of"):
        build_prompt(EXAMPLES[0], fair_prompt="bogus")


def test_example_prompt_wins():
    ex = Example("p", [Document("x")], prompt="Given texts, summarize.")
    assert build_prompt(ex) == "Given texts, summarize."
    assert format_documents(ex) == "x"


def test_chat_prompt_ends_with_assistant_turn(tokenizer):
    text = chat_prompt(tokenizer, "hello")
    assert text.endswith("<|im_start|>assistant\n") and "hello" in text


def test_generate_is_deterministic_and_batch_independent(tiny_causal):
    model, tok = tiny_causal
    config = GenerateConfig(max_new_tokens=6, num_beams=2, batch_size=2)
    first = generate(model, tok, EXAMPLES, config, progress=False)
    again = generate(model, tok, EXAMPLES, config, progress=False)
    assert first == again and len(first) == 3
    sampled = GenerateConfig(max_new_tokens=6, num_beams=1, do_sample=True, seed=5, batch_size=2)
    s1 = generate(model, tok, EXAMPLES, sampled, progress=False)
    s2 = generate(model, tok, EXAMPLES, sampled, progress=False)
    assert s1 == s2


def test_generate_calls_processor_builders_and_on_batch(tiny_causal):
    model, tok = tiny_causal
    seen, batches = [], []

    class ForceToken:
        def __call__(self, input_ids, scores):
            out = scores.new_full(scores.shape, float("-inf"))
            out[:, tok.convert_tokens_to_ids("Ġyes")] = 0.0
            return out

    def builder(batch):
        seen.append((len(batch.examples), batch.prompt_length == batch.input_ids.shape[1]))
        return [ForceToken()]

    config = GenerateConfig(max_new_tokens=3, num_beams=1, batch_size=2,
                            no_repeat_ngram_size=0, repetition_penalty=1.0)
    out = generate(model, tok, EXAMPLES, config, processor_builders=[builder], progress=False,
                   on_batch=lambda exs, texts: batches.append([e.id for e in exs]))
    assert seen == [(2, True), (1, True)]
    assert batches == [["a", "b"], ["c"]]
    # each summary starts with its kind's response prefix (reviews, reviews, generic texts)
    reviews, texts = PROMPT_KINDS["reviews"].response_prefix, PROMPT_KINDS["texts"].response_prefix
    assert out == [f"{reviews} yes yes yes"] * 2 + [f"{texts} yes yes yes"]
    off = generate(model, tok, EXAMPLES, config, processor_builders=[builder], progress=False,
                   response_prefix="")
    assert off == ["yes yes yes"] * 3


def test_context_overflow_names_example_and_field(tiny_causal):
    model, tok = tiny_causal
    long = Example("long", [Document("word " * 3000)])
    with pytest.raises(DataError, match=r"example 'long': `documents` take \d+ prompt tokens"):
        generate(model, tok, [long], GenerateConfig(max_new_tokens=4), progress=False)


def test_generate_rejects_empty_document(tiny_causal):
    model, tok = tiny_causal
    with pytest.raises(DataError, match=r"`documents\[0\].text` is empty"):
        generate(model, tok, [Example("e", [Document(" ")])], progress=False)


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_new_tokens=0), "`max_new_tokens` must be a positive int, got 0"),
    (dict(num_beams=0), "`num_beams` must be a positive int"),
    (dict(temperature=0.0), "`temperature` must be a positive float"),
    (dict(top_p=0.9), "only apply with `do_sample=True`"),
])
def test_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        GenerateConfig(**kwargs)


def test_seq2seq_generation(tokenizer):
    from evenhand.decoding.models import tiny_model

    model, tok = tiny_model("seq2seq", tokenizer=tokenizer)
    out = generate(model, tok, EXAMPLES[:2], GenerateConfig(max_new_tokens=4, num_beams=2),
                   progress=False)
    assert len(out) == 2 and all(isinstance(s, str) for s in out)


def test_repetition_penalty_spares_the_prompt(tiny_causal):
    import torch

    from evenhand.decoding.engines.transformers import hf_kwargs
    from evenhand.decoding.processors.builders import generated_only_penalty

    model, _ = tiny_causal
    config = GenerateConfig(repetition_penalty=2.0)
    (proc,) = generated_only_penalty(model, config, prompt_length=3)
    input_ids = torch.tensor([[5, 6, 7, 8, 9]])  # prompt 5 6 7, generated 8 9
    scores = torch.full((1, 12), 4.0)
    out = proc(input_ids, scores.clone())
    expected = torch.full((1, 12), 4.0)
    expected[0, [8, 9]] = 2.0  # positive logits divided by the penalty, generated tokens only
    assert torch.equal(out, expected)
    assert generated_only_penalty(model, GenerateConfig(penalize_prompt=True), 3) == []
    assert generated_only_penalty(model, GenerateConfig(repetition_penalty=1.0), 3) == []
    assert hf_kwargs(config, own_repetition_penalty=True)["repetition_penalty"] == 1.0
    assert hf_kwargs(config)["repetition_penalty"] == 2.0


def test_response_prefix_starts_the_summary(tiny_causal, tokenizer):
    from evenhand.decoding.engines.transformers import encode_prompts
    from evenhand.decoding.models import tiny_model

    model, tok = tiny_causal
    config = GenerateConfig(max_new_tokens=4, num_beams=1, response_prefix="The reviewers")
    enc = encode_prompts(model, tok, EXAMPLES[:1], config)
    prompt = tok.decode(enc["input_ids"][0])
    assert prompt.endswith("<|im_start|>assistant\nThe reviewers")
    (text,) = generate(model, tok, EXAMPLES[:1], config, progress=False)
    (plain,) = generate(model, tok, EXAMPLES[:1], config, progress=False, response_prefix="")
    assert text.startswith("The reviewers") and text != plain
    # None = the kind's default prefix (a sentiment example: reviews)
    enc = encode_prompts(model, tok, EXAMPLES[:1], GenerateConfig(max_new_tokens=4))
    assert tok.decode(enc["input_ids"][0]).endswith(
        "<|im_start|>assistant\n" + PROMPT_KINDS["reviews"].response_prefix)
    seq2seq, _ = tiny_model("seq2seq", seed=0)
    with pytest.raises(ValueError, match="`response_prefix` needs a decoder-only model"):
        generate(seq2seq, tokenizer, EXAMPLES[:1], config, progress=False)
    # the kinds' default prefixes are dropped for encoder-decoder models, not an error
    (s2s,) = generate(seq2seq, tokenizer, EXAMPLES[:1], GenerateConfig(max_new_tokens=4),
                      progress=False)
    assert isinstance(s2s, str)


@pytest.mark.parametrize("fair", [{}, {"fair_beam": 1.0, "fairness": "ratio"}], ids=["beam", "fair-beam"])
def test_beam_search_runs_the_prompt_once_per_example_with_the_same_summaries(tiny_causal, monkeypatch, fair):
    """The prompt cache is built once per example and repeated per beam (``prefill_once``): the
    model sees the left-padded batch, not ``num_beams`` copies of it, and the summaries equal
    those of ``generate`` copying the prompts itself (plain and fair beam search)."""
    from evenhand.decoding.engines import transformers as engine

    model, tok = tiny_causal
    config = GenerateConfig(max_new_tokens=8, num_beams=4, batch_size=3, **fair)
    examples = [EXAMPLES[0], EXAMPLES[2]] if fair else EXAMPLES  # fairness: two groups or more
    n = len(examples)
    shapes: list[tuple[int, ...]] = []

    def record(_module, args, kwargs):  # noqa: ANN001, ANN202
        ids = kwargs.get("input_ids", args[0] if args else None)
        shapes.append(tuple(ids.shape))

    handle = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        once = generate(model, tok, examples, config, progress=False)
        prompt = shapes[0]
        shapes.clear()
        monkeypatch.setattr(engine, "PREFILL_ONCE_TYPES", frozenset())
        copied = generate(model, tok, examples, config, progress=False)
    finally:
        handle.remove()
    assert prompt[0] == n and shapes[0] == (n * 4, prompt[1] + 1)  # n examples vs n x 4 beams, whole prompt
    assert all(s == (n * 4, 1) for s in shapes[1:])  # the steps: one token per beam
    assert once == copied and all(once)
