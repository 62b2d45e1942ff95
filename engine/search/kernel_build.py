"""Loading a compiled tree's kernels, and on a first run (numba's cache empty) compiling them in helper
interpreters, on every core, outside the engine's process.

numba compiles a kernel and everything it calls on the thread that first calls it, holding its compiler
lock and, for stretches of up to a few hundred ms, the GIL: one core, and a search running beside it
misses its deadline by as much (a bare ``go`` answered 320 ms late).  With an empty cache the shogi
tree's kernels (about 90 functions) also take longer than the 30 s a GUI should wait for ``readyok`` on
one core (docs/benchmarks.md, "Costs behind the code's design"; ``python benchmarks/cold_start.py``
measures it).

A compiled tree's module may name independent parts of its compilation (``COMPILE_PARTS``: functions
that each compile some kernels for the argument types the tree calls them with, without running them,
:func:`compile_for`) and the kernel whose cache says whether anything needs compiling
(``COMPILED_ENTRY``: the selection, which calls the rest; the first part compiles it last).
:func:`load_kernels` then, when that entry is not in numba's cache, gives every part to a helper
interpreter (``python -m engine.search.kernel_build MODULE PART``: no fork of a threaded engine) at a
lower priority (:data:`HELPER_NICENESS`: a search in progress keeps its cores), all writing numba's
cache, and waits for them without the GIL; then it runs the module's ``warm_up``, which loads what they
wrote (stalls of tens of ms) and compiles anything left.  A part whose helper cannot start runs on the
calling thread; a helper that fails or outlives :data:`HELPER_TIMEOUT_S` only costs time (``warm_up``
compiles whatever is missing); one still running when the program exits is killed (numba writes a cache
file whole or not at all).

With the cache filled (every later run), or in a frozen bundle (no interpreter to start),
:func:`load_kernels` is the module's ``warm_up`` alone.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from numba.core import types

__all__ = [
    "HELPER_NICENESS",
    "HELPER_TIMEOUT_S",
    "compile_for",
    "is_cached",
    "kill_helpers",
    "literal",
    "load_kernels",
    "main",
]

log = logging.getLogger("tabula.kernels")

#: How long :func:`load_kernels` waits for a helper interpreter before it compiles what is missing itself.
HELPER_TIMEOUT_S = 120.0


#: How much lower than the engine a helper interpreter runs (``os.nice``): compiling yields to a search.
HELPER_NICENESS = 10

#: Helper interpreters still compiling (killed at exit: :func:`kill_helpers`).
_RUNNING: set[subprocess.Popen[bytes]] = set()


def compile_for(kernel: Any, *args: Any) -> None:
    """Compile (or load from the cache) ``kernel``, a numba dispatcher, for the types of ``args`` as a
    call with them would (``typeof_pyval``), without running it; an argument that is a numba type is
    taken as it is (:func:`literal`: numba types a variable's first value, as ``m = 0``
    before a loop, as that literal, and compiles a callee once for it)."""
    kernel.compile(tuple(a if isinstance(a, types.Type) else kernel.typeof_pyval(a) for a in args))


def literal(value: int) -> Any:
    """The numba type of the literal ``value`` (for :func:`compile_for`)."""
    return types.literal(value)  # type: ignore[no-untyped-call]  # numba has no type hints


def is_cached(kernel: Any) -> bool:
    """Whether numba's cache holds machine code of ``kernel`` (a dispatcher) made from its current source
    (an index of overloads whose stamp matches the source file); ``False`` when that cannot be told."""
    try:
        return bool(kernel._cache._cache_file._load_index())
    except Exception:  # no cache (NullCache), or numba's private layout changed: compile as before
        return False


def _can_start_helpers() -> bool:
    """An interpreter to start (not a frozen bundle)."""
    return not getattr(sys, "frozen", False)


def _start_helper(module_name: str, part: int) -> subprocess.Popen[bytes]:
    """A helper interpreter compiling part ``part`` of ``module_name``'s kernels (its output discarded:
    the engine's stdout is the protocol's channel)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.search.kernel_build", module_name, str(part)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=str(Path(__file__).resolve().parent.parent.parent),
    )
    _RUNNING.add(proc)
    return proc


@atexit.register
def kill_helpers() -> None:
    """Kill the helpers still compiling when the program exits (``quit`` before the kernels were done):
    no process outlives the engine."""
    for proc in list(_RUNNING):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _RUNNING.clear()


def _finish(helpers: Sequence[subprocess.Popen[bytes]], deadline: float) -> None:
    """Wait for ``helpers`` until ``deadline`` (``time.monotonic``), then kill those still running."""
    for proc in helpers:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("a kernel compilation helper ran past %.0f s; compiling here", HELPER_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            _RUNNING.discard(proc)


def load_kernels(module_name: str) -> None:
    """Load the kernels of the compiled tree in ``module_name`` (module docstring): its ``warm_up``,
    after helper interpreters compiled its ``COMPILE_PARTS`` when its ``COMPILED_ENTRY`` is not cached."""
    module = importlib.import_module(module_name)
    parts: Sequence[Callable[[], None]] = getattr(module, "COMPILE_PARTS", ())
    entry = getattr(module, "COMPILED_ENTRY", None)
    if parts and entry is not None and _can_start_helpers() and not is_cached(entry):
        helpers: list[subprocess.Popen[bytes]] = []
        here: list[Callable[[], None]] = []  # the parts whose helper could not start
        for i, part in enumerate(parts):
            try:
                helpers.append(_start_helper(module_name, i))
            except OSError:
                log.exception("cannot start a kernel compilation helper; compiling here")
                here.append(part)
        for part in here:
            part()
        _finish(helpers, time.monotonic() + HELPER_TIMEOUT_S)
    module.warm_up()


def main(argv: Sequence[str]) -> int:
    """Helper entry (``python -m engine.search.kernel_build MODULE PART``): compile that part."""
    module_name, part = argv[0], int(argv[1])
    # no os.nice (Windows), or not allowed: compile at the engine's priority
    with contextlib.suppress(AttributeError, OSError):
        os.nice(HELPER_NICENESS)
    parts: Sequence[Callable[[], None]] = importlib.import_module(module_name).COMPILE_PARTS
    parts[part]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
