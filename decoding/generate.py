"""Summarize examples with a generator model: prompts, batching, decoding settings, processors."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError
from .settings import (
    PARTS,
    AbstractivenessSettings,
    BatchHooks,
    DecodingSettings,
    FairnessSettings,
    ProcessorBuilder,
    PromptSettings,
    generated_only_penalty,
    part_of,
)


@dataclass
class GenerateConfig(FairnessSettings, AbstractivenessSettings, PromptSettings, DecodingSettings):
    """Every generation setting: the four typed parts of :mod:`evenhand.decoding.settings` at once.

    The fields are the parts' fields, flat and in order (decoding, prompting,
    abstractiveness, fairness), so ``GenerateConfig(num_beams=1, abstractiveness=2)``,
    the CLI flags and YAML keys name them directly; :meth:`parts` gives the typed
    parts, :meth:`from_parts` builds a config from them. Defaults suit
    SmolLM2-135M-Instruct (it repeats itself otherwise).
    """

    def __post_init__(self) -> None:
        for part in PARTS.values():
            part.check(self)
        if self.beam_search and (self.num_beams < 2 or self.do_sample):
            raise ValueError(
                "`fair_beam` is a beam search (so is `fair_meaning`): set `num_beams` >= 2 and `do_sample=False`, "
                "or use `fairness_strength` alone"
            )

    @classmethod
    def from_parts(cls, *parts: Any, **flat: Any) -> GenerateConfig:
        """A config from typed parts (``DecodingSettings(...)``...) and flat fields over them."""
        values: dict[str, Any] = {}
        for part in parts:
            values.update({f.name: getattr(part, f.name) for f in dataclasses.fields(part)})
        return cls(**{**values, **flat})

    def parts(self) -> dict[str, Any]:
        """The typed parts holding this config's values: decoding, prompting, abstractiveness, fairness."""
        return {name: part_of(self, part) for name, part in PARTS.items()}

    def builders(self, extra: Sequence[ProcessorBuilder] = ()) -> list[ProcessorBuilder]:
        """Every part's processor builders, ``extra`` (the caller's) after the decoding part's.

        The order is the order the processors run in: the repetition penalty on
        generated tokens, the caller's, the abstractiveness constraint, fairness.
        """
        return [*DecodingSettings.builders(self), *extra, *self.processor_builders()]

    def processor_builders(self) -> list[ProcessorBuilder]:
        """Builders of the constraint parts: abstractiveness (penalty or reward), then fairness."""
        return [*AbstractivenessSettings.builders(self), *FairnessSettings.builders(self)]


@dataclass
class PromptBatch:
    """What processor builders see: the batch's examples and their tokenized prompts."""

    examples: list[Example]
    input_ids: Any  # (batch, prompt_len) LongTensor, left-padded for decoder-only models
    attention_mask: Any
    tokenizer: Any
    model: Any
    config: GenerateConfig

    @property
    def prompt_length(self) -> int:
        """Length of the padded prompt: generated tokens start here (decoder-only)."""
        return int(self.input_ids.shape[1])


def _batches(items: Sequence[Example], size: int) -> Iterator[tuple[int, list[Example]]]:
    for start in range(0, len(items), size):
        yield start, list(items[start : start + size])


def pending_batches(
    examples: Sequence[Example], batch_size: int, needed: Callable[[Example], bool]
) -> list[tuple[int, list[Example]]]:
    """The batches ``generate`` cuts from ``examples`` that hold an example still ``needed``.

    Each is ``(start, batch)`` over the *full* list: decoding a batch with seed
    ``seed + start`` (what ``generate`` does over the whole list, and the sweep
    per unit) gives the same summaries as the uninterrupted run, because the
    batch has the same examples. So a resumed run regenerates an interrupted
    batch whole, and a ``--limit`` that cuts a batch still decodes all of it,
    keeping only the needed examples.
    """
    return [(s, b) for s, b in _batches(examples, batch_size) if any(needed(ex) for ex in b)]


def context_limit(model: Any) -> int | None:
    """The model's maximum sequence length, when its config states one."""
    config = model.config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def response_prefixes(model: Any, examples: Sequence[Example], config: GenerateConfig) -> list[str]:
    """The text each summary starts with (see ``prompting.response_prefix``).

    Encoder-decoder models get none: an explicit ``response_prefix`` raises, the
    prompt kinds' defaults are dropped.
    """
    from .prompting import response_prefix

    if model.config.is_encoder_decoder:
        if config.response_prefix:
            raise ValueError(
                "`response_prefix` needs a decoder-only model; drop it for encoder-decoder models"
            )
        return [""] * len(examples)
    return [
        response_prefix(ex, config.response_prefix, config.instruction, config.prompt_kind)
        for ex in examples
    ]


def encode_prompts(
    model: Any, tokenizer: Any, examples: Sequence[Example], config: GenerateConfig
) -> Any:
    """Tokenize the chat prompts of ``examples``; raise DataError if one exceeds the context."""
    from .prompting import build_prompt, chat_prompt

    prefixes = response_prefixes(model, examples, config)
    texts = [
        chat_prompt(tokenizer, build_prompt(ex, config.instruction, config.fair_prompt, config.prompt_kind))
        + prefix
        for ex, prefix in zip(examples, prefixes)
    ]
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    limit = context_limit(model)
    if limit is not None:
        lengths = enc["attention_mask"].sum(dim=1)
        budget = limit if model.config.is_encoder_decoder else limit - config.max_new_tokens
        for ex, n in zip(examples, lengths.tolist()):
            if n > budget:
                raise DataError(
                    f"{ex.where()}{': ' if ex.where() else ''}"
                    f"example {ex.id!r}: `documents` take {n} prompt tokens, more than the "
                    f"model's context allows ({limit} tokens"
                    + ("" if model.config.is_encoder_decoder else f" minus {config.max_new_tokens} new")
                    + "); shorten or drop documents, or lower `max_new_tokens`"
                )
    return enc


def check_prompt_lengths(
    model: Any, tokenizer: Any, examples: Sequence[Example], config: GenerateConfig
) -> None:
    """Raise DataError for the first example whose prompt exceeds the context, before any decoding.

    Commands call it after the model loads and before their progress bar starts,
    so the error is one clean line (not glued to a bar), naming file:line.
    """
    from .server import ServerClient

    if isinstance(model, ServerClient) or tokenizer is None:
        return
    for start in range(0, len(examples), max(1, config.batch_size)):
        encode_prompts(model, tokenizer, examples[start : start + config.batch_size], config)


#: Kept under its old name: the repetition penalty on generated tokens only.
_generated_only_penalty = generated_only_penalty


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
        model: a causal or seq2seq transformers model (``load_generator``), a
            ``ServerClient`` (``decoding.server``: sampling through an OpenAI-compatible
            server; evenhand's processors only on a vLLM server that loads them), or a
            ``VllmEngine`` (``decoding.vllm_engine``: in-process vLLM, ``--engine vllm``).
        tokenizer: its tokenizer (unused for a server).
        examples: the inputs.
        config: decoding settings (default ``GenerateConfig()``).
        processor_builders: callables turning each ``PromptBatch`` into extra logits
            processors (or ``BatchHooks``); they run after the repetition penalty and
            before the processors of ``config``'s abstractiveness and fairness parts
            (``GenerateConfig.builders``).
        progress: show a progress bar over examples.
        on_batch: called with each finished batch's examples and summaries (for
            incremental writing).
        lora_request: with a ``VllmEngine`` only: a ``vllm.lora.request.LoRARequest`` every
            request decodes with (training's policy, ``training.vllm_policy``); None = base model.
        **overrides: GenerateConfig fields replacing those of ``config``, e.g.
            ``fairness="ratio", fairness_strength=1.0, fair_beam=0.5``.

    Returns:
        The summaries, in example order. The same inputs, config and seed give the
        same outputs: each batch re-seeds torch with ``seed + index of its first example``.
    """
    from .server import ServerClient

    config = config or GenerateConfig()
    if overrides:
        config = dataclasses.replace(config, **overrides)
    from .vllm_engine import VllmEngine

    if lora_request is not None and not isinstance(model, VllmEngine):
        raise ValueError("`lora_request` is a vLLM LoRA request: it needs a VllmEngine model "
                         "(an in-process model carries its adapter itself)")
    if isinstance(model, ServerClient):  # a server URL: decoding/server_generate.py, no torch
        from .server_generate import generate_via_server

        return generate_via_server(model, examples, config, processor_builders, progress, on_batch)
    if isinstance(model, VllmEngine):  # --engine vllm: decoding/vllm_generate.py
        from .vllm_generate import generate_via_vllm

        return generate_via_vllm(model, examples, config, processor_builders, progress, on_batch, lora_request)
    import torch
    from transformers import LogitsProcessorList

    from .fair_decoding import check_examples

    for i, ex in enumerate(examples):
        ex.validate(ex.where(f"examples[{i}]"))
    check_examples(examples, config)
    device = next(model.parameters()).device
    builders = config.builders(processor_builders)
    own_penalty = config.own_repetition_penalty(model)
    summaries = SummaryCollector(len(examples), config, on_batch, progress)
    for start, batch in _batches(examples, config.batch_size):
        enc = encode_prompts(model, tokenizer, batch, config).to(device)
        prompt_batch = PromptBatch(
            batch, enc["input_ids"], enc["attention_mask"], tokenizer, model, config
        )
        hooks = BatchHooks()  # every part's processors (and fair beam search's generate kwargs)
        for build in builders:
            hooks.add(build(prompt_batch))
        processors = LogitsProcessorList(hooks.processors)
        torch.manual_seed(config.seed + start)
        with torch.no_grad():
            out = model.generate(
                **enc,
                **config.hf_kwargs(own_repetition_penalty=own_penalty),
                logits_processor=processors,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
                **hooks.generate_kwargs,
            )
        new = out if model.config.is_encoder_decoder else out[:, enc["input_ids"].shape[1] :]
        # the response prefix is part of the prompt: given back at the start of each summary
        prefixes = response_prefixes(model, batch, config)
        decoded = tokenizer.batch_decode(new, skip_special_tokens=True)
        summaries.add(batch, [(prefix + t).strip() for prefix, t in zip(prefixes, decoded)])
    return summaries.close()


class SummaryCollector:
    """The summaries of one ``generate`` call (in-process or server): cleaned when
    ``config.clean``, handed to ``on_batch`` per batch, counted on a progress bar."""

    def __init__(
        self, total: int, config: GenerateConfig,
        on_batch: Callable[[list[Example], list[str]], None] | None, progress: bool,
    ) -> None:
        from tqdm.auto import tqdm

        self.config, self.on_batch, self.outputs = config, on_batch, []
        self.bar = tqdm(total=total, desc="generate", unit="ex", disable=not progress)

    def add(self, batch: list[Example], texts: list[str]) -> None:
        """Keep one batch's summaries (in example order)."""
        from .prompting import clean_summary

        if self.config.clean:
            texts = [clean_summary(t) for t in texts]
        self.outputs.extend(texts)
        if self.on_batch is not None:
            self.on_batch(batch, texts)
        self.bar.update(len(batch))

    def close(self) -> list[str]:
        """All summaries so far; closes the progress bar."""
        self.bar.close()
        return self.outputs
