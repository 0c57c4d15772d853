"""The LLM judges through an OpenAI-compatible server: expected digit from ``top_logprobs``.

One ``/chat/completions`` request per (source, summary) pair, with the
in-process judge's messages (system ``DEFAULT_SYSTEM``, user the rubric with
the article and summary filled in), ``temperature: 0``, ``logprobs: true`` and
``top_logprobs: 20`` (OpenAI's and vLLM's default maximum).

``mode="expected"`` reads the first generated token's top log-probs: the
probability of digit d is the summed probability of the listed tokens whose
text, stripped of whitespace, is d ("4" and " 4" both count), and

    score = sum_d d * p(d) / sum_d p(d),   d in {1..5}

as in-process (``judge_scores.expected_digit``); ``digit_mass`` is sum_d p(d)
over the listed tokens (a lower bound of the in-process value, which sums over
the whole vocabulary). **Fallback**: when the server returns no log-probs, or
none of the 20 listed tokens is a digit 1-5, the reply text is parsed as in
``mode="parse"`` (the first integer if it is 1..5, else 1); such records carry
``fallback: "parse"`` and ``digit_mass: 0.0`` (or None without log-probs).

``mode="parse"`` asks for 8 greedy tokens and parses the reply, as in-process.

The article is not cut to ``max_prompt_tokens`` (there is no tokenizer on this
side): a prompt longer than the server's context is refused by the server,
and the error names the server's message.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..decoding.engines.http import ServerClient
from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError
from .judge_scores import expected_digit, parse_score

#: Top log-probs asked for per position (the OpenAI API's maximum, vLLM's default limit).
TOP_LOGPROBS = 20
#: Tokens generated in parse mode (and for the text read by the fallback), as in-process.
PARSE_TOKENS = 8


def judge_messages(template: str, example: Example, summary: str) -> list[dict[str, str]]:
    """The chat messages of one judge call: the in-process prompt before its chat template."""
    from ..decoding.prompts.templates import DEFAULT_SYSTEM

    user = template.format(article=example.source_text("\n\n"), summary=summary)
    return [{"role": "system", "content": DEFAULT_SYSTEM}, {"role": "user", "content": user}]


def judge_payload(messages: list[dict[str, str]], mode: str) -> dict[str, Any]:
    """The request body (without ``model``) of one judge call in ``mode``."""
    body: dict[str, Any] = {"messages": messages, "temperature": 0.0, "max_tokens": PARSE_TOKENS}
    if mode == "expected":
        body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
    return body


def first_top_logprobs(response: dict[str, Any]) -> list[tuple[str, float]] | None:
    """``(token, logprob)`` of the first generated position's top log-probs, or None when absent.

    Reads the chat format (``logprobs.content[0].top_logprobs``: a list of
    ``{token, logprob}``) and the legacy completions format
    (``logprobs.top_logprobs[0]``: a dict token -> logprob).
    """
    try:
        logprobs = response["choices"][0].get("logprobs")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        top = content[0].get("top_logprobs") or []
        return [(str(t["token"]), float(t["logprob"])) for t in top if isinstance(t, dict) and "token" in t]
    legacy = logprobs.get("top_logprobs")
    if isinstance(legacy, list) and legacy and isinstance(legacy[0], dict):
        return [(str(k), float(v)) for k, v in legacy[0].items()]
    return None


def digit_probs(top: Sequence[tuple[str, float]]) -> list[float]:
    """Probability of each digit 1..5 among listed tokens (tokens that strip to the digit are summed).

    >>> [round(p, 3) for p in digit_probs([("4", math.log(0.5)), (" 4", math.log(0.25)), ("x", 0.0)])]
    [0.0, 0.0, 0.0, 0.75, 0.0]
    """
    probs = [0.0] * 5
    for token, logprob in top:
        text = token.strip()
        if len(text) == 1 and "1" <= text <= "5":
            probs[int(text) - 1] += math.exp(logprob)
    return probs


def read_judgement(response: dict[str, Any], mode: str, judge: str) -> dict[str, Any]:
    """The judge record of one response: ``score``, ``argmax``, ``digit_mass``, ``judge`` (+ ``reply``)."""
    try:
        reply = str(response["choices"][0]["message"]["content"] or "").strip()
    except (KeyError, IndexError, TypeError):
        raise DataError(
            f"judge server {judge} answered without choices[0].message.content: {str(response)[:200]}"
        ) from None
    top = first_top_logprobs(response) if mode == "expected" else None
    if top is not None:
        probs = digit_probs(top)
        if sum(probs) > 0:
            value, argmax = expected_digit(probs)
            return {"score": value, "argmax": argmax, "digit_mass": sum(probs), "judge": judge}
    parsed = parse_score(reply)
    record: dict[str, Any] = {"score": float(parsed), "argmax": parsed, "judge": judge, "reply": reply}
    if mode == "expected":
        record.update(digit_mass=0.0 if top is not None else None, fallback="parse")
    else:
        record["digit_mass"] = None
    return record


def judge_via_server(
    client: ServerClient, template: str, sources: Sequence[Example], outputs: Sequence[str], mode: str
) -> list[dict[str, Any]]:
    """One judge record per (source, output) pair, the requests sent concurrently."""
    payloads = [judge_payload(judge_messages(template, ex, out), mode) for ex, out in zip(sources, outputs)]
    responses = client.chat(payloads)
    return [read_judgement(r, mode, client.key) for r in responses]
