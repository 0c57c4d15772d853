"""The wiring from a ``GenerateConfig`` to logits processors, batch by batch.

Every part of the config that acts on the logits adds its processors through one
path: a processor builder is a function of a :class:`PromptBatch` (the batch's
examples and tokenized prompts) returning a list of logits processors or a
:class:`BatchHooks` (processors plus ``model.generate`` keyword arguments, e.g. fair
beam search's ``custom_generate``). A caller's own builders go through the same path.
The order is the order the processors run in (:func:`config_builders`): the
repetition penalty on generated tokens, the caller's, the abstractiveness
constraint, fairness (the group-coverage bonus α and fair beam search β / W).

Used by the transformers engine (``engines/transformers.py``); the other engines
carry the same settings their own way (``engines/vllm_settings.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...evaluation.data.schema import Example
from ..config import AbstractivenessSettings, DecodingSettings, FairnessSettings, GenerateConfig


@dataclass
class BatchHooks:
    """What one batch adds to ``model.generate``: logits processors and keyword arguments."""

    processors: list[Any] = field(default_factory=list)
    generate_kwargs: dict[str, Any] = field(default_factory=dict)

    def add(self, built: BatchHooks | Sequence[Any]) -> None:
        """Append a builder's result; two builders setting one ``generate`` keyword is an error."""
        if not isinstance(built, BatchHooks):
            self.processors.extend(built)
            return
        self.processors.extend(built.processors)
        clash = sorted(set(built.generate_kwargs) & set(self.generate_kwargs))
        if clash:
            raise ValueError(f"two processor builders set the generate() argument(s) {clash}; keep one")
        self.generate_kwargs.update(built.generate_kwargs)


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


#: Functions turning a batch (a ``PromptBatch``) into logits processors, or into BatchHooks.
ProcessorBuilder = Callable[[PromptBatch], "Sequence[Any] | BatchHooks"]


def config_builders(config: GenerateConfig, extra: Sequence[ProcessorBuilder] = ()) -> list[ProcessorBuilder]:
    """Every part's processor builders, ``extra`` (the caller's) after the decoding part's.

    The order is the order the processors run in: the repetition penalty on
    generated tokens, the caller's, the abstractiveness constraint, fairness.
    """
    return [*decoding_builders(config), *extra, *constraint_builders(config)]


def constraint_builders(config: GenerateConfig) -> list[ProcessorBuilder]:
    """Builders of the constraint parts: abstractiveness (penalty or reward), then fairness."""
    return [*abstractiveness_builders(config), *fairness_builders(config)]


def decoding_builders(settings: DecodingSettings) -> list[ProcessorBuilder]:
    """The repetition penalty on generated tokens only (``DecodingSettings.own_repetition_penalty``)."""
    if settings.penalize_prompt or settings.repetition_penalty == 1.0:
        return []
    return [lambda batch: generated_only_penalty(batch.model, settings, batch.prompt_length)]


def generated_only_penalty(model: Any, settings: DecodingSettings, prompt_length: int) -> list[Any]:
    """transformers' repetition penalty restricted to generated tokens (decoder-only models)."""
    if not settings.own_repetition_penalty(model):
        return []
    from transformers import RepetitionPenaltyLogitsProcessor

    return [RepetitionPenaltyLogitsProcessor(settings.repetition_penalty, prompt_ignore_length=prompt_length)]


def abstractiveness_builders(settings: AbstractivenessSettings) -> list[ProcessorBuilder]:
    """The abstractiveness penalty or the extraction reward processor, when one is set."""
    if settings.abstractiveness is not None:
        return [abstractiveness_builder(settings.abstractiveness, reward=False)]
    if settings.extractiveness is not None:
        return [abstractiveness_builder(settings.extractiveness, reward=True)]
    return []


def abstractiveness_builder(h: float, reward: bool = False) -> ProcessorBuilder:
    """A processor builder adding ``AbstractivenessProcessor(h, reward)`` to each batch."""
    from .abstractiveness import AbstractivenessProcessor, check_h

    check_h(h)

    def build(batch: PromptBatch) -> list[Any]:
        is_seq2seq = batch.model.config.is_encoder_decoder
        return [
            AbstractivenessProcessor(
                source_token_ids(batch),
                h,
                reward=reward,
                prompt_length=0 if is_seq2seq else batch.prompt_length,
                special_ids=batch.tokenizer.all_special_ids,
            )
        ]

    return build


def source_token_ids(batch: PromptBatch) -> list[list[int]]:
    """One source id list per example of ``batch`` (``prompts/source_tokens.py``).

    Decoder-only models: the documents' tokens as they appear in the templated prompt
    (``prompt_source_ids``). Encoder-decoder models: the encoder input ids, without
    padding and special tokens.
    """
    from ..prompts.plan import plan_prompts
    from ..prompts.source_tokens import prompt_source_ids

    tok = batch.tokenizer
    if batch.model.config.is_encoder_decoder:
        special = set(tok.all_special_ids)
        return [
            [t for t, keep in zip(row, mask) if keep and t not in special]
            for row, mask in zip(batch.input_ids.tolist(), batch.attention_mask.tolist())
        ]
    plans = plan_prompts(batch.examples, batch.config)
    return [prompt_source_ids(tok, plan.templated(tok), plan.example.texts) for plan in plans]


def fairness_builders(settings: FairnessSettings) -> list[ProcessorBuilder]:
    """The group-coverage processor and fair beam search (:func:`fairness_hooks`)."""
    if not settings.active:
        return []
    return [lambda batch: fairness_hooks(batch, settings)]


def fairness_hooks(batch: PromptBatch, settings: FairnessSettings | None = None) -> BatchHooks:
    """The processors and ``generate`` kwargs for one ``PromptBatch`` (empty when fairness is off).

    Per batch: the group tables, the group-coverage processor (α) and fair beam search
    (β, and its meaning-level term W: document blocks embedded once per batch).
    ``settings``: the fairness part to apply (default: the batch's config).
    """
    from ..beam.hf_loop import fair_beam_search
    from ..beam.objective import fair_beam_settings
    from .group_coverage import GroupCoverageProcessor
    from .group_vocab import group_tables

    config = settings if settings is not None else batch.config
    if not config.active or config.fairness is None:  # active implies a target; the check narrows it
        return BatchHooks()
    model = batch.model
    vocab_size = int(model.get_output_embeddings().weight.shape[0])
    device = batch.input_ids.device
    tables = group_tables(batch.examples, batch.tokenizer, vocab_size, config.fairness, device)
    hooks = BatchHooks()
    if config.fairness_strength > 0:
        start = 1 if model.config.is_encoder_decoder else batch.prompt_length
        hooks.processors.append(
            GroupCoverageProcessor(tables, config.fairness_strength, config.fairness_tau, start)
        )
    if config.beam_search:
        hooks.generate_kwargs.update(
            custom_generate=fair_beam_search,
            fair_beam=fair_beam_settings(batch.examples, batch.tokenizer, tables, config, device),
        )
    return hooks
