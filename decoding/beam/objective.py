"""The objective of fairness-aware beam search: rank the step's pool, keep beams alive, and
the settings (:class:`FairBeamSettings`) with their per-batch build (:func:`fair_beam_settings`).

Objective of a hypothesis y with n tokens (λ = ``length_penalty``, β = ``beta``):

    J(y) = log p(y) / n^λ + β · F(y),     F(y) = −UER(q(y), t) = −(1/|G|) Σ_g max(0, t_g − q_g)

(``decoding/beam/hf_loop.py``'s docstring has the steps). Both loops — transformers'
``generate`` (:mod:`evenhand.decoding.beam.hf_loop`) and the step loop outside any engine
(:mod:`evenhand.decoding.beam.step_loop`) — rank with these functions, through
:func:`evenhand.decoding.beam.search.beam_step`. With β = 0 and no meaning term the
ranking is plain beam search's (same ids as transformers 5's ``_beam_search``; tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeGuard

from ...evaluation.metrics.fairsumm import unfair_error_rate
from ..processors.group_coverage import (
    DEFAULT_PRIOR,
    DEFAULT_TAU,
    group_counts,
    observed_shares,
    smoothed_shares,
)
from ..processors.group_vocab import GroupTables
from .state import NEG, BeamConfig, BeamState, Pool, gather_beams

#: Candidates per step of a steering search, as a multiple of plain beam search's 2k.
POOL = 2

if TYPE_CHECKING:
    from ...evaluation.data.schema import Example
    from ..config import FairnessSettings
    from .meaning import MeaningCoverage


@dataclass(frozen=True)
class FairBeamSettings:
    """What fair beam search needs beyond the generation config.

    Args:
        tables: the batch's :class:`GroupTables` (one map per example, batch order).
        beta: β >= 0, weight of the fairness term F ∈ [−1, 0] against the per-token
            log-probability (0 = plain beam search).
        tau: τ in [0, 1]; a group is under-represented while q_g < τ·t_g (keep-alive).
        prior: ε >= 0, pseudo-count of target-distributed content in partial shares.
        pool: candidates per step, as a multiple of plain beam search's 2k (>= 1).
        keep_alive: reserve beams for groups the best hypothesis under-represents.
        meaning: meaning-level coverage (:class:`evenhand.decoding.beam.meaning.MeaningCoverage`,
            weight W) or None; with it β may be 0.
    """

    tables: GroupTables
    beta: float
    tau: float = DEFAULT_TAU
    prior: float = DEFAULT_PRIOR
    pool: int = POOL
    keep_alive: bool = True
    meaning: MeaningCoverage | None = None

    def __post_init__(self) -> None:
        if isinstance(self.beta, bool) or not isinstance(self.beta, (int, float)) or not self.beta >= 0:
            raise ValueError(f"`beta` must be a non-negative float, got {self.beta!r}")
        if not 0 <= self.tau <= 1:
            raise ValueError(f"`tau` must be a float in [0, 1], got {self.tau!r}")
        if not self.prior >= 0:
            raise ValueError(f"`prior` must be a non-negative float, got {self.prior!r}")
        if not isinstance(self.pool, int) or self.pool < 1:
            raise ValueError(f"`pool` must be a positive int, got {self.pool!r}")


def fair_beam_settings(
    examples: Sequence[Example], tokenizer: Any, tables: GroupTables, config: FairnessSettings, device: Any,
) -> FairBeamSettings:
    """The :class:`FairBeamSettings` of one batch under ``config``: its group ``tables``
    (``group_vocab.group_tables``) and, with ``fair_meaning`` > 0, the meaning term (its
    document blocks embedded once, on ``device``). Every engine's fair beam search builds
    them here."""
    from .embeddings import load_encoder
    from .meaning import MeaningCoverage

    meaning = None
    if config.fair_meaning > 0:
        meaning = MeaningCoverage.build(
            examples, tables, load_encoder(config.fair_meaning_encoder, device=str(device)), tokenizer,
            config.fair_meaning, config.fair_meaning_every, config.fair_meaning_measure,
        )
    return FairBeamSettings(tables, config.fair_beam, config.fairness_tau, meaning=meaning)


def pool_size(config: BeamConfig, fair: FairBeamSettings | None, candidates: int) -> int:
    """Candidates per example and step: 2k, or ``pool`` × 2k when steering (≤ what exists)."""
    if not steers(fair):
        return config.beams_to_keep
    return min(fair.pool * config.beams_to_keep, candidates)


def steers(fair: FairBeamSettings | None) -> TypeGuard[FairBeamSettings]:
    """Whether fair settings change the ranking (β > 0 or a meaning term)."""
    return fair is not None and (float(fair.beta) > 0 or fair.meaning is not None)


def rank_pool(pool: Pool, state: BeamState, config: BeamConfig, fair: FairBeamSettings | None) -> Pool:
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


def select_running(pool: Pool, hits: Any, config: BeamConfig, fair: FairBeamSettings | None) -> Any:
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
