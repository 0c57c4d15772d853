"""A text encoder's token and sentence embeddings: the meaning backend of FairSumm's
BERTScore variant (``fairsumm-bertscore``) and of meaning-level fair decoding.

``TextEncoder(model)`` loads any transformers encoder (``AutoModel``): a local
folder or cached HF id (``roberta-large``, FairSumm's BERTScore encoder), or
``minilm`` (the embedded all-MiniLM-L6-v2, the named offline fallback).

* :meth:`TextEncoder.token_states`: per text, the unit-norm hidden states of its
  tokens at ``layer`` (bert_score: the text stripped, special tokens added,
  truncated to ``max_length``; roberta-large's default layer is 17) and a mask of
  its special tokens.
* :meth:`TextEncoder.sentence_embeddings`: unit-norm mean-pooled last hidden
  states (sentence-transformers' pooling of MiniLM; the alignment fallback's).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

MINILM_ALIASES = ("minilm", "fallback", "all-minilm-l6-v2")
#: Name of the embedded encoder in outputs (raw cosine, no bert_score baseline rescale).
MINILM_NAME = "minilm-fallback"
#: bert_score's default layer for encoders FairSumm or users are likely to name.
DEFAULT_LAYERS = {"roberta-large": 17, "roberta-base": 10, "bert-base-uncased": 9, "microsoft/deberta-xlarge-mnli": 40}


def default_layer(model: str) -> int | None:
    """bert_score's default layer for an encoder named by its HF id or by a local folder of
    that name (``/models/roberta-large``); None when bert_score names no default for it."""
    name = model.rstrip("/").split("/")[-1]
    for key, layer in DEFAULT_LAYERS.items():
        if model == key or name == key.split("/")[-1]:
            return layer
    return None


class TextEncoder:
    """Token and sentence embeddings of one encoder (see the module docstring).

    Args:
        model: ``minilm`` (embedded all-MiniLM-L6-v2), or a local folder / cached HF id.
        layer: hidden layer for token states (None: bert_score's default for known
            names, else the last layer).
        device: torch device (default: cuda when available).
        max_length: tokens per text (None: the model's positions; MiniLM: 256 for sentences).
    """

    def __init__(
        self, model: str = "minilm", layer: int | None = None, device: str | None = None,
        max_length: int | None = None,
    ) -> None:
        from transformers import AutoModel, AutoTokenizer

        from ..models import default_device, minilm_path

        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"`model` must be 'minilm' or an encoder folder/HF id, got {model!r}")
        embedded = model in MINILM_ALIASES
        path = str(minilm_path()) if embedded else model
        self.name = MINILM_NAME if embedded else model
        try:
            self.model = AutoModel.from_pretrained(path)
            self.tokenizer = AutoTokenizer.from_pretrained(path)
        except (ValueError, OSError, KeyError) as err:  # a folder that holds no encoder transformers knows
            from ...evaluation.errors import DataError

            raise DataError(
                f"--fair-meaning-encoder {model}: not an encoder model transformers can load "
                f"({' '.join(str(err).split())[:160]}); give 'minilm' or a sentence-encoder folder"
            ) from None
        self.device = device or default_device()
        self.model.to(self.device).eval()
        config = self.model.config
        n_layers = int(getattr(config, "num_hidden_layers", 0) or 0)
        known = default_layer(model)
        self.layer = layer if layer is not None else (n_layers if known is None else known)
        if not 0 <= self.layer <= n_layers:
            raise ValueError(f"`layer` must be in [0, {n_layers}] for {model}, got {self.layer}")
        positions = int(getattr(config, "max_position_embeddings", 512) or 512)
        if getattr(config, "model_type", "") in ("roberta", "xlm-roberta"):
            positions -= 2  # the padding offset of RoBERTa's position ids
        self.max_length = min(max_length or positions, positions)

    @property
    def hidden_size(self) -> int:
        """Width of the embeddings."""
        return int(self.model.config.hidden_size)

    def _encode(self, texts: Sequence[str], max_length: int) -> list[list[int]]:
        return self.tokenizer(
            [t.strip() for t in texts], truncation=True, max_length=max_length
        )["input_ids"]

    def _states(self, ids: list[list[int]], batch_size: int, layer: int) -> list[Any]:
        import torch

        out: list[Any] = [None] * len(ids)
        for rows, _, model_out in _length_sorted_forwards(self, ids, batch_size, output_hidden_states=True):
            hidden = torch.nn.functional.normalize(model_out.hidden_states[layer].float(), dim=-1).cpu()
            for j, i in enumerate(rows):
                out[i] = hidden[j, : len(ids[i])]
        return out

    def token_states(self, texts: Sequence[str], batch_size: int = 16) -> list[tuple[Any, Any]]:
        """Per text ``(states, special)``: (n, h) unit-norm states at ``layer`` and an (n,) bool
        mask of special tokens (CLS/SEP...)."""
        import torch

        ids = self._encode(texts, self.max_length)
        special = set(self.tokenizer.all_special_ids)
        states = self._states(ids, batch_size, self.layer) if ids else []
        return [(s, torch.tensor([t in special for t in row])) for s, row in zip(states, ids)]

    def sentence_embeddings(self, texts: Sequence[str], batch_size: int = 32, max_length: int = 256) -> Any:
        """(len(texts), h) unit-norm mean-pooled last hidden states (special tokens included,
        as sentence-transformers pools)."""
        import torch

        if not texts:
            return torch.zeros(0, self.hidden_size)
        return _mean_pooled(self, self._encode(texts, min(max_length, self.max_length)), batch_size)


def _mean_pooled(encoder: TextEncoder, ids: list[list[int]], batch_size: int) -> Any:
    """Mean-pooled, unit-norm last hidden states (pooling the raw states, not normalized ones)."""
    import torch

    out = torch.zeros(len(ids), encoder.hidden_size)
    for rows, enc, model_out in _length_sorted_forwards(encoder, ids, batch_size):
        hidden = model_out.last_hidden_state.float()
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        out[rows] = torch.nn.functional.normalize(pooled, dim=-1).cpu()
    return out


def _length_sorted_forwards(
    encoder: TextEncoder, ids: list[list[int]], batch_size: int, **kwargs: Any
) -> Iterator[tuple[list[int], Any, Any]]:
    """``(rows, enc, output)`` per batch of texts of similar length (rows index ``ids``)."""
    import torch

    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for lo in range(0, len(order), batch_size):
        rows = order[lo : lo + batch_size]
        enc = encoder.tokenizer.pad(
            {"input_ids": [ids[i] for i in rows]}, padding=True, return_tensors="pt"
        ).to(encoder.device)
        with torch.no_grad():
            yield rows, enc, encoder.model(**enc, **kwargs)


_LOADED: dict[tuple[Any, ...], TextEncoder] = {}


def load_encoder(
    model: str = "minilm", layer: int | None = None, device: str | None = None, max_length: int | None = None
) -> TextEncoder:
    """The ``TextEncoder`` for these arguments, loaded once per process."""
    key = (model, layer, device, max_length)
    if key not in _LOADED:
        _LOADED[key] = TextEncoder(model, layer, device, max_length)
    return _LOADED[key]
