"""Compiled per-position work of :mod:`trainer.store.shards`: the one pass over a position's planes that
:func:`~trainer.store.shards.pack_position` needs (each plane's first value, whether it is constant, whether
it is binary, and its packed non-zero bits).

Self-play packs every recorded position; with numpy that took five passes over the planes (about 180
us for shogi's 362 x 81 floats, a tenth of a self-play move's own work), here it is one.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.jit import njit_no_alloc as _njit_no_alloc


@_njit_no_alloc
def pack_planes(
    flat: npt.NDArray[np.float32],
    values: npt.NDArray[np.float32],
    constant: npt.NDArray[np.bool_],
    binary: npt.NDArray[np.bool_],
    bits: npt.NDArray[np.uint8],
) -> None:
    """Describe each plane of ``flat`` (float32 ``[C, HW]``) in one pass: ``values[c]`` its first value,
    ``constant[c]`` every value equal to it, ``binary[c]`` every value 0 or 1, ``bits[c]`` (uint8
    ``[C, ceil(HW / 8)]``) its ``!= 0`` bits packed most significant first, zero-padded (numpy's
    ``packbits(flat != 0, axis=1)``)."""
    planes, width = flat.shape
    full = width // 8
    for c in range(planes):
        first = flat[c, 0]
        values[c] = first
        same = True
        zero_one = True
        for byte in range(full):  # branch-free over the whole bytes
            acc = 0
            for k in range(8):
                v = flat[c, byte * 8 + k]
                acc = (acc << 1) | (v != 0.0)
                same &= v == first
                zero_one &= (v == 0.0) | (v == 1.0)
            bits[c, byte] = acc
        if full < bits.shape[1]:  # the last, partial byte, zero-padded
            acc = 0
            for k in range(8):
                j = full * 8 + k
                nonzero = False
                if j < width:
                    v = flat[c, j]
                    nonzero = v != 0.0
                    same &= v == first
                    zero_one &= (v == 0.0) | (v == 1.0)
                acc = (acc << 1) | nonzero
            bits[c, full] = acc
        constant[c] = same
        binary[c] = zero_one
