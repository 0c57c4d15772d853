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
  before any request — unless the client says the server is a vLLM server started
  with ``--logits-processors evenhand.vllm:EvenhandLogitsProcessor``
  (``ServerClient(url, processors=True)``, the CLI's ``--server-processors``; one
  probe request, ``ServerClient.runs_evenhand_processors``, checks it): then ``abstractiveness``,
  ``extractiveness`` and ``fairness_strength`` run there (``processor_builders``
  still raise). Such requests go to ``/completions`` with the
  in-process templated prompt as token ids (response prefix included), the
  decoding settings of ``decoding/vllm_generate.py`` and evenhand's settings in
  ``vllm_xargs``; the served model's tokenizer must be loadable here (its
  ``/models`` ``root``: a folder or cached HF id);
- **fair beam search** (``fair_beam``, ``fair_meaning``) runs on a vLLM server as a step
  loop here (``decoding/vllm_beam.py``: one-token ``/completions`` requests on token ids
  with ``logprobs`` and ``return_tokens_as_token_ids``), without the group bonus or the
  abstractiveness constraint, as on the in-process vLLM engine; a probe checks first that
  the server lists enough top log-probs on token ids (vLLM's ``--max-logprobs``);
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

from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError
from .server import ServerClient

_WHY = (
    "logits processors run inside the decoding loop, and an OpenAI-compatible server runs "
    "no client code there; generate in-process (--model an alias, folder or cached HF id) "
    "— docs/serving.md has the plan for vLLM-side processors"
)


_UNLESS = (
    "; a vLLM server started with `--logits-processors evenhand.vllm:EvenhandLogitsProcessor` "
    "runs them: pass --server-processors"
)


def needs_processors(config: Any) -> bool:
    """Whether ``config`` needs evenhand's processors on the server (abstractiveness, α)."""
    return (
        config.abstractiveness is not None or config.extractiveness is not None
        or (config.fairness is not None and config.fairness_strength > 0)
    )


def check_server_config(
    config: Any, processor_builders: Sequence[Any] = (), processors: bool = False
) -> None:
    """Raise ``DataError`` if ``config`` needs what a server cannot do (see the module docstring).

    Call it before any request: it reads the config only. ``processors``: the server
    runs evenhand's vLLM processors (abstractiveness and ``fairness_strength`` allowed).
    """
    if config.beam_search:  # fair beam search: a step loop over the server's top log-probs
        from .vllm_beam import check_vllm_fair_config

        check_vllm_fair_config(config)
        if processor_builders:
            raise DataError(f"`processor_builders` cannot run through a server URL: {_WHY}")
        return
    if processors:
        from .vllm_generate import check_vllm_config

        check_vllm_config(config, processor_builders)
        return
    if config.abstractiveness is not None or config.extractiveness is not None:
        name = "abstractiveness" if config.abstractiveness is not None else "extractiveness"
        raise DataError(f"`{name}` cannot run through a server URL: {_WHY}{_UNLESS}")
    if config.fairness_strength > 0:
        raise DataError("fair decoding's group bonus (`fairness_strength`) cannot run through a server URL: "
                        + _WHY + _UNLESS)
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

    if config.beam_search and not processor_builders:  # fair beam search (decoding/vllm_beam.py)
        from .vllm_beam import server_fair_beam_generate

        return server_fair_beam_generate(client, examples, config, progress, on_batch)
    if client.processors and needs_processors(config) and not processor_builders:
        return generate_with_processors(client, examples, config, progress, on_batch)
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


def require_processors(client: ServerClient) -> None:
    """Raise today's refusal (``DataError``) unless the server runs evenhand's processors."""
    if not client.runs_evenhand_processors():
        raise DataError(
            f"server {client.url.base} does not run evenhand's logits processors (--server-processors "
            "was given): start vLLM with `--logits-processors evenhand.vllm:EvenhandLogitsProcessor` "
            "(docs/serving.md), or drop the option and the processors"
        )


def server_tokenizer(client: ServerClient) -> Any:
    """The served model's tokenizer, loaded here from its ``/models`` ``root`` (folder or cached id)."""
    from .models import load_tokenizer

    root = str(client.model_entry().get("root") or client.model)
    try:
        tokenizer = load_tokenizer(root)
    except (DataError, OSError, ValueError) as err:
        raise DataError(
            f"server {client.url.base}: the served model's tokenizer {root!r} is not available here "
            f"({' '.join(str(err).split())[:160]}); evenhand's processors need the prompt's token ids: "
            "copy the model folder (or its tokenizer files) to the same path here, or cache the HF id"
        ) from None
    tokenizer.padding_side = "left"
    return tokenizer


def generate_with_processors(
    client: ServerClient,
    examples: Sequence[Example],
    config: Any,
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
) -> list[str]:
    """``generate_via_server`` for a vLLM server running evenhand's processors (``/completions``)."""
    from .fair_decoding import check_examples
    from .generate import SummaryCollector
    from .vllm_generate import prepared_prompts, request_extra, sampling_values, warn_greedy

    check_server_config(config, processors=True)
    for i, ex in enumerate(examples):
        ex.validate(f"examples[{i}]")
    check_examples(examples, config)
    require_processors(client)
    warn_greedy(config)
    tokenizer = server_tokenizer(client)
    entry = client.model_entry()
    limit = entry.get("max_model_len") if isinstance(entry.get("max_model_len"), int) else None
    vocab = len(tokenizer)
    size = max(config.batch_size, client.config.max_concurrency)
    summaries = SummaryCollector(len(examples), config, on_batch, progress)
    for start in range(0, len(examples), size):
        batch = list(examples[start : start + size])
        prepared = prepared_prompts(tokenizer, batch, config, limit)
        payloads = []
        for k, (ex, (text, ids, _)) in enumerate(zip(batch, prepared)):
            body = {"prompt": ids, **sampling_values(config, tokenizer, start + k), "return_token_ids": True}
            extra = request_extra(config, tokenizer, ex, text, ids, vocab)
            if extra:
                body["vllm_xargs"] = extra
            payloads.append(body)
        texts = []
        for response, (_, _, prefix) in zip(client.completions(payloads), prepared):
            choice = _first_choice(response, client)
            ids = choice.get("token_ids")
            text = tokenizer.decode(ids, skip_special_tokens=True) if isinstance(ids, list) else str(choice.get("text") or "")
            texts.append((prefix + text).strip())
        summaries.add(batch, texts)
    return summaries.close()


def _first_choice(response: dict[str, Any], client: ServerClient) -> dict[str, Any]:
    try:
        choice = response["choices"][0]
        if not isinstance(choice, dict):
            raise TypeError
        return choice
    except (KeyError, IndexError, TypeError):
        raise DataError(
            f"server {client.url.base} answered a completion without choices[0]: {str(response)[:200]}"
        ) from None
