"""Progress inside a batch: a transformers stopping criterion that never stops and reports
how many of ``max_new_tokens`` decoding steps are done (``evaluation.io.progress``)."""

from __future__ import annotations

from typing import Any

from ...evaluation.io.progress import report_fraction


class StepProgress:
    """``stopping_criteria`` entry: after each step, report ``new tokens / max_new_tokens``.

    Reads only the shape of ``input_ids`` (no device sync) and returns all False, so it
    changes no output; the open progress bar shows the batch's share in flight.
    """

    def __init__(self, start_len: int, max_new_tokens: int) -> None:
        self.start_len = int(start_len)
        self.max_new_tokens = max(1, int(max_new_tokens))

    def __call__(self, input_ids: Any, scores: Any = None, **kwargs: Any) -> Any:
        import torch

        report_fraction((input_ids.shape[-1] - self.start_len) / self.max_new_tokens)
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def step_criteria(start_len: int, max_new_tokens: int) -> Any:
    """A ``StoppingCriteriaList`` holding one :class:`StepProgress`."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _Step(StepProgress, StoppingCriteria):
        pass

    return StoppingCriteriaList([_Step(start_len, max_new_tokens)])
