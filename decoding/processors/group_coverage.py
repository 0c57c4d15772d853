"""Group coverage while decoding: a bonus for tokens of groups the text so far under-represents.

With the batch's :class:`~evenhand.decoding.processors.group_vocab.GroupTables` (membership A,
specificity S, target t over groups), for one hypothesis y_1..y_n:

* running counts      c_g = Σ_i A[g, y_i]           (FairSumm's N-gram target, per token)
* smoothed shares     q_g = (c_g + ε·t_g) / (Σ_h c_h + ε)   (ε = ``prior``; q = t before any content)
* relative deficit    u_g = clip(1 − q_g / (τ·t_g), 0, 1)   (0 unless q_g < τ·t_g; 0 where t_g = 0)
* bonus on token v    b_v = α · Σ_g u_g · S[g, v]

α is the largest bonus in nats: a token specific to one group only, when that
group is entirely missing. α = 0 leaves the scores untouched. The functions below
are shared with the fairness-aware beam search (:mod:`evenhand.decoding.beam.hf_loop`).
"""

from __future__ import annotations

from typing import Any

from transformers import LogitsProcessor

from .group_vocab import GroupTables

DEFAULT_TAU = 0.8
DEFAULT_PRIOR = 1.0


def group_counts(member: Any, generated: Any) -> Any:
    """c_g of each row: (N, G) from ``member`` (B, V, G) and ``generated`` ids (N, T).

    Rows are grouped by example: N = B·R, rows r·R..(r+1)·R−1 belong to example r
    (how transformers lays out beams and return sequences).
    """
    import torch

    b = member.shape[0]
    n = generated.shape[0]
    if n % b:
        raise ValueError(f"{n} rows cannot be split over a batch of {b} examples")
    example = torch.arange(n, device=generated.device) // (n // b)
    return member[example[:, None], generated].sum(dim=1)


def smoothed_shares(counts: Any, target: Any, prior: float = DEFAULT_PRIOR) -> Any:
    """q_g = (c_g + ε·t_g) / (Σ c + ε); the target itself where there is nothing to count."""
    import torch

    total = counts.sum(dim=-1, keepdim=True) + prior
    shares = (counts + prior * target) / total.clamp(min=1e-12)
    return torch.where(total > 0, shares, target)


def observed_shares(counts: Any, present: Any) -> Any:
    """c_g / Σ c over the present groups; uniform over them when nothing was counted (FairSumm)."""
    import torch

    counts = counts * present
    total = counts.sum(dim=-1, keepdim=True)
    uniform = present / present.sum(dim=-1, keepdim=True).clamp(min=1)
    return torch.where(total > 0, counts / total.clamp(min=1e-12), uniform)


def relative_deficit(shares: Any, target: Any, tau: float = DEFAULT_TAU) -> Any:
    """u_g = clip(1 − q_g / (τ·t_g), 0, 1); 0 where τ·t_g = 0."""
    import torch

    threshold = tau * target
    deficit = (1 - shares / threshold.clamp(min=1e-12)).clamp(0, 1)
    return torch.where(threshold > 0, deficit, torch.zeros_like(deficit))


def coverage_bonus(
    counts: Any, target: Any, specificity: Any, alpha: float | Any,
    tau: float | Any = DEFAULT_TAU, prior: float | Any = DEFAULT_PRIOR,
) -> Any:
    """α·Σ_g u_g·S[g, v] for rows grouped by example.

    ``counts`` (B, R, G) c of each row, ``target`` (B, 1, G) t, ``specificity``
    (B, G, V) S (dense over the vocabulary in-process; over an example's own K
    content tokens in vLLM): returns (B, R, V) in S's dtype. ``alpha``, ``tau`` and
    ``prior`` are floats, or (B, 1, 1) tensors of per-example values (vLLM).
    """
    deficit = relative_deficit(smoothed_shares(counts, target, prior), target, tau)
    return alpha * (deficit.to(specificity.dtype) @ specificity)


class GroupCoverageProcessor(LogitsProcessor):
    """Add α·Σ_g u_g·S[g, v] to the scores of tokens of under-represented groups.

    State (the counts c) is recomputed from ``input_ids`` at every call, so rows
    that beam search reorders or drops carry their own history.

    Args:
        tables: the batch's :class:`GroupTables` (one map per example, same order as the batch).
        alpha: α >= 0, bonus strength in nats (0 = plain decoding).
        tau: τ in [0, 1]; a group is under-represented while q_g < τ·t_g (FairSumm's 0.8).
        generated_start: index in ``input_ids`` where generated tokens start (the padded
            prompt length for decoder-only models, 1 for encoder-decoder ones).
        prior: ε >= 0, pseudo-count of target-distributed content before the first token.

    Example:
        >>> from evenhand.decoding.models import tiny_model
        >>> from evenhand.decoding.processors.group_vocab import GroupTables, build_group_vocab
        >>> from evenhand.evaluation.data.schema import Document, Example
        >>> model, tok = tiny_model()
        >>> ex = Example("e", [Document("Great battery.", "pos"), Document("Terrible screen.", "neg")])
        >>> tables = GroupTables.build([build_group_vocab(ex, tok)], len(tok), "equal")
        >>> ids = tok(["Summary:"], return_tensors="pt").input_ids
        >>> proc = GroupCoverageProcessor(tables, alpha=2.0, generated_start=ids.shape[1])
        >>> out = model.generate(ids, logits_processor=[proc], max_new_tokens=3, do_sample=False)
    """

    def __init__(
        self,
        tables: GroupTables,
        alpha: float,
        tau: float = DEFAULT_TAU,
        generated_start: int = 0,
        prior: float = DEFAULT_PRIOR,
    ) -> None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 0:
            raise ValueError(f"`alpha` must be a non-negative float, got {alpha!r}")
        if not 0 <= tau <= 1:
            raise ValueError(f"`tau` must be a float in [0, 1], got {tau!r}")
        if not isinstance(generated_start, int) or generated_start < 0:
            raise ValueError(f"`generated_start` must be a non-negative int, got {generated_start!r}")
        if not prior >= 0:
            raise ValueError(f"`prior` must be a non-negative float, got {prior!r}")
        self.tables = tables
        self.alpha = float(alpha)
        self.tau = float(tau)
        self.generated_start = generated_start
        self.prior = float(prior)

    def deficits(self, input_ids: Any) -> Any:
        """u of every row: (N, G)."""
        tables = self.tables
        rows = input_ids.shape[0] // tables.target.shape[0]
        target = tables.target.repeat_interleave(rows, dim=0)
        counts = group_counts(tables.member, input_ids[:, self.generated_start :])
        return relative_deficit(smoothed_shares(counts, target, self.prior), target, self.tau)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.alpha == 0:
            return scores
        b, g, v = self.tables.specificity.shape
        if scores.shape[-1] != v:
            raise ValueError(
                f"scores have {scores.shape[-1]} logits but the group tables {v}; build the "
                "tables with the model's output size"
            )
        tables = self.tables
        counts = group_counts(tables.member, input_ids[:, self.generated_start :]).view(b, -1, g)
        bonus = coverage_bonus(
            counts, tables.target[:, None, :], tables.specificity, self.alpha, self.tau, self.prior
        )  # (B, R, V)
        return scores + bonus.view_as(scores).to(scores.dtype)
