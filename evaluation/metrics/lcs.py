"""Longest common subsequence length of two token sequences.

:func:`lcs_length` is the bit-parallel algorithm of Allison & Dix (1986) in
the form of Hyyrö (2004, "Bit-parallel LCS-length computation revisited"):
with one match mask ``M[c]`` per symbol over the longer sequence ``a``
(bit i set when ``a[i] == c``) and ``V`` starting as all ones,

    for c in b:  U = V & M[c];  V = (V + U) | (V - U)

and LCS(a, b) is the number of zero bits among the low ``len(a)`` bits of
``V``. Python's big integers carry the ``len(a)``-bit words, so one step is a
handful of machine-word loops in C: O(len(a) · len(b) / 64) in all.
:func:`lcs_length_dp` is the plain O(n·m) dynamic program, kept as the
baseline for tests and benchmarks.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def token_ids(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids of two token sequences over one shared vocabulary (first appearance order)."""
    vocab: dict[Hashable, int] = {}
    ia = np.fromiter((vocab.setdefault(t, len(vocab)) for t in a), dtype=np.int64, count=len(a))
    ib = np.fromiter((vocab.setdefault(t, len(vocab)) for t in b), dtype=np.int64, count=len(b))
    return ia, ib


def lcs_length_ids(a: np.ndarray, b: np.ndarray) -> int:
    """:func:`lcs_length` on integer arrays (token ids)."""
    if len(a) < len(b):
        a, b = b, a
    m = len(a)
    if m == 0 or len(b) == 0:
        return 0
    symbols, inverse = np.unique(b, return_inverse=True)
    equal = a[None, :] == symbols[:, None]  # (symbols of b, positions of a)
    packed = np.packbits(equal, axis=1, bitorder="little")
    masks = [int.from_bytes(row.tobytes(), "little") for row in packed]
    full = (1 << m) - 1
    v = full
    for k in inverse.tolist():
        u = v & masks[k]
        v = ((v + u) | (v - u)) & full
    return m - v.bit_count()


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of two token sequences (bit-parallel).

    Example: ``lcs_length("abcbdab", "bdcaba")`` is 4.
    """
    ia, ib = token_ids(a, b)
    return lcs_length_ids(ia, ib)


def lcs_length_dp(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Plain O(len(a)·len(b)) dynamic-programming LCS length (the baseline)."""
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]
