"""Summarize examples with a generator model: prompts, batching, decoding settings, processors."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from evenhand.decoding.prompting import KIND_CHOICES, check_kind
from evenhand.evaluation.schema import DataError, Example


@dataclass
class GenerateConfig:
    """Decoding settings. Defaults suit SmolLM2-135M-Instruct (it repeats itself otherwise)."""

    max_new_tokens: int = field(default=96, metadata={"help": "Tokens to generate per summary."})
    num_beams: int = field(default=4, metadata={"help": "Beam width (1 = greedy or sampling)."})
    do_sample: bool = field(default=False, metadata={"help": "Sample instead of beam search."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature."})
    top_p: float | None = field(default=None, metadata={"help": "Nucleus sampling mass."})
    top_k: int | None = field(default=None, metadata={"help": "Top-k sampling cut-off."})
    no_repeat_ngram_size: int = field(
        default=3, metadata={"help": "Forbid repeating n-grams of this size (0 = off)."}
    )
    repetition_penalty: float = field(
        default=1.2, metadata={"help": "Penalty on already generated tokens (1.0 = off)."}
    )
    penalize_prompt: bool = field(
        default=False,
        metadata={
            "help": "Apply repetition_penalty to the prompt's tokens too (transformers' default "
            "for decoder-only models); off, copying words of the source is not penalized."
        },
    )
    batch_size: int = field(default=4, metadata={"help": "Examples per generate() call."})
    seed: int = field(default=0, metadata={"help": "Random seed; same seed, same outputs."})
    instruction: str | None = field(
        default=None, metadata={"help": "Instruction replacing the default summarization one."}
    )
    prompt_kind: str = field(
        default="auto",
        metadata={
            "help": "Prompt for this kind of source: reviews, debate, stances, posts, texts, or "
            "auto (by the example's attribute: rating/sentiment -> reviews, speaker -> debate, "
            "stance -> stances, party -> posts, other -> texts).",
            "choices": KIND_CHOICES,
        },
    )
    response_prefix: str | None = field(
        default=None,
        metadata={
            "help": "Text the summary starts with (decoder-only models): the model continues it "
            "and it is part of the output. Default: the prompt kind's prefix ('Reviewers', "
            "'The speakers'...) when the kind's own instruction is used; '' turns it off."
        },
    )
    clean: bool = field(
        default=True,
        metadata={
            "help": "Clean generated summaries: drop a leading preamble or heading ('Here is a "
            "summary:', 'Title: ...'), collapse whitespace, cut a trailing incomplete sentence."
        },
    )
    fair_prompt: str | None = field(
        default=None,
        metadata={"help": "Prompting baseline: 'definition' (FairSumm) or 'labels' (Equal Coverage)."},
    )
    abstractiveness: float | None = field(
        default=None,
        metadata={
            "help": "Abstractiveness constraint h (Dreyer et al. 2023): discount extractive "
            "fragments of length l by 2^(-l^2/h^2); smaller h = more abstractive."
        },
    )
    extractiveness: float | None = field(
        default=None,
        metadata={
            "help": "Extraction reward h: the inverse 2^(+l^2/h^2) of --abstractiveness; "
            "smaller h = more extractive."
        },
    )
    fairness: str | dict[str, float] | None = field(
        default=None,
        metadata={
            "help": "Group-fairness target for fair decoding: 'ratio' (source distribution), "
            "'equal', or a JSON object of shares per group such as '{\"pos\": 0.5, \"neg\": 0.5}'."
        },
    )
    fairness_strength: float = field(
        default=0.0,
        metadata={"help": "α: bonus (nats) on tokens of under-represented groups (0 = off)."},
    )
    fair_beam: float = field(
        default=0.0,
        metadata={"help": "β: weight of -UER in fairness-aware beam search (0 = plain beam search)."},
    )
    fairness_tau: float = field(
        default=0.8,
        metadata={"help": "τ: a group is under-represented below τ × its target share."},
    )

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"`max_new_tokens` must be a positive int, got {self.max_new_tokens}")
        if self.num_beams < 1:
            raise ValueError(f"`num_beams` must be a positive int, got {self.num_beams}")
        if self.batch_size < 1:
            raise ValueError(f"`batch_size` must be a positive int, got {self.batch_size}")
        check_kind(self.prompt_kind)
        if self.temperature <= 0:
            raise ValueError(
                f"`temperature` must be a positive float, got {self.temperature}; "
                "for deterministic decoding set `do_sample=False` instead"
            )
        if not self.do_sample and (self.top_p is not None or self.top_k is not None):
            raise ValueError("`top_p`/`top_k` only apply with `do_sample=True`; set it or drop them")
        for name in ("abstractiveness", "extractiveness"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not value > 0):
                raise ValueError(f"`{name}` must be a positive float (h) or None, got {value!r}")
        if self.abstractiveness is not None and self.extractiveness is not None:
            raise ValueError(
                "`abstractiveness` (penalty) and `extractiveness` (reward) pull in opposite "
                "directions; set only one of them"
            )
        self._check_fairness()

    def processor_builders(self) -> list[ProcessorBuilder]:
        """Builders implied by the config itself (abstractiveness penalty or extraction reward)."""
        from evenhand.decoding.source_tokens import abstractiveness_builder

        if self.abstractiveness is not None:
            return [abstractiveness_builder(self.abstractiveness, reward=False)]
        if self.extractiveness is not None:
            return [abstractiveness_builder(self.extractiveness, reward=True)]
        return []

    def _check_fairness(self) -> None:
        from evenhand.decoding.group_vocab import parse_fairness

        self.fairness = parse_fairness(self.fairness)
        for name in ("fairness_strength", "fair_beam"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"`{name}` must be a non-negative float, got {value!r}")
        if not 0 <= self.fairness_tau <= 1:
            raise ValueError(f"`fairness_tau` must be a float in [0, 1], got {self.fairness_tau!r}")
        if self.fairness is None and (self.fairness_strength > 0 or self.fair_beam > 0):
            raise ValueError(
                "`fairness_strength`/`fair_beam` need a target: set `fairness` to 'ratio', "
                "'equal' or shares per group"
            )
        if self.fairness is not None and self.fairness_strength == 0 and self.fair_beam == 0:
            import warnings

            warnings.warn(
                "`fairness` has no effect unless `fairness_strength` (α) or `fair_beam` (β) is "
                "positive", stacklevel=3,
            )
        if self.fair_beam > 0 and (self.num_beams < 2 or self.do_sample):
            raise ValueError(
                "`fair_beam` is a beam search: set `num_beams` >= 2 and `do_sample=False`, "
                "or use `fairness_strength` alone"
            )

    def hf_kwargs(self, own_repetition_penalty: bool = False) -> dict[str, Any]:
        """Keyword arguments for ``model.generate``.

        With ``own_repetition_penalty`` the repetition penalty is left out: the
        caller applies it itself (to generated tokens only, see ``generate``).
        """
        kwargs: dict[str, Any] = dict(
            max_new_tokens=self.max_new_tokens,
            num_beams=self.num_beams,
            do_sample=self.do_sample,
            no_repeat_ngram_size=self.no_repeat_ngram_size,
            repetition_penalty=1.0 if own_repetition_penalty else self.repetition_penalty,
        )
        if self.do_sample:
            kwargs.update(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k)
        return kwargs


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


#: Functions turning a batch into extra logits processors (abstractiveness, fairness...).
ProcessorBuilder = Callable[[PromptBatch], Sequence[Any]]


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
    from evenhand.decoding.prompting import response_prefix

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
    from evenhand.decoding.prompting import build_prompt, chat_prompt

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
                    f"example {ex.id!r}: `documents` take {n} prompt tokens, more than the "
                    f"model's context allows ({limit} tokens"
                    + ("" if model.config.is_encoder_decoder else f" minus {config.max_new_tokens} new")
                    + "); shorten or drop documents, or lower `max_new_tokens`"
                )
    return enc


def _generated_only_penalty(model: Any, config: GenerateConfig, prompt_length: int) -> list[Any]:
    """transformers' repetition penalty restricted to generated tokens (decoder-only models).

    transformers applies ``repetition_penalty`` to every token in ``input_ids``,
    which for a decoder-only summarizer includes the whole source: copying any
    source word is then penalized, pushing the model away from faithful wording.
    Unless ``penalize_prompt``, we apply it with ``prompt_ignore_length``.
    """
    if model.config.is_encoder_decoder or config.penalize_prompt or config.repetition_penalty == 1.0:
        return []
    from transformers import RepetitionPenaltyLogitsProcessor

    return [RepetitionPenaltyLogitsProcessor(config.repetition_penalty, prompt_ignore_length=prompt_length)]


def generate(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    config: GenerateConfig | None = None,
    processor_builders: Sequence[ProcessorBuilder] = (),
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
    **overrides: Any,
) -> list[str]:
    """Write one summary per example.

    Args:
        model: a causal or seq2seq transformers model (``load_generator``).
        tokenizer: its tokenizer.
        examples: the inputs.
        config: decoding settings (default ``GenerateConfig()``).
        processor_builders: callables turning each ``PromptBatch`` into extra logits
            processors (group-coverage bonus...); those implied by ``config``
            (``abstractiveness``/``extractiveness``) are added after them.
        progress: show a progress bar over examples.
        on_batch: called with each finished batch's examples and summaries (for
            incremental writing).
        **overrides: GenerateConfig fields replacing those of ``config``, e.g.
            ``fairness="ratio", fairness_strength=1.0, fair_beam=0.5``.

    Returns:
        The summaries, in example order. The same inputs, config and seed give the
        same outputs: each batch re-seeds torch with ``seed + index of its first example``.
    """
    import torch
    from evenhand.decoding.fair_decoding import check_examples, fairness_hooks
    from tqdm.auto import tqdm
    from transformers import LogitsProcessorList

    config = config or GenerateConfig()
    if overrides:
        config = dataclasses.replace(config, **overrides)
    for i, ex in enumerate(examples):
        ex.validate(f"examples[{i}]")
    check_examples(examples, config)
    device = next(model.parameters()).device
    builders = [*processor_builders, *config.processor_builders()]
    from evenhand.decoding.prompting import clean_summary

    outputs: list[str] = []
    bar = tqdm(total=len(examples), desc="generate", unit="ex", disable=not progress)
    for start, batch in _batches(examples, config.batch_size):
        enc = encode_prompts(model, tokenizer, batch, config).to(device)
        prompt_batch = PromptBatch(
            batch, enc["input_ids"], enc["attention_mask"], tokenizer, model, config
        )
        fair = fairness_hooks(prompt_batch)  # group-coverage processor, fair beam search
        penalty = _generated_only_penalty(model, config, prompt_batch.prompt_length)
        processors = LogitsProcessorList(
            penalty + [p for build in builders for p in build(prompt_batch)] + fair.processors
        )
        torch.manual_seed(config.seed + start)
        with torch.no_grad():
            out = model.generate(
                **enc,
                **config.hf_kwargs(own_repetition_penalty=bool(penalty)),
                logits_processor=processors,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
                **fair.generate_kwargs,
            )
        new = out if model.config.is_encoder_decoder else out[:, enc["input_ids"].shape[1] :]
        # the response prefix is part of the prompt: given back at the start of each summary
        prefixes = response_prefixes(model, batch, config)
        decoded = tokenizer.batch_decode(new, skip_special_tokens=True)
        texts = [(prefix + t).strip() for prefix, t in zip(prefixes, decoded)]
        if config.clean:
            texts = [clean_summary(t) for t in texts]
        outputs.extend(texts)
        if on_batch is not None:
            on_batch(batch, texts)
        bar.update(len(batch))
    bar.close()
    return outputs
