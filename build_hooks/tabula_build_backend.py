"""The build backend of ``pip install .``: setuptools', with numba's cache of the engine's kernels compiled
into the wheel, so that a fresh install's first game does not wait for numba (``engine/kernel_cache.py``).

* :func:`get_requires_for_build_wheel` adds what the precompilation imports (numba, numpy, python-chess,
  cshogi, with the same version bounds as the runtime dependencies in ``pyproject.toml``; pip resolves
  both to the same newest numba, and a cache made by another numba version is ignored, not wrong).
  :func:`get_requires_for_build_editable` adds them too.
* :class:`BuildPy` (``[tool.setuptools.cmdclass]``), after copying the packages into the build folder,
  runs ``python -m engine.precompile`` there, which fills ``engine/_kernels/`` beside the copied sources;
  the wheel takes the folder as it takes the sources.  ``TABULA_PRECOMPILE=0`` skips it; a failure only
  warns (the kernels then compile on first use, as without the cache).  An editable install
  (``pip install -e .``, the README's test command) fills the checkout's own ``engine/_kernels/``
  instead (:func:`precompile_in_place`), which the engine reads there: its first ``isready`` loads the
  kernels instead of compiling them (docs/protocols.md, "Cold start").

The cache is for this machine's CPU and Python: a wheel built here and installed on another CPU compiles
on first use.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  # every hook this module does not change
from setuptools.command.build_py import build_py

#: The runtime dependencies that ``engine.precompile`` imports.
PRECOMPILE_IMPORTS = ("numba", "numpy", "chess", "cshogi")


def precompile_requires(pyproject: Path = Path("pyproject.toml")) -> list[str]:
    """The runtime requirements (``[project] dependencies``) of :data:`PRECOMPILE_IMPORTS`."""
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    return [d for d in dependencies if re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0] in PRECOMPILE_IMPORTS]


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements and :func:`precompile_requires`."""
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *precompile_requires()]


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements and :func:`precompile_requires`."""
    return [*_setuptools.get_requires_for_build_editable(config_settings), *precompile_requires()]


def precompile_in_place(source_root: Path) -> None:
    """Fill the checkout's ``engine/_kernels`` (an editable install): entries of unchanged sources stay,
    others are made (a changed source's entries are stamped with its old hash and ignored)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES")}
    env["PYTHONPATH"] = os.pathsep.join([str(source_root.resolve()), *filter(None, [env.get("PYTHONPATH")])])
    print("compiling the engine's numba kernels into engine/_kernels (a minute or two)", flush=True)
    done = subprocess.run([sys.executable, "-m", "engine.precompile"], cwd=source_root, env=env, check=False)
    if done.returncode != 0:
        print("warning: the kernels were not precompiled; they compile on first use", file=sys.stderr)


def precompile(build_lib: Path) -> None:
    """Fill ``build_lib/engine/_kernels`` with the kernels' machine code (a fresh folder each build)."""
    shutil.rmtree(build_lib / "engine" / "_kernels", ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES")}
    env["PYTHONPATH"] = os.pathsep.join([str(build_lib.resolve()), *filter(None, [env.get("PYTHONPATH")])])
    print("compiling the engine's numba kernels into the package (a minute or two)", flush=True)
    done = subprocess.run([sys.executable, "-m", "engine.precompile"], cwd=build_lib, env=env, check=False)
    if done.returncode != 0:
        print("warning: the kernels were not precompiled; they compile on first use", file=sys.stderr)


class BuildPy(build_py):  # type: ignore[misc]  # setuptools' commands are untyped
    """setuptools' ``build_py``, then :func:`precompile` into the build folder, or for an editable
    install :func:`precompile_in_place` into the checkout."""

    def run(self) -> None:
        super().run()
        if os.environ.get("TABULA_PRECOMPILE", "1") == "0":
            return
        if self.editable_mode:
            precompile_in_place(Path.cwd())
        else:
            precompile(Path(self.build_lib))
