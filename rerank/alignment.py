"""Alignment backends: p(premise supports hypothesis) for lists of text pairs.

Three backends share one method, ``pair_probs(premises, hypotheses)``:

- ``AlignScoreCheckpoint``: an AlignScore ``.ckpt`` (Zha et al. 2023): a RoBERTa
  encoder whose pooled output feeds a 3-way head (``tri_layer``); the aligned
  probability is softmax(tri_layer(pooler_output))[0]. The checkpoint's state
  dict is read with ``torch.load(weights_only=True)`` (or safetensors) and
  loaded into ``AutoModel.from_config`` — no pytorch-lightning, no pickle.
- ``NliClassifier``: any sequence-classification NLI model; p = softmax(logits)
  at the label whose ``config.id2label`` name starts with "entail".
- ``CheckerBackend`` (``model="checker"``, or ``model`` a folder made by ``evenhand
  build-checker``): evenhand's own trained model: that folder's, else the
  shipped entailment model (``evenhand.rerank.entail``, a MiniLM cross-encoder
  trained on public labelled pairs; named ``evenhand-entail <sha8> (...)``)
  when the package has one, else the issue-33 checker (``evenhand.rerank.checker``,
  trained on synthetic corruptions of source texts, shipped built; named
  ``evenhand-checker <key> (...)``): p = its p(premise supports claim). It reads
  the pair jointly, so it sees negation, polarity and quantity that cosine
  similarity misses.
- ``MiniLMFallback``: offline stand-in on the embedded all-MiniLM-L6-v2:
  p = max(0, cos(e(premise), e(hypothesis))) with mean-pooled, normalized
  embeddings. It measures similarity, not entailment; every output that uses
  it is named ``alignscore-minilm-fallback``.

Pairs are scored in batches of ``batch_size``; cross-encoders pad each batch to
its longest pair (AlignScore pads to 512: same scores, less work).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..evaluation.scoring.scorer import ScorerConfig
from .batching import length_batches

FALLBACK_NAME = "alignscore-minilm-fallback"
FALLBACK_ALIASES = ("fallback", "minilm", "all-minilm-l6-v2", FALLBACK_NAME)
#: ``model`` values that select evenhand's own checker (``CheckerBackend``).
CHECKER_ALIASES = ("checker", "evenhand-checker")
_CHECKPOINT_SUFFIXES = (".ckpt", ".pt", ".pth", ".bin", ".safetensors")


class AlignBackend:
    """p(premise supports hypothesis) for aligned lists of pairs."""

    name: str = "backend"
    #: Pairs a backend remembers (then it starts afresh): one summary's coverage is read by Equal Coverage,
    #: the floors and the demo's groups line, and a pair already read is not run through the model again.
    MEMO_PAIRS = 50_000

    def pair_probs(
        self, premises: Sequence[str], hypotheses: Sequence[str], batch_size: int = 16
    ) -> list[float]:
        """One probability in [0, 1] per (premise, hypothesis) pair; each distinct pair not yet read
        goes to the model once (in one batched call)."""
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        memo: dict[tuple[str, str], float] = self.__dict__.setdefault("_memo", {})
        pairs = list(zip(premises, hypotheses))
        todo = [pair for pair in dict.fromkeys(pairs) if pair not in memo]
        if todo:
            if len(memo) + len(todo) > self.MEMO_PAIRS:
                memo.clear()
            probs = self._pair_probs([p for p, _ in todo], [h for _, h in todo], batch_size)
            memo.update(zip(todo, probs))
        return [memo[pair] for pair in pairs]

    def _pair_probs(self, premises: list[str], hypotheses: list[str], batch_size: int) -> list[float]:
        """``pair_probs`` on lists of equal length (what backends implement)."""
        raise NotImplementedError


def _device(device: str | None) -> str:
    from ..decoding.models import default_device

    return device or default_device()


class _CrossEncoder(AlignBackend):
    """Shared batching for backends that read a (premise, hypothesis) pair jointly."""

    tokenizer: Any
    max_length: int
    device: str

    def _probs(self, encoded: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _uses_token_types(self) -> bool:
        return True

    def _pair_probs(self, premises: list[str], hypotheses: list[str], batch_size: int) -> list[float]:
        import torch

        out = [0.0] * len(premises)
        lengths = [len(p) + len(h) for p, h in zip(premises, hypotheses)]
        for rows in length_batches(lengths, batch_size):
            enc = self.tokenizer(
                [premises[i] for i in rows], [hypotheses[i] for i in rows],
                truncation="only_first", max_length=self.max_length,
                padding=True, return_tensors="pt",
            )
            if not self._uses_token_types():
                enc.pop("token_type_ids", None)
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.no_grad():
                for i, p in zip(rows, self._probs(enc).float().cpu().tolist()):
                    out[i] = p
        return out


def read_state_dict(path: str | Path) -> dict[str, Any]:
    """Tensors of a checkpoint file, without unpickling arbitrary objects.

    ``.safetensors`` files are read with safetensors; others with
    ``torch.load(weights_only=True)``. A Lightning checkpoint's ``state_dict``
    entry is unwrapped.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such checkpoint file")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state: Any = load_file(str(path))
    else:
        import pickle

        import torch

        from ..evaluation.errors import DataError

        with path.open("rb") as f:
            magic = f.read(4)
        if magic[:2] != b"PK" and magic[:1] != b"\x80":  # neither torch's zip format nor a pickle
            raise DataError(
                f"{path}: not a torch checkpoint (no zip or pickle header); give an AlignScore .ckpt, "
                "a .pt/.bin state dict or a .safetensors file"
            )
        import warnings

        try:
            with warnings.catch_warnings():  # its pickle-protocol notice would precede our one line
                warnings.simplefilter("ignore")
                state = torch.load(str(path), map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError, IndexError, KeyError) as err:
            # what torch.load's restricted unpickler raises on a file it may not or cannot read
            reason = " ".join(str(err).split())
            reason = reason if len(reason) <= 160 else reason[:157] + "..."
            raise DataError(
                f"{path}: cannot be read with torch.load(weights_only=True) ({reason}); "
                "save its tensors alone, e.g. torch.save(ckpt['state_dict'], 'align.pt') "
                "or safetensors, in a trusted environment"
            ) from None
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        from ..evaluation.errors import DataError

        raise DataError(f"{path}: expected a dict of tensors, got {type(state).__name__}")
    return state


class AlignScoreCheckpoint(_CrossEncoder):
    """An AlignScore checkpoint: RoBERTa (or BERT) encoder + 3-way alignment head.

    Args:
        checkpoint: the ``.ckpt`` (or a ``.pt``/``.safetensors`` of its state dict).
        base_model: a local folder (or cached HF id) with the encoder's config and
            tokenizer: ``roberta-large`` for AlignScore-large, ``roberta-base`` for -base.
        device: torch device (default: cuda when available).
        max_length: tokens per pair (AlignScore: 512).
    """

    def __init__(
        self, checkpoint: str | Path, base_model: str = "roberta-large",
        device: str | None = None, max_length: int = 512,
    ) -> None:
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        state = read_state_dict(checkpoint)
        base = {k[len("base_model."):]: v for k, v in state.items() if k.startswith("base_model.")}
        head = {k[len("tri_layer."):]: v for k, v in state.items() if k.startswith("tri_layer.")}
        if not base or set(head) != {"weight", "bias"}:
            raise ValueError(
                f"{checkpoint}: not an AlignScore checkpoint (needs `base_model.*` and "
                f"`tri_layer.weight`/`tri_layer.bias` tensors; found e.g. {sorted(state)[:4]})"
            )
        config = AutoConfig.from_pretrained(base_model)
        self.encoder = AutoModel.from_config(config)
        missing, _ = self.encoder.load_state_dict(base, strict=False)
        missing = [k for k in missing if not k.endswith("position_ids")]
        if missing:
            raise ValueError(
                f"{checkpoint}: encoder weights {missing[:4]} are missing; is `base_model` "
                f"({base_model}) the architecture the checkpoint was trained from?"
            )
        hidden = config.hidden_size
        if tuple(head["weight"].shape) != (3, hidden):
            raise ValueError(
                f"{checkpoint}: `tri_layer.weight` has shape {tuple(head['weight'].shape)}, "
                f"expected (3, {hidden})"
            )
        self.head = torch.nn.Linear(hidden, 3)
        self.head.load_state_dict(head)
        self.device = _device(device)
        self.encoder.to(self.device).eval()
        self.head.to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(base_model)
        self.max_length = max_length
        self.type_vocab = int(getattr(config, "type_vocab_size", 1) or 1)
        self.name = f"alignscore:{Path(checkpoint).name}"

    def _uses_token_types(self) -> bool:
        return self.type_vocab > 1

    def _probs(self, encoded: dict[str, Any]) -> Any:
        pooled = self.encoder(**encoded).pooler_output
        return self.head(pooled).softmax(dim=-1)[:, 0]


def entailment_index(id2label: dict[Any, str]) -> int:
    """The class index whose label starts with "entail" (case-insensitive)."""
    hits = [int(i) for i, label in id2label.items() if str(label).lower().startswith("entail")]
    if len(hits) != 1:
        raise ValueError(
            f"cannot find the entailment class in config.id2label {dict(id2label)}; "
            "use an NLI model whose labels name it (e.g. 'entailment')"
        )
    return hits[0]


class NliClassifier(_CrossEncoder):
    """Any NLI sequence classifier; p = P(entailment).

    Args:
        model: local folder or cached HF id (e.g. ``roberta-large-mnli``).
        device: torch device (default: cuda when available).
        max_length: tokens per pair.
    """

    def __init__(self, model: str, device: str | None = None, max_length: int = 512) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model = AutoModelForSequenceClassification.from_pretrained(model)
        self.index = entailment_index(self.model.config.id2label)
        self.device = _device(device)
        self.model.to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        limit = getattr(self.model.config, "max_position_embeddings", max_length) or max_length
        self.max_length = min(max_length, int(limit))
        self.type_vocab = int(getattr(self.model.config, "type_vocab_size", 1) or 1)
        self.name = f"nli:{model}"

    def _uses_token_types(self) -> bool:
        return self.type_vocab > 1

    def _probs(self, encoded: dict[str, Any]) -> Any:
        return self.model(**encoded).logits.softmax(dim=-1)[:, self.index]


class MiniLMFallback(AlignBackend):
    """Cosine similarity of mean-pooled MiniLM embeddings, clipped at 0 (see module docstring).

    Args:
        model: the sentence-embedding folder (default: the embedded all-MiniLM-L6-v2).
        device: torch device (default: cuda when available).
        max_length: tokens per text (MiniLM was trained on 256).
    """

    name = FALLBACK_NAME

    def __init__(self, model: str | None = None, device: str | None = None, max_length: int = 256):
        from transformers import AutoModel, AutoTokenizer

        from ..decoding.models import minilm_path

        path = model or str(minilm_path())
        self.model = AutoModel.from_pretrained(path)
        self.device = _device(device)
        self.model.to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.max_length = max_length

    def embed(self, texts: Sequence[str], batch_size: int = 16) -> Any:
        """Unit-norm mean-pooled embeddings, shape (len(texts), hidden)."""
        import torch

        if not texts:
            return torch.zeros(0, self.model.config.hidden_size)
        ids = self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]
        out = torch.zeros(len(texts), self.model.config.hidden_size)
        for rows in length_batches([len(i) for i in ids], batch_size):
            enc = self.tokenizer.pad(
                {"input_ids": [ids[i] for i in rows]}, padding=True, return_tensors="pt"
            ).to(self.device)
            with torch.no_grad():
                hidden = self.model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out[rows] = torch.nn.functional.normalize(pooled.float(), dim=-1).cpu()
        return out

    def _pair_probs(self, premises: list[str], hypotheses: list[str], batch_size: int) -> list[float]:
        unique = list(dict.fromkeys([*premises, *hypotheses]))  # embed each text once
        index = {t: i for i, t in enumerate(unique)}
        emb = self.embed(unique, batch_size)
        p = emb[[index[t] for t in premises]]
        h = emb[[index[t] for t in hypotheses]]
        return (p * h).sum(-1).clamp(min=0.0, max=1.0).cpu().tolist()


class CheckerBackend(AlignBackend):
    """evenhand's trained checker as an alignment backend (see module docstring).

    Args:
        folder: a checker folder (``evenhand build-checker``); default: the default
            recipe's (the package's shipped build, or trained on first use when the recipe changed).
        device: torch device (default: cuda when available).
        max_length: tokens per (premise, claim) pair.
    """

    def __init__(self, folder: str | Path | None = None, device: str | None = None, max_length: int = 256):
        self.model = load_trained(folder, device, max_length)
        self.name = checker_backend_name(Path(folder) if folder else None)

    def _pair_probs(self, premises: list[str], hypotheses: list[str], batch_size: int) -> list[float]:
        return self.model.probs(premises, hypotheses, batch_size)


def load_trained(folder: str | Path | None, device: str | None, max_length: int, int8: bool = False) -> Any:
    """evenhand's trained model of ``folder`` (default: the shipped entailment model, else the issue-33
    recipe's checker), loaded once per process; ``int8``: the entailment model's Linear layers quantized."""
    from .checker.model import load_checker
    from .entail.model import has_model, load_model

    if has_model(folder):
        return load_model(folder, _device(device), max_length, int8)
    return load_checker(folder, _device(device), max_length)


def trained_folder_problem(folder: str | Path) -> str | None:
    """Why ``folder`` is not a model evenhand trained (an entailment model or an issue-33 checker), or None."""
    from .checker.model import WEIGHTS as CHECKER_WEIGHTS
    from .entail.model import WEIGHTS as ENTAIL_WEIGHTS

    path = Path(folder).expanduser()
    if not path.is_dir():
        return f"{folder} is not a folder; give a folder made by `evenhand build-checker`"
    if (path / ENTAIL_WEIGHTS).is_file() or ((path / CHECKER_WEIGHTS).is_file() and (path / "checker.json").is_file()):
        return None
    return (f"{folder} holds neither {ENTAIL_WEIGHTS} (an entailment model) nor {CHECKER_WEIGHTS} with checker.json "
            "(an issue-33 checker); give a folder made by `evenhand build-checker`")


def is_trained_folder(model: str) -> bool:
    """Whether the alignment ``model`` names a folder holding a model evenhand trained."""
    return Path(model).expanduser().is_dir() and trained_folder_problem(model) is None


def checker_backend_name(folder: Path | None = None, int8: bool = False) -> str:
    """How every output names the checker backend of ``folder`` (default: the shipped entailment model, else the
    issue-33 recipe's checker); ``int8``: the entailment model quantized."""
    from .entail.model import has_model, model_name

    if has_model(folder):
        return f"{model_name(folder)}{' int8' if int8 else ''} (MiniLM cross-encoder trained by evenhand on labelled pairs)"
    from .checker.model import checker_dir

    return f"evenhand-checker {(folder or checker_dir()).name} (MiniLM cross-encoder trained by evenhand, not NLI)"


_LOADED: dict[tuple[Any, ...], AlignBackend] = {}


def load_backend(
    model: str = "fallback", base_model: str = "roberta-large", device: str | None = None,
    max_length: int = 512,
) -> AlignBackend:
    """The backend for ``model`` (loaded once per process and argument set).

    ``model`` is ``fallback``/``minilm`` (embedded MiniLM), ``checker`` (evenhand's
    trained checker, ``CheckerBackend``; ``base_model`` unused), a folder made by
    ``evenhand build-checker`` (an entailment model or a checker, ``CheckerBackend``), a checkpoint file
    (``.ckpt``/``.pt``/``.bin``/``.safetensors``: AlignScore format, with
    ``base_model`` for the encoder config and tokenizer), or a local folder /
    cached HF id of an NLI sequence classifier.
    """
    key = (model, base_model, device, max_length)
    if key not in _LOADED:
        if model in FALLBACK_ALIASES:
            backend: AlignBackend = MiniLMFallback(device=device)
        elif model in CHECKER_ALIASES:
            backend = CheckerBackend(device=device, max_length=max_length)
        elif is_trained_folder(model):
            backend = CheckerBackend(model, device=device, max_length=max_length)
        elif Path(model).suffix in _CHECKPOINT_SUFFIXES:
            backend = AlignScoreCheckpoint(model, base_model, device, max_length)
        else:
            backend = NliClassifier(model, device, max_length)
        _LOADED[key] = backend
    return _LOADED[key]


@dataclass
class AlignmentConfig(ScorerConfig):
    """Settings every alignment-backed scorer has (``alignscore``, ``equal-coverage``)."""

    model: str = field(default="fallback", metadata={"help": "AlignScore .ckpt file, NLI classifier folder/id, 'checker' (evenhand's trained checker), a folder made by "
                                                                 "`evenhand build-checker` or 'fallback' (MiniLM)."})
    base_model: str = field(default="roberta-large", metadata={"help": "Config+tokenizer folder for a .ckpt (roberta-large or roberta-base)."})
    max_length: int = field(default=512, metadata={"help": "Tokens per (premise, hypothesis) pair."})
    device: str | None = field(default=None, metadata={"help": "cpu, cuda... (default: auto)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_length < 8:
            raise ValueError(f"`max_length` must be an int >= 8, got {self.max_length}")


class AlignmentBackendMixin:
    """For scorers whose config names an alignment ``model``/``base_model``: the lazily
    loaded backend and the model id used in cache keys (``model|base_model``)."""

    _backend: Any = None
    config: Any
    #: ``--align-model``, ``--align-base`` and ``--device`` set these config fields.
    cli_options = {"align_model": "model", "align_base": "base_model", "device": "device"}

    @property
    def backend(self) -> Any:
        """The alignment backend, loaded on first use."""
        if self._backend is None:
            c = self.config
            self._backend = load_backend(c.model, c.base_model, c.device, c.max_length)
        return self._backend

    @property
    def model_id(self) -> str:
        return f"{self.config.model}|{self.config.base_model}"

    @property
    def backend_label(self) -> str:
        """What scores: ``alignscore-minilm-fallback``, ``CKPT (AlignScore on BASE)`` or the NLI model."""
        model = self.config.model
        if model in FALLBACK_ALIASES:
            return FALLBACK_NAME
        if model in CHECKER_ALIASES:
            return checker_backend_name()
        if is_trained_folder(model):
            return checker_backend_name(Path(model))
        if Path(model).suffix in _CHECKPOINT_SUFFIXES:
            return f"{model} (AlignScore on {self.config.base_model})"
        return f"{model} (NLI)"

    def pair_grids(
        self, grids: Sequence[tuple[Sequence[str], Sequence[str]]]
    ) -> list[list[list[float]]]:
        """Per (premises, hypotheses) the matrix ``m[i][j]`` = p(premise i supports hypothesis j).

        The pairs of all grids go to the backend in one ``pair_probs`` call
        (batched by length); with no pair at all the backend is not loaded.
        """
        premises = [p for ps, hs in grids for p in ps for _ in hs]
        hypotheses = [h for ps, hs in grids for _ in ps for h in hs]
        probs = self.backend.pair_probs(premises, hypotheses, self.config.batch_size) if premises else []
        matrices, pos = [], 0
        for ps, hs in grids:
            matrices.append([probs[pos + i * len(hs) : pos + (i + 1) * len(hs)] for i in range(len(ps))])
            pos += len(ps) * len(hs)
        return matrices
