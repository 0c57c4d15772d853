"""The in-process engine: a transformers model's ``generate`` with evenhand's logits processors.

Prompts are the plan's (``prompts/plan.py``), tokenized as one left-padded batch;
every part of the config adds its processors through ``processors/builders.py``;
fair beam search runs as transformers' ``custom_generate`` (``beam/hf_loop.py``).
Beam search runs the prompt once per example and repeats its cache per beam (``prefill_once``).
Each batch re-seeds torch with ``seed + index of its first example``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ...evaluation.data.schema import Example
from ..config import DecodingSettings, GenerateConfig
from ..processors.builders import ProcessorBuilder
from .base import Capabilities, SummaryCollector, batches, validate_examples
from .step_progress import step_criteria


def context_limit(model: Any) -> int | None:
    """The model's maximum sequence length, when its config states one."""
    config = model.config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def response_prefixes(model: Any, examples: Sequence[Example], config: GenerateConfig) -> list[str]:
    """The text each summary starts with (see ``prompts.templates.response_prefix``).

    Encoder-decoder models get none: an explicit ``response_prefix`` raises, the
    prompt kinds' defaults are dropped.
    """
    from ..prompts.plan import plan_prompts

    if model.config.is_encoder_decoder and config.response_prefix:
        raise ValueError("`response_prefix` needs a decoder-only model; drop it for encoder-decoder models")
    return [plan.prefix for plan in plan_prompts(examples, config, prefixes=not model.config.is_encoder_decoder)]


def encode_prompts(
    model: Any, tokenizer: Any, examples: Sequence[Example], config: GenerateConfig
) -> Any:
    """Tokenize the chat prompts of ``examples``; raise DataError if one exceeds the context."""
    from ..prompts.plan import check_context, plan_prompts

    encoder_decoder = bool(model.config.is_encoder_decoder)
    if encoder_decoder and config.response_prefix:
        raise ValueError("`response_prefix` needs a decoder-only model; drop it for encoder-decoder models")
    plans = plan_prompts(examples, config, prefixes=not encoder_decoder)
    enc = tokenizer([p.text(tokenizer) for p in plans], return_tensors="pt", padding=True, add_special_tokens=False)
    limit = context_limit(model)
    if limit is not None:
        for ex, n in zip(examples, enc["attention_mask"].sum(dim=1).tolist()):
            check_context(ex, n, limit, config.max_new_tokens, encoder_decoder)
    return enc


def hf_kwargs(config: DecodingSettings, own_repetition_penalty: bool = False) -> dict[str, Any]:
    """Keyword arguments for ``model.generate``.

    With ``own_repetition_penalty`` the repetition penalty is left out: the
    caller applies it itself (to generated tokens only, see ``generate``).
    """
    kwargs: dict[str, Any] = dict(
        max_new_tokens=config.max_new_tokens,
        num_beams=config.num_beams,
        do_sample=config.do_sample,
        no_repeat_ngram_size=config.no_repeat_ngram_size,
        repetition_penalty=1.0 if own_repetition_penalty else config.repetition_penalty,
    )
    if config.do_sample:
        kwargs.update(temperature=config.temperature, top_p=config.top_p, top_k=config.top_k)
    return kwargs


#: Model types whose prompt cache ``prefill_once`` builds (their outputs checked equal to a plain
#: ``generate``: tests/test_generate.py); other models prefill the usual way.
PREFILL_ONCE_TYPES = frozenset({"llama"})


def prefill_once(model: Any, enc: Any, num_beams: int) -> dict[str, Any]:
    """The prompt's cache, computed once per example and repeated for each beam, as ``generate`` kwargs.

    ``generate`` copies every prompt ``num_beams`` times before its first forward pass, so
    beam search would run the whole prompt through the model once per beam; for the long
    prompts of review sets that pass is most of the decoding time on a CPU. Here all but the
    prompt's last token run once per example and the cache is repeated per beam; ``generate``
    then runs only the last token (the same positions and mask, the same tokens out).
    Empty (nothing to share) for one beam, a prompt of one token, an encoder-decoder model or
    a model type outside ``PREFILL_ONCE_TYPES``.
    """
    import inspect

    from transformers import DynamicCache

    ids, mask = enc["input_ids"], enc["attention_mask"]
    if num_beams < 2 or ids.shape[1] < 2 or model.config.is_encoder_decoder:
        return {}
    if getattr(model.config, "model_type", None) not in PREFILL_ONCE_TYPES:
        return {}
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a PEFT adapter's model
    name = "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)  # generate's own, left padding
    cache = DynamicCache(config=model.config)
    model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions[:, :-1],
          use_cache=True, **{name: cache})
    cache.batch_repeat_interleave(num_beams)
    return {name: cache}


class TransformersEngine:
    """In-process decoding with a transformers model (``load_generator``): every setting, every processor.

    ``TransformersEngine.open(name, device=...)`` loads the model on first use;
    ``TransformersEngine(model, tokenizer)`` wraps a loaded one.
    """

    kind: ClassVar[str] = "transformers"
    capabilities: ClassVar[Capabilities] = Capabilities(shares_model=True)

    def __init__(self, model: Any = None, tokenizer: Any = None, *, source: str | None = None,
                 device: str | None = None) -> None:
        self._model, self._tokenizer = model, tokenizer
        self.source, self.device = source, device

    @classmethod
    def open(cls, model: str, device: str | None = None, **_: Any) -> TransformersEngine:
        """The engine of ``model`` (alias, folder, adapter folder or cached HF id), loaded on first use."""
        from ..models import check_local

        check_local(model)
        return cls(source=model, device=device)

    def _load(self) -> None:
        if self._model is None:
            from ..models import load_generator

            if self.source is None:
                raise ValueError("TransformersEngine: give a model or open(name)")
            self._model, self._tokenizer = load_generator(self.source, device=self.device)

    @property
    def model(self) -> Any:
        """The transformers model (loaded on first use)."""
        self._load()
        return self._model

    @property
    def tokenizer(self) -> Any:
        """Its tokenizer (loaded with the model)."""
        self._load()
        return self._tokenizer

    def prepare(self, config: GenerateConfig) -> None:
        """Nothing to check before the model loads."""

    def check_prompts(self, examples: Sequence[Example], config: GenerateConfig) -> None:
        """Raise DataError for the first example whose prompt exceeds the context, before any decoding.

        Commands call it after the model loads and before their progress bar starts,
        so the error is one clean line (not glued to a bar), naming file:line.
        """
        for start in range(0, len(examples), max(1, config.batch_size)):
            encode_prompts(self.model, self.tokenizer, examples[start : start + config.batch_size], config)

    def shared_model(self) -> tuple[Any, Any] | None:
        """The loaded model and tokenizer (LM scorers of the same model share them)."""
        return self.model, self.tokenizer

    def summarize(
        self,
        examples: Sequence[Example],
        config: GenerateConfig,
        processor_builders: Sequence[ProcessorBuilder] = (),
        progress: bool = True,
        on_batch: Callable[[list[Example], list[str]], None] | None = None,
        lora_request: Any = None,
    ) -> list[str]:
        """One summary per example (``decoding.generate.generate``'s contract)."""
        import torch
        from transformers import LogitsProcessorList

        from ..config import check_examples
        from ..processors.builders import BatchHooks, PromptBatch, config_builders

        model, tokenizer = self.model, self.tokenizer
        validate_examples(examples)
        check_examples(examples, config)
        device = next(model.parameters()).device
        builders = config_builders(config, processor_builders)
        own_penalty = config.own_repetition_penalty(model)
        summaries = SummaryCollector(len(examples), config, on_batch, progress)
        for start, batch in batches(examples, config.batch_size):
            enc = encode_prompts(model, tokenizer, batch, config).to(device)
            summaries.begin(batch)
            prompt_batch = PromptBatch(batch, enc["input_ids"], enc["attention_mask"], tokenizer, model, config)
            hooks = BatchHooks()  # every part's processors (and fair beam search's generate kwargs)
            for build in builders:
                hooks.add(build(prompt_batch))
            processors = LogitsProcessorList(hooks.processors)
            torch.manual_seed(config.seed + start)
            with torch.no_grad():
                out = model.generate(
                    **enc,
                    **hf_kwargs(config, own_repetition_penalty=own_penalty),
                    logits_processor=processors,
                    pad_token_id=tokenizer.pad_token_id,
                    eos_token_id=tokenizer.eos_token_id,
                    stopping_criteria=step_criteria(enc["input_ids"].shape[1], config.max_new_tokens)
                    if not model.config.is_encoder_decoder else step_criteria(1, config.max_new_tokens),
                    **hooks.generate_kwargs,
                    **prefill_once(model, enc, config.num_beams),
                )
            new = out if model.config.is_encoder_decoder else out[:, enc["input_ids"].shape[1] :]
            # the response prefix is part of the prompt: given back at the start of each summary
            prefixes = response_prefixes(model, batch, config)
            decoded = tokenizer.batch_decode(new, skip_special_tokens=True)
            summaries.add(batch, [(prefix + t).strip() for prefix, t in zip(prefixes, decoded)])
        return summaries.close()

    def close(self) -> None:
        """Drop the model (a later call loads it again)."""
        if self.source is not None:
            self._model = self._tokenizer = None
