"""The one way Tabula compiles code with numba: :func:`njit` and :func:`njit_no_alloc`, shared by the
rules kernels (``engine/games/*_kernel.py``) and the compiled search trees
(``engine/search/compiled_*.py``).

Every kernel is compiled with the same flags: ``cache=True`` (machine code kept in the package's
``engine/_kernels/`` folder, which a build fills and ships, else a per-user folder:
:mod:`engine.kernel_cache`, whose locator this module installs before any kernel is defined) and ``nogil=True`` (no GIL held
while a kernel runs, so the network call on the search's worker thread hands its result back without
waiting for one: with the GIL held, shogi's kernels cost the engine a fifth of its rate).  Importing
this module imports numba.  The figures behind these choices: docs/benchmarks.md, "Costs behind the code's design".

Kernels that allocate nothing and return no array are compiled with :func:`njit_no_alloc`: without
numba's reference counting (NRT).  With it, every call of a compiled function that takes arrays
increments and decrements each array's reference count, atomically, even when numba inlines the call:
tens of nanoseconds per call, which a loop over the points of a Go board pays per point
(``benchmarks/nrt_calls.py`` measures it).  A kernel that allocates cannot be compiled so
(numba refuses it at compile time); one that returned an array would hand its caller a reference it
does not own, so ``tests/engine/test_jit.py`` checks every such kernel's compiled return types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

from engine import kernel_cache

__all__ = ["NO_ALLOC_KERNELS", "njit", "njit_no_alloc", "njit_no_alloc_inline"]

F = TypeVar("F", bound=Callable[..., Any])

kernel_cache.install()

#: Every :func:`njit_no_alloc` kernel (their dispatchers), for the test of their return types.
NO_ALLOC_KERNELS: list[Any] = []


def njit(fn: F) -> F:
    """``numba.njit(cache=True, nogil=True)`` keeping ``fn``'s signature for the type checker."""
    return cast(F, numba.njit(cache=True, nogil=True)(fn))


def njit_no_alloc(fn: F, inline: bool = False) -> F:
    """:func:`njit` without numba's reference counting, for a kernel that allocates no array (numba
    refuses to compile one that does) and returns none (scalars, booleans or nothing): its calls then
    cost no atomic reference-count updates of their array arguments.  ``inline``: numba inlines the
    kernel into its callers (:func:`njit_no_alloc_inline`)."""
    options: dict[str, Any] = {"_nrt": False}  # numba's option for it (not in numba's type stubs)
    if inline:
        options["inline"] = "always"
    dispatcher = numba.njit(cache=True, nogil=True, **options)(fn)
    NO_ALLOC_KERNELS.append(dispatcher)
    return cast(F, dispatcher)


def njit_no_alloc_inline(fn: F) -> F:
    """:func:`njit_no_alloc`, inlined by numba into every caller (in numba's IR, before LLVM): for a kernel
    that takes other kernels as arguments (the search's one walk and the rules each game plugs in,
    ``engine/search/compiled_tree.py``).  Inlined, the arguments are plain calls in the caller; a
    kernel passed as a value would be compiled as its Python object's address, which numba refuses to
    cache ("uses dynamic globals")."""
    return njit_no_alloc(fn, inline=True)
