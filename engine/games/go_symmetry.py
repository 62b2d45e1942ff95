"""The 8 dihedral symmetries of the square Go board, for data augmentation and for evaluating a
position under a random symmetry (AlphaGo Zero).

Symmetry ``k`` in ``0..7`` acts on an ``N x N`` plane as ``rot90(plane, k % 4)`` (counter-clockwise,
``numpy.rot90`` on the last two axes), followed by a left-right flip when ``k >= 4``.  ``k = 0`` is the
identity.  Every transform is a precomputed index permutation ``perm`` of the flat points
(``p = row * N + col``, row 0 = the top row, see the table in :mod:`engine.games.go`):

    transformed.flat[i] == original.flat[perm[i]]

Planes and policy vectors use the same permutation because the Go policy index *is* the flat point
(pass, index ``N * N``, is fixed by every symmetry).  A stone or move at point ``p`` goes to
``symmetry_point(p, k, N)``; ``inverse_symmetry(k)`` undoes ``k``: rotations invert to the opposite
rotation, reflections are their own inverse.

All functions are vectorised (one fancy-index per call) and accept leading batch axes.
"""

from __future__ import annotations

import functools
import math

import numpy as np

#: Number of symmetries of the square board.
NUM_SYMMETRIES = 8


def _check_k(k: int) -> int:
    if not 0 <= int(k) < NUM_SYMMETRIES:
        raise ValueError(f"symmetry must be in 0..7, got {k}")
    return int(k)


def transform_board(array: np.ndarray, k: int) -> np.ndarray:
    """Apply symmetry ``k`` to the last two axes of ``array`` (``[..., N, N]``) with numpy views.

    This is the definition the permutations are built from; use :func:`symmetry_planes` in hot code.
    """
    k = _check_k(k)
    out = np.rot90(array, k % 4, axes=(-2, -1))
    if k >= 4:
        out = np.flip(out, axis=-1)
    return out


@functools.cache
def symmetry_permutations(board_size: int) -> np.ndarray:
    """int64 ``[8, N*N]``: row ``k`` is ``perm`` with ``transformed.flat[i] == original.flat[perm[i]]``.

    Read-only; cached per board size.
    """
    n = int(board_size)
    base = np.arange(n * n, dtype=np.int64).reshape(n, n)
    perms = np.stack([np.ascontiguousarray(transform_board(base, k)).reshape(-1) for k in range(8)])
    perms.flags.writeable = False
    return perms


@functools.cache
def _policy_permutations(board_size: int) -> np.ndarray:
    """int64 ``[8, N*N+1]``: the point permutations with pass (``N*N``) fixed at the end."""
    n = int(board_size)
    perms = symmetry_permutations(n)
    out = np.concatenate([perms, np.full((8, 1), n * n, dtype=np.int64)], axis=1)
    out.flags.writeable = False
    return out


def inverse_symmetry(k: int) -> int:
    """The symmetry that undoes ``k``.

    ``symmetry_planes(symmetry_planes(x, k), inverse_symmetry(k)) == x``.
    """
    k = _check_k(k)
    return (4 - k) % 4 if k < 4 else k


def symmetry_planes(planes: np.ndarray, k: int) -> np.ndarray:
    """Apply symmetry ``k`` to planes ``[..., C, N, N]`` (any leading axes; the last two are the board).

    Returns:
        a new array of the same shape and dtype.
    """
    k = _check_k(k)
    if k == 0:
        return np.array(planes, copy=True)
    n = planes.shape[-1]
    if planes.shape[-2] != n:
        raise ValueError(f"planes must be square on the last two axes, got {planes.shape}")
    flat = planes.reshape(*planes.shape[:-2], n * n)
    return flat[..., symmetry_permutations(n)[k]].reshape(planes.shape)


def symmetry_policy(policy: np.ndarray, k: int) -> np.ndarray:
    """Apply symmetry ``k`` to a policy vector ``[..., N*N+1]`` (pass, the last entry, stays put).

    ``symmetry_policy(p, k)[symmetry_point(m, k, N)] == p[m]`` for every move ``m``.
    """
    k = _check_k(k)
    size = policy.shape[-1]
    n = math.isqrt(size - 1)
    if n * n + 1 != size:
        raise ValueError(f"a Go policy has N*N+1 entries, got {size}")
    return policy[..., _policy_permutations(n)[k]]


def symmetry_point(point: int, k: int, board_size: int) -> int:
    """Where symmetry ``k`` sends the point (or move) ``point``; pass (``N*N``) stays pass."""
    n = int(board_size)
    if point == n * n:
        return point
    if not 0 <= point < n * n:
        raise ValueError(f"point {point} is off a {n}x{n} board")
    return int(symmetry_permutations(n)[inverse_symmetry(k)][point])


def symmetry_indices(indices: np.ndarray, k: int, board_size: int) -> np.ndarray:
    """Vectorised :func:`symmetry_point` for an int array of policy indices ``[L]`` (pass allowed)."""
    n = int(board_size)
    permutation: np.ndarray = _policy_permutations(n)[inverse_symmetry(k)]
    return permutation[np.asarray(indices, dtype=np.int64)]
