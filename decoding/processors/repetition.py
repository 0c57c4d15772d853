"""The repetition penalty and the n-gram ban as pure torch functions, for every engine adapter.

transformers applies them inside ``generate`` (``RepetitionPenaltyLogitsProcessor``,
``NoRepeatNGramLogitsProcessor``); the engines that run outside transformers apply
the same math here: the vLLM processor (``engines/vllm_processor.py``) on a batch's
logits, and beam search's step loop (``beam/step_loop.py``) on each beam's candidates.

- repetition penalty ρ on a token already seen: a score s becomes s·ρ when s < 0,
  s/ρ otherwise (transformers' rule);
- n-gram ban (size n): a token t is banned after a history h when the n-gram
  ``h[-(n-1):] + [t]`` already occurs in h.
"""

from __future__ import annotations

from typing import Any


def penalize_seen(scores: Any, seen: Any, penalty: Any) -> Any:
    """``scores`` with transformers' repetition ``penalty`` on the entries where ``seen`` is True.

    ``scores`` and ``seen`` have one shape (or broadcast); ``penalty`` is a float or a tensor
    that broadcasts (one per row); returns a new tensor.

    >>> import torch
    >>> penalize_seen(torch.tensor([-1.0, 2.0, -3.0]), torch.tensor([True, True, False]), 2.0).tolist()
    [-2.0, 1.0, -3.0]
    """
    import torch

    return torch.where(seen, torch.where(scores < 0, scores * penalty, scores / penalty), scores)


def ngram_bans(history: Any, length: Any, n: int) -> tuple[Any, Any]:
    """The tokens the n-gram ban forbids next, per row of left-aligned histories.

    Args:
        history: (N, W) token ids, row r's tokens in ``history[r, :length[r]]`` (anything after).
        length: (N,) the rows' lengths.
        n: the n-gram size (>= 1).

    Returns:
        ``(tokens, banned)``, each (N, W − n + 1): for every complete window of n tokens
        its last token, and whether that token is banned next (the window's first n − 1
        tokens equal the row's last n − 1). Empty (N, 0) tensors when W < n.

    >>> import torch
    >>> tokens, banned = ngram_bans(torch.tensor([[5, 6, 7, 5, 6]]), torch.tensor([5]), 3)
    >>> tokens[banned].tolist()
    [7]
    """
    import torch

    rows, width = history.shape
    if width < n:
        empty = history[:, :0]
        return empty, torch.zeros_like(empty, dtype=torch.bool)
    at = (length[:, None] - (n - 1) + torch.arange(n - 1, device=history.device)).clamp(min=0)
    last = history.gather(1, at)  # the last n − 1 tokens of each row
    windows = history.unfold(1, n, 1)  # (N, W − n + 1, n)
    start = torch.arange(windows.shape[1], device=history.device)
    complete = start[None, :] + n <= length[:, None]
    banned = (windows[..., :-1] == last[:, None, :]).all(dim=-1) & complete & (length >= n)[:, None]
    return windows[..., -1], banned
