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
content tokens (:mod:`evenhand.decoding.group_coverage`). UER is FairSumm's,
``evenhand.evaluation.fairsumm.unfair_error_rate(t, q, present)``: the decoder's
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

The k finished hypotheses are returned best J first. β = 0 takes exactly the
steps of transformers' ``_beam_search`` (same token ids, tested).

Meaning level (``FairBeamSettings.meaning``, weight W, :mod:`evenhand.decoding.meaning`):
step 2 ranks by log p + n^λ (β F − W M), M ∈ [0, 1] the partial summary's
meaning-level coverage penalty (embedding Equal Coverage by default), measured
every ``meaning.every`` generated tokens for the whole pool in one encoder call
and inherited from the parent beam in between; keep-alive stays on the N-gram
shares. At the end the finished hypotheses are re-ranked by J − W · EC with the
sentence-level Equal Coverage of each whole summary. W = 0 with β = 0 is plain
beam search again (tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evaluation.fairsumm import unfair_error_rate
from .group_coverage import (
    DEFAULT_PRIOR,
    DEFAULT_TAU,
    group_counts,
    observed_shares,
    smoothed_shares,
)
from .group_vocab import GroupTables


@dataclass(frozen=True)
class FairBeamSettings:
    """What ``fair_beam_search`` needs beyond the generation config.

    Args:
        tables: the batch's :class:`GroupTables` (one map per example, batch order).
        beta: β >= 0, weight of the fairness term F ∈ [−1, 0] against the per-token
            log-probability (0 = plain beam search).
        tau: τ in [0, 1]; a group is under-represented while q_g < τ·t_g (keep-alive).
        prior: ε >= 0, pseudo-count of target-distributed content in partial shares.
        pool: candidates per step, as a multiple of plain beam search's 2k (>= 1).
        keep_alive: reserve beams for groups the best hypothesis under-represents.
        meaning: meaning-level coverage (:class:`evenhand.decoding.meaning.MeaningCoverage`,
            weight W) or None; with it β may be 0.
    """

    tables: GroupTables
    beta: float
    tau: float = DEFAULT_TAU
    prior: float = DEFAULT_PRIOR
    pool: int = 2
    keep_alive: bool = True
    meaning: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.beta, bool) or not isinstance(self.beta, (int, float)) or not self.beta >= 0:
            raise ValueError(f"`beta` must be a non-negative float, got {self.beta!r}")
        if not 0 <= self.tau <= 1:
            raise ValueError(f"`tau` must be a float in [0, 1], got {self.tau!r}")
        if not self.prior >= 0:
            raise ValueError(f"`prior` must be a non-negative float, got {self.prior!r}")
        if not isinstance(self.pool, int) or self.pool < 1:
            raise ValueError(f"`pool` must be a positive int, got {self.pool!r}")


def _keep_alive_order(
    hits: Any, shares: Any, target: Any, present: Any, tau: float, k: int, alive: Any = None
) -> Any:
    """Indices (B, k) of the running beams among a pool already sorted by rank.

    Tiers, each in rank order: the best unfinished candidate, then the best
    candidate representing each group the best one under-represents, then the
    other unfinished candidates, then finished ones. ``alive`` (B, P) marks candidates
    that may be reserved (default: all; the search excludes those of dead beams).
    """
    import torch

    unfinished = ~hits
    best = unfinished.to(torch.int8).argmax(dim=1)  # first unfinished: the pool is rank-sorted
    threshold = tau * target  # (B, 1, G)
    best_shares = shares.gather(1, best[:, None, None].expand(-1, 1, shares.shape[-1]))[:, 0]
    needy = present[:, 0] & (best_shares < threshold[:, 0])  # (B, G)
    serves = (shares >= threshold) & unfinished[..., None]  # (B, P, G)
    if alive is not None:
        serves = serves & alive[..., None]
    champion = serves.to(torch.int8).argmax(dim=1)  # (B, G): first serving candidate
    reserve = needy & serves.any(dim=1)
    reserved = torch.zeros(hits.shape, device=hits.device).scatter_add(
        1, champion, reserve.to(torch.float32)
    )
    is_best = torch.zeros_like(reserved).scatter(1, best[:, None], 1.0)
    tier = torch.where(unfinished, 1 + (reserved > 0).to(torch.float32) + 2 * is_best, 0.0)
    return torch.sort(tier, dim=1, descending=True, stable=True).indices[:, :k]


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
    tables, beta, meaning = fair_beam.tables, float(fair_beam.beta), fair_beam.meaning
    steer = beta > 0 or meaning is not None

    pad_token_id = generation_config._pad_token_tensor
    eos_token_id = generation_config._eos_token_tensor
    early_stopping = generation_config.early_stopping
    length_penalty = generation_config.length_penalty
    max_length = generation_config.max_length
    num_beams = generation_config.num_beams
    num_return_sequences = generation_config.num_return_sequences

    batch_size_unflattened, cur_len = input_ids.shape[:2]
    batch_size = batch_size_unflattened // num_beams
    if tables.target.shape[0] != batch_size:
        raise ValueError(
            f"`fair_beam.tables` hold {tables.target.shape[0]} examples but the batch has {batch_size}"
        )
    decoder_prompt_len = cur_len
    device = input_ids.device
    n_eos_tokens = eos_token_id.shape[0] if eos_token_id is not None else 0
    beams_to_keep = max(2, 1 + n_eos_tokens) * num_beams
    target = tables.target[:, None, :].to(device)
    present = tables.present[:, None, :].to(device)
    member = tables.member.to(device)

    output_fill_value = pad_token_id or eos_token_id[0] if eos_token_id is not None else -1
    running_sequences = torch.full(
        (batch_size, num_beams, max_length), fill_value=output_fill_value, dtype=torch.int64, device=device
    )
    running_sequences[:, :, :cur_len] = model._unflatten_beam_dim(input_ids, batch_size, num_beams)
    sequences = running_sequences.detach().clone()
    running_beam_scores = torch.zeros((batch_size, num_beams), dtype=torch.float, device=device)
    running_beam_scores[:, 1:] = -1e9
    beam_scores = torch.full((batch_size, num_beams), fill_value=-1e9, dtype=torch.float, device=device)
    is_sent_finished = torch.zeros((batch_size, num_beams), dtype=torch.bool, device=device)
    is_early_stop_heuristic_unsatisfied = torch.ones((batch_size, 1), dtype=torch.bool, device=device)
    hits = torch.zeros((batch_size, num_beams), dtype=torch.bool, device=device)
    running_beam_indices = torch.full(
        (batch_size, num_beams, max_length - cur_len), fill_value=-1, dtype=torch.int32, device=device
    )
    beam_indices = running_beam_indices.detach().clone()
    running_meaning = torch.zeros((batch_size, num_beams), dtype=torch.float, device=device)
    batch_offset = torch.arange(batch_size, device=device)[:, None] * num_beams

    flat_running_sequences = input_ids
    this_peer_finished = False
    # the prefill's outputs serve the first step; each later step runs the model on the beams
    model_outputs: Any = model._prefill(
        input_ids, generation_config, model_kwargs, is_first_iteration=not generation_config.is_assistant
    )
    while model._has_unfinished_sequences(this_peer_finished, synced_gpus, device=device):
        if model_outputs is None:
            flat_running_sequences = model._flatten_beam_dim(running_sequences[:, :, :cur_len])
            next_sequence_length = 1 if model_kwargs["use_cache"] else None
            model_inputs = model.prepare_inputs_for_generation(
                flat_running_sequences, next_sequence_length=next_sequence_length, **model_kwargs
            )
            model_outputs = model(**model_inputs, return_dict=True)
        model_kwargs = model._update_model_kwargs_for_generation(
            model_outputs, model_kwargs, is_encoder_decoder=model.config.is_encoder_decoder
        )
        logits = model_outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32, device=device)
        log_probs = logits_processor(flat_running_sequences, nn.functional.log_softmax(logits, dim=-1))
        model_outputs = None  # free the logits before the step's bookkeeping
        vocab_size = log_probs.shape[-1]
        log_probs = model._unflatten_beam_dim(log_probs, batch_size, num_beams)
        log_probs = log_probs + running_beam_scores[:, :, None]
        log_probs = torch.reshape(log_probs, (batch_size, -1))

        # 1. candidate pool (plain beam search: its 2k best continuations)
        pool = beams_to_keep if not steer else min(fair_beam.pool * beams_to_keep, num_beams * vocab_size)
        pool_lp, pool_seqs, pool_beam_idx = model._get_top_k_continuations(
            accumulated_log_probs=log_probs,
            running_sequences=running_sequences,
            running_beam_indices=running_beam_indices,
            cur_len=cur_len,
            decoder_prompt_len=decoder_prompt_len,
            do_sample=False,
            beams_to_keep=pool,
            num_beams=num_beams,
            batch_size=batch_size,
        )
        # 2. re-rank by log p + n^λ (β F − W M) (partial shares, meaning penalty M);
        #    finished ones by J (observed shares; M enters at the final rerank)
        rank = finish_scores = pool_lp
        partial: Any = None  # set when steering; read only when β > 0 (which implies steering)
        pool_meaning: Any = None  # set when steering; read only with a meaning term
        if steer:
            n_gen = cur_len + 1 - decoder_prompt_len
            scale = n_gen**length_penalty
            generated = pool_seqs[:, :, decoder_prompt_len : cur_len + 1]
            counts = group_counts(member, generated.reshape(batch_size * pool, -1)).view(batch_size, pool, -1)
            partial = smoothed_shares(counts, target, fair_beam.prior)
            rank = pool_lp - beta * scale * unfair_error_rate(target, partial, present)
            pool_meaning = torch.zeros_like(pool_lp)
            if meaning is not None:
                if n_gen % meaning.every == 0:
                    pool_meaning = meaning.penalty(generated)
                else:  # between checks a candidate keeps its parent beam's M
                    parent = pool_beam_idx[:, :, cur_len - decoder_prompt_len].long() - batch_offset
                    pool_meaning = running_meaning.gather(1, parent)
                rank = rank - meaning.weight * scale * pool_meaning
            order = torch.sort(rank, dim=1, descending=True, stable=True).indices
            pool_lp, pool_seqs, pool_beam_idx, rank, counts, partial, pool_meaning = (
                model._gather_beams(t, order)
                for t in (pool_lp, pool_seqs, pool_beam_idx, rank, counts, partial, pool_meaning)
            )
            if beta > 0:
                observed = observed_shares(counts, present)
                finish_scores = pool_lp - beta * scale * unfair_error_rate(target, observed, present)

        hits = stopping_criteria(model._flatten_beam_dim(pool_seqs[:, :, : cur_len + 1]), None)
        hits = model._unflatten_beam_dim(hits, batch_size, pool)

        # 3. running beams
        running_pool_lp = pool_lp + hits.to(torch.float32) * -1.0e9
        if beta > 0 and fair_beam.keep_alive:
            keep = _keep_alive_order(
                hits, partial, target, present, fair_beam.tau, num_beams, alive=pool_lp > -1e8
            )
        else:
            keep = torch.topk(rank + hits.to(torch.float32) * -1.0e9, k=num_beams)[1]
        running_sequences = model._gather_beams(pool_seqs, keep)
        running_beam_scores = model._gather_beams(running_pool_lp, keep)
        running_beam_indices = model._gather_beams(pool_beam_idx, keep)
        if meaning is not None:
            running_meaning = model._gather_beams(pool_meaning, keep)

        # 4. finished hypotheses: the top k of the pool that just finished, scored by J
        top_mask = torch.zeros(pool, dtype=torch.bool, device=device)
        top_mask[:num_beams] = True
        sequences, beam_scores, beam_indices, is_sent_finished = model._update_finished_beams(
            sequences=sequences,
            topk_running_sequences=pool_seqs,
            beam_scores=beam_scores,
            topk_log_probs=finish_scores,
            beam_indices=beam_indices,
            topk_running_beam_indices=pool_beam_idx,
            is_early_stop_heuristic_unsatisfied=is_early_stop_heuristic_unsatisfied,
            is_sent_finished=is_sent_finished,
            next_token_hits_stopping_criteria=hits,
            top_num_beam_mask=top_mask,
            num_beams=num_beams,
            cur_len=cur_len,
            decoder_prompt_len=decoder_prompt_len,
            length_penalty=length_penalty,
            early_stopping=early_stopping,
        )

        if any(cache_key in model_kwargs for cache_key in ALL_CACHE_NAMES):
            cache_key = next(cache_key for cache_key in ALL_CACHE_NAMES if cache_key in model_kwargs)
            beam_idx = model._flatten_beam_dim(running_beam_indices[..., cur_len - decoder_prompt_len])
            if hasattr(model, "_reorder_cache"):
                model_kwargs[cache_key] = model._reorder_cache(model_kwargs[cache_key], beam_idx)
            elif hasattr(model_kwargs[cache_key], "reorder_cache"):
                model_kwargs[cache_key].reorder_cache(beam_idx)
            else:
                raise ValueError(f"{type(model).__name__} cannot reorder its cache for beam search")

        cur_len = cur_len + 1
        # F <= 0, so the best running log p / n^λ bounds the J a running beam can reach
        is_early_stop_heuristic_unsatisfied = model._check_early_stop_heuristic(
            is_early_stop_heuristic_unsatisfied=is_early_stop_heuristic_unsatisfied,
            running_beam_scores=running_beam_scores.max(dim=1, keepdim=True).values,
            beam_scores=beam_scores,
            is_sent_finished=is_sent_finished,
            cur_len=cur_len,
            max_length=max_length,
            decoder_prompt_len=decoder_prompt_len,
            early_stopping=early_stopping,
            length_penalty=length_penalty,
        )
        this_peer_finished = not model._beam_search_has_unfinished_sequences(
            is_early_stop_heuristic_unsatisfied, is_sent_finished, hits, early_stopping
        )

    if meaning is not None:  # final rerank of the finished hypotheses by J − W · Equal Coverage
        ec = meaning.final_ec(sequences[:, :, decoder_prompt_len:])
        order = torch.sort(beam_scores - meaning.weight * ec, dim=1, descending=True, stable=True).indices
        sequences, beam_indices = model._gather_beams(sequences, order), model._gather_beams(beam_indices, order)
    sequences = model._flatten_beam_dim(sequences[:, :num_return_sequences, :])
    beam_indices = model._flatten_beam_dim(beam_indices[:, :num_return_sequences, :])
    max_generated_length = ((beam_indices + 1).bool()).sum(dim=1).max()
    return sequences[:, : decoder_prompt_len + max_generated_length]
