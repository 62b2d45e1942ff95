"""What numba's reference counting costs a kernel's calls (the reason for ``engine.jit.njit_no_alloc``).

A compiled function that takes arrays and is compiled with numba's runtime (NRT) increments and
decrements each array's reference count, atomically, on every call, even when numba inlines it.  This
times one loop three ways on a Go 19x19 position, one call per point: the liberty test of a
legal-move mask written inline, called as an NRT kernel (``njit``), and called as a kernel without NRT
(``njit_no_alloc``); then the real legal-move mask of ``engine.games.go_kernel``.

    python benchmarks/nrt_calls.py

Prints microseconds per 361-point pass (the best of five timings of many passes).  On this project's
2-core Intel VM (2026-11-26): inline 0.27, NRT calls 17, no-NRT calls 0.27, ``legal_mask_into`` 0.55
(it was 18 with NRT kernels).  Figures, not assertions; pause other work (training) first.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.games import go_kernel
from engine.games.go import GoRules, GoState
from engine.jit import njit

I1 = npt.NDArray[np.int8]
I2 = npt.NDArray[np.int16]


def _liberty(board: I1, head: I2, libs: I2, nbr: I2, c: int, q: int) -> bool:
    """Whether a stone of colour ``c`` on empty ``q`` has a liberty (``go_kernel._has_liberty_after``)."""
    for k in range(4):
        r = nbr[q, k]
        if r < 0:
            break
        b = board[r]
        if b == 0:
            return True
        n_libs = libs[head[r]]
        if (b == c and n_libs >= 2) or (b != c and n_libs == 1):
            return True
    return False


# Compiled without numba's cache: one Python function compiled two ways would share its cache entry.
_liberty_nrt = numba.njit(nogil=True)(_liberty)
_liberty_no_nrt = numba.njit(nogil=True, _nrt=False)(_liberty)  # as engine.jit.njit_no_alloc compiles


@njit
def _inline_pass(board: I1, head: I2, libs: I2, nbr: I2, c: int, out: npt.NDArray[np.bool_]) -> None:
    for q in range(board.shape[0]):
        ok = False
        if board[q] == 0:
            for k in range(4):
                r = nbr[q, k]
                if r < 0:
                    break
                b = board[r]
                if b == 0:
                    ok = True
                    break
                n_libs = libs[head[r]]
                if (b == c and n_libs >= 2) or (b != c and n_libs == 1):
                    ok = True
                    break
        out[q] = ok


@njit
def _nrt_pass(board: I1, head: I2, libs: I2, nbr: I2, c: int, out: npt.NDArray[np.bool_]) -> None:
    for q in range(board.shape[0]):
        out[q] = board[q] == 0 and _liberty_nrt(board, head, libs, nbr, c, q)


@njit
def _no_nrt_pass(board: I1, head: I2, libs: I2, nbr: I2, c: int, out: npt.NDArray[np.bool_]) -> None:
    for q in range(board.shape[0]):
        out[q] = board[q] == 0 and _liberty_no_nrt(board, head, libs, nbr, c, q)


@njit
def _repeat(kind: int, s: go_kernel.KernelState, out: npt.NDArray[np.bool_], n: int) -> None:
    """``n`` passes of one kind (0 inline, 1 NRT calls, 2 no-NRT calls, 3 ``legal_mask_into``)."""
    for _ in range(n):
        if kind == 0:
            _inline_pass(s.board, s.head, s.libs, s.nbr, 1, out)
        elif kind == 1:
            _nrt_pass(s.board, s.head, s.libs, s.nbr, 1, out)
        elif kind == 2:
            _no_nrt_pass(s.board, s.head, s.libs, s.nbr, 1, out)
        else:
            go_kernel.legal_mask_into(s, out)


def _best_us(fn: Callable[[int], Any], n: int) -> float:
    fn(10)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def main() -> None:
    s = GoState(GoRules(board_size=19)).kernel_state()
    for point in (60, 300, 72, 288, 180):  # a few stones, as in `tabula bench`'s second Go position
        go_kernel.play(s, point)
    out = np.zeros(19 * 19 + 1, np.bool_)
    for kind, name in enumerate(("inline", "NRT calls", "no-NRT calls", "legal_mask_into")):
        us = _best_us(lambda n, k=kind: _repeat(k, s, out, n), 20_000)
        print(f"{name:16s} {us:8.2f} us per 361-point pass")


if __name__ == "__main__":
    main()
