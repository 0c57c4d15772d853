"""Tests on the real embedded SmolLM2 (converted from the GGUF on first use)."""

import json

import pytest

from evenhand.cli import main
from tests.conftest import shared_file

pytestmark = pytest.mark.slow


def test_generate_cli_on_amazon_is_deterministic(tmp_path):
    """Two runs, one padded batch of two FairSumm sources (575 and 584 prompt tokens), same bytes."""
    data = shared_file("perspectivesumm/amazon_gold.json")
    outs = []
    for name in ("a.jsonl", "b.jsonl"):
        out = tmp_path / name
        args = ["generate", "--data", str(data), "--limit", "2", "--out", str(out),
                "--max-new-tokens", "24", "--num-beams", "2", "--seed", "1"]
        assert main(args) == 0
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["id"] for r in rows] == ["amazon_gold-0", "amazon_gold-1"]
        assert all(r["summary"].strip() for r in rows)
        outs.append([r["summary"] for r in rows])
    assert outs[0] == outs[1]
    # resuming with the same options skips finished examples and leaves the file as it was;
    # with other options (here the defaults) it is refused (the manifest differs)
    before = (tmp_path / "a.jsonl").read_text()
    assert main([*args[:6], str(tmp_path / "a.jsonl"), *args[7:]]) == 0
    assert main(["generate", "--data", str(data), "--limit", "2", "--out", str(tmp_path / "a.jsonl")]) == 2
    assert (tmp_path / "a.jsonl").read_text() == before


def test_embedded_conversion_is_plain_float_safetensors():
    import json

    import torch

    from evenhand.decoding.models import embedded_model_dir, load_generator

    folder = embedded_model_dir()
    assert (folder / "model.safetensors").exists() and (folder / ".complete").exists()
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    model, tok = load_generator()
    assert getattr(model, "hf_quantizer", None) is None  # trainable (no GGUF quantizer)
    assert next(model.parameters()).dtype == torch.float32
    assert tok.eos_token == "<|im_end|>" and model.generation_config.eos_token_id == tok.eos_token_id


#: How a summary must not open (model chatter instead of a summary).
PREAMBLE = r"^\s*(here'?s|here is|here are|sure|certainly|of course|title\s*:|summary\s*:|text\s*\d*\s*:|#|\*\*|\d\.)"


def test_demo_sets_get_summaries_not_preambles():
    """Every bundled demo set, plain beam search and one nucleus sample, default prompts."""
    import re

    import torch

    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.generate import generate
    from evenhand.decoding.models import load_generator
    from evenhand.decoding.prompts.templates import prompt_kind
    from evenhand.demo import demo_examples
    from evenhand.rerank.reranker import RECIPES

    torch.set_num_threads(1)
    examples = demo_examples()
    model, tok = load_generator()
    cap = 64
    beam = generate(model, tok, examples, GenerateConfig(max_new_tokens=cap, batch_size=12),
                    progress=False)
    sampled = generate(model, tok, examples, GenerateConfig(
        max_new_tokens=cap, batch_size=12, **RECIPES["nucleus"]), progress=False)
    for ex, *summaries in zip(examples, beam, sampled):
        kind = prompt_kind(ex)
        for summary in summaries:
            assert summary.strip(), ex.id
            assert summary.startswith(kind.response_prefix), (ex.id, summary)
            assert not re.match(PREAMBLE, summary, re.IGNORECASE), (ex.id, summary)
            assert kind.instruction[:40].lower() not in summary.lower(), (ex.id, summary)
            assert "rewritten version" not in summary.lower(), (ex.id, summary)
            n = len(tok(summary, add_special_tokens=False)["input_ids"])
            prefix = len(tok(kind.response_prefix, add_special_tokens=False)["input_ids"])
            assert n <= cap + prefix + 2, (ex.id, n)  # +2: re-tokenizing the joined text
        # beam search ends on a complete sentence after the clean-up
        assert summaries[0].rstrip().endswith((".", "!", "?", '"')), (ex.id, summaries[0])
