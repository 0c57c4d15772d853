"""``RunContext``: what every stage of a training run shares — config, processes, data, scoring, policy.

``open_run`` validates and loads everything that needs no model (processes,
scorers, data); ``RunContext.load_policy`` then loads the base model with a
fresh LoRA or a finished iteration's adapter. Under ``accelerate launch`` each
process works on ``shard(items)`` (``items[rank::world]``) and ``gather``
re-assembles the records of all processes in ``position`` order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError
from ..evaluation.io.json_file import write_json
from .config import DPORRConfig
from .scoring import Scoring


def split_dev(
    examples: Sequence[Example], dev_size: int, key: str | None = None, seed: int = 0
) -> tuple[list[Example], list[Example]]:
    """Split off about ``dev_size`` dev examples, whole ``meta[key]`` groups at a time (seeded).

    Groups (``meta[key]`` values, or single examples without ``key``) are
    shuffled by ``seed`` and moved to dev until it holds at least ``dev_size``.
    """
    import random

    groups: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        if key is not None and key not in ex.meta:
            raise DataError(f"example {ex.id!r} has no `meta.{key}`; fix `split_key` or the data")
        name = str(ex.meta[key]) if key is not None else ex.id
        groups.setdefault(name, []).append(i)
    names = sorted(groups)
    random.Random(seed).shuffle(names)
    dev_idx: set[int] = set()
    for name in names:
        if len(dev_idx) >= dev_size:
            break
        dev_idx.update(groups[name])
    train = [ex for i, ex in enumerate(examples) if i not in dev_idx]
    dev = [ex for i, ex in enumerate(examples) if i in dev_idx]
    if not train:
        raise DataError(f"`dev_size`={dev_size} leaves no training examples; lower it")
    return train, dev


def drop_gguf_marker(model: Any) -> Any:
    """Forget a GGUF quantization marker on a model whose weights are already floats.

    The embedded SmolLM2 folder is converted from a GGUF file and its config keeps
    ``quantization_config: gguf``; transformers then attaches a GGUF quantizer and
    ``Trainer`` refuses to train. GGUF weights are always de-quantized on load,
    so the marker is dropped (the model's parameters are untouched).
    """
    quantizer = getattr(model, "hf_quantizer", None)
    method = str(getattr(getattr(quantizer, "quantization_config", None), "quant_method", "")).lower()
    if quantizer is not None and method.endswith("gguf"):
        quantizer.remove_quantization_config(model)  # transformers' own "dequantized" clean-up
    return model


@dataclass
class RunContext:
    """The shared state of one run (see module docstring); ``model``/``tokenizer`` after ``load_policy``."""

    config: DPORRConfig
    state: Any
    device: str
    scoring: Scoring
    fair_scorer: Any
    train: list[Example]
    dev: list[Example]
    model: Any = None
    tokenizer: Any = None
    tag: str = field(default="dpo-rr")
    #: ``engine: vllm``: the run's ``VllmPolicy`` (``training.vllm_policy``); None in-process
    vllm: Any = None
    #: the adapter folder holding the current policy (None: a fresh LoRA, i.e. the base model)
    policy_adapter: Path | None = None

    # -- processes -----------------------------------------------------------------------
    @property
    def world(self) -> int:
        """Number of processes."""
        return int(self.state.num_processes)

    def log(self, message: str) -> None:
        """One progress line (main process, when ``config.progress``)."""
        if self.config.progress and self.state.is_main_process:
            print(f"[{self.tag}] {message}", flush=True)

    def shard(self, items: Sequence[Any]) -> list[tuple[int, Any]]:
        """``(position, item)`` for this process' share ``items[rank::world]``."""
        rank, world = self.state.process_index, self.state.num_processes
        return [(i, items[i]) for i in range(rank, len(items), world)]

    def gather(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every process' records, sorted by ``position`` (a collective: all processes call it)."""
        if self.state.num_processes > 1:
            from accelerate.utils import gather_object

            records = gather_object(records)
        return sorted(records, key=lambda r: r["position"])

    # -- policy --------------------------------------------------------------------------
    def load_policy(self, adapter: Path | None = None) -> None:
        """The base model with a fresh LoRA (seeded by ``config.seed``), or ``adapter`` to continue."""
        import torch
        from peft import LoraConfig, PeftModel, get_peft_model

        from ..decoding.models import load_generator

        c = self.config
        base, self.tokenizer = load_generator(c.model, device=self.device, dtype=torch.float32)
        drop_gguf_marker(base)
        if adapter is not None:
            self.model = PeftModel.from_pretrained(base, str(adapter), is_trainable=True)
        else:
            from ..evaluation.errors import DataError

            lora = LoraConfig(
                r=c.lora_r, lora_alpha=c.lora_alpha, lora_dropout=c.lora_dropout,
                target_modules=c.target_modules, task_type="CAUSAL_LM", bias="none",
            )
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(c.seed)
                try:
                    self.model = get_peft_model(base, lora)
                except ValueError as err:  # peft's NoMatchingPeftModuleError: no module of that name
                    names = sorted({n.rsplit(".", 1)[-1] for n, m in base.named_modules()
                                    if isinstance(m, torch.nn.Linear)})
                    raise DataError(
                        f"`lora_target` {','.join(c.target_modules)}: no such module in model {c.model} "
                        f"({' '.join(str(err).split())[:120]}); its linear layers are {','.join(names)}"
                    ) from None
        self.model.to(self.device)

    def drop_ref_adapter(self) -> None:
        """Remove the ``ref`` adapter trl adds (a copy of the LoRA); without it, ref = adapters disabled."""
        model = self.model
        if "ref" in getattr(model, "peft_config", {}):
            model.delete_adapter("ref")
            model.set_adapter("default")

    def save_adapter(self, path: Path) -> None:
        """The LoRA as safetensors; its config names the base as given (portable aliases)."""
        self.model.save_pretrained(str(path), safe_serialization=True)
        config_file = path / "adapter_config.json"
        adapter_config = json.loads(config_file.read_text(encoding="utf-8"))
        adapter_config["base_model_name_or_path"] = self.config.model
        write_json(config_file, adapter_config)


def _state(config: DPORRConfig) -> tuple[Any, str]:
    import torch
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    # PartialState() alone ignores CPU process groups: under torchrun/accelerate
    # (LOCAL_RANK set) on CPU, cpu=True makes it MULTI_CPU with gloo.
    cpu = (config.device == "cpu" or not torch.cuda.is_available()
           or parse_flag_from_env("ACCELERATE_USE_CPU"))
    state = PartialState(cpu=cpu)
    device = config.device or ("cpu" if state.device is None or state.device.type == "cpu" else str(state.device))
    return state, device


def load_data(
    config: DPORRConfig, train: Sequence[Example] | None, dev: Sequence[Example] | None
) -> tuple[list[Example], list[Example]]:
    """Training and dev examples: given, loaded from ``data``/``dev_data``, or split off (``split_dev``)."""
    from ..evaluation.data.loaders import load_examples

    c = config
    if train is None:
        if c.data is None:
            raise ValueError("`data` is not set; give a training data file (--data FILE)")
        train = load_examples(c.data)
    train = list(train)
    if dev is None:
        if c.dev_data is not None:
            dev = load_examples(c.dev_data)
        else:
            train, dev = split_dev(train, c.dev_size, c.split_key, c.seed)
    if not train:
        raise DataError("no training examples")
    return train, list(dev)


def build_scoring(config: DPORRConfig, scorers: Mapping[str, Any] | None = None) -> Scoring:
    """The run's ``Scoring``: ``scorers`` (name -> object) or the registered ``config.scorers``."""
    from .scoring import registry_scoring

    c = config
    if scorers is not None:
        return Scoring(scorers, c.weights, c.normalize, c.score_source)
    return registry_scoring(c.scorer_names, c.weights, c.normalize, c.score_source)


def open_run(
    config: DPORRConfig, scorers: Mapping[str, Any] | None = None,
    train: Sequence[Example] | None = None, dev: Sequence[Example] | None = None,
) -> RunContext:
    """Processes, scorers and data of a run (no model yet: ``load_policy``)."""
    state, device = _state(config)
    scoring = build_scoring(config, scorers)
    fair_scorer = None
    if config.fairness:
        from ..evaluation.scoring.registry import get_scorer

        fair_scorer = get_scorer("equal-coverage", model=config.fairness_model, progress=False)
    train_examples, dev_examples = load_data(config, train, dev)
    from .scoring import scoring_source

    for ex in [*train_examples, *dev_examples]:  # DataError now, not after hours of generation
        scoring_source(ex, config.score_source)
    tag = getattr(config, "method", "dpo-rr")
    return RunContext(config, state, device, scoring, fair_scorer, train_examples, dev_examples, tag=tag)
