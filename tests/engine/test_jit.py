"""engine.jit: kernels compiled without reference counting allocate nothing and return no array."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from numba.core import types

import engine.jit as jit
from engine.jit import NO_ALLOC_KERNELS, njit_no_alloc
from engine.search import compiled_chess, compiled_go, compiled_shogi


def _holds_array(t: types.Type) -> bool:
    """Whether a numba type is, or contains, an array (a reference the caller would have to own)."""
    if isinstance(t, types.Array):
        return True
    if isinstance(t, types.BaseTuple):
        return any(_holds_array(x) for x in t.types)
    return False


@pytest.fixture(scope="module")
def compiled() -> None:
    """Every game's search kernels compiled (or loaded from the cache) by their warm-ups."""
    compiled_go.warm_up()
    compiled_chess.warm_up()
    compiled_shogi.warm_up()


_SCALARS = {"None", "int", "float", "bool", "np.uint64", "np.int64", "np.float64"}


def test_no_alloc_kernels_declare_scalar_returns() -> None:
    """Each kernel's return annotation names scalars only (``tuple[...]`` of them at most)."""
    assert len(NO_ALLOC_KERNELS) >= 80
    for dispatcher in NO_ALLOC_KERNELS:
        annotation = str(dispatcher.py_func.__annotations__.get("return"))
        names = re.sub(r"tuple\[|\]|,", " ", annotation).split()
        assert names and set(names) <= _SCALARS, f"{dispatcher.py_func.__qualname__} returns {annotation}"


def test_no_alloc_kernels_return_no_array(compiled: None) -> None:
    """The types numba compiled agree: no array comes back from any signature compiled so far."""
    checked = 0
    for dispatcher in NO_ALLOC_KERNELS:
        for sig in dispatcher.nopython_signatures:
            assert not _holds_array(sig.return_type), (
                f"{dispatcher.py_func.__qualname__} returns {sig.return_type}"
            )
            checked += 1
    assert checked >= 1


def test_a_kernel_that_allocates_is_refused() -> None:
    def allocates(n: int) -> float:
        return float(np.zeros(n).sum())

    kernel = njit_no_alloc(allocates)
    try:
        with pytest.raises(numba.core.errors.NumbaError):
            kernel(3)
    finally:
        jit.NO_ALLOC_KERNELS.remove(kernel)


def test_no_alloc_kernel_reads_and_writes_arrays() -> None:
    def fill(out: np.ndarray, v: float) -> float:
        total = 0.0
        for i in range(out.shape[0]):
            out[i] = v * i
            total += out[i]
        return total

    kernel = njit_no_alloc(fill)
    try:
        out = np.zeros(4)
        assert kernel(out, 2.0) == 12.0
        np.testing.assert_array_equal(out, [0.0, 2.0, 4.0, 6.0])
    finally:
        jit.NO_ALLOC_KERNELS.remove(kernel)
