"""Beam search, plain or fair, for engines without one that runs evenhand's ranking: the step loop.

vLLM's engine (in-process or behind a server) has no beam search that runs logits
processors, so the vLLM and server engines run :func:`evenhand.decoding.beam.step_loop.beam_search_steps`
against their next-token log-probs (a ``NextTokenEngine``: ``VllmNextToken`` in
``engines/vllm_engine.py``, ``ServerNextToken`` in ``engines/server.py``). The prompts are the
plan's (``prompts/plan.py``), token for token the in-process ones; per batch the group
tables (and the meaning term's document blocks) are built once, as in-process
(``beam/objective.fair_beam_settings``).

The loop reads raw candidate log-probs, so processors that *raise* tokens — the
group-coverage bonus α (``--fair-strength``) and the abstractiveness constraint —
cannot be applied to a candidate list exactly: with fair beam search they are refused
(:data:`STEP_LOOP`, the capabilities both engines declare), and plain beam search with
them decodes greedily with a warning. The repetition penalty and n-gram blocking only
lower log-probs and are applied exactly (``step_loop.candidate_processors``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ...evaluation.data.schema import Example
from ..beam.step_loop import NextTokenEngine
from ..config import GenerateConfig
from .base import (
    Capabilities,
    SummaryCollector,
    batches,
    raises_tokens,
    refuse_unsupported,
    validate_examples,
)

#: What fair beam search as a step loop cannot take (vLLM engine and server alike).
STEP_LOOP = Capabilities(
    fair_beam_with_bonus=(
        "--fair-strength (the group-coverage bonus) cannot be combined with --fair-beam/--fair-meaning "
        "on vLLM: the beam loop reads raw candidate log-probs and a bonus that raises tokens cannot be "
        "applied to them exactly; drop --fair-strength or use --engine transformers"
    ),
    fair_beam_with_abstractiveness=(
        "--abstractiveness/--extractiveness cannot be combined with --fair-beam/--fair-meaning on vLLM "
        "(the beam loop reads raw candidate log-probs); use --engine transformers for both together"
    ),
    lora_request=None,
    beam_with_raising_processors=False,
)


def runs_step_loop(config: GenerateConfig) -> bool:
    """Whether the step loop runs: fair beam search, or plain beam search without token-raising processors."""
    return config.beam_search or (config.num_beams > 1 and not config.do_sample and not raises_tokens(config))


def fair_beam_generate(
    next_token: NextTokenEngine,
    tokenizer: Any,
    examples: Sequence[Example],
    config: GenerateConfig,
    vocab_size: int,
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
) -> list[str]:
    """Summaries by (fair) beam search through ``next_token`` (a vLLM engine or server adapter).

    Prompts are the in-process ones (chat template + response prefix, tokenized without
    padding); per batch of ``config.batch_size`` examples the group tables (and the meaning
    term's document blocks) are built once, as in-process. Returns the cleaned summaries
    in example order, each batch handed to ``on_batch``.
    """
    from ...evaluation.io.progress import report_fraction
    from ..beam.objective import fair_beam_settings
    from ..beam.step_loop import beam_search_steps, candidate_processors
    from ..config import check_examples
    from ..processors.group_vocab import group_tables
    from ..prompts.plan import plan_prompts, prompt_token_ids

    refuse_unsupported(STEP_LOOP, config)
    validate_examples(examples, where_files=False)
    check_examples(examples, config)
    adjust = candidate_processors(config.repetition_penalty, config.no_repeat_ngram_size)
    if adjust is not None and config.penalize_prompt and config.repetition_penalty != 1.0:
        inner = adjust
        adjust = lambda prefixes, n, ids, lps: inner(prefixes, max(map(len, prefixes)), ids, lps)  # noqa: E731
    summaries = SummaryCollector(len(examples), config, on_batch, progress)
    for _, batch in batches(examples, config.batch_size):
        plans = plan_prompts(batch, config)
        prompts = prompt_token_ids(tokenizer, plans)
        fair = None
        if config.beam_search and config.fairness is not None:
            tables = group_tables(batch, tokenizer, vocab_size, config.fairness, "cpu")
            fair = fair_beam_settings(batch, tokenizer, tables, config, "cpu")
        # a step per generated token: the open bar moves while a large batch is searched
        summaries.begin(batch)
        steps = iter(range(1, config.max_new_tokens + 1))
        hyps = beam_search_steps(
            next_token, prompts, num_beams=config.num_beams, max_new_tokens=config.max_new_tokens,
            eos_token_ids=[tokenizer.eos_token_id], pad_token_id=tokenizer.pad_token_id, fair=fair,
            adjust=adjust,
            on_step=lambda requests, steps=steps: report_fraction(
                next(steps, config.max_new_tokens) / config.max_new_tokens),
        )
        decoded = tokenizer.batch_decode([h[0] for h in hyps], skip_special_tokens=True)
        summaries.add(batch, [plan.summary(t) for plan, t in zip(plans, decoded)])
    return summaries.close()


def step_loop_capabilities(**fields: Any) -> Capabilities:
    """:data:`STEP_LOOP` with ``fields`` replaced (an engine's own refusals)."""
    return dataclasses.replace(STEP_LOOP, **fields)
