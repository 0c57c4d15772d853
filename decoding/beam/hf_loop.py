"""Fairness-aware beam search, as a transformers ``custom_generate`` callable.

Pass it to ``model.generate(custom_generate=fair_beam_search, fair_beam=FairBeamSettings(...),
num_beams=k, ...)``; it runs locally (transformers 5 moved group and constrained
beam search to Hub repositories that need remote code). The ``logits_processor``
list ``generate`` builds (repetition penalty, n-gram blocking, group-coverage
bonus, abstractiveness constraint...) is applied at every step as in plain beam
search.

Objective of a hypothesis y with n tokens (λ = ``length_penalty``, β = ``beta``):

    J(y) = log p(y) / n^λ + β · F(y),     F(y) = −UER(q(y), t) = −(1/|G|) Σ_g max(0, t_g − q_g)

with t the target group distribution and q the group distribution of y's
content tokens (:mod:`evenhand.decoding.processors.group_coverage`). UER is FairSumm's,
``evenhand.evaluation.metrics.fairsumm.unfair_error_rate(t, q, present)``: the decoder's
target t plays the metric's source share s_v, and q the metric's summary share t_v. Each step:

1. the P = ``pool`` × 2k best continuations by log-probability are taken (plain
   beam search takes 2k);
2. they are re-ranked by log p + β·n^λ·F with the *smoothed partial* shares
   q_g = (c_g + ε t_g)/(Σ c + ε) — all have length n, so this is the order of J;
3. the k running beams are the best-ranked unfinished candidates, except that
   (``keep_alive``) for every group g under-represented in the best candidate
   (q_g < τ t_g) the best candidate that does represent g (q_g >= τ t_g) is kept
   too, when one exists (at most k − 1 such reservations, best-ranked first);
4. finished candidates among the top k are scored by J with the *observed*
   shares q = c / Σ c (uniform when there is no content, as in FairSumm) and
   kept, like in plain beam search, if they beat the worst of the k finished ones.

The k finished hypotheses are returned best J first (the ranking is :mod:`evenhand.decoding.beam.objective`, the beam bookkeeping
:mod:`evenhand.decoding.beam.search`, shared with the engine-agnostic
step loop of :mod:`evenhand.decoding.beam.step_loop`). β = 0 takes exactly the
steps of transformers' ``_beam_search`` (same token ids, tested).

Meaning level (``FairBeamSettings.meaning``, weight W, :mod:`evenhand.decoding.beam.meaning`):
step 2 ranks by log p + n^λ (β F − W M), M ∈ [0, 1] the partial summary's
meaning-level coverage penalty (embedding Equal Coverage by default), measured
every ``meaning.every`` generated tokens for the whole pool in one encoder call
and inherited from the parent beam in between; keep-alive stays on the N-gram
shares. At the end the finished hypotheses are re-ranked by J − W · EC with the
sentence-level Equal Coverage of each whole summary. W = 0 with β = 0 is plain
beam search again (tested).
"""

from __future__ import annotations

from typing import Any

from .objective import FairBeamSettings
from .search import beam_step, finish
from .state import BeamConfig, BeamState


def fair_beam_search(
    model: Any,
    input_ids: Any,
    logits_processor: Any,
    stopping_criteria: Any,
    generation_config: Any,
    synced_gpus: bool = False,
    fair_beam: FairBeamSettings | None = None,
    **model_kwargs: Any,
) -> Any:
    """Beam search ranking hypotheses by likelihood plus β × fairness (module docstring).

    Called by ``model.generate(custom_generate=fair_beam_search, fair_beam=settings, ...)``
    with ``num_beams >= 2``; returns the (batch × num_return_sequences, length) token ids.
    ``do_sample``, ``return_dict_in_generate`` and ``synced_gpus`` are not supported.
    """
    import torch
    from torch import nn
    from transformers.generation.utils import ALL_CACHE_NAMES

    if fair_beam is None:
        raise ValueError(
            "fair_beam_search needs `fair_beam=FairBeamSettings(tables, beta)` in model.generate"
        )
    if generation_config.num_beams < 2:
        raise ValueError(f"fair beam search needs `num_beams` >= 2, got {generation_config.num_beams}")
    if generation_config.do_sample:
        raise ValueError("fair beam search is deterministic; set `do_sample=False`")
    if generation_config.return_dict_in_generate:
        raise ValueError("fair beam search returns token ids only; drop `return_dict_in_generate`")
    if synced_gpus:
        raise ValueError("fair beam search does not support `synced_gpus`")
    pad_token_id = generation_config._pad_token_tensor
    eos_token_id = generation_config._eos_token_tensor
    num_beams = generation_config.num_beams
    batch_size_unflattened, cur_len = input_ids.shape[:2]
    batch_size = batch_size_unflattened // num_beams
    if fair_beam.tables.target.shape[0] != batch_size:
        raise ValueError(
            f"`fair_beam.tables` hold {fair_beam.tables.target.shape[0]} examples but the batch has {batch_size}"
        )
    config = BeamConfig(
        num_beams=num_beams, max_length=generation_config.max_length, prompt_len=cur_len,
        length_penalty=generation_config.length_penalty, early_stopping=generation_config.early_stopping,
        num_return_sequences=generation_config.num_return_sequences,
        n_eos=eos_token_id.shape[0] if eos_token_id is not None else 0,
    )
    fill = pad_token_id or eos_token_id[0] if eos_token_id is not None else -1
    state = BeamState.start(model._unflatten_beam_dim(input_ids, batch_size, num_beams)[:, 0], config, int(fill))

    def stop(candidates: Any) -> Any:
        b, p = candidates.shape[:2]
        return stopping_criteria(candidates.reshape(b * p, -1), None).view(b, p)

    flat_running = input_ids
    prefill_consumed = False
    done = False
    model_outputs: Any = model._prefill(
        input_ids, generation_config, model_kwargs, is_first_iteration=not generation_config.is_assistant
    )
    while not done:
        if prefill_consumed:
            flat_running = model._flatten_beam_dim(state.running[:, :, : state.cur_len])
            next_sequence_length = 1 if model_kwargs["use_cache"] else None
            model_inputs = model.prepare_inputs_for_generation(
                flat_running, next_sequence_length=next_sequence_length, **model_kwargs
            )
            model_outputs = model(**model_inputs, return_dict=True)
        prefill_consumed = True
        model_kwargs = model._update_model_kwargs_for_generation(
            model_outputs, model_kwargs, is_encoder_decoder=model.config.is_encoder_decoder
        )
        logits = model_outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32, device=input_ids.device)
        log_probs = logits_processor(flat_running, nn.functional.log_softmax(logits, dim=-1))
        model_outputs = None  # free the logits before the step
        log_probs = model._unflatten_beam_dim(log_probs, batch_size, num_beams)
        done, parents = beam_step(state, config, fair_beam, log_probs, stop)

        if any(cache_key in model_kwargs for cache_key in ALL_CACHE_NAMES):
            cache_key = next(cache_key for cache_key in ALL_CACHE_NAMES if cache_key in model_kwargs)
            if hasattr(model, "_reorder_cache"):
                model_kwargs[cache_key] = model._reorder_cache(model_kwargs[cache_key], parents)
            elif hasattr(model_kwargs[cache_key], "reorder_cache"):
                model_kwargs[cache_key].reorder_cache(parents)
            else:
                raise ValueError(f"{type(model).__name__} cannot reorder its cache for beam search")

    sequences, lengths = finish(state, config, fair_beam)
    return sequences[:, : config.prompt_len + lengths.max()]
