"""The masked softmax: a network's policy logits to priors over each position's legal moves only, from
lists of legal indices (:func:`masked_softmax`) or from the compiled trees' dense rows
(:func:`masked_softmax_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.evaluator import LegalRows
from engine.uint8_io import Uint8Quantization


def masked_softmax(
    policy: np.ndarray, legal: Sequence[np.ndarray], temperature: float = 1.0
) -> list[np.ndarray]:
    """Softmax of each row of ``policy`` over that row's legal indices only.

    Args:
        policy: float ``[B, P]`` logits.
        legal: ``B`` int arrays ``[L_i]`` of policy indices (may be empty).
        temperature: the logits are divided by it first (:func:`tempered`).

    Returns:
        ``B`` float32 arrays ``[L_i]``, each summing to 1 (empty for ``L_i == 0``), aligned with
        ``legal[i]``.  Numerically stable (the row maximum over the legal logits is subtracted).
    """
    policy, _ = tempered(policy, None, temperature)
    b = len(legal)
    lengths = np.fromiter((len(x) for x in legal), np.int64, b)
    if int(lengths.sum()) == 0:
        return [np.zeros(0, np.float32) for _ in range(b)]
    cols = np.concatenate([np.asarray(x, np.int64) for x in legal])
    probs = _segment_softmax(policy, cols, lengths)
    return np.split(probs, np.cumsum(lengths)[:-1])


def tempered(
    policy: np.ndarray, quantization: Uint8Quantization | None, temperature: float
) -> tuple[np.ndarray, Uint8Quantization | None]:
    """The logits divided by ``temperature``: float ``policy`` ``[B, P]`` divided (float32); uint8 logits
    keep their values and get ``quantization``'s scale divided instead (the same floats they stand for).
    ``temperature`` 1 returns both unchanged (the same bits as without it)."""
    if temperature == 1.0:
        return policy, quantization
    if quantization is not None:
        return policy, Uint8Quantization(quantization.scale / temperature, quantization.zero_point)
    return np.asarray(policy, np.float32) * np.float32(1.0 / temperature), None


def masked_softmax_rows(
    policy: np.ndarray,
    legal: LegalRows,
    quantization: Uint8Quantization | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """:func:`masked_softmax` on :class:`~engine.evaluator.LegalRows`: float32 ``[B, M]``, row ``i``'s
    first ``counts[i]`` entries the softmax over its legal logits in the order of ``legal.indices``, bit
    for bit :func:`masked_softmax`'s on ``legal.lists()``, the rest zero (an empty row stays zero).
    uint8 logits with their ``quantization`` (:mod:`engine.uint8_io`): the legal ones dequantized as
    the network's ``DequantizeLinear`` would have, the same priors.  ``temperature``: as
    :func:`masked_softmax`'s.

    Only the legal logits are read: ``B * M`` entries at most, not the policy's ``B * P`` (shogi: ``P`` 11,259,
    ``M`` 600, a usual position 80 legal moves).  The gather and scatter are compiled
    (:mod:`engine.softmax_kernel`, imported here on first use: the dense batches are the compiled
    trees', so numba is loaded already), with the same exp and sums as numpy's, so the same bits."""
    index, count = legal.indices, legal.counts
    out = np.zeros(index.shape, np.float32)
    width = int(count.max(initial=0))
    if width == 0:
        return out
    compiled = index.dtype == np.int64 and count.dtype == np.int64
    if compiled and quantization is None and policy.dtype == np.float32 and temperature != 1.0:
        # the temperature inside the gather: the legal logits only, each the product tempered() makes
        from engine.softmax_kernel import softmax_rows_into

        scale = float(np.float32(1.0 / temperature))
        softmax_rows_into(np.ascontiguousarray(policy), index, count, out, None, scale)
        return out
    policy, quantization = tempered(policy, quantization, temperature)
    if quantization is not None and not (compiled and policy.dtype == np.uint8):
        policy, quantization = quantization.dequantize(policy), None
    if compiled and (policy.dtype == np.float32 or quantization is not None):
        from engine.softmax_kernel import softmax_rows_into

        softmax_rows_into(np.ascontiguousarray(policy), index, count, out, quantization)
        return out
    valid = np.arange(width) < count[:, None]
    cols = index[:, :width][valid]
    out[:, :width][valid] = _segment_softmax(policy, cols, count)
    return out


def _segment_softmax(policy: np.ndarray, cols: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """float32 ``[sum(lengths)]``: for each row ``i`` of ``policy`` (float ``[B, P]``) the softmax of its
    logits at the next ``lengths[i]`` entries of ``cols`` (int64, rows in order, at least one entry
    in all), the row maximum subtracted; the reductions run in the order of ``cols``."""
    b = lengths.shape[0]
    rows = np.repeat(np.arange(b), lengths)
    logits = policy[rows, cols].astype(np.float32, copy=False)
    nonempty = lengths > 0
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
    row_max = np.zeros(b, np.float32)
    row_max[nonempty] = np.maximum.reduceat(logits, starts)
    e = np.exp(logits - row_max[rows])
    row_sum = np.ones(b, np.float32)
    row_sum[nonempty] = np.add.reduceat(e, starts)
    probs: np.ndarray = e / row_sum[rows]
    return probs
