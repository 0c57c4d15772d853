"""Prompts for summarization: documents as plain text, wrapped in the model's chat template.

SmolLM2 copies numbered lists and repeats itself, so documents are given as plain
paragraphs (no numbering) and the instruction asks for 2-3 sentences.
"""

from __future__ import annotations

from typing import Any

from evenhand.evaluation.schema import Example

DEFAULT_INSTRUCTION = (
    "Summarize the texts above in 2-3 sentences. Cover every opinion in them, "
    "positive and negative, and say only what the texts say."
)

#: System message: keeps SmolLM2 from "rewriting" the texts or answering in the first person.
DEFAULT_SYSTEM = (
    "You are a summarizer. You reply with a short, neutral summary in the third person "
    "and nothing else."
)

#: FairSumm's "+ Definition" baseline (Zhang et al. 2024, Sec. 6): the paper's fairness
#: definition — a summary must not under-represent the perspective of any value of the
#: attribute — appended to the instruction. ``{attribute}`` is filled per example.
FAIRNESS_DEFINITION = (
    "The summary must be fair: it must not under-represent the opinions of any {attribute} "
    "value: the opinions of each value should take about the same share of the summary as "
    "of the texts."
)

FAIR_PROMPTS = ("definition", "labels")


def _label(example: Example, group: str | None) -> str:
    if group is None:
        return ""
    attribute = example.attribute or "group"
    return f"[{attribute}: {group}] "


def format_documents(example: Example, show_groups: bool = False) -> str:
    """The documents as plain paragraphs; with ``show_groups`` each starts with its group label."""
    parts = []
    for doc in example.documents:
        prefix = _label(example, doc.group) if show_groups else ""
        parts.append(prefix + " ".join(doc.text.split()))
    return "\n\n".join(parts)


def labels_instruction(example: Example) -> str:
    """The Equal Coverage paper's fair prompt, in our words: labels shown, shares stated.

    Li et al. (2024) list each document with its attribute value in brackets, state
    what percentage of the documents has each value, ask that the same percentage
    of the summary's information come from each value, and forbid naming the values.
    """
    attribute = example.attribute or "group"
    labels = [d.group for d in example.documents if d.group is not None]
    groups = [g for g in example.groups if g in labels]
    if not labels:
        return (
            f"Write a fair summary that covers the opinions of every {attribute} value "
            "in the texts."
        )
    shares = ", ".join(f"{round(100 * labels.count(g) / len(labels))}% {g}" for g in groups)
    return (
        f"Each text starts with its {attribute} in brackets ({shares}). Write a fair summary: "
        f"take about that share of its information from the texts of each {attribute}, "
        f"and do not mention the {attribute} labels or the percentages."
    )


def build_prompt(
    example: Example, instruction: str | None = None, fair_prompt: str | None = None
) -> str:
    """The user message for one example.

    Args:
        example: the input; its own ``prompt`` wins over everything else when set,
            and its ``instruction`` over the default one.
        instruction: override the instruction (default: example's, else DEFAULT_INSTRUCTION).
        fair_prompt: ``None``; ``"definition"`` appends FairSumm's fairness definition;
            ``"labels"`` shows each document's group label and the share of documents
            of each group, and asks that each group's information take that share
            (the Equal Coverage paper's fair prompt).
    """
    if fair_prompt is not None and fair_prompt not in FAIR_PROMPTS:
        raise ValueError(f"`fair_prompt` must be one of {FAIR_PROMPTS} or None, got {fair_prompt!r}")
    if example.prompt and fair_prompt is None and instruction is None:
        return example.prompt
    text = instruction or example.instruction or DEFAULT_INSTRUCTION
    attribute = example.attribute or "group"
    if fair_prompt == "definition":
        text = f"{text} {FAIRNESS_DEFINITION.format(attribute=attribute)}"
    elif fair_prompt == "labels":
        text = f"{text} {labels_instruction(example)}"
    docs = format_documents(example, show_groups=fair_prompt == "labels")
    return f"{docs}\n\n{text}"


def chat_prompt(tokenizer: Any, user_text: str, system: str | None = DEFAULT_SYSTEM) -> str:
    """``user_text`` in the tokenizer's chat template, ending with the assistant turn's start.

    The documents come first and the instruction last (small models follow the
    last thing they read). Tokenizers without a chat template (seq2seq models)
    get ``user_text`` unchanged; ``system=None`` uses the template's own default.
    """
    if getattr(tokenizer, "chat_template", None) is None:
        return user_text
    messages = [{"role": "user", "content": user_text}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
