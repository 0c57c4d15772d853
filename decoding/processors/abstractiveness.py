"""Nonlinear abstractiveness constraints (Dreyer, Liu, Nan, Atluri & Ravi, EACL 2023 findings).

"Evaluating the Tradeoff Between Abstractiveness and Factuality in Abstractive
Summarization"; reference implementation ``abstractive_constraints`` in
amazon-science/abstractive-factual-tradeoff.

An extractive fragment is a span of the output that also occurs contiguously in
the source. A fragment of length ``l`` is discounted by

    λ_h(l) = 2^(−l²/h²),   log λ_h(l) = −ln2 · l²/h²,

applied token by token: a candidate token that would extend a fragment to
length ``l`` gets

    Δ_h(l) = log λ_h(l) − log λ_h(l − 1) = −ln2 · (2l − 1)/h²

added to its log-score. ``h`` is the fragment length discounted by half; smaller
``h`` makes the output more abstractive. The extraction reward uses 1/λ_h, i.e.
adds −Δ_h(l) ≥ 0, and makes the output more extractive.

Matching (as the authors' ``ExtractiveLengthPenalty``): every source alignment is
tracked at once. After hypothesis tokens y_1..y_t, the match length ending at
source position j is

    M_t[j] = M_{t−1}[j−1] + 1  if x_j = y_t,  else 0      (M_0 = 0, M[−1] = 0).

A candidate token v extends the alignments {j : x_j = v} to lengths
M_t[j−1] + 1; its increment is taken over those alignments, and it is 0 when v
is not in the source. Special tokens (and negative ids, used as document
separators) never match.

Sign convention: every value here is what gets *added to the log-score*. The
penalty variant adds Δ_h(l) ≤ 0 and, like the authors (who take the maximum
penalty), uses the *longest* alignment, i.e. the minimum of the added values.
The reward variant adds −Δ_h(l) ≥ 0 and, again like the authors (maximum of
their negative penalties), uses the minimum of the added values, i.e. the
*shortest* alignment (usually length 1); ``reward_longest=True`` uses the
longest instead. The authors' vectors, with their f(x) = x²/c² being
ln2·x²/h² for h = c·√ln2: source a b c b c d, c = 1, hypothesis b c d adds −9
in total; b c d a adds −10; the reward on b c d a adds +10.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from transformers import LogitsProcessor


def check_h(h: Any) -> float:
    """``h`` as a float; ValueError unless it is a positive finite number."""
    if isinstance(h, bool) or not isinstance(h, (int, float)) or not math.isfinite(h) or h <= 0:
        raise ValueError(f"`h` must be a positive float, got {h!r}")
    return float(h)


def log_lambda(length: float, h: float) -> float:
    """log λ_h(l) = −ln2 · l²/h², computed directly (2^(l²/h²) overflows for long fragments)."""
    return -math.log(2.0) * length * length / (check_h(h) ** 2)


def fragment_increment(length: int, h: float, reward: bool = False) -> float:
    """Score added to a token extending a fragment to ``length``: Δ_h(l), or −Δ_h(l) if ``reward``."""
    delta = log_lambda(length, h) - log_lambda(length - 1, h)
    return -delta if reward else delta


def fragment_penalties(
    source_ids: Sequence[int],
    hypothesis_ids: Sequence[int],
    h: float,
    reward: bool = False,
    *,
    special_ids: Iterable[int] = (),
    reward_longest: bool = False,
) -> list[float]:
    """The score increment applied to each hypothesis token in turn (pure Python reference).

    Args:
        source_ids: source token ids; negative ids never match (document separators).
        hypothesis_ids: the generated token ids, in order.
        h: fragment length discounted by half (positive).
        reward: the 1/λ extraction reward instead of the λ penalty.
        special_ids: ids that never match.
        reward_longest: with ``reward``, reward the longest alignment instead of the
            authors' shortest one.

    Returns:
        One float per hypothesis token, the value added to its log-score (≤ 0 for the
        penalty, ≥ 0 for the reward); the sum is the sequence's log λ discount.

    >>> h = math.sqrt(math.log(2))  # the authors' f(x) = x**2 with c = 1
    >>> src = [0, 1, 2, 1, 2, 3]  # a b c b c d
    >>> round(sum(fragment_penalties(src, [1, 2, 3, 0], h)), 9)
    -10.0
    """
    h = check_h(h)
    special = set(special_ids)
    positions: dict[int, list[int]] = {}
    for j, tok in enumerate(source_ids):
        if tok >= 0 and tok not in special:
            positions.setdefault(int(tok), []).append(j)
    matches: dict[int, int] = {}  # source position -> match length ending there
    out = []
    for tok in hypothesis_ids:
        new = {j: matches.get(j - 1, 0) + 1 for j in positions.get(int(tok), ())}
        incs = [fragment_increment(n, h, reward) for n in new.values()]
        if not incs:
            out.append(0.0)
        elif reward and reward_longest:
            out.append(max(incs))
        else:
            out.append(min(incs))
        matches = new
    return out


def increment_coef(h: float, reward: bool) -> float:
    """The coefficient of (2l − 1) in the added value: −ln2/h² (penalty) or +ln2/h² (reward)."""
    return (1.0 if reward else -1.0) * math.log(2.0) / check_h(h) ** 2


def reduce_of(reward: bool, reward_longest: bool = False) -> str:
    """How alignments of one candidate token combine over P: the longest (``amax``) for the
    penalty and ``reward_longest``, the authors' shortest (``amin``) for the reward."""
    return "amin" if reward and not reward_longest else "amax"


def source_table(
    sources: Sequence[Sequence[int]], special_ids: Iterable[int], coef: float
) -> tuple[Any, Any, Any, Any]:
    """Host tensors of a batch of sources, padded to the longest: ``(src, inv, uniq, offset)``.

    ``src`` (B × L) holds the source ids, −1 for separators, special ids and padding
    (never matching); ``uniq`` (B × U) each source's distinct ids (padding 0);
    ``inv`` (B × L) the column of each position's id in ``uniq`` (U = a dump column
    for −1); ``offset`` (B × U+1) is ``coef`` in token columns and 0 in padding and
    the dump column. Built once per batch (in-process) or per request (vLLM).
    """
    import torch

    special = {int(t) for t in special_ids}
    valid = [[int(t) if int(t) >= 0 and int(t) not in special else -1 for t in s] for s in sources]
    uniques = [sorted({t for t in s if t >= 0}) for s in valid]
    length = max(1, max((len(s) for s in valid), default=0))
    width = max(1, max((len(u) for u in uniques), default=0))
    src = torch.full((len(valid), length), -1, dtype=torch.long)
    inv = torch.full((len(valid), length), width, dtype=torch.long)  # `width` = dump column
    uniq = torch.zeros((len(valid), width), dtype=torch.long)
    offset = torch.zeros((len(valid), width + 1), dtype=torch.float32)
    for b, (s, u) in enumerate(zip(valid, uniques)):
        index = {t: k for k, t in enumerate(u)}
        if s:
            src[b, : len(s)] = torch.tensor(s)
            inv[b, : len(s)] = torch.tensor([index.get(t, width) for t in s])
        if u:
            uniq[b, : len(u)] = torch.tensor(u)
            offset[b, : len(u)] = coef
    return src, inv, uniq, offset


def recompute_lengths(generated: Any, src: Any) -> Any:
    """M (rows × L, long) from scratch: leading matches along each diagonal of the
    (rows × generated × source) equality tensor. ``generated`` is (rows × T)."""
    import torch

    rows, steps = generated.shape
    length = src.shape[1]
    if steps == 0:
        return torch.zeros((rows, length), dtype=torch.long, device=src.device)
    eq = (generated.flip(1)[:, :, None] == src[:, None, :]).to(torch.uint8)
    eq = torch.cat([eq, eq.new_zeros(rows, 1, length)], dim=1)  # a final all-mismatch step
    padded = torch.nn.functional.pad(eq, (steps + 1, 0)).contiguous()  # (rows, steps+1, W)
    width = length + steps + 1
    # diag[r, i, j] = padded[r, i, j - i + steps + 1] = eq[r, i, j - i]
    diag = padded.as_strided(
        (rows, steps + 1, length), (padded.stride(0), width - 1, 1),
        padded.storage_offset() + steps + 1,
    )
    return (1 - diag).argmax(dim=1)  # first mismatch along the diagonal = match length


def shift_lengths(m: Any) -> Any:
    """P from M: P[:, j] = M[:, j − 1], P[:, 0] = 0 (float32): P + 1 is the length a
    candidate equal to x_j would reach."""
    import torch

    return torch.nn.functional.pad(m[:, :-1].to(torch.float32), (1, 0))


def extend_lengths(previous: Any, src: Any, last: Any) -> Any:
    """P after one more generated token per row: M_t[j] = (P_{t−1}[j] + 1)·[x_j = y_t], shifted.

    ``previous`` (rows × L) is each row's parent P, ``last`` (rows × 1) its new token.
    """
    return shift_lengths((previous + 1) * (src == last))


def reduced_increments(previous: Any, inv: Any, offset: Any, reduce: str) -> Any:
    """(rows × U) value added to each distinct source token: coef·(2P + 1) for the
    longest (``amax``) or shortest (``amin``) alignment; 0 in padding columns."""
    import torch

    rows = previous.shape[0]
    # Δ for length l = P + 1 is coef · (2l − 1) = coef · (2P + 1), monotone in P: the
    # longest alignment (penalty, reward_longest) is the largest P, the shortest the smallest
    reduced = torch.zeros((rows, offset.shape[1]), dtype=torch.float32, device=previous.device)
    reduced.scatter_reduce_(1, inv, previous, reduce, include_self=False)
    # coef · (2P + 1) in token columns, 0 in padding columns (which point at token 0)
    return torch.addcmul(offset, reduced, offset, value=2.0)[:, :-1]


class AbstractivenessProcessor(LogitsProcessor):
    r"""Adds the nonlinear abstractiveness penalty (or extraction reward) to next-token scores.

    For each row and candidate token v: ``scores[r, v] + Δ`` where Δ is
    ``fragment_penalties``' increment for v after the row's generated tokens (see the
    module docstring: Δ_h(l) = −ln2·(2l−1)/h², longest alignment; reward −Δ_h(l),
    shortest alignment by default).

    State: the (rows × source length) array M of match lengths ending at each
    source position is a function of each row's generated tokens only (kept
    shifted by one position, P[:, j] = M[:, j−1], since P + 1 is the length a
    candidate equal to x_j would reach). It is updated *incrementally*, O(rows ×
    source) per step, when a call continues the previous one (same rows, one
    more generated token): each row's parent is the cached row of the same
    example whose generated tokens equal this row's minus the last one, found
    by comparing them on the device (O(batch × beams² × steps)), so beam
    regrouping is handled without ``beam_idx`` and without host syncs;
    transformers' greedy, sampling and beam search always call it that way.
    Otherwise (first call, other shapes, after ``reset()``) M is *recomputed*
    from ``input_ids`` in one vectorized pass: the number of leading matches
    along each diagonal of the (rows × generated × source) equality tensor.
    A call whose rows have the expected shape but do not extend the previous
    call's rows (not something ``generate`` does) must be preceded by
    ``reset()``. Per step: a max (or min) of P per distinct source token
    (``scatter_reduce``), the increments coef·(2P + 1), and one ``scatter_add``
    into a copy of the scores. No Python loop over rows, steps or source
    positions, no host sync; inputs are left unchanged.

    Args:
        source_ids: one sequence of source token ids per example (list, tensor);
            negative ids never match (use -1 between documents).
        h: fragment length discounted by half (positive float).
        reward: add the 1/λ extraction reward instead of the λ penalty.
        prompt_length: input positions before it are the prompt and never form
            fragments (decoder-only: the padded prompt length; encoder-decoder: 0).
        special_ids: token ids that never match (``tokenizer.all_special_ids``).
        reward_longest: with ``reward``, reward the longest alignment instead of
            the authors' shortest one.

    Rows: ``input_ids`` has batch × beams rows; row r belongs to example
    r // beams, where beams = rows / number of sources.

    Example::

        >>> import torch
        >>> proc = AbstractivenessProcessor([[5, 6, 7]], h=2.0)
        >>> out = proc(torch.tensor([[5, 6]]), torch.zeros(1, 8))
        >>> round(out[0, 7].item(), 4)  # extends "5 6" to "5 6 7": −ln2·5/4
        -0.8664
    """

    def __init__(
        self,
        source_ids: Sequence[Sequence[int]] | Any,
        h: float,
        reward: bool = False,
        prompt_length: int = 0,
        special_ids: Iterable[int] = (),
        reward_longest: bool = False,
    ) -> None:
        import torch

        self.h = check_h(h)
        if not isinstance(prompt_length, int) or isinstance(prompt_length, bool) or prompt_length < 0:
            raise ValueError(f"`prompt_length` must be a non-negative int, got {prompt_length!r}")
        if reward_longest and not reward:
            raise ValueError("`reward_longest` only applies with `reward=True`; set it or drop it")
        if isinstance(source_ids, torch.Tensor):
            source_ids = source_ids.tolist() if source_ids.dim() == 2 else [source_ids.tolist()]
        sources = [[int(t) for t in s] for s in source_ids]
        if not sources:
            raise ValueError("`source_ids` must hold one sequence per example, got none")
        self.reward = bool(reward)
        self.prompt_length = prompt_length
        self.reduce = reduce_of(self.reward, reward_longest)
        # (coefficient of 2l − 1): −ln2/h² for the penalty, +ln2/h² for the reward
        self.coef = increment_coef(self.h, self.reward)
        self._host = source_table(sources, special_ids, self.coef)
        self.max_id = int(self._host[2].max()) if self._host[3].any() else -1
        self._device_tensors: dict[Any, tuple[Any, ...]] = {}
        self._rows: dict[tuple[Any, int], tuple[Any, ...]] = {}
        self._state: tuple[int, int, Any, Any, Any] | None = None  # rows, steps, device, generated ids, P

    @property
    def num_sources(self) -> int:
        """Number of examples (one source each)."""
        return int(self._host[0].shape[0])

    def reset(self) -> None:
        """Forget the incremental state (the next call recomputes from ``input_ids``)."""
        self._state = None

    def _row_tensors(self, device: Any, rows: int) -> tuple[Any, ...]:
        """Per-row source ids, unique-index map, unique ids, example index, offsets; cached."""
        import torch

        key = (device, rows)
        if key not in self._rows:
            if rows % self.num_sources:
                raise ValueError(
                    f"`input_ids` has {rows} rows, not a multiple of the {self.num_sources} "
                    "sources given; pass one source per example (rows = examples × beams)"
                )
            if device not in self._device_tensors:
                self._device_tensors[device] = tuple(t.to(device) for t in self._host)
            src, inv, uniq, offset = self._device_tensors[device]
            example = torch.arange(rows, device=device) // (rows // self.num_sources)
            self._rows[key] = (
                src[example], inv[example], uniq[example], example, offset[example]
            )
        return self._rows[key]

    @staticmethod
    def _recompute(generated: Any, src: Any) -> Any:
        """M from scratch (see :func:`recompute_lengths`)."""
        return recompute_lengths(generated, src)

    def _previous_lengths(self, input_ids: Any) -> Any:
        """P (rows × source length, float32): P[:, j] = M[:, j − 1], P[:, 0] = 0.

        P[:, j] + 1 is the fragment length a candidate equal to x_j would reach.
        """
        import torch

        rows, total = input_ids.shape
        device = input_ids.device
        src, _, _, example, _ = self._row_tensors(device, rows)
        generated = input_ids[:, self.prompt_length :]
        steps = max(0, total - self.prompt_length)
        state = self._state
        if state is not None and steps >= 1 and state[:3] == (rows, steps - 1, device):
            # parent of each row: the cached row of its example whose tokens it extends
            _, _, _, prev_ids, prev_p = state
            beams = rows // self.num_sources
            diff = (
                generated.view(self.num_sources, beams, 1, steps)[..., :-1]
                - prev_ids.view(self.num_sources, 1, beams, steps - 1)
            )
            same = diff.abs_().sum(dim=-1) == 0  # token ids are small: no overflow
            parent = same.to(torch.uint8).argmax(dim=-1).view(rows) + example * beams
            shifted = extend_lengths(prev_p[parent], src, generated[:, -1:])
        else:
            shifted = shift_lengths(recompute_lengths(generated, src))
        self._state = (rows, steps, device, generated.clone(), shifted)
        return shifted

    def increments(self, input_ids: Any, vocab_size: int) -> Any:
        """The (rows × vocab) float32 tensor of values this processor adds to the scores."""
        import torch

        uniq = self._row_tensors(input_ids.device, input_ids.shape[0])[2]
        added = self._reduced(input_ids)
        out = torch.zeros((input_ids.shape[0], vocab_size), dtype=torch.float32, device=input_ids.device)
        return out.scatter_add_(1, uniq, added)

    def _reduced(self, input_ids: Any) -> Any:
        """(rows × unique source tokens) increment per distinct source token."""

        _, inv, _, _, offset = self._row_tensors(input_ids.device, input_ids.shape[0])
        return reduced_increments(self._previous_lengths(input_ids), inv, offset, self.reduce)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """Return ``scores`` plus the abstractiveness increments (a new tensor)."""
        if self.max_id >= scores.shape[1]:
            raise ValueError(
                f"`source_ids` hold token id {self.max_id}, outside the model's vocabulary of "
                f"{scores.shape[1]}; tokenize the source with the model's tokenizer"
            )
        uniq = self._row_tensors(scores.device, scores.shape[0])[2]
        added = self._reduced(input_ids.to(scores.device))
        return scores.scatter_add(1, uniq, added.to(scores.dtype))
