"""Batches of texts of similar length, for the cross-encoders (alignment backends, the checker)."""

from __future__ import annotations

from collections.abc import Sequence


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Row indices in batches of ``batch_size``, shortest first: each batch pads to texts
    of similar length (a long context chunk is not padded onto short sentences)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
