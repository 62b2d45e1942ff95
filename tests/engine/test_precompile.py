"""engine.precompile: the kernels the engine loads before a first search, compiled into the package's
cache (``engine/_kernels/``) without a network or a search, in a temporary copy of the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: After the precompilation, in a fresh process: is Go's compiled selection cached, and was onnxruntime
#: (a network) never imported by the precompilation itself.
CHECK = """
import sys
from engine.precompile import main
main(["go"])
assert "onnxruntime" not in sys.modules, "the precompilation loaded a network"
"""
CACHED = """
from engine.search import compiled_go, compiled_tree
from engine.search.kernel_build import is_cached
print(is_cached(compiled_go.COMPILED_ENTRY), is_cached(compiled_tree.touch_pages))
"""


def copy_package(root: Path) -> None:
    """``engine`` and ``weights`` (without networks) under ``root``, with no cache."""
    shutil.copytree(
        ROOT / "engine", root / "engine", ignore=shutil.ignore_patterns("__pycache__", "_kernels")
    )
    shutil.copytree(
        ROOT / "weights", root / "weights", ignore=shutil.ignore_patterns("*.onnx", "__pycache__")
    )


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env["PYTHONPATH"] = str(root)
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.slow
def test_precompile_fills_the_package_cache(tmp_path: Path) -> None:
    copy_package(tmp_path)
    assert run(tmp_path, "-c", CACHED).stdout.split() == ["False", "False"]
    done = run(tmp_path, "-c", CHECK)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("go: kernels ready in ")
    assert run(tmp_path, "-c", CACHED).stdout.split() == ["True", "True"]
    assert list((tmp_path / "engine" / "_kernels" / "search").glob("compiled_go.*.nbi"))


def test_unknown_game_is_a_usage_error(tmp_path: Path) -> None:
    done = run(ROOT, "-m", "engine.precompile", "checkers")
    assert done.returncode == 2
    assert "unknown game 'checkers'" in done.stderr
