"""``generate``: one summary per example, through whichever engine serves the model.

validate → the engine (``engines.open_engine`` made it; a bare transformers model is
wrapped in-process) → :func:`~evenhand.decoding.engines.base.refuse_unsupported` (the
one place that refuses what the engine cannot do) → ``engine.summarize``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ..evaluation.data.schema import Example
from .config import GenerateConfig
from .engines.base import is_engine, refuse_unsupported
from .processors.builders import ProcessorBuilder


def generate(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    config: GenerateConfig | None = None,
    processor_builders: Sequence[ProcessorBuilder] = (),
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
    lora_request: Any = None,
    **overrides: Any,
) -> list[str]:
    """Write one summary per example.

    Args:
        model: an engine (``engines.open_engine(name, engine)``: in-process transformers,
            ``--engine vllm``, or a server URL), or a causal or seq2seq transformers model
            (``load_generator``), decoded in-process.
        tokenizer: the transformers model's tokenizer (unused with an engine).
        examples: the inputs.
        config: decoding settings (default ``GenerateConfig()``).
        processor_builders: callables turning each ``PromptBatch`` into extra logits
            processors (or ``BatchHooks``); they run after the repetition penalty and
            before the processors of ``config``'s abstractiveness and fairness parts
            (``processors.builders.config_builders``). In-process engines only.
        progress: show a progress bar over examples.
        on_batch: called with each finished batch's examples and summaries (for
            incremental writing).
        lora_request: with the vLLM engine only: a ``vllm.lora.request.LoRARequest`` every
            request decodes with (training's policy, ``training.vllm_policy``); None = base model.
        **overrides: GenerateConfig fields replacing those of ``config``, e.g.
            ``fairness="ratio", fairness_strength=1.0, fair_beam=0.5``.

    Returns:
        The summaries, in example order. The same inputs, config and seed give the
        same outputs: each batch re-seeds with ``seed + index of its first example``.
    """
    config = config or GenerateConfig()
    if overrides:
        config = dataclasses.replace(config, **overrides)
    if not is_engine(model):
        if not hasattr(model, "parameters"):
            raise TypeError(
                f"`model` must be an engine (`open_engine(name_or_url, engine)`) or a transformers model, "
                f"got {type(model).__name__}; for a server URL use open_engine(url)"
            )
        from .engines.transformers import TransformersEngine

        model = TransformersEngine(model, tokenizer)
    refuse_unsupported(model.capabilities, config, processor_builders, lora_request)
    return model.summarize(examples, config, processor_builders, progress, on_batch, lora_request)
