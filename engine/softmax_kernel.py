"""The masked softmax's gather and scatter in compiled code, for the dense batches of the compiled trees.

:func:`engine.inference.masked_softmax_rows` turns a network call's policy logits (float32 ``[B, P]``)
into each leaf's priors over its legal moves (float32 ``[B, M]``).  Done in numpy, most of its time is
indexing, not arithmetic: the fancy-indexed gather of the legal logits, the row maximum broadcast back
over them, the row sums broadcast for the division and the boolean-mask scatter into the rows (a fifth
of what the search's thread spends a leaf beside a GPU: docs/benchmarks.md, "Costs behind the code's design").  Here those steps are two compiled loops:

1. :func:`gather_shifted`: each row's legal logits minus the row's maximum, into one flat array, and
   where each row begins there;
2. numpy's ``exp`` on that array and ``np.add.reduceat`` over its rows (numpy's own vectorised
   arithmetic, unchanged);
3. :func:`scatter_divided`: each value divided by its row's sum, into the row.

Maximum, subtraction and division are exact IEEE float32 operations, whoever computes them; the exp and
the sums stay numpy's.  So the priors are bit for bit those of the numpy code (which the reference tree's
:func:`~engine.inference.masked_softmax` keeps), and a search makes the same choices with either.
Importing this module imports numba (the engine imports it only once a compiled tree is in use).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from engine.jit import njit_no_alloc
from engine.uint8_io import Uint8Quantization

__all__ = ["gather_shifted", "scatter_divided", "softmax_rows_into", "warm_up"]

F4 = npt.NDArray[np.float32]
I8 = npt.NDArray[np.int64]


@njit_no_alloc
def gather_shifted(
    policy: npt.NDArray[Any], scale: float, zero: float, index: I8, count: I8, starts: I8, flat: F4
) -> int:
    """For each row ``i`` with legal moves (``count[i] > 0``), in order: its legal logits
    ``policy[i, index[i, j]]`` (``j < count[i]``) less their maximum (NaN when any is NaN, as numpy's
    maximum), one row after another into ``flat``.  ``starts[r]`` is where the ``r``-th such row begins
    and ``starts[k]`` the total; returns ``k``, the number of such rows.  ``policy`` float32 ``[B, P]``
    (``scale`` 1, ``zero`` 0), or uint8 logits that stand for ``(q - zero) * scale`` (an int8 network's
    policy before its ``DequantizeLinear``, :mod:`engine.uint8_io`), each legal one dequantized with that
    node's float32 arithmetic, so the same values as gathering from its output; float logits go through
    the same arithmetic unchanged (``(v - 0) * 1`` is ``v``, bit for bit).  ``index`` int64 ``[B, M]``,
    ``count`` int64 ``[B]``, ``starts`` int64 ``[B + 1]``, ``flat`` float32 ``[sum(count)]``."""
    s = np.float32(scale)
    z = np.float32(zero)
    at = 0
    k = 0
    for i in range(count.shape[0]):
        n = count[i]
        if n == 0:
            continue
        row = policy[i]
        cols = index[i]
        top = (np.float32(row[cols[0]]) - z) * s
        for j in range(1, n):
            v = (np.float32(row[cols[j]]) - z) * s
            if v > top or v != v:
                top = v
                if v != v:
                    break
        starts[k] = at
        k += 1
        for j in range(n):
            flat[at + j] = (np.float32(row[cols[j]]) - z) * s - top
        at += n
    starts[k] = at
    return k


@njit_no_alloc
def scatter_divided(flat: F4, sums: F4, count: I8, out: F4) -> None:
    """``out[i, j] = flat[at_i + j] / sums[r]`` for ``j < count[i]``, where row ``i`` is the ``r``-th row
    with legal moves and ``at_i`` where :func:`gather_shifted` put it (the rest of ``out`` as it was).
    ``flat`` float32 ``[sum(count)]``, ``sums`` float32 ``[rows with legal moves]``, ``count`` int64
    ``[B]``, ``out`` float32 ``[B, M]``."""
    at = 0
    r = 0
    for i in range(count.shape[0]):
        n = count[i]
        if n == 0:
            continue
        s = sums[r]
        row = out[i]
        for j in range(n):
            row[j] = flat[at + j] / s
        at += n
        r += 1


def softmax_rows_into(
    policy: npt.NDArray[Any],
    index: I8,
    count: I8,
    out: F4,
    quantization: Uint8Quantization | None = None,
    scale: float = 1.0,
) -> None:
    """Row ``i`` of ``out`` (float32 ``[B, M]``, zeros) gets the softmax of ``policy[i]``'s logits
    (float32 ``[B, P]``, each times float32 ``scale``, or uint8 ones dequantized with ``quantization``)
    at ``index[i, :count[i]]`` (int64 ``[B, M]``, ``[B]``), in that order, the row maximum subtracted; at
    least one row has a legal move.  Four steps a batch (gather, ``exp``, ``np.add.reduceat``, scatter),
    with the rows' offsets found by the gather: the search calls this once a batch, thousands of times a
    second.  ``scale`` (a policy temperature's ``1 / T``) multiplies only the legal logits, each the same
    float32 product as multiplying the whole policy first (``B * P`` products, a fresh array, for ``B *
    M`` used)."""
    starts = np.empty(count.shape[0] + 1, np.int64)
    flat = np.empty(int(count.sum()), np.float32)
    if quantization is None:
        rows = gather_shifted(policy, float(np.float32(scale)), 0.0, index, count, starts, flat)
    else:
        q = quantization
        rows = gather_shifted(
            policy, float(np.float32(q.scale)), float(q.zero_point), index, count, starts, flat
        )
    np.exp(flat, out=flat)
    scatter_divided(flat, np.add.reduceat(flat, starts[:rows]), count, out)


def warm_up() -> None:
    """Load (or compile) the kernels, so that no search's first network call pays for it."""
    policy = np.zeros((2, 3), np.float32)
    out = np.zeros((2, 2), np.float32)
    softmax_rows_into(policy, np.array([[0, 2], [1, 0]], np.int64), np.array([2, 0], np.int64), out)
    softmax_rows_into(
        policy.astype(np.uint8),
        np.array([[0, 2], [1, 0]], np.int64),
        np.array([2, 0], np.int64),
        out,
        Uint8Quantization(0.5, 3),
    )
