"""decoding/gguf.py: the reader and de-quantizers on hand-built files, and the embedded
SmolLM2 conversion against the numbers transformers' GGUF loader gives
(``tests/data/smollm2_conversion_reference.json``, written by ``tools/smollm2_reference.py``)."""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from evenhand.decoding.gguf import (
    F16,
    F32,
    Q4_1,
    Q8_0,
    GGUFError,
    byte_alphabet,
    dequantize,
    llama_hf_name,
    read_gguf,
    unpermute_rows,
)

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "data" / "smollm2_conversion_reference.json"

# float16 bit patterns
HALF_0_25, HALF_0_5, HALF_MINUS_1, HALF_MINUS_2 = 0x3400, 0x3800, 0xBC00, 0xC000


def _q4_1_block() -> bytes:
    """d = 0.5, m = -1; byte j holds value j in its low nibble and value 15 - j in its high one."""
    packed = bytes(j | ((15 - j) << 4) for j in range(16))
    return struct.pack("<HH", HALF_0_5, HALF_MINUS_1) + packed


def test_q4_1_block_low_nibbles_first_then_high_times_d_plus_m():
    raw = np.frombuffer(_q4_1_block(), dtype=np.uint8)
    values = dequantize(raw, Q4_1, (32,))
    first = [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5]
    assert values.dtype == np.float32
    assert values.tolist() == first + first[::-1]


def test_q8_0_two_blocks_each_with_its_own_scale():
    block1 = struct.pack("<H", HALF_0_25) + struct.pack("<32b", *range(-16, 16))
    block2 = struct.pack("<H", HALF_MINUS_2) + struct.pack("<32b", *([3] * 31 + [-128]))
    values = dequantize(np.frombuffer(block1 + block2, dtype=np.uint8), Q8_0, (2, 32))
    assert values.shape == (2, 32)
    assert values[0, :4].tolist() == [-4.0, -3.75, -3.5, -3.25]
    assert values[0, 16] == 0.0 and values[0, 31] == 3.75
    assert values[1, :31].tolist() == [-6.0] * 31 and values[1, 31] == 256.0


def test_f16_and_f32_are_widened_to_float32():
    halves = np.frombuffer(struct.pack("<3H", HALF_0_5, HALF_MINUS_1, HALF_0_25), dtype=np.uint8)
    assert dequantize(halves, F16, (3,)).tolist() == [0.5, -1.0, 0.25]
    floats = np.frombuffer(struct.pack("<4f", 1.5, -2.0, 0.0, 3.25), dtype=np.uint8)
    values = dequantize(floats, F32, (2, 2))
    assert values.dtype == np.float32 and values.tolist() == [[1.5, -2.0], [0.0, 3.25]]


def test_unpermute_rows_undoes_llama_cpp_interleaving_per_head():
    # llama.cpp writes head h's rows as (first half, second half) pairs: 0,3,1,4,2,5 for 6 rows
    stored = np.array([0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11], dtype=np.float32)[:, None] * [1.0, 10.0]
    restored = unpermute_rows(stored, n_head=2)
    assert restored[:, 0].tolist() == list(range(12))
    assert restored[:, 1].tolist() == [10.0 * i for i in range(12)]
    assert unpermute_rows(np.arange(4.0)[:, None], 1)[:, 0].tolist() == [0.0, 2.0, 1.0, 3.0]
    with pytest.raises(GGUFError, match="5 rows"):
        unpermute_rows(np.zeros((5, 1)), 1)


def test_llama_names():
    assert llama_hf_name("token_embd.weight") == "model.embed_tokens.weight"
    assert llama_hf_name("blk.12.attn_k.weight") == "model.layers.12.self_attn.k_proj.weight"
    assert llama_hf_name("blk.0.ffn_norm.weight") == "model.layers.0.post_attention_layernorm.weight"
    assert llama_hf_name("blk.0.ffn_down.weight") == "model.layers.0.mlp.down_proj.weight"
    assert llama_hf_name("blk.0.mystery.weight") is None


def test_byte_alphabet_is_a_bijection_onto_printable_characters():
    alphabet = byte_alphabet()
    assert len(set(alphabet.values())) == 256
    assert alphabet[ord("a")] == "a" and alphabet[ord(" ")] == "\u0120" and alphabet[ord("\n")] == "\u010a"
    assert all(character.isprintable() for character in alphabet.values())


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _gguf_bytes(tensor_type: int = Q8_0, alignment: int | None = None) -> bytes:
    """A GGUF v3 file: a string, a string array, a float, maybe an alignment, and one 32-value tensor."""
    kv = [
        _string("general.architecture") + struct.pack("<I", 8) + _string("llama"),
        _string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + _string("a") + _string("Ġb") + _string(""),
        _string("llama.rope.freq_base") + struct.pack("<If", 6, 10000.0),
    ]
    if alignment is not None:
        kv.append(_string("general.alignment") + struct.pack("<II", 4, alignment))
    header = b"GGUF" + struct.pack("<IQQ", 3, 1, len(kv)) + b"".join(kv)
    header += _string("t") + struct.pack("<IQ", 1, 32) + struct.pack("<IQ", tensor_type, 0)
    align = alignment or 32
    header += b"\0" * (-len(header) % align)
    if tensor_type == Q8_0:
        data = struct.pack("<H", HALF_0_5) + struct.pack("<32b", *range(32))
    else:
        data = struct.pack("<32f", *range(32))
    return header + data


@pytest.mark.parametrize("alignment", [None, 64])
def test_reader_on_a_hand_built_file(tmp_path, alignment):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(_gguf_bytes(alignment=alignment))
    gguf = read_gguf(path)
    try:
        assert gguf.version == 3 and gguf.alignment == (alignment or 32)
        assert gguf.data_offset % gguf.alignment == 0
        assert gguf.metadata["general.architecture"] == "llama"
        assert gguf.metadata["tokenizer.ggml.tokens"] == ["a", "Ġb", ""]
        assert gguf.metadata["llama.rope.freq_base"] == 10000.0
        (info,) = gguf.tensors
        assert (info.name, info.shape, info.type_name, info.nbytes) == ("t", (32,), "Q8_0", 34)
        assert gguf.tensor(info).tolist() == [0.5 * i for i in range(32)]
    finally:
        gguf.close()


def test_f32_tensor(tmp_path):
    path = tmp_path / "f32.gguf"
    path.write_bytes(_gguf_bytes(tensor_type=F32))
    gguf = read_gguf(path)
    try:
        assert gguf.tensor(gguf.tensors[0]).tolist() == [float(i) for i in range(32)]
    finally:
        gguf.close()


def test_an_unsupported_tensor_type_is_one_line_naming_the_tensor_and_type(tmp_path):
    path = tmp_path / "q4_0.gguf"
    path.write_bytes(_gguf_bytes(tensor_type=2))
    gguf = read_gguf(path)
    try:
        with pytest.raises(GGUFError) as err:
            gguf.tensor(gguf.tensors[0])
    finally:
        gguf.close()
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "'t'" in message and "Q4_0" in message


@pytest.mark.parametrize("damage", ["bad magic", "truncated data", "truncated metadata", "empty"])
def test_a_malformed_file_is_one_line_naming_the_file(tmp_path, damage):
    data = _gguf_bytes()
    data = {
        "bad magic": b"GGUX" + data[4:],
        "truncated data": data[:-10],
        "truncated metadata": data[:60],
        "empty": b"",
    }[damage]
    path = tmp_path / "broken.gguf"
    path.write_bytes(data)
    with pytest.raises(GGUFError) as err:
        read_gguf(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert ("magic" in message) if damage == "bad magic" else ("truncated" in message or "not a GGUF" in message)


# --- the embedded SmolLM2, against transformers' own conversion -----------------------------


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(f"evenhand_tools_{name}", ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The embedded SmolLM2 converted by evenhand into a fresh cache: (tokenizer dir, model dir)."""
    from evenhand.decoding import models

    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVENHAND_CACHE", str(cache))
        tok_dir, model_dir = models.embedded_tokenizer_dir(), models.embedded_model_dir()
    assert tok_dir.parent == cache and model_dir.parent == cache
    return tok_dir, model_dir


@pytest.fixture(scope="module")
def numbers(converted):
    return _tool("smollm2_reference").reference(*converted)


@pytest.fixture(scope="module")
def expected():
    return json.loads(REFERENCE.read_text())


def test_every_tensor_is_bit_identical_to_transformers_conversion(numbers, expected):
    assert len(expected["tensors"]) == 273  # 272 in the file + the tied lm_head
    assert numbers["tensors"] == expected["tensors"]


def test_config_and_generation_config_match(numbers, expected, converted):
    assert numbers["config"] == expected["config"]
    assert numbers["generation_config"] == expected["generation_config"]
    config = json.loads((converted[1] / "config.json").read_text())
    assert "quantization_config" not in config
    assert all((folder / ".complete").exists() for folder in converted)


@pytest.mark.parametrize("folder", ["tokenizer", "model_folder_tokenizer"])
def test_tokenizer_ids_decodings_and_special_tokens_match(numbers, expected, folder):
    got, want = numbers[folder], expected[folder]
    assert got["special"] == want["special"] == {
        "bos": ["<|im_start|>", 1], "eos": ["<|im_end|>", 2], "unk": ["<|endoftext|>", 0], "pad": ["<|im_end|>", 2],
    }
    assert got["added_tokens"] == want["added_tokens"]
    assert got["all_special_ids"] == want["all_special_ids"]
    assert got["vocab_size"] == want["vocab_size"] == 49152
    assert got["chat"] == want["chat"]
    assert len(want["texts"]) == 20
    for mine, theirs in zip(got["texts"], want["texts"], strict=True):
        assert mine == theirs, mine["text"]
        assert mine["decoded"] == mine["text"]  # byte-level BPE: every text round-trips
