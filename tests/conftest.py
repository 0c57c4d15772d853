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
