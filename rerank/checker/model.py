"""The checker model: a cross-encoder fine-tuned from the embedded all-MiniLM-L6-v2, built once, cached.

``build_checker`` trains it on ``pairs.build_pairs`` of the training texts
(``corpus.jsonl`` beside this module: source-like review sets and debates
the project wrote for this purpose, distinct from the demo sets; no summary
of any kind) and stores ``model.safetensors`` + ``checker.json`` in
``<evenhand cache>/checker/<key>/``. The key is the SHA-256 of the training
options, the training texts and the base model's content (its weight and
config files), so changing any of them builds a new checker, and the same
ones reuse the cached folder. The folder is written through
``atomic_folder`` under a file lock: it exists whole or not at all, and two
processes never build it twice.

Shipped weights: the package carries the default recipe's build in
``weights/`` (``model.safetensors`` with only the trained top layers and the
head, float32, and ``checker.json`` with the full key). When the key of the
requested build equals the shipped one (same options, corpus and base model
content), ``build_checker`` copies the shipped files into the cache folder
instead of training, so a fresh install scores at once; ``evenhand
build-checker --force --out rerank/checker/weights`` rebuilds them.

Architecture: MiniLM reads "[CLS] premise [SEP] claim [SEP]"; the
mask-weighted mean of its last hidden states feeds a linear layer; p(premise
supports claim) = sigmoid of that logit. Training: binary cross-entropy,
AdamW, linear decay, seeded shuffling; the same seed, texts and thread count
give the same weights. Only the top ``train_layers`` transformer layers and
the head are trained (the embeddings and the lower layers stay frozen and run
without a graph), on one pass of pairs cut to ``max_length`` tokens: the
default build takes well under two minutes on two CPU cores.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

#: Bumped when the training code changes what it builds (part of the cache key).
FORMAT = 2
NAME = "evenhand-checker"
#: The weights file of a checker folder.
WEIGHTS = "model.safetensors"


@dataclass(frozen=True)
class CheckerOptions:
    """How the checker is trained (every field is part of the cache key)."""

    seed: int = field(default=0, metadata={"help": "Seed of the pairs, the shuffling and the head."})
    rounds: int = field(default=2, metadata={"help": "Passes over the corpus building pairs, each with "
                                             "fresh random corruptions."})
    epochs: int = field(default=1, metadata={"help": "Training passes over the pairs."})
    batch_size: int = field(default=16, metadata={"help": "Pairs per training step."})
    learning_rate: float = field(default=4e-4, metadata={"help": "AdamW peak learning rate."})
    max_length: int = field(default=64, metadata={"help": "Tokens per (premise, claim) training pair."})
    train_layers: int = field(default=2, metadata={
        "help": "MiniLM layers trained, counted from the top (the rest and the embeddings stay frozen)."})

    def __post_init__(self) -> None:
        from ...evaluation.data.checks import check_count, check_seed

        check_seed(self.seed)
        for name in ("rounds", "epochs", "batch_size", "max_length", "train_layers"):
            check_count(getattr(self, name), name)
        if not self.learning_rate > 0:
            raise ValueError(f"`learning_rate` must be positive, got {self.learning_rate}")


def corpus_path() -> Path:
    """The shipped training texts (JSONL of examples with ``documents``)."""
    return Path(str(resources.files("evenhand.rerank") / "checker" / "corpus.jsonl"))


def read_corpus(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The training examples of ``path`` (default: the shipped corpus)."""
    from ...evaluation.io.parsing import parse_json
    from ...evaluation.io.utf8 import read_utf8

    path = Path(path) if path is not None else corpus_path()
    text = read_utf8(path, "checker corpus")
    return [parse_json(line, f"{path}:{i}") for i, line in enumerate(text.splitlines(), 1) if line.strip()]


def checker_key(options: CheckerOptions, texts: str, base_model: str | Path) -> str:
    """SHA-256 of the options, the training texts and the base model's content."""
    from ...evaluation.io.digests import content_digest

    blob = json.dumps({
        "format": FORMAT, "options": asdict(options), "texts": hashlib.sha256(texts.encode()).hexdigest(),
        "base": content_digest(base_model) or str(base_model),
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def full_checker_key(options: CheckerOptions | None = None, corpus: str | Path | None = None) -> str:
    """``checker_key`` of ``options`` (default recipe), ``corpus`` (default: the shipped one) and the embedded MiniLM."""
    from ...decoding.models import minilm_path

    texts = (Path(corpus) if corpus else corpus_path()).read_text(encoding="utf-8")
    return checker_key(options or CheckerOptions(), texts, minilm_path())


def checker_dir(options: CheckerOptions | None = None, corpus: str | Path | None = None,
                key: str | None = None) -> Path:
    """The cache folder of the checker for ``options`` and ``corpus`` (built or not), or of the full ``key``."""
    from ...decoding.models import cache_dir

    return cache_dir() / "checker" / (key or full_checker_key(options, corpus))[:20]


class CrossEncoder:
    """MiniLM + mean pooling + a linear head: ``probs(premises, claims)`` in [0, 1]."""

    def __init__(self, base_model: str | Path, device: str = "cpu", max_length: int = 256) -> None:
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        config = AutoConfig.from_pretrained(str(base_model))
        self.encoder = AutoModel.from_config(config)
        self.head = torch.nn.Linear(config.hidden_size, 1)
        self.tokenizer = AutoTokenizer.from_pretrained(str(base_model))
        self.device = device
        self.max_length = max_length
        self.name = NAME  # the entailment model's loader names it ``evenhand-entail <sha8>``

    def modules(self) -> Any:
        import torch

        return torch.nn.ModuleDict({"encoder": self.encoder, "head": self.head})

    def logits(self, encoded: dict[str, Any]) -> Any:
        hidden = self.encoder(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return self.head(pooled).squeeze(-1)

    def encode(
        self, premises: Sequence[str], claims: Sequence[str], max_length: int | None = None,
        truncation: str = "only_first",
    ) -> Any:
        """Token tensors of the pairs; training cuts premises only (``only_first``), scoring uses
        ``longest_first`` so that a claim longer than half of ``max_length`` is cut too instead of failing."""
        enc = self.tokenizer(
            list(premises), list(claims), truncation=truncation, max_length=max_length or self.max_length,
            padding=True, return_tensors="pt",
        )
        return {k: v.to(self.device) for k, v in enc.items()}

    def probs(self, premises: Sequence[str], claims: Sequence[str], batch_size: int = 32) -> list[float]:
        """p(premise supports claim) per pair, batched by length."""
        import torch

        from ..batching import length_batches

        out = [0.0] * len(premises)
        lengths = [len(p) + len(c) for p, c in zip(premises, claims)]
        self.modules().eval()
        for rows in length_batches(lengths, batch_size):
            enc = self.encode([premises[i] for i in rows], [claims[i] for i in rows], truncation="longest_first")
            with torch.no_grad():
                values = torch.sigmoid(self.logits(enc)).float().cpu().tolist()
            for i, p in zip(rows, values):
                out[i] = p
        return out


def freeze_lower(model: CrossEncoder, train_layers: int) -> list[Any]:
    """Freeze the embeddings and all but the top ``train_layers`` layers; the parameters left to train."""
    layers = model.encoder.encoder.layer
    if train_layers > len(layers):
        from ...evaluation.errors import DataError

        raise DataError(f"`train_layers` is {train_layers}, but the base model has {len(layers)} layers; "
                        f"pass at most {len(layers)}")
    keep = {id(p) for layer in layers[max(0, len(layers) - train_layers):] for p in layer.parameters()}
    for p in model.encoder.parameters():
        p.requires_grad_(id(p) in keep)
    return [p for p in model.modules().parameters() if p.requires_grad]


def _log(progress: bool, message: str) -> None:
    if progress:
        print(f"build-checker: {message}", file=sys.stderr, flush=True)


def train(
    options: CheckerOptions, examples: Sequence[dict[str, Any]], base_model: str | Path, progress: bool = False
) -> tuple[CrossEncoder, dict[str, Any]]:
    """Fine-tune a CrossEncoder from ``base_model`` on the synthetic pairs of ``examples``."""
    import torch

    from .pairs import build_pairs

    torch.manual_seed(options.seed)
    model = CrossEncoder(base_model, max_length=options.max_length)
    load_base(model, base_model)
    pairs = build_pairs(examples, seed=options.seed, rounds=options.rounds)
    modules = model.modules()
    trained = freeze_lower(model, options.train_layers)
    modules.train()
    opt = torch.optim.AdamW(trained, lr=options.learning_rate, weight_decay=0.01)
    steps = options.epochs * -(-len(pairs) // options.batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10)) * max(0.0, 1 - s / steps)
    )
    gen = torch.Generator().manual_seed(options.seed)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start, step, recent = time.monotonic(), 0, []
    _log(progress, f"{len(pairs)} pairs from {len(examples)} source sets, {steps} steps")
    for _ in range(options.epochs):
        order = torch.randperm(len(pairs), generator=gen).tolist()
        for b in range(0, len(order), options.batch_size):
            batch = [pairs[i] for i in order[b : b + options.batch_size]]
            enc = model.encode([p.premise for p in batch], [p.claim for p in batch])
            labels = torch.tensor([float(p.label) for p in batch])
            loss = loss_fn(model.logits(enc), labels)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            opt.step()
            sched.step()
            step += 1
            recent = [*recent[-19:], loss.item()]
            if step % 25 == 0 or step == steps:
                _log(progress, f"step {step}/{steps} loss {sum(recent) / len(recent):.3f} "
                               f"({time.monotonic() - start:.0f} s)")
    modules.eval()
    stats = {"pairs": len(pairs), "steps": steps, "final_loss": sum(recent) / max(1, len(recent)),
             "train_seconds": round(time.monotonic() - start, 1)}
    return model, stats


_LOADED: dict[tuple[str, str], CrossEncoder] = {}


def build_checker(
    options: CheckerOptions | None = None, corpus: str | Path | None = None, progress: bool = True,
    force: bool = False,
) -> Path:
    """The checker's cache folder, training it first unless it is there (``force``: retrain)."""
    from filelock import FileLock
    from safetensors.torch import save_file

    from ...decoding.models import minilm_path, remove_stale_tmp
    from ...evaluation.io.atomic import atomic_folder

    options = options or CheckerOptions()
    full_key = full_checker_key(options, corpus)
    target = checker_dir(key=full_key)
    done = target / "checker.json"
    if done.exists() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(target)
    with FileLock(str(target) + ".lock"):
        if done.exists() and not force:  # another process built it meanwhile
            return target
        shipped = shipped_checker_dir()
        if not force and shipped_key(shipped) == full_key:
            return copy_checker(shipped, target, prefix=target.name + ".tmp-")
        base = minilm_path()
        examples = read_corpus(corpus)
        model, stats = train(options, examples, base, progress)
        meta = {"format": NAME, "version": FORMAT, "options": asdict(options), "key": target.name,
                "full_key": full_key, "corpus": str(corpus or "shipped corpus.jsonl"),
                "base_model": "all-minilm-l6-v2", **stats}
        with atomic_folder(target, prefix=target.name + ".tmp-") as tmp:
            save_file(trained_tensors(model, options.train_layers), str(tmp / WEIGHTS))
            (tmp / "checker.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        _log(progress, f"saved {target} ({stats['train_seconds']} s of training)")
    return target


def copy_checker(source: Path, target: str | Path, prefix: str | None = None) -> Path:
    """Copy checker folder ``source``'s weights and ``checker.json`` into folder ``target``, replaced whole
    (``atomic_folder``; ``prefix``: of its temporary sibling); ``target``."""
    from ...evaluation.io.atomic import atomic_folder

    with atomic_folder(target, prefix=prefix) as tmp:
        for name in (WEIGHTS, "checker.json"):
            shutil.copyfile(source / name, tmp / name)
    return Path(target)


def shipped_checker_dir() -> Path:
    """The package's ``weights/`` folder: the default recipe's checker as built for shipping."""
    return Path(str(resources.files("evenhand.rerank") / "checker" / "weights"))


def shipped_key(folder: Path) -> str | None:
    """The full key recorded in ``folder/checker.json`` (None when the folder holds no checker)."""
    meta = folder / "checker.json"
    if not (meta.is_file() and (folder / WEIGHTS).is_file()):
        return None
    try:
        key = json.loads(meta.read_text(encoding="utf-8")).get("full_key")
    except (ValueError, OSError):
        return None
    return key if isinstance(key, str) else None


def trained_tensors(model: CrossEncoder, train_layers: int, half: bool = False) -> dict[str, Any]:
    """The top ``train_layers`` encoder layers and the head (what a checker folder stores; the lower
    layers and the embeddings are the base model's, frozen); ``half``: as float16."""
    layers = model.encoder.encoder.layer
    state = {}
    for i in range(len(layers) - train_layers, len(layers)):
        for k, v in layers[i].state_dict().items():
            state[f"encoder.encoder.layer.{i}.{k}"] = v
    state.update({f"head.{k}": v for k, v in model.head.state_dict().items()})
    return {k: (v.detach().to("cpu").half() if half else v.detach().to("cpu")).contiguous() for k, v in state.items()}


def load_base(model: CrossEncoder, base_model: str | Path) -> None:
    """Load the base model's own weights (``model.safetensors``) into ``model``'s encoder."""
    from safetensors.torch import load_file

    from ...evaluation.errors import DataError

    missing, _ = model.encoder.load_state_dict(load_file(str(Path(base_model) / "model.safetensors")), strict=False)
    if [k for k in missing if not k.endswith("position_ids")]:
        raise DataError(f"{base_model}: encoder weights {missing[:4]} are missing from model.safetensors")


def load_on_base(model: CrossEncoder, base_model: str | Path, state: dict[str, Any], where: Path) -> None:
    """Load the base model's weights into ``model``, then ``state`` (trained layers and head, or a whole
    encoder) over them; a tensor that does not fit the base model is a DataError naming ``where``."""
    from ...evaluation.errors import DataError

    load_base(model, base_model)
    state = {k: v.float() for k, v in state.items()}
    own = {k[len("encoder."):]: v for k, v in state.items() if k.startswith("encoder.")}
    _, unexpected = model.encoder.load_state_dict(own, strict=False)
    if unexpected or not any(k.startswith("head.") for k in state):
        raise DataError(f"{where}: tensors {unexpected[:3] or 'head.*'} do not fit the base model (a checker "
                        "stores encoder layers and a head); rebuild it with `evenhand build-checker`")
    model.head.load_state_dict({k[len("head."):]: v for k, v in state.items() if k.startswith("head.")})


def load_checker(folder: str | Path | None = None, device: str | None = None, max_length: int = 256) -> CrossEncoder:
    """The checker of ``folder`` (default: the default recipe's: the shipped build, or trained on first use
    when the recipe, corpus or base model differ from it), loaded once."""
    from safetensors.torch import load_file

    from ...decoding.models import default_device, minilm_path

    folder = Path(folder) if folder else build_checker(progress=True)
    device = device or default_device()
    key = (str(folder.resolve()), f"{device}|{max_length}")
    if key not in _LOADED:
        weights = folder / WEIGHTS
        if not weights.is_file():
            from ...evaluation.errors import DataError

            raise DataError(f"{folder}: no model.safetensors; build the checker with `evenhand build-checker`")
        model = CrossEncoder(minilm_path(), device=device, max_length=max_length)
        load_on_base(model, minilm_path(), load_file(str(weights)), weights)
        model.modules().to(device).eval()
        _LOADED[key] = model
    return _LOADED[key]
