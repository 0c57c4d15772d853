"""Shared fixtures: the shared data folder and one tiny model per session."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_file(relative: str) -> Path:
    """A file under ../shared/data, or skip the test when it is absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"shared data {path} is absent")
    return path


@pytest.fixture(scope="session")
def tokenizer():
    """The real SmolLM2 tokenizer (converted from the GGUF once into the cache)."""
    from evenhand.decoding.models import load_tokenizer

    return load_tokenizer()


@pytest.fixture(scope="session")
def tiny_causal(tokenizer):
    """A 2-layer random Llama with the SmolLM2 tokenizer."""
    from evenhand.decoding.models import tiny_model

    return tiny_model("causal", seed=0, tokenizer=tokenizer)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory, tiny_causal):
    """The tiny random model saved as a local model folder (safetensors), for CLI runs."""
    path = tmp_path_factory.mktemp("model") / "tiny"
    model, tok = tiny_causal
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path


@pytest.fixture(scope="session")
def smollm2():
    """The embedded SmolLM2 in this process (float32 on CPU): ``(model, tokenizer)``, loaded once.

    The vLLM parity tests of several modules compare against it (test_vllm_beam, test_vllm_engine);
    nothing writes to it.
    """
    from evenhand.decoding.models import load_generator

    return load_generator("smollm2-135m-instruct", device="cpu")


#: The smallest tiny Llama vLLM's CPU attention serves (head size 64 / 2 = 32).
TINY_VLLM = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1}


@pytest.fixture(scope="session")
def vllm_model(tmp_path_factory, tokenizer):
    """A tiny random Llama saved as a local folder (safetensors) that vLLM and transformers both load."""
    from evenhand.decoding.models import tiny_model

    path = tmp_path_factory.mktemp("vllm_model") / "tiny"
    model, tok = tiny_model("causal", seed=0, tokenizer=tokenizer, **TINY_VLLM)
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path


#: Two sources with human-scored summaries in the controlled-summaries format.
CONTROLLED_ENTRIES = [
    {"source": ["The mayor cut taxes. Schools got less money.", "Parks were closed."],
     "summaries": [
         {"summary": "The mayor cut taxes and schools got less money; parks closed.", "coverage": 1.0, "faithfulness": 1.0},
         {"summary": "The mayor cut taxes.", "coverage": 0.5, "faithfulness": 1.0},
         {"summary": "Aliens landed.", "coverage": 0.0, "faithfulness": 0.0},
     ]},
    {"source": ["Wages rose. Prices rose faster."],
     "summaries": [
         {"summary": "Wages rose but prices rose faster.", "coverage": 1.0, "faithfulness": 1.0},
         {"summary": "Wages rose.", "coverage": 0.5, "faithfulness": 0.5},
     ]},
]


def write_controlled(path: Path) -> Path:
    """``CONTROLLED_ENTRIES`` as a controlled-summaries JSON file at ``path``."""
    import json

    path.write_text(json.dumps(CONTROLLED_ENTRIES))
    return path

