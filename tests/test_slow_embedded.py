"""Tests on the real embedded SmolLM2 (converted from the GGUF on first use)."""

import json

import pytest

from evenhand.cli import main
from tests.conftest import shared_file

pytestmark = pytest.mark.slow


def test_generate_cli_on_amazon_is_deterministic(tmp_path):
    data = shared_file("perspectivesumm/amazon_gold.json")
    outs = []
    for name in ("a.jsonl", "b.jsonl"):
        out = tmp_path / name
        args = ["generate", "--data", str(data), "--limit", "3", "--out", str(out),
                "--max-new-tokens", "24", "--num-beams", "2", "--seed", "1"]
        assert main(args) == 0
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["id"] for r in rows] == ["amazon_gold-0", "amazon_gold-1", "amazon_gold-2"]
        assert all(r["summary"].strip() for r in rows)
        outs.append([r["summary"] for r in rows])
    assert outs[0] == outs[1]
    # resuming skips finished examples and leaves the file as it was
    before = (tmp_path / "a.jsonl").read_text()
    main(["generate", "--data", str(data), "--limit", "3", "--out", str(tmp_path / "a.jsonl")])
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
