"""One step of (fairness-aware) beam search on tensors, whatever engine gives the log-probs.

The beam bookkeeping around the ranking — top continuations, finished hypotheses,
transformers' early stop, the final rerank — lives here once; the ranking itself
(objective J, pool, keep-alive, meaning term) is :mod:`evenhand.decoding.beam.objective`.
Two loops call :func:`beam_step`:

* ``hf_loop.fair_beam_search``: transformers' ``generate`` with the model's KV
  cache; each step hands in the full (B, k·V) accumulated log-probs;
* ``step_loop.beam_search_steps``: a loop outside any engine (vLLM's own beam
  search is one), where each live beam is a one-token request returning its top
  candidates; each step hands in (B, k·C) candidates and their token ids.

With β = 0 and no meaning term every function here takes exactly the steps of
transformers 5's ``_beam_search`` (same ids; tested against it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .objective import FairBeamSettings, pool_size, rank_pool, select_running
from .state import NEG, BeamConfig, BeamState, Pool, gather_beams


def top_continuations(state: BeamState, config: BeamConfig, log_probs: Any, size: int, token_ids: Any = None) -> Pool:
    """The ``size`` best continuations of the running beams.

    ``log_probs`` (B, k, C): accumulated log-probs of each beam's C candidates;
    ``token_ids`` (B, k, C) their token ids (None: candidate c is token c, C = V).
    """
    import torch

    b, k, c = log_probs.shape
    top_lp, top = torch.topk(log_probs.reshape(b, k * c), k=size)
    beam = top // c
    token = top % c if token_ids is None else token_ids.reshape(b, k * c).gather(1, top)
    seqs = gather_beams(state.running, beam)
    seqs[:, :, state.cur_len] = token
    beam_idx = gather_beams(state.running_indices, beam)
    offset = torch.arange(b, device=beam.device)[:, None] * k
    beam_idx[:, :, state.cur_len - config.prompt_len] = (beam + offset).to(beam_idx.dtype)
    return Pool(top_lp, seqs, beam_idx)

def update_finished(state: BeamState, pool: Pool, hits: Any, config: BeamConfig) -> None:
    """Merge the top-k candidates that finish now into the k finished hypotheses (by J)."""
    import torch

    k = config.num_beams
    top = torch.zeros(hits.shape[1], dtype=torch.bool, device=hits.device)
    top[:k] = True
    just = hits & top[None, :]
    scores = pool.finish / ((state.cur_len + 1 - config.prompt_len) ** config.length_penalty)
    full = torch.all(state.finished, dim=-1, keepdim=True) & (config.early_stopping is True)
    scores = scores + full.to(torch.float32) * NEG
    scores = scores + (~state.open).to(torch.float32) * NEG
    scores = scores + (~just) * NEG
    merged_scores = torch.cat((state.scores, scores), dim=1)
    keep = torch.topk(merged_scores, k=k)[1]
    state.sequences = gather_beams(torch.cat((state.sequences, pool.seqs), dim=1), keep)
    state.scores = gather_beams(merged_scores, keep)
    state.indices = gather_beams(torch.cat((state.indices, pool.beam_idx), dim=1), keep)
    state.finished = gather_beams(torch.cat((state.finished, just), dim=1), keep)


def _still_open(state: BeamState, config: BeamConfig) -> Any:
    """Transformers' early-stop heuristic: can a running beam still beat the worst finished one?"""
    import torch

    if config.early_stopping == "never" and config.length_penalty > 0.0:
        best_len = config.max_length - config.prompt_len
    else:
        best_len = state.cur_len - config.prompt_len
    # F <= 0 and M >= 0, so the best running log p / n^λ bounds the J a running beam can reach
    best_running = state.running_scores.max(dim=1, keepdim=True).values / (best_len**config.length_penalty)
    worst = torch.where(state.finished, torch.min(state.scores, dim=1, keepdim=True)[0], NEG)
    return state.open & torch.any(best_running > worst, dim=-1, keepdim=True)


def beam_step(
    state: BeamState, config: BeamConfig, fair: FairBeamSettings | None, log_probs: Any, stop: Callable[[Any], Any],
    token_ids: Any = None,
) -> tuple[bool, Any]:
    """One step of the search, in place on ``state``.

    Args:
        log_probs: (B, k, C) next-token log-probs of each running beam (processors applied),
            C = V (``token_ids`` None) or each beam's C candidates with ``token_ids`` (B, k, C).
        stop: (B, P, cur_len + 1) candidate ids -> (B, P) bool, the stopping criteria.

    Returns:
        ``(done, parents)``: whether the search is over, and (B·k,) the batch-flat parent
        beam of each new running beam (for a KV cache to reorder).
    """
    import torch

    k = config.num_beams
    b, _, c = log_probs.shape
    accumulated = log_probs + state.running_scores[:, :, None]
    pool = top_continuations(state, config, accumulated, pool_size(config, fair, k * c), token_ids)
    pool = rank_pool(pool, state, config, fair)
    hits = stop(pool.seqs[:, :, : state.cur_len + 1])
    keep = select_running(pool, hits, config, fair)
    state.running = gather_beams(pool.seqs, keep)
    state.running_scores = gather_beams(pool.lp + hits.to(torch.float32) * NEG, keep)
    state.running_indices = gather_beams(pool.beam_idx, keep)
    if pool.meaning is not None:
        state.running_meaning = gather_beams(pool.meaning, keep)
    update_finished(state, pool, hits, config)
    parents = state.running_indices[..., state.cur_len - config.prompt_len].reshape(b * k)
    state.cur_len += 1
    state.open = _still_open(state, config)
    improvable = torch.any(state.open)
    exists_open = ~(torch.all(state.finished) & (config.early_stopping is True))
    valid = ~torch.all(hits)
    done = not bool(improvable & exists_open & valid)
    return done, parents


def finish(state: BeamState, config: BeamConfig, fair: FairBeamSettings | None) -> tuple[Any, Any]:
    """The returned hypotheses: ``(sequences, lengths)``, (B·r, L) ids and (B·r,) generated lengths.

    With a meaning term the finished hypotheses are first re-ranked by J − W · EC
    (sentence-level Equal Coverage of each whole summary).
    """
    import torch

    sequences, indices = state.sequences, state.indices
    meaning = fair.meaning if fair is not None else None
    if meaning is not None:
        ec = meaning.final_ec(sequences[:, :, config.prompt_len :])
        order = torch.sort(state.scores - meaning.weight * ec, dim=1, descending=True, stable=True).indices
        sequences, indices = gather_beams(sequences, order), gather_beams(indices, order)
    r = config.num_return_sequences
    sequences = sequences[:, :r].reshape(-1, sequences.shape[-1])
    lengths = (indices[:, :r] + 1).bool().sum(-1).reshape(-1)
    return sequences, lengths
