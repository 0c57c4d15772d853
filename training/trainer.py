"""A minimal ``DPOTrainer`` subclass with per-pair loss weights (for the fairness option).

trl's DPO loss is the batch mean of per-pair losses l_i. With a ``pair_weight``
column w_i in the training set, the loss becomes

    L = (1/B) sum_i w_i * l_i

computed exactly by evaluating trl's own loss on each pair of the batch
(one pair = a sub-batch of its chosen and rejected rows) and summing with the
weights; batches whose weights are all 1 take trl's batched path unchanged.
Sub-batching costs B small forward passes instead of one; weighting by
duplicating pairs was rejected because it only realizes rational weights
and changes the epoch's length. Only per-pair losses (``sigmoid``, ``ipo``,
``hinge``... not ``aot``) are valid with weights.
"""

from __future__ import annotations

from typing import Any

WEIGHT_COLUMN = "pair_weight"
_PAIR_KEYS = ("input_ids", "attention_mask", "completion_mask")
_REF_KEYS = ("ref_chosen_logps", "ref_rejected_logps")


class _WeightCollator:
    """Wraps trl's preference collator and adds the ``pair_weight`` tensor."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        batch = self.inner(examples)
        if WEIGHT_COLUMN in examples[0]:
            batch[WEIGHT_COLUMN] = torch.tensor(
                [float(e[WEIGHT_COLUMN]) for e in examples], dtype=torch.float32
            )
        return batch


def split_pair(inputs: dict[str, Any], i: int) -> dict[str, Any]:
    """The sub-batch of pair ``i`` from a collated batch (rows i and B + i)."""
    n = inputs["input_ids"].shape[0] // 2
    rows = [i, n + i]
    sub = {k: inputs[k][rows] for k in _PAIR_KEYS if k in inputs}
    sub.update({k: inputs[k][i : i + 1] for k in _REF_KEYS if k in inputs})
    return sub


def weighted_dpo_trainer() -> type:
    """The ``WeightedDPOTrainer`` class (built lazily: importing trl is slow)."""
    from trl.trainer.dpo_trainer import DPOTrainer

    class WeightedDPOTrainer(DPOTrainer):
        """``DPOTrainer`` whose per-pair losses are multiplied by the ``pair_weight`` column."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.data_collator = _WeightCollator(self.data_collator)

        def _set_signature_columns_if_needed(self) -> None:
            super()._set_signature_columns_if_needed()
            if WEIGHT_COLUMN not in self._signature_columns:
                self._signature_columns = [*self._signature_columns, WEIGHT_COLUMN]

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # noqa: ANN001
            weights = inputs.pop(WEIGHT_COLUMN, None)
            if weights is None or bool((weights == 1).all()) or return_outputs:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            n = int(weights.shape[0])
            total = 0.0
            for i in range(n):
                total = total + weights[i] * super().compute_loss(model, split_pair(inputs, i))
            return total / n

    return WeightedDPOTrainer
