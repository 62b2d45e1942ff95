"""The one way Tabula compiles code with numba: :func:`njit`, shared by the rules kernels
(``engine/games/*_kernel.py``) and the compiled search trees (``engine/search/compiled_*.py``).

Every kernel is compiled with the same flags: ``cache=True`` (machine code kept where the user can write:
the package's ``__pycache__``, else numba's per-user cache folder) and ``nogil=True`` (no GIL held
while a kernel runs, so the network call on the search's worker thread hands its result back without
waiting for one; with the GIL held, shogi's kernels cut the engine's rate with the shipped network
from about 1,100 to 842 evaluations a second).  Importing this module imports numba.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

__all__ = ["njit"]

F = TypeVar("F", bound=Callable[..., Any])


def njit(fn: F) -> F:
    """``numba.njit(cache=True, nogil=True)`` keeping ``fn``'s signature for the type checker."""
    return cast(F, numba.njit(cache=True, nogil=True)(fn))
