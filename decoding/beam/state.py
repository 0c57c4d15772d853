"""The bookkeeping of a beam search on tensors: running and finished hypotheses, the step's pool.

Layout: B examples, k = ``num_beams`` beams, P candidates in the pool; sequences
are (B, k, L) token ids, generated tokens starting at ``prompt_len``. The step
itself is :func:`evenhand.decoding.beam.search.beam_step`; the ranking it applies,
:mod:`evenhand.decoding.beam.objective`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
