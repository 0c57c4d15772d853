"""``generate`` through an OpenAI-compatible server: the same prompts, sampling as request parameters.

``decoding.generate.generate`` hands over here when its model is a
``ServerClient``. Each example becomes one ``/chat/completions`` request with
the in-process path's messages (system ``DEFAULT_SYSTEM``, user
``build_prompt(example)``); the server applies its model's own chat template.
``GenerateConfig`` maps onto request parameters:

=====================  ====================================================
``do_sample=False``    ``temperature: 0`` (greedy)
``temperature``        ``temperature``
``top_p`` / ``top_k``  ``top_p`` (1.0 when unset) / ``top_k`` (0 = off, as in
                       transformers; vLLM and llama.cpp take it as an extra)
``repetition_penalty`` ``repetition_penalty`` (vLLM, TGI) and
                       ``repeat_penalty`` (llama.cpp): both are sent
``max_new_tokens``     ``max_tokens``
``seed``               ``seed``: request i of a call gets ``seed + i``
=====================  ====================================================

plus ``min_p: 0`` (llama.cpp filters with min-p 0.05 by default; transformers
does not). So the reranker's three recipes (nucleus, top-k, hybrid) are request
parameters. What a server cannot do:

- **logits processors** (``abstractiveness``, ``extractiveness``, fair decoding
  ``fairness_strength``/``fair_beam``, any ``processor_builders``): the OpenAI
  API runs no client code between decoding steps, so these raise ``DataError``
  before any request (docs/serving.md describes the vLLM-side plan);
- **beam search** (``num_beams > 1`` without sampling) runs as greedy decoding,
  and ``no_repeat_ngram_size`` is not applied (neither engine has it): both with
  a warning;
- **response prefixes**: the chat API cannot make the model continue a started
  reply, so the prompt kinds' default prefixes are dropped (``clean_summary``
  still strips preambles) and an explicit non-empty ``response_prefix`` raises.

Repetition penalties differ by engine: llama.cpp penalizes the last 64 tokens
(prompt included), vLLM every prompt and output token; transformers (our
default, ``penalize_prompt=False``) the generated tokens only.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..evaluation.schema import DataError, Example
from .server import ServerClient

_WHY = (
    "logits processors run inside the decoding loop, and an OpenAI-compatible server runs "
    "no client code there; generate in-process (--model an alias, folder or cached HF id) "
    "— docs/serving.md has the plan for vLLM-side processors"
)


def check_server_config(config: Any, processor_builders: Sequence[Any] = ()) -> None:
    """Raise ``DataError`` if ``config`` needs what a server cannot do (see the module docstring).

    Call it before any request: it reads the config only.
    """
    if config.abstractiveness is not None or config.extractiveness is not None:
        name = "abstractiveness" if config.abstractiveness is not None else "extractiveness"
        raise DataError(f"`{name}` cannot run through a server URL: {_WHY}")
    if config.fairness_strength > 0 or config.fair_beam > 0:
        raise DataError(
            "fair decoding (`fairness_strength`/`fair_beam`) cannot run through a server URL: " + _WHY
        )
    if processor_builders:
        raise DataError(f"`processor_builders` cannot run through a server URL: {_WHY}")
    if config.response_prefix:
        raise DataError(
            f"`response_prefix` {config.response_prefix!r} cannot be used with a server URL: the chat "
            "API cannot continue a started reply; drop it (or pass '')"
        )


def messages(example: Example, config: Any) -> list[dict[str, str]]:
    """The chat messages of one example: the in-process prompt, before any chat template."""
    from .prompting import DEFAULT_SYSTEM, build_prompt

    user = build_prompt(example, config.instruction, config.fair_prompt, config.prompt_kind)
    return [{"role": "system", "content": DEFAULT_SYSTEM}, {"role": "user", "content": user}]


def sampling_parameters(config: Any) -> dict[str, Any]:
    """The request parameters of ``config``'s decoding settings (the table in the module docstring)."""
    params: dict[str, Any] = {
        "max_tokens": config.max_new_tokens,
        "repetition_penalty": config.repetition_penalty,
        "repeat_penalty": config.repetition_penalty,
        "min_p": 0.0,
    }
    if config.do_sample:
        params.update(
            temperature=config.temperature,
            top_p=config.top_p if config.top_p is not None else 1.0,
            top_k=config.top_k or 0,
        )
    else:
        params.update(temperature=0.0, top_p=1.0, top_k=0)
    return params


def _warn_unsupported(config: Any) -> None:
    if config.num_beams > 1 and not config.do_sample:
        warnings.warn(
            f"`num_beams={config.num_beams}`: a server URL decodes greedily (no beam search)",
            stacklevel=3,
        )
    if config.no_repeat_ngram_size:
        warnings.warn(
            f"`no_repeat_ngram_size={config.no_repeat_ngram_size}` is not applied through a server URL",
            stacklevel=3,
        )


def generate_via_server(
    client: ServerClient,
    examples: Sequence[Example],
    config: Any,
    processor_builders: Sequence[Any] = (),
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
) -> list[str]:
    """One summary per example from the server; ``decoding.generate.generate``'s contract.

    Requests go out in chunks of ``max(config.batch_size, client max_concurrency)``
    examples; ``on_batch`` sees each finished chunk. Request i (over the whole
    call) is seeded ``config.seed + i``, so the same inputs and seed give the
    same outputs from the same server and model.
    """
    from .generate import SummaryCollector

    check_server_config(config, processor_builders)
    for i, ex in enumerate(examples):
        ex.validate(f"examples[{i}]")
    _warn_unsupported(config)
    params = sampling_parameters(config)
    size = max(config.batch_size, client.config.max_concurrency)
    summaries = SummaryCollector(len(examples), config, on_batch, progress)
    for start in range(0, len(examples), size):
        batch = list(examples[start : start + size])
        payloads = [
            {"messages": messages(ex, config), **params, "seed": config.seed + start + k}
            for k, ex in enumerate(batch)
        ]
        summaries.add(batch, [reply_text(r, client) for r in client.chat(payloads)])
    return summaries.close()


def reply_text(response: dict[str, Any], client: ServerClient) -> str:
    """The assistant message of a chat-completion response, stripped; DataError when malformed."""
    try:
        return str(response["choices"][0]["message"]["content"] or "").strip()
    except (KeyError, IndexError, TypeError):
        raise DataError(
            f"server {client.url.base} answered a chat completion without choices[0].message.content: "
            f"{str(response)[:200]}"
        ) from None
