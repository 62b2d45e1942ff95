"""The whole suite's set-up: the engine's compiled search kernels in numba's cache before any test.

The engine searches only with its compiled trees, and a search waits for their kernels
(``engine.session.Session._await_kernels``).  A wheel ships them compiled and an editable install (the
README's test command) compiles them into the checkout; a source changed since compiles on first use,
25-30 s a game on two cores.  Compiling what is missing once here, in a fresh interpreter
(``python -m engine.precompile``, seconds when the cache is warm), keeps that out of every timed test
and every engine a test starts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_sessionstart(session: pytest.Session) -> None:
    subprocess.run(
        [sys.executable, "-m", "engine.precompile"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
    )
