"""A busy machine on purpose: one busy loop per core, in child processes bounded in time.

Time management is tested on a loaded CPU because users run engines beside GUIs, other engines and
builds, and because CI's machine is shared: a limit that holds only on a quiet machine is not kept.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

#: Each loader's own program: spin until its deadline, then exit (even if the test never stops it).
_SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def busy_cores(seconds: float = 60.0, cores: int | None = None) -> Iterator[int]:
    """Keep ``cores`` cores (default: all of them) busy for at most ``seconds`` while the block runs;
    yields how many loaders run.  The loaders are killed when the block ends, and end by themselves
    after ``seconds`` in any case (a test killed mid-way leaves nothing spinning)."""
    count = cores if cores is not None else (os.cpu_count() or 1)
    loaders = [
        subprocess.Popen([sys.executable, "-c", _SPIN.format(seconds=float(seconds))]) for _ in range(count)
    ]
    try:
        yield count
    finally:
        for loader in loaders:
            loader.kill()
        for loader in loaders:
            loader.wait()
