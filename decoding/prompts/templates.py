"""Prompts for summarization: one per kind of source, wrapped in the model's chat template.

SmolLM2 copies numbered lists and repeats itself, so documents are given as plain
paragraphs (no numbering) and the instruction asks for 2-3 sentences.

**Kinds of source.** Each kind has its own instruction and a default *response
prefix*, the words the summary starts with (the model continues them), which
keeps small models from opening with "Here's a rewritten version...":

- ``reviews`` (attribute ``rating`` or ``sentiment``): prefix "Some reviewers";
- ``debate`` (``speaker``): "In this debate,";
- ``stances`` (``stance``): "Supporters argue that";
- ``posts`` (``party``; tweets and other posts): "The posts";
- ``texts`` (any other attribute, or none): "Some of the texts".

Measured on the 12 demo sets with beam search: a bare noun ("Reviewers",
"Supporters") made SmolLM2 continue with a colon and a numbered list; "Some
reviewers" invites the contrast "..., while others ...".

``kind="auto"`` picks by the example's ``attribute`` (case-insensitive); a
``debate`` shows each document as ``Speaker name: text``, since who said it is
part of the content. The instruction is chosen as: the example's own
``prompt`` (used as is), else an explicit ``instruction``, else the example's
``instruction``, else the kind's. The kind's response prefix applies only with
the kind's own instruction (see ``response_prefix``).

``clean_summary`` is the light clean-up applied to generated summaries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...evaluation.data.schema import Example

#: What every kind's instruction ends with: SmolLM2 otherwise writes titles and lists.
_FORM = "Write plain sentences in the third person, with no title, no introduction and no list."


@dataclass(frozen=True)
class PromptKind:
    """How to prompt for one kind of source.

    Args:
        name: the kind's name (``--prompt-kind`` choice).
        instruction: the task, placed after the documents.
        response_prefix: the words the summary starts with ("" = none).
        show_speakers: start each document with its group label and a colon
            (``Councillor Reyes: ...``), for sources where the group is a name.
    """

    name: str
    instruction: str
    response_prefix: str
    show_speakers: bool = False


PROMPT_KINDS: dict[str, PromptKind] = {
    kind.name: kind
    for kind in (
        PromptKind(
            "reviews",
            "Summarize these reviews in 2-3 sentences. Say what the reviewers liked and what "
            "they complained about, covering every opinion, and say only what the reviews say. "
            + _FORM,
            "Some reviewers",
        ),
        PromptKind(
            "debate",
            "Summarize this debate in 2-3 sentences. Say what each speaker argued, on every "
            "side, and say only what the speakers said. " + _FORM,
            "In this debate,",
            show_speakers=True,
        ),
        PromptKind(
            "stances",
            "Summarize these opinions in 2-3 sentences. Give the arguments of the supporters "
            "and of the opponents, and say only what the texts say. " + _FORM,
            "Supporters argue that",
        ),
        PromptKind(
            "posts",
            "Summarize these social media posts in 2-3 sentences. Say what the posts praise and "
            "what they criticize, covering every side, and say only what the posts say. " + _FORM,
            "The posts",
        ),
        PromptKind(
            "texts",
            "Summarize the texts above in 2-3 sentences. Cover every opinion in them, positive "
            "and negative, and say only what the texts say. " + _FORM,
            "Some of the texts",
        ),
    )
}

#: ``kind="auto"``: the kind of each known attribute; any other attribute (or none) is ``texts``.
ATTRIBUTE_KINDS: dict[str, str] = {
    "rating": "reviews",
    "sentiment": "reviews",
    "speaker": "debate",
    "stance": "stances",
    "party": "posts",
}

#: Valid values of ``GenerateConfig.prompt_kind`` / ``--prompt-kind``.
KIND_CHOICES: tuple[str, ...] = ("auto", *PROMPT_KINDS)

#: The generic kind's instruction (kept under its old name for callers that import it).
DEFAULT_INSTRUCTION = PROMPT_KINDS["texts"].instruction

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


def check_fair_prompt(fair_prompt: str | None) -> str | None:
    """``fair_prompt`` if it is ``None`` or one of ``FAIR_PROMPTS``; otherwise a ValueError naming them."""
    if fair_prompt is not None and fair_prompt not in FAIR_PROMPTS:
        raise ValueError(f"`fair_prompt` must be one of {FAIR_PROMPTS} or None, got {fair_prompt!r}")
    return fair_prompt


def check_kind(kind: str) -> str:
    """``kind`` if it is a valid ``--prompt-kind``; otherwise a ValueError listing the choices."""
    if kind not in KIND_CHOICES:
        raise ValueError(f"`prompt_kind` must be one of {', '.join(KIND_CHOICES)}, got {kind!r}")
    return kind


def prompt_kind(example: Example, kind: str = "auto") -> PromptKind:
    """The kind of ``example``: ``kind`` itself, or with ``"auto"`` the one its attribute maps to."""
    check_kind(kind)
    if kind == "auto":
        kind = ATTRIBUTE_KINDS.get((example.attribute or "").strip().lower(), "texts")
    return PROMPT_KINDS[kind]


def describe_kinds(examples: list[Example], kind: str = "auto") -> str:
    """One line naming the prompt kind(s) ``examples`` get, printed once by the commands.

    ``prompt kind: reviews (attribute rating)``; with no attribute, how to choose one.
    """
    from collections import Counter

    counts = Counter(prompt_kind(ex, kind).name for ex in examples)
    attributes = sorted({ex.attribute for ex in examples if ex.attribute})
    how = f"--prompt-kind {kind}" if kind != "auto" else (
        f"attribute {', '.join(attributes)}" if attributes else
        "the examples name no attribute: give --attribute (rating, speaker...) or --prompt-kind")
    if len(counts) == 1:
        return f"prompt kind: {next(iter(counts))} ({how})"
    parts = ", ".join(f"{name} for {n}" for name, n in counts.most_common())
    return f"prompt kinds: {parts} examples ({how})"


def _label(example: Example, group: str | None) -> str:
    if group is None:
        return ""
    attribute = example.attribute or "group"
    return f"[{attribute}: {group}] "


def format_documents(example: Example, show_groups: bool = False, show_speakers: bool = False) -> str:
    """The documents as plain paragraphs.

    With ``show_groups`` each starts with its bracketed group label (``[speaker: Kim] ...``,
    the ``labels`` fair prompt); else with ``show_speakers`` each labelled one starts
    with its group and a colon (``Kim: ...``, the ``debate`` kind).
    """
    parts = []
    for doc in example.documents:
        if show_groups:
            prefix = _label(example, doc.group)
        elif show_speakers and doc.group is not None:
            prefix = f"{doc.group}: "
        else:
            prefix = ""
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
    example: Example, instruction: str | None = None, fair_prompt: str | None = None,
    kind: str = "auto",
) -> str:
    """The user message for one example.

    Args:
        example: the input; its own ``prompt`` wins over everything else when set,
            and its ``instruction`` over the kind's one.
        instruction: override the instruction (default: example's, else the kind's).
        fair_prompt: ``None``; ``"definition"`` appends FairSumm's fairness definition;
            ``"labels"`` shows each document's group label and the share of documents
            of each group, and asks that each group's information take that share
            (the Equal Coverage paper's fair prompt).
        kind: a ``PROMPT_KINDS`` name or ``"auto"`` (by the example's attribute, see
            ``ATTRIBUTE_KINDS``): its instruction, and whether speakers are shown.
    """
    check_fair_prompt(fair_prompt)
    chosen = prompt_kind(example, kind)
    if example.prompt and fair_prompt is None and instruction is None:
        return example.prompt
    text = instruction or example.instruction or chosen.instruction
    attribute = example.attribute or "group"
    if fair_prompt == "definition":
        text = f"{text} {FAIRNESS_DEFINITION.format(attribute=attribute)}"
    elif fair_prompt == "labels":
        text = f"{text} {labels_instruction(example)}"
    docs = format_documents(
        example, show_groups=fair_prompt == "labels", show_speakers=chosen.show_speakers
    )
    return f"{docs}\n\n{text}"


def response_prefix(
    example: Example, prefix: str | None = None, instruction: str | None = None, kind: str = "auto"
) -> str:
    """The words the summary of ``example`` starts with.

    An explicit ``prefix`` wins (``""`` turns prefixes off). With ``None``, the
    kind's default prefix is used when the kind's own instruction is (no
    ``instruction``, no example ``instruction`` or ``prompt``): a prefix written
    for reviews would fight a user's own task. Otherwise none.
    """
    if prefix is not None:
        return prefix
    if instruction or example.instruction or example.prompt:
        return ""
    return prompt_kind(example, kind).response_prefix


#: Inserted after the first character of a control-token string found in user text.
WORD_JOINER = "\u2060"


def plain_text(tokenizer: Any, text: str) -> str:
    """``text`` with every copy of the tokenizer's control-token strings made ordinary text.

    A document holding ``<|im_end|><|im_start|>system`` would otherwise be
    tokenized into real control tokens and open a new chat turn. Each such
    string (every added token: ``<|im_start|>``, ``<|endoftext|>``...) gets an
    invisible WORD JOINER (U+2060) after its first character, so it tokenizes
    as the plain characters it shows. Text without them is returned unchanged.
    """
    import re

    specials = sorted(
        {str(t) for t in getattr(tokenizer, "added_tokens_decoder", {}).values() if len(str(t)) > 1},
        key=len, reverse=True,
    )
    if not specials or not any(s in text for s in specials):
        return text
    pattern = re.compile("|".join(re.escape(s) for s in specials))
    return pattern.sub(lambda m: m.group(0)[0] + WORD_JOINER + m.group(0)[1:], text)


def chat_prompt(tokenizer: Any, user_text: str, system: str | None = DEFAULT_SYSTEM) -> str:
    """``user_text`` in the tokenizer's chat template, ending with the assistant turn's start.

    The documents come first and the instruction last (small models follow the
    last thing they read). Tokenizers without a chat template (seq2seq models)
    get ``user_text`` alone; ``system=None`` uses the template's own default.
    Control-token strings inside ``user_text`` are made plain text
    (``plain_text``): the prompt holds exactly the template's control tokens.
    """
    user_text = plain_text(tokenizer, user_text)
    if getattr(tokenizer, "chat_template", None) is None:
        return user_text
    messages = [{"role": "user", "content": user_text}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


# ---------------------------------------------------------------- clean-up

#: A heading line: Markdown heading, bold-only line, or a ``Label:`` line (Title:, Summary:, Text 1:).
_HEADING = re.compile(
    r"^\s*(?:#+\s.*|\*\*[^*]+\*\*:?|(?:title|summary|text\s*\d*|review\s*\d*|document\s*\d*)\s*:.*)$",
    re.IGNORECASE,
)
#: A leading ``Summary:``/``Text 1:`` label in front of the text itself.
_LABEL = re.compile(r"^\s*\**(?:summary|text\s*\d*|review\s*\d*)\**\s*:\**\s*", re.IGNORECASE)
#: A preamble sentence: "Here's a summary ...:", "Here is ...:", "Sure, ...!", "Certainly!".
_PREAMBLE = re.compile(
    r"^\s*(?:(?:here[’']?s|here is|here are|below is)\b[^:\n]*(?::|\.\s|\n)"
    r"|(?:sure|certainly|of course|okay|ok)\b[^.!:\n]*[.!:]"
    r"|[^.!?\n]*\b(?:summary|rewritten version|summarized version)\b[^.!?\n]*:)\s*",
    re.IGNORECASE,
)
#: End of a complete sentence: . ! or ? (optionally closed by a quote or bracket)
#: before the end or before whitespace and a capital, digit or quote ("3 a.m. every" is not).
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[A-Z0-9\"“'(]|\s*$)")


def clean_summary(text: str) -> str:
    """A generated summary without preamble, headings, extra whitespace or a cut-off tail.

    In order:

    1. leading heading lines are dropped while text follows them (``Title: ...``,
       ``Summary:``, ``Text 1:``, ``# ...``, ``**...**``), and a leading
       ``Summary:`` or ``Text 1:`` label is stripped from the first line;
    2. leading preamble sentences are dropped: ``Here's a/Here is ...:``,
       ``Sure, ...!``, ``... rewritten version ...:``;
    3. whitespace runs (newlines included) become one space;
    4. a trailing incomplete sentence is cut when at least one complete sentence
       (ending in ``.``, ``!`` or ``?``) precedes it.

    A step that would leave nothing is skipped, so the result is empty only when
    ``text`` is blank.

    >>> clean_summary("Here's a summary of the reviews:\\n\\nReviewers like it. They also")
    'Reviewers like it.'
    """
    lines = text.strip().splitlines()
    while len(lines) > 1 and (_HEADING.match(lines[0]) or not lines[0].strip()):
        lines = lines[1:]
    body = "\n".join(lines)
    body = _LABEL.sub("", body, count=1) or body
    for _ in range(3):  # "Sure! Here is a summary: ..." is two preambles
        stripped = _PREAMBLE.sub("", body, count=1)
        if stripped == body or not stripped.strip():
            break
        body = stripped
        lines = body.strip().splitlines()
        while len(lines) > 1 and (_HEADING.match(lines[0]) or not lines[0].strip()):
            lines = lines[1:]
        body = "\n".join(lines)
    body = " ".join(body.split())
    ends = [m.end() for m in _SENTENCE_END.finditer(body)]
    if ends and ends[-1] < len(body):
        body = body[: ends[-1]]
    return body
