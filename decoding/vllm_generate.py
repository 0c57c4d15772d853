"""``generate`` on vLLM: the in-process prompts and decoding settings as vLLM requests.

``decoding.generate.generate`` hands over here when its model is a
:class:`~evenhand.decoding.vllm_engine.VllmEngine` (``--engine vllm``), and
:func:`completion_payloads` builds the same requests for a vLLM server started with
evenhand's processors (``decoding/server_generate.py``). Per example:

- the prompt is the in-process one, token for token: ``chat_prompt(build_prompt(...))``
  plus the response prefix, tokenized by evenhand's tokenizer (the prefix is given
  back at the start of the summary, as in-process);
- ``GenerateConfig`` maps onto ``SamplingParams``: greedy (``temperature 0``) or
  sampling (``temperature``, ``top_p``, ``top_k``, and vLLM's per-request ``seed`` =
  ``config.seed + i`` for the i-th example of the call: the same seed gives the same
  summaries from the same engine, but not the in-process ones, whose random stream
  is torch's); ``max_tokens``; the tokenizer's eos as stop token;
- what transformers does inside ``generate`` and vLLM does not travels in
  ``extra_args["evenhand"]`` (``decoding/vllm_args.py``) for ``EvenhandLogitsProcessor``:
  the repetition penalty on generated tokens only (with ``penalize_prompt``, vLLM's own
  ``repetition_penalty``, which also covers the prompt, as transformers' does),
  ``no_repeat_ngram_size``, ``abstractiveness`` / ``extractiveness`` and the
  group-coverage bonus (``fairness_strength``).

Beam search (``num_beams > 1`` without sampling), plain or fair (``fair_beam``,
``fair_meaning``), runs on the in-process engine as a step loop outside it
(``decoding/vllm_beam.py``, transformers' beam search bookkeeping, so the summaries are
the in-process ones): vLLM's engine has no beam search of its own that runs logits
processors. The loop reads raw candidate log-probs, so it cannot apply processors that
raise tokens (the group bonus ``fairness_strength``, ``abstractiveness`` /
``extractiveness``): with those, fair beam search is refused and plain beam search
decodes greedily with a warning. Not on vLLM: caller ``processor_builders`` (DataError
before any decoding).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError
from .vllm_args import KEY, dumps, request_settings

_WHY = "run it in-process (--engine transformers)"


def check_vllm_config(config: Any, processor_builders: Sequence[Any] = (), beam_loop: bool = False) -> None:
    """Raise ``DataError`` for settings vLLM cannot decode with (before any model loads).

    ``beam_loop``: the in-process engine, where fair beam search runs as a step loop
    outside the engine (``decoding/vllm_beam.py``; its own limits are checked).
    """
    if (config.fair_beam > 0 or config.fair_meaning > 0) and beam_loop:
        from .vllm_beam import check_vllm_fair_config

        check_vllm_fair_config(config)
    elif config.fair_beam > 0 or config.fair_meaning > 0:
        raise DataError(
            "fair beam search (`fair_beam`/`fair_meaning`) is a beam search over evenhand's own "
            f"hooks, which vLLM's engine has no place for; {_WHY}, or use `fairness_strength` alone"
        )
    if processor_builders:
        raise DataError(f"`processor_builders` are transformers logits processors; {_WHY}")


def raises_tokens(config: Any) -> bool:
    """Whether ``config`` asks for a processor that raises tokens (the group bonus, abstractiveness)."""
    return bool(config.fairness_strength > 0 or getattr(config, "abstractiveness", None)
                or getattr(config, "extractiveness", None))


def beam_loop(config: Any) -> bool:
    """Whether the step loop runs: fair beam search, or plain beam search without token-raising processors."""
    return config.beam_search or (config.num_beams > 1 and not config.do_sample and not raises_tokens(config))


def warn_greedy(config: Any, loop: bool = False) -> None:
    """Warn when a beam search will run greedily on vLLM.

    ``loop``: the caller runs beam search as a step loop where it can (the in-process
    engine); then only a beam search with a token-raising processor decodes greedily.
    """
    if config.num_beams > 1 and not config.do_sample:
        if loop:
            why = ("beam search on vLLM is a loop over raw candidate log-probs, which cannot take "
                   "--abstractiveness/--extractiveness/--fair-strength")
        else:
            why = "its beam search runs no logits processors"
        warnings.warn(
            f"`num_beams={config.num_beams}`: vLLM decodes greedily here ({why}); "
            "pass --num-beams 1 to silence this",
            stacklevel=3,
        )


def sampling_values(config: Any, tokenizer: Any, index: int) -> dict[str, Any]:
    """``SamplingParams`` fields (no ``extra_args``) of the ``index``-th request of a call."""
    values: dict[str, Any] = {
        "max_tokens": int(config.max_new_tokens),
        "stop_token_ids": [int(tokenizer.eos_token_id)],
        "repetition_penalty": float(config.repetition_penalty) if config.penalize_prompt else 1.0,
    }
    if config.do_sample:
        values.update(
            temperature=float(config.temperature),
            top_p=float(config.top_p) if config.top_p is not None else 1.0,
            top_k=int(config.top_k) if config.top_k else 0,
            seed=int(config.seed) + index,
        )
    else:
        values.update(temperature=0.0, top_p=1.0, top_k=0)
    return values


def prepared_prompts(
    tokenizer: Any, examples: Sequence[Example], config: Any, limit: int | None
) -> list[tuple[str, list[int], str]]:
    """(templated prompt, its token ids, response prefix) per example; DataError past the context."""
    from .prompting import build_prompt, chat_prompt, response_prefix

    out = []
    for ex in examples:
        prefix = response_prefix(ex, config.response_prefix, config.instruction, config.prompt_kind)
        text = chat_prompt(tokenizer, build_prompt(ex, config.instruction, config.fair_prompt, config.prompt_kind))
        text += prefix
        ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        if limit is not None and len(ids) > limit - config.max_new_tokens:
            raise DataError(
                f"example {ex.id!r}: `documents` take {len(ids)} prompt tokens, more than the "
                f"model's context allows ({limit} tokens minus {config.max_new_tokens} new); "
                "shorten or drop documents, or lower `max_new_tokens`"
            )
        out.append((text, ids, prefix))
    return out


def request_extra(config: Any, tokenizer: Any, example: Example, prompt: str, ids: list[int],
                  vocab_size: int) -> dict[str, Any] | None:
    """``extra_args`` of one request: ``{"evenhand": "<json>"}``, or None for plain vLLM."""
    settings = request_settings(config, tokenizer, example, prompt, ids, vocab_size)
    return {KEY: dumps(settings)} if settings else None


def generate_via_vllm(
    engine: Any,
    examples: Sequence[Example],
    config: Any,
    processor_builders: Sequence[Any] = (),
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
    lora_request: Any = None,
) -> list[str]:
    """One summary per example from ``engine``; ``decoding.generate.generate``'s contract.

    The examples go to vLLM in chunks of ``max(config.batch_size, 64)`` (vLLM batches
    them itself); ``on_batch`` sees each finished chunk. ``lora_request`` (a vLLM
    ``LoRARequest``, engine built with ``enable_lora``) decodes with that adapter.
    """
    from .fair_decoding import check_examples
    from .generate import SummaryCollector

    check_vllm_config(config, processor_builders, beam_loop=True)
    if beam_loop(config):  # (fair) beam search: the step loop outside the engine (decoding/vllm_beam.py)
        from .vllm_beam import VllmNextToken, fair_beam_generate

        return fair_beam_generate(
            VllmNextToken(engine, lora_request), engine.tokenizer, examples, config, engine.vocab_size,
            progress, on_batch,
        )
    for i, ex in enumerate(examples):
        ex.validate(f"examples[{i}]")
    check_examples(examples, config)
    warn_greedy(config, loop=True)
    tokenizer = engine.tokenizer
    summaries = SummaryCollector(len(examples), config, on_batch, progress)
    size = max(config.batch_size, 64)
    for start in range(0, len(examples), size):
        batch = list(examples[start : start + size])
        prepared = prepared_prompts(tokenizer, batch, config, engine.max_model_len)
        params = [
            engine.sampling_params(
                **sampling_values(config, tokenizer, start + k), detokenize=False,
                extra_args=request_extra(config, tokenizer, ex, text, ids, engine.vocab_size),
            )
            for k, (ex, (text, ids, _)) in enumerate(zip(batch, prepared))
        ]
        done = engine.generate([ids for _, ids, _ in prepared], params, lora_request=lora_request)
        texts = tokenizer.batch_decode([c.token_ids for c in done], skip_special_tokens=True)
        summaries.add(batch, [(prefix + t).strip() for (_, _, prefix), t in zip(prepared, texts)])
    return summaries.close()
