"""Reading a llama GGUF file into a Hugging Face folder: weights, config and tokenizer.

A minimal reader of the GGUF format (v2 and v3, little-endian): the header, the key-value
metadata (string arrays such as the 49,152 tokens and 48,900 merges of SmolLM2 parsed in one
pass), the tensor infos and the aligned data section, read through one memory map. Tensors
of type F32, F16, Q8_0 and Q4_1 are de-quantized to float32 with vectorized numpy; any
other type is refused with one line naming the tensor and the type.

For the llama architecture it gives what transformers' own GGUF loader builds, without its
per-field parsing: the Hugging Face state dict (llama.cpp's names mapped back, and the
row permutation llama.cpp applies to the query and key projections undone), a
``LlamaConfig`` from the metadata, and a byte-level BPE tokenizer from the vocabulary and
merges (``tokenizer.ggml.model == "gpt2"``), with the file's control tokens added as
special tokens, its chat template, and bos/eos/unk/pad from its token ids.

    gguf = read_gguf(path)
    state = llama_state_dict(gguf)            # {"model.layers.0.self_attn.q_proj.weight": ndarray, ...}
    config = llama_config(gguf)               # transformers.LlamaConfig
    tokenizer = gguf_tokenizer(gguf)          # transformers.PreTrainedTokenizerFast
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# GGUF metadata value types (the spec's numbering)
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL = range(8)
_STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = 8, 9, 10, 11, 12

#: value type -> (struct format, numpy dtype) of the fixed-size scalar types
_SCALARS: dict[int, tuple[str, str]] = {
    _UINT8: ("<B", "<u1"), _INT8: ("<b", "<i1"), _UINT16: ("<H", "<u2"), _INT16: ("<h", "<i2"),
    _UINT32: ("<I", "<u4"), _INT32: ("<i", "<i4"), _FLOAT32: ("<f", "<f4"), _BOOL: ("<?", "<u1"),
    _UINT64: ("<Q", "<u8"), _INT64: ("<q", "<i8"), _FLOAT64: ("<d", "<f8"),
}

# ggml tensor types read here
F32, F16, Q4_1, Q8_0 = 0, 1, 3, 8
#: ggml type -> (elements per block, bytes per block)
_BLOCKS: dict[int, tuple[int, int]] = {F32: (1, 4), F16: (1, 2), Q4_1: (32, 20), Q8_0: (32, 34)}
_TYPE_NAMES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS",
    17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
    23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16",
}

#: ``tokenizer.ggml.token_type`` of a control token (``<|im_start|>``): added as special
CONTROL_TOKEN = 3


class GGUFError(ValueError):
    """A GGUF file this reader cannot use; the message is one line naming the file."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the file: name, numpy shape (ggml's dimensions reversed), type, byte span."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int  # absolute, from the start of the file
    nbytes: int

    @property
    def type_name(self) -> str:
        return _type_name(self.ggml_type)


@dataclass
class GGUFFile:
    """A parsed GGUF file: metadata, tensor infos, and the memory map holding the data."""

    path: Path
    version: int
    metadata: dict[str, Any]
    tensors: list[TensorInfo]
    alignment: int
    data_offset: int
    buffer: Any = field(repr=False)

    def tensor(self, info: TensorInfo) -> np.ndarray:
        """The tensor ``info`` de-quantized to a float32 array of shape ``info.shape``."""
        if info.ggml_type not in _BLOCKS:
            raise GGUFError(f"{self.path}: {_unsupported(info.name, info.ggml_type)}")
        raw = np.frombuffer(self.buffer, dtype=np.uint8, count=info.nbytes, offset=info.offset)
        return dequantize(raw, info.ggml_type, info.shape, info.name)

    def close(self) -> None:
        """Release the memory map (arrays returned by ``tensor`` are copies and stay valid)."""
        self.buffer.close()


class _Cursor:
    """Little-endian reads from a buffer, each failing with ``GGUFError`` when it runs past the end."""

    def __init__(self, buffer: Any, path: Path) -> None:
        self.buffer, self.path, self.pos, self.size = buffer, path, 0, len(buffer)

    def _need(self, count: int, what: str) -> None:
        if count < 0 or self.pos + count > self.size:
            raise GGUFError(f"{self.path}: truncated GGUF file (ends inside {what} at byte {self.pos}); "
                            "re-download or reinstall it")

    def scalar(self, value_type: int, what: str) -> Any:
        fmt = _SCALARS[value_type][0]
        size = struct.calcsize(fmt)
        self._need(size, what)
        (value,) = struct.unpack_from(fmt, self.buffer, self.pos)
        self.pos += size
        return value

    def string(self, what: str) -> str:
        length = self.scalar(_UINT64, what)
        self._need(length, what)
        start, self.pos = self.pos, self.pos + length
        return bytes(self.buffer[start:self.pos]).decode("utf-8", errors="replace")

    def strings(self, count: int, what: str) -> list[str]:
        """``count`` length-prefixed strings in a row, in one tight loop (the whole SmolLM2 header: under 0.1 s)."""
        out: list[str] = []
        unpack, buffer, pos, size = struct.unpack_from, self.buffer, self.pos, self.size
        for _ in range(count):
            if pos + 8 > size:
                self.pos = pos
                self._need(8, what)
            (length,) = unpack("<Q", buffer, pos)
            pos += 8
            if pos + length > size:
                self.pos = pos
                self._need(length, what)
            out.append(str(buffer[pos:pos + length], "utf-8", "replace"))
            pos += length
        self.pos = pos
        return out

    def array(self, what: str) -> Any:
        item_type = self.scalar(_UINT32, what)
        count = self.scalar(_UINT64, what)
        if item_type == _STRING:
            return self.strings(count, what)
        if item_type == _ARRAY:
            return [self.array(what) for _ in range(count)]
        if item_type not in _SCALARS:
            raise GGUFError(f"{self.path}: unknown GGUF array type {item_type} in {what}")
        dtype = np.dtype(_SCALARS[item_type][1])
        self._need(count * dtype.itemsize, what)
        values = np.frombuffer(self.buffer, dtype=dtype, count=count, offset=self.pos).copy()
        self.pos += count * dtype.itemsize
        return values.astype(bool).tolist() if item_type == _BOOL else values.tolist()

    def value(self, value_type: int, what: str) -> Any:
        if value_type == _STRING:
            return self.string(what)
        if value_type == _ARRAY:
            return self.array(what)
        if value_type not in _SCALARS:
            raise GGUFError(f"{self.path}: unknown GGUF value type {value_type} in {what}")
        return self.scalar(value_type, what)


def read_gguf(path: str | Path) -> GGUFFile:
    """Parse the header, metadata and tensor infos of GGUF file ``path`` (data stays memory-mapped).

    Raises ``GGUFError`` (one line naming the file) on a bad magic, an unsupported version,
    a truncated file or a tensor that lies outside it.
    """
    path = Path(path)
    with open(path, "rb") as handle:
        try:
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError as err:  # an empty file cannot be mapped
            raise GGUFError(f"{path}: not a GGUF file ({err}); re-download or reinstall it") from None
    try:
        return _parse(buffer, path)
    except BaseException:
        buffer.close()
        raise


def _parse(buffer: Any, path: Path) -> GGUFFile:
    if buffer[:4] != MAGIC:
        raise GGUFError(f"{path}: not a GGUF file (magic {bytes(buffer[:4])!r}, expected {MAGIC!r}); "
                        "re-download or reinstall it")
    cursor = _Cursor(buffer, path)
    cursor.pos = 4
    version = cursor.scalar(_UINT32, "the header")
    if version not in (2, 3):
        raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
    tensor_count = cursor.scalar(_UINT64, "the header")
    kv_count = cursor.scalar(_UINT64, "the header")
    metadata: dict[str, Any] = {}
    for index in range(kv_count):
        key = cursor.string(f"metadata key {index}")
        value_type = cursor.scalar(_UINT32, f"metadata {key!r}")
        metadata[key] = cursor.value(value_type, f"metadata {key!r}")
    raw_infos = []
    for index in range(tensor_count):
        name = cursor.string(f"tensor info {index}")
        n_dims = cursor.scalar(_UINT32, f"tensor info {name!r}")
        dims = [cursor.scalar(_UINT64, f"tensor info {name!r}") for _ in range(n_dims)]
        ggml_type = cursor.scalar(_UINT32, f"tensor info {name!r}")
        offset = cursor.scalar(_UINT64, f"tensor info {name!r}")
        raw_infos.append((name, tuple(reversed(dims)), ggml_type, offset))
    alignment = int(metadata.get("general.alignment", DEFAULT_ALIGNMENT))
    if alignment <= 0:
        raise GGUFError(f"{path}: general.alignment {alignment} must be positive")
    data_offset = -(-cursor.pos // alignment) * alignment
    tensors = []
    for name, shape, ggml_type, offset in raw_infos:
        start = data_offset + offset
        if ggml_type in _BLOCKS and int(np.prod(shape, dtype=np.int64)) % _BLOCKS[ggml_type][0]:
            raise GGUFError(f"{path}: tensor {name!r} of shape {shape} is not whole {_type_name(ggml_type)} blocks")
        nbytes = _tensor_nbytes(shape, ggml_type)
        if nbytes is not None and start + nbytes > len(buffer):
            raise GGUFError(f"{path}: truncated GGUF file (tensor {name!r} ends at byte {start + nbytes}, "
                            f"the file has {len(buffer)}); re-download or reinstall it")
        tensors.append(TensorInfo(name, shape, ggml_type, start, nbytes or 0))
    return GGUFFile(path, version, metadata, tensors, alignment, data_offset, buffer)


def _tensor_nbytes(shape: tuple[int, ...], ggml_type: int) -> int | None:
    """Bytes of a tensor of ``shape`` and ``ggml_type``, or None for a type not read here."""
    if ggml_type not in _BLOCKS:
        return None
    per_block, block_bytes = _BLOCKS[ggml_type]
    count = int(np.prod(shape, dtype=np.int64))
    return count // per_block * block_bytes


def _type_name(ggml_type: int) -> str:
    return _TYPE_NAMES.get(ggml_type, f"type {ggml_type}")


def _unsupported(name: str, ggml_type: int) -> GGUFError:
    return GGUFError(f"tensor {name!r} has GGUF type {_type_name(ggml_type)}; only F32, F16, Q8_0 and Q4_1 are read")


def dequantize(raw: np.ndarray, ggml_type: int, shape: tuple[int, ...], name: str = "tensor") -> np.ndarray:
    """float32 array of ``shape`` from the bytes ``raw`` of one tensor of ``ggml_type``.

    Q8_0: blocks of 32 values, a float16 scale ``d`` and 32 int8 ``q``: ``d * q``.
    Q4_1: blocks of 32 values, float16 ``d`` and ``m`` and 16 bytes whose low nibbles are
    values 0-15 and high nibbles values 16-31: ``d * q + m``.
    """
    count = int(np.prod(shape, dtype=np.int64))
    if ggml_type == F32:
        values = raw.view("<f4").astype(np.float32)
    elif ggml_type == F16:
        values = raw.view("<f2").astype(np.float32)
    elif ggml_type == Q8_0:
        blocks = raw.reshape(-1, 34)
        scale = blocks[:, :2].copy().view("<f2").astype(np.float32)
        values = scale * blocks[:, 2:].view(np.int8).astype(np.float32)
    elif ggml_type == Q4_1:
        blocks = raw.reshape(-1, 20)
        scale = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
        low = blocks[:, 2:4].copy().view("<f2").astype(np.float32)
        packed = blocks[:, 4:]
        nibbles = np.concatenate([packed & 0x0F, packed >> 4], axis=1).astype(np.float32)
        values = scale * nibbles + low
    else:
        raise _unsupported(name, ggml_type)
    if values.size != count:
        raise GGUFError(f"tensor {name!r}: {values.size} values for shape {shape}")
    return values.reshape(shape)


# --- llama: names, the q/k permutation, config -------------------------------------------

_LLAMA_GLOBAL = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
_LLAMA_BLOCK = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_BLOCK_NAME = re.compile(r"blk\.(\d+)\.(\w+)\.(weight|bias)")
#: tensors llama.cpp writes that have no Hugging Face counterpart (precomputed rope factors)
_LLAMA_SKIPPED = frozenset({"rope_freqs.weight"})


def llama_hf_name(gguf_name: str) -> str | None:
    """The Hugging Face llama name of GGUF tensor ``gguf_name``; None for an unknown name."""
    if gguf_name in _LLAMA_GLOBAL:
        return _LLAMA_GLOBAL[gguf_name]
    match = _BLOCK_NAME.fullmatch(gguf_name)
    if match is None or match.group(2) not in _LLAMA_BLOCK:
        return None
    layer, part, kind = match.groups()
    return f"model.layers.{layer}.{_LLAMA_BLOCK[part]}.{kind}"


def unpermute_rows(weight: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's query/key permutation: within each head, interleaved rotary halves back to two halves.

    llama.cpp stores row ``h*D + 2*i + j`` (head ``h``, ``D`` rows per head, ``j`` in 0/1) from
    Hugging Face row ``h*D + j*D/2 + i``; this maps it back.
    """
    rows = weight.shape[0]
    if rows % (2 * n_head):
        raise GGUFError(f"{rows} rows cannot be split into {n_head} heads of rotary pairs")
    half = rows // n_head // 2
    split = weight.reshape(n_head, half, 2, *weight.shape[1:])
    return np.ascontiguousarray(split.swapaxes(1, 2)).reshape(weight.shape)


def _require(gguf: GGUFFile, key: str) -> Any:
    if key not in gguf.metadata:
        raise GGUFError(f"{gguf.path}: metadata {key!r} is missing")
    return gguf.metadata[key]


def _architecture(gguf: GGUFFile) -> str:
    architecture = _require(gguf, "general.architecture")
    if architecture != "llama":
        raise GGUFError(f"{gguf.path}: architecture {architecture!r} is not supported (only llama)")
    return architecture


def llama_tensors(gguf: GGUFFile) -> Iterator[tuple[str, np.ndarray]]:
    """``(hf_name, float32 array)`` for every tensor of a llama GGUF, in file order."""
    _architecture(gguf)
    n_head = int(_require(gguf, "llama.attention.head_count"))
    n_kv_head = int(gguf.metadata.get("llama.attention.head_count_kv", n_head))
    for info in gguf.tensors:
        if info.name in _LLAMA_SKIPPED:
            continue
        hf_name = llama_hf_name(info.name)
        if hf_name is None:
            raise GGUFError(f"{gguf.path}: tensor {info.name!r} has no llama counterpart")
        weight = gguf.tensor(info)
        if ".attn_q." in info.name:
            weight = unpermute_rows(weight, n_head)
        elif ".attn_k." in info.name:
            weight = unpermute_rows(weight, n_kv_head)
        yield hf_name, weight


def llama_state_dict(gguf: GGUFFile) -> dict[str, np.ndarray]:
    """The Hugging Face state dict (float32) of a llama GGUF; no ``lm_head`` when it is tied."""
    return dict(llama_tensors(gguf))


#: llama metadata key (after ``llama.``) -> LlamaConfig field
_LLAMA_CONFIG = {
    "context_length": "max_position_embeddings",
    "block_count": "num_hidden_layers",
    "feed_forward_length": "intermediate_size",
    "embedding_length": "hidden_size",
    "rope.dimension_count": "head_dim",
    "rope.freq_base": "rope_theta",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "vocab_size": "vocab_size",
}
#: tokenizer metadata key -> config field
_TOKEN_IDS = {
    "tokenizer.ggml.bos_token_id": "bos_token_id",
    "tokenizer.ggml.eos_token_id": "eos_token_id",
    "tokenizer.ggml.unknown_token_id": "unk_token_id",
    "tokenizer.ggml.padding_token_id": "pad_token_id",
}


def llama_config_kwargs(gguf: GGUFFile) -> dict[str, Any]:
    """The ``LlamaConfig`` arguments the metadata gives (what transformers' GGUF loader reads).

    The embeddings are tied when the file has no ``output.weight``.
    """
    architecture = _architecture(gguf)
    kwargs: dict[str, Any] = {"model_type": architecture}
    if "general.name" in gguf.metadata:
        kwargs["_model_name_or_path"] = gguf.metadata["general.name"]
    for key, field_name in _LLAMA_CONFIG.items():
        if f"llama.{key}" in gguf.metadata:
            kwargs[field_name] = gguf.metadata[f"llama.{key}"]
    for key, field_name in _TOKEN_IDS.items():
        if key in gguf.metadata:
            kwargs[field_name] = gguf.metadata[key]
    kwargs["tie_word_embeddings"] = all(info.name != "output.weight" for info in gguf.tensors)
    if "vocab_size" not in kwargs and "tokenizer.ggml.tokens" in gguf.metadata:
        kwargs["vocab_size"] = len(gguf.metadata["tokenizer.ggml.tokens"])
    return kwargs


def llama_config(gguf: GGUFFile) -> Any:
    """A float32 ``transformers.LlamaConfig`` of a llama GGUF."""
    from transformers import LlamaConfig

    kwargs = llama_config_kwargs(gguf)
    kwargs.pop("model_type")
    config = LlamaConfig(**kwargs)
    config.architectures = ["LlamaForCausalLM"]
    config.dtype = "float32"
    return config


# --- tokenizer ---------------------------------------------------------------------------


def byte_alphabet() -> dict[int, str]:
    """GPT-2's byte-level alphabet: each byte as a printable character.

    Printable Latin-1 bytes (``!``-``~``, ``¡``-``¬``, ``®``-``ÿ``) stand for themselves; the
    other 68 map, in byte order, to U+0100 onwards.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    alphabet = {byte: chr(byte) for byte in printable}
    extra = 0
    for byte in range(256):
        if byte not in alphabet:
            alphabet[byte] = chr(256 + extra)
            extra += 1
    return alphabet


def _token(tokens: list[str], metadata: dict[str, Any], key: str) -> str | None:
    token_id = metadata.get(key)
    return tokens[token_id] if token_id is not None and 0 <= token_id < len(tokens) else None


def gguf_tokenizer(gguf: GGUFFile) -> Any:
    """The byte-level BPE tokenizer a ``gpt2`` GGUF vocabulary describes, as ``PreTrainedTokenizerFast``.

    Vocabulary and merges from the file; GPT-2's byte-level pre-tokenizer (its own regex, no
    prefix space) and decoder; no bos/eos added around a text; the tokens typed control (and
    spelled in the byte alphabet) added whole as special tokens; bos/eos/unk/pad and the chat
    template from the metadata.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    metadata = gguf.metadata
    kind = _require(gguf, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise GGUFError(f"{gguf.path}: tokenizer.ggml.model {kind!r} is not supported (only gpt2, byte-level BPE)")
    for flag in ("tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"):
        if metadata.get(flag):
            raise GGUFError(f"{gguf.path}: {flag} is true; only tokenizers that add no bos/eos are supported")
    tokens: list[str] = _require(gguf, "tokenizer.ggml.tokens")
    merges = [tuple(merge.split(" ", 1)) for merge in _require(gguf, "tokenizer.ggml.merges")]
    vocab = {token: index for index, token in enumerate(tokens)}
    backend = Tokenizer(models.BPE(
        vocab=vocab, merges=merges, dropout=None, unk_token=None, continuing_subword_prefix="",
        end_of_word_suffix="", fuse_unk=False, byte_fallback=False,
    ))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    backend.decoder = decoders.ByteLevel()  # its defaults: add_prefix_space, trim_offsets, use_regex all on
    backend.post_processor = processors.TemplateProcessing(single="$A:0", pair="$A:0 $B:1", special_tokens=[])
    spelled = set(byte_alphabet().values())
    types = metadata.get("tokenizer.ggml.token_type") or []
    control = [
        AddedToken(token, normalized=False, special=True)
        for token, token_type in zip(tokens, types, strict=False)
        if token_type == CONTROL_TOKEN and set(token) <= spelled
    ]
    backend.add_special_tokens(control)
    special = {field_name.removesuffix("_id"): _token(tokens, metadata, key) for key, field_name in _TOKEN_IDS.items()}
    kwargs: dict[str, Any] = {name: token for name, token in special.items() if token is not None}
    if "tokenizer.chat_template" in metadata:
        kwargs["chat_template"] = metadata["tokenizer.chat_template"]
    return PreTrainedTokenizerFast(tokenizer_object=backend, **kwargs)
