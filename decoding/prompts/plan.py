"""The prompt of each example, built once for every engine.

An example's prompt is the user message ``build_prompt(example, ...)`` (documents
first, then the instruction), put into the tokenizer's chat template
(``chat_prompt``) and followed by the response prefix, the words the summary
starts with (given back at the start of each summary). Every engine reads it
here: the transformers engine and the vLLM engines tokenize :meth:`PromptPlan.text`
(:func:`prompt_token_ids` refuses a prompt longer than the context, naming the
example's file:line), the abstractiveness constraint locates the documents in
:meth:`PromptPlan.templated`, and a server's chat API receives :meth:`PromptPlan.messages`
(the server applies its own template).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...evaluation.data.schema import Example
from ...evaluation.errors import DataError
from ..config import PromptSettings
from .templates import DEFAULT_SYSTEM, build_prompt, chat_prompt, response_prefix


@dataclass(frozen=True)
class PromptPlan:
    """One example's prompt: its user message and the response prefix the summary starts with."""

    example: Example
    user: str
    prefix: str

    def templated(self, tokenizer: Any) -> str:
        """The user message in ``tokenizer``'s chat template, ending with the assistant turn's start."""
        return chat_prompt(tokenizer, self.user)

    def text(self, tokenizer: Any) -> str:
        """What the model continues: the templated prompt, then the response prefix."""
        return self.templated(tokenizer) + self.prefix

    def messages(self) -> list[dict[str, str]]:
        """The chat messages (system ``DEFAULT_SYSTEM``, the user message), before any template."""
        return [{"role": "system", "content": DEFAULT_SYSTEM}, {"role": "user", "content": self.user}]

    def summary(self, generated: str) -> str:
        """The summary of a generated continuation: the response prefix given back, stripped."""
        return (self.prefix + generated).strip()


def plan_prompts(
    examples: Sequence[Example], config: PromptSettings, prefixes: bool = True
) -> list[PromptPlan]:
    """The :class:`PromptPlan` of each example under ``config``.

    ``prefixes=False``: no response prefixes (encoder-decoder models and a server's chat
    API cannot continue a started reply); the caller refuses an explicit one first.
    """
    return [
        PromptPlan(
            ex,
            build_prompt(ex, config.instruction, config.fair_prompt, config.prompt_kind),
            response_prefix(ex, config.response_prefix, config.instruction, config.prompt_kind)
            if prefixes else "",
        )
        for ex in examples
    ]


def check_context(
    example: Example, tokens: int, limit: int | None, max_new_tokens: int, encoder_decoder: bool = False
) -> None:
    """Raise DataError (naming the example's file:line) when a prompt of ``tokens`` tokens does
    not fit the model's context ``limit`` with ``max_new_tokens`` to generate (decoder-only)."""
    if limit is None:
        return
    budget = limit if encoder_decoder else limit - max_new_tokens
    if tokens > budget:
        where = example.where()
        raise DataError(
            f"{where}{': ' if where else ''}"
            f"example {example.id!r}: `documents` take {tokens} prompt tokens, more than the "
            f"model's context allows ({limit} tokens"
            + ("" if encoder_decoder else f" minus {max_new_tokens} new")
            + "); shorten or drop documents, or lower `max_new_tokens`"
        )


def prompt_token_ids(
    tokenizer: Any, plans: Sequence[PromptPlan], limit: int | None = None, max_new_tokens: int = 0
) -> list[list[int]]:
    """Each plan's :meth:`~PromptPlan.text` as token ids (no special tokens added);
    DataError for the first that does not fit ``limit`` (:func:`check_context`)."""
    out = []
    for plan in plans:
        ids = list(tokenizer(plan.text(tokenizer), add_special_tokens=False)["input_ids"])
        check_context(plan.example, len(ids), limit, max_new_tokens)
        out.append(ids)
    return out
