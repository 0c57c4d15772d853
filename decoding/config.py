"""Every generation setting as data with its checks: the four typed parts and ``GenerateConfig``.

Each part is a dataclass of its own fields that validates them (``check``):
decoding (search, sampling, repetition control, batching), prompting,
abstractiveness, fairness. ``GenerateConfig`` is all four at once, with their
fields flat: the CLI flags and YAML keys stay one per field
(``--abstractiveness 2``, ``fairness: ratio``), and ``config.parts()`` gives the
typed parts back. Turning a config into logits processors is
:mod:`evenhand.decoding.processors.builders`; nothing here builds one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError
from .processors.group_vocab import parse_fairness
from .prompts.templates import KIND_CHOICES, PROMPT_KINDS, check_kind

#: the smallest usable sampling temperature: logits divided by less overflow float32 to inf
MIN_TEMPERATURE = 0.001


@dataclass
class DecodingSettings:
    """Search, sampling, repetition control and batching. Defaults suit SmolLM2-135M-Instruct."""

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

    def __post_init__(self) -> None:
        DecodingSettings.check(self)

    def check(self) -> None:
        """Raise ValueError (a DataError) naming the field for a bad decoding setting.

        Every count is an int within a sane upper bound and every float finite
        (``evaluation.data.checks``): NaN and inf never reach ``model.generate``.
        """
        from ..evaluation.data.checks import (
            MAX_DERIVED_SEED,
            check_count,
            check_flags,
            check_number,
        )

        check_count(self.max_new_tokens, "max_new_tokens")
        check_count(self.num_beams, "num_beams")
        check_count(self.batch_size, "batch_size")
        check_count(self.no_repeat_ngram_size, "no_repeat_ngram_size", low=0)
        # a user's seed is checked to 2**32 - 1 where it is given; derived ones add batch offsets
        check_number(self.seed, "seed", low=0, high=MAX_DERIVED_SEED, integer=True)
        check_flags(self, "do_sample", "penalize_prompt")
        if isinstance(self.temperature, (int, float)) and not isinstance(self.temperature, bool) \
                and self.temperature <= 0:
            raise ValueError(
                f"`temperature` must be a positive float, got {self.temperature}; "
                "for deterministic decoding set `do_sample=False` instead"
            )
        check_number(self.temperature, "temperature", low=0, low_open=True, high=100)
        if self.temperature < MIN_TEMPERATURE:  # 1e-320 is positive, but the scaled logits overflow to inf
            raise ValueError(f"`temperature` must be at least {MIN_TEMPERATURE} (smaller values overflow when "
                             f"sampling), got {self.temperature!r}")
        check_number(self.repetition_penalty, "repetition_penalty", low=0, low_open=True, high=100)
        check_number(self.top_p, "top_p", low=0, low_open=True, high=1, none_ok=True)
        check_count(self.top_k, "top_k", low=0, none_ok=True)  # 0 = off (nucleus recipe)
        if not self.do_sample and (self.top_p is not None or self.top_k is not None):
            raise ValueError("`top_p`/`top_k` only apply with `do_sample=True`; set it or drop them")

    def own_repetition_penalty(self, model: Any) -> bool:
        """Whether ``generate`` applies the repetition penalty itself, to generated tokens only.

        transformers applies ``repetition_penalty`` to every token in ``input_ids``,
        which for a decoder-only summarizer includes the whole source: copying any
        source word is then penalized, pushing the model away from faithful wording.
        Unless ``penalize_prompt`` (or for encoder-decoder models, whose input_ids
        hold no prompt), we apply it with ``prompt_ignore_length``.
        """
        return not (model.config.is_encoder_decoder or self.penalize_prompt or self.repetition_penalty == 1.0)


@dataclass
class PromptSettings:
    """What the model is asked: instruction, prompt kind, response prefix, cleaning, fairness prompt."""

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
            "and it is part of the output. Default: the prompt kind's prefix ("
            + "; ".join(f"{k.name}: '{k.response_prefix}'" for k in PROMPT_KINDS.values())
            + ") when the kind's own instruction is used; '' turns it off."
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

    def __post_init__(self) -> None:
        PromptSettings.check(self)

    def check(self) -> None:
        """Raise ValueError for an unknown prompt kind."""
        check_kind(self.prompt_kind)


@dataclass
class AbstractivenessSettings:
    """Nonlinear abstractiveness constraint or extraction reward (Dreyer et al. 2023)."""

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

    def __post_init__(self) -> None:
        AbstractivenessSettings.check(self)

    def check(self) -> None:
        """Raise ValueError for a non-positive h or for both h's set."""
        from ..evaluation.data.checks import check_number

        for name in ("abstractiveness", "extractiveness"):
            value = check_number(getattr(self, name), name, low=0, low_open=True, high=1e6, none_ok=True)
            if value is not None and value < 1e-3:  # 1/h**2 would overflow; h is a length in tokens
                raise ValueError(f"`{name}` must be at least 0.001 (h is a fragment length in tokens), got {value!r}")
        if self.abstractiveness is not None and self.extractiveness is not None:
            raise ValueError(
                "`abstractiveness` (penalty) and `extractiveness` (reward) pull in opposite "
                "directions; set only one of them"
            )


@dataclass
class FairnessSettings:
    """Fairness-aware decoding: group-coverage bonus (α), fair beam search (β) and its
    meaning-level coverage term (W, ``decoding/beam/meaning.py``)."""

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
    fair_meaning: float = field(
        default=0.0,
        metadata={"help": "W: weight of meaning-level group coverage (embedding Equal Coverage of the "
                  "partial summary) in fair beam search, plus a final rerank by Equal Coverage (0 = off)."},
    )
    fair_meaning_every: int = field(
        default=8, metadata={"help": "Generated tokens between meaning-level coverage checks."},
    )
    fair_meaning_measure: str = field(
        default="ec", metadata={"help": "Meaning penalty: 'ec' (Equal Coverage), 'uer' (embedding UER) or 'both'."},
    )
    fair_meaning_encoder: str = field(
        default="minilm", metadata={"help": "Sentence encoder of the meaning term: 'minilm' (embedded) or a folder/HF id."},
    )

    def __post_init__(self) -> None:
        FairnessSettings.check(self)

    def check(self) -> None:
        """Normalize ``fairness``; raise ValueError for bad or contradictory fairness settings."""
        self.fairness = parse_fairness(self.fairness)
        from ..evaluation.data.checks import check_count, check_number

        for name in ("fairness_strength", "fair_beam", "fair_meaning"):  # weights of nats: 1000 is absurd
            check_number(getattr(self, name), name, low=0, high=1000)
        check_number(self.fairness_tau, "fairness_tau", low=0, high=1)
        check_count(self.fair_meaning_every, "fair_meaning_every")
        if self.fair_meaning_measure not in ("ec", "uer", "both"):
            raise ValueError(
                f"`fair_meaning_measure` must be 'ec', 'uer' or 'both', got {self.fair_meaning_measure!r}"
            )
        if not isinstance(self.fair_meaning_encoder, str) or not self.fair_meaning_encoder.strip():
            raise ValueError("`fair_meaning_encoder` must be 'minilm' or an encoder folder/HF id")
        if self.fairness is None and (self.fairness_strength > 0 or self.fair_beam > 0 or self.fair_meaning > 0):
            raise ValueError(
                "`fairness_strength`/`fair_beam`/`fair_meaning` need a target: set `fairness` to "
                "'ratio', 'equal' or shares per group"
            )
        if self.fairness is not None and self.fairness_strength == 0 and self.fair_beam == 0 \
                and self.fair_meaning == 0:
            import warnings

            from ..evaluation.errors import IgnoredOptionWarning

            warnings.warn(
                "`fairness` has no effect unless `fairness_strength` (α) or `fair_beam` (β) is "
                "positive", IgnoredOptionWarning, stacklevel=4,
            )

    @property
    def active(self) -> bool:
        """Whether fairness-aware decoding is on (a target and a positive α, β or W)."""
        return self.fairness is not None and (
            self.fairness_strength > 0 or self.fair_beam > 0 or self.fair_meaning > 0
        )

    @property
    def beam_search(self) -> bool:
        """Whether fair beam search runs (β > 0 or W > 0)."""
        return self.fair_beam > 0 or self.fair_meaning > 0


#: The parts of a GenerateConfig, in the order of its fields (and of the processors they ask for).
PARTS: dict[str, type] = {
    "decoding": DecodingSettings,
    "prompting": PromptSettings,
    "abstractiveness": AbstractivenessSettings,
    "fairness": FairnessSettings,
}


def part_of(config: Any, part: type[Any]) -> Any:
    """The ``part`` dataclass holding ``config``'s values of its fields (already checked: no warnings)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return part(**{f.name: getattr(config, f.name) for f in dataclasses.fields(part)})


@dataclass
class GenerateConfig(FairnessSettings, AbstractivenessSettings, PromptSettings, DecodingSettings):
    """Every generation setting: the four typed parts of this module at once.

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


def check_examples(examples: Sequence[Example], config: FairnessSettings) -> None:
    """Raise DataError before any decoding if fairness is on and an example lacks groups.

    Also when a ``{group: share}`` target names a group the example does not have.
    Errors name the example's file:line (``ex.where``).
    """
    if config.active:
        for i, ex in enumerate(examples):
            where = ex.where(f"examples[{i}]")
            groups = ex.require_groups(where)
            if isinstance(config.fairness, dict):
                unknown = sorted(set(config.fairness) - set(groups))
                if unknown:
                    named = f"{unknown[:5]}" + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
                    raise DataError(
                        f"{where}: example {ex.id!r}: `fairness` names groups {named} that are not "
                        f"among its groups {groups[:10]}{' ...' if len(groups) > 10 else ''}; use the example's "
                        "group labels as keys"
                    )
