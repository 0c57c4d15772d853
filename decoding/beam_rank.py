"""One step of (fairness-aware) beam search on tensors, whatever engine gives the log-probs.

The ranking of fair beam search — objective J, candidate pool, keep-alive rule,
meaning-level term, final rerank (``decoding/fair_beam.py``'s docstring) — and the
beam bookkeeping around it (top continuations, finished hypotheses, early stop)
live here once. Two loops call them:

* ``fair_beam.fair_beam_search``: transformers' ``generate`` with the model's KV
  cache; each step hands in the full (B, k·V) accumulated log-probs;
* ``beam_steps.beam_search_steps``: a loop outside any engine (vLLM's own beam
  search is one), where each live beam is a one-token request returning its top
  candidates; each step hands in (B, k·C) candidates and their token ids.

Layout: B examples, k = ``num_beams`` beams, P candidates in the pool; sequences
are (B, k, L) token ids, generated tokens starting at ``prompt_len``. With β = 0
and no meaning term every function here takes exactly the steps of transformers
5's ``_beam_search`` (same ids; tested against it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..evaluation.metrics.fairsumm import unfair_error_rate
from .group_coverage import group_counts, observed_shares, smoothed_shares

NEG = -1.0e9


def gather_beams(tensor: Any, index: Any) -> Any:
    """``tensor`` (B, P, ...) gathered along dim 1 by ``index`` (B, k)."""
    import torch

    while index.dim() < tensor.dim():
        index = index.unsqueeze(-1)
    return torch.take_along_dim(tensor, index, dim=1)


@dataclass(frozen=True)
class BeamConfig:
    """What a beam search needs besides the model: transformers' generation-config fields.

    ``max_length`` counts the prompt (as transformers); ``pool_size`` is the number
    of candidates per example per step (plain beam search: ``beams_to_keep``).
    """

    num_beams: int
    max_length: int
    prompt_len: int
    length_penalty: float = 1.0
    early_stopping: bool | str = False
    num_return_sequences: int = 1
    n_eos: int = 1

    @property
    def beams_to_keep(self) -> int:
        """Plain beam search's candidates per step: max(2, 1 + #eos) × k."""
        return max(2, 1 + self.n_eos) * self.num_beams


@dataclass
class BeamState:
    """Running and finished hypotheses of a batch (transformers' ``_beam_search`` variables)."""

    running: Any  # (B, k, L) token ids
    running_scores: Any  # (B, k) summed log-probs (NEG added once finished)
    running_indices: Any  # (B, k, L − prompt_len) parent beam per generated step (batch-flat)
    running_meaning: Any  # (B, k) meaning penalty M of each running beam
    sequences: Any  # (B, k, L) finished hypotheses
    scores: Any  # (B, k) their J
    indices: Any  # (B, k, L − prompt_len)
    finished: Any  # (B, k) slot holds a finished hypothesis
    open: Any  # (B, 1) early-stop heuristic unsatisfied
    cur_len: int

    @classmethod
    def start(cls, prompt_ids: Any, config: BeamConfig, fill: int) -> BeamState:
        """The state before the first step: prompt ids (B, prompt_len), one live beam each."""
        import torch

        b, device = prompt_ids.shape[0], prompt_ids.device
        k, length, cur = config.num_beams, config.max_length, config.prompt_len
        running = torch.full((b, k, length), fill, dtype=torch.int64, device=device)
        running[:, :, :cur] = prompt_ids[:, None, :]
        scores = torch.zeros((b, k), dtype=torch.float, device=device)
        scores[:, 1:] = NEG
        indices = torch.full((b, k, length - cur), -1, dtype=torch.int32, device=device)
        return cls(
            running=running, running_scores=scores, running_indices=indices,
            running_meaning=torch.zeros((b, k), dtype=torch.float, device=device),
            sequences=running.clone(), scores=torch.full((b, k), NEG, dtype=torch.float, device=device),
            indices=indices.clone(), finished=torch.zeros((b, k), dtype=torch.bool, device=device),
            open=torch.ones((b, 1), dtype=torch.bool, device=device), cur_len=cur,
        )


@dataclass
class Pool:
    """The step's candidates (B, P, ...), rank-sorted once ranked."""

    lp: Any  # summed log-probs
    seqs: Any  # (B, P, L) token ids with the new token at cur_len
    beam_idx: Any  # (B, P, L − prompt_len)
    rank: Any = None  # ranking score (log p + n^λ (β F − W M))
    finish: Any = None  # J of a candidate that finishes now (before / n^λ)
    partial: Any = None  # (B, P, G) smoothed partial group shares (fair only)
    meaning: Any = None  # (B, P) meaning penalty M


def pool_size(config: BeamConfig, fair: Any, candidates: int) -> int:
    """Candidates per example and step: 2k, or ``pool`` × 2k when steering (≤ what exists)."""
    if not steers(fair):
        return config.beams_to_keep
    return min(fair.pool * config.beams_to_keep, candidates)


def steers(fair: Any) -> bool:
    """Whether fair settings change the ranking (β > 0 or a meaning term)."""
    return fair is not None and (float(fair.beta) > 0 or fair.meaning is not None)


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


def rank_pool(pool: Pool, state: BeamState, config: BeamConfig, fair: Any) -> Pool:
    """Rank the pool by log p + n^λ (β F − W M) and sort it; J of finishing candidates.

    F = −UER of the *smoothed partial* shares (all candidates have length n, so this
    is the order of J); M is the meaning penalty, measured every ``meaning.every``
    tokens and inherited from the parent beam in between. Finishing candidates get
    log p − β n^λ UER(observed shares) (divided by n^λ later, with the bookkeeping).
    Without steering the pool is returned as it is (plain beam search).
    """
    import torch

    if not steers(fair):
        return replace(pool, rank=pool.lp, finish=pool.lp)
    tables, beta, meaning = fair.tables, float(fair.beta), fair.meaning
    b, p = pool.lp.shape
    device = pool.lp.device
    target = tables.target[:, None, :].to(device)
    present = tables.present[:, None, :].to(device)
    n_gen = state.cur_len + 1 - config.prompt_len
    scale = n_gen**config.length_penalty
    generated = pool.seqs[:, :, config.prompt_len : state.cur_len + 1]
    counts = group_counts(tables.member.to(device), generated.reshape(b * p, -1)).view(b, p, -1)
    partial = smoothed_shares(counts, target, fair.prior)
    rank = pool.lp - beta * scale * unfair_error_rate(target, partial, present)
    pool_meaning = torch.zeros_like(pool.lp)
    if meaning is not None:
        if n_gen % meaning.every == 0:
            pool_meaning = meaning.penalty(generated)
        else:  # between checks a candidate keeps its parent beam's M
            offset = torch.arange(b, device=device)[:, None] * config.num_beams
            parent = pool.beam_idx[:, :, state.cur_len - config.prompt_len].long() - offset
            pool_meaning = state.running_meaning.gather(1, parent)
        rank = rank - meaning.weight * scale * pool_meaning
    order = torch.sort(rank, dim=1, descending=True, stable=True).indices
    lp, seqs, beam_idx, rank, counts, partial, pool_meaning = (
        gather_beams(t, order) for t in (pool.lp, pool.seqs, pool.beam_idx, rank, counts, partial, pool_meaning)
    )
    finish = lp
    if beta > 0:
        finish = lp - beta * scale * unfair_error_rate(target, observed_shares(counts, present), present)
    return Pool(lp, seqs, beam_idx, rank, finish, partial, pool_meaning)


def keep_alive_order(
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


def select_running(pool: Pool, hits: Any, config: BeamConfig, fair: Any) -> Any:
    """Indices (B, k) of the pool's candidates that run on (keep-alive when β > 0)."""
    import torch

    k = config.num_beams
    if fair is not None and float(fair.beta) > 0 and fair.keep_alive:
        tables = fair.tables
        device = pool.lp.device
        return keep_alive_order(
            hits, pool.partial, tables.target[:, None, :].to(device), tables.present[:, None, :].to(device),
            fair.tau, k, alive=pool.lp > NEG / 10,
        )
    return torch.topk(pool.rank + hits.to(torch.float32) * NEG, k=k)[1]


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
    state: BeamState, config: BeamConfig, fair: Any, log_probs: Any, stop: Callable[[Any], Any],
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


def finish(state: BeamState, config: BeamConfig, fair: Any) -> tuple[Any, Any]:
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
