"""build_hooks/tabula_build_backend.py: a wheel build installs what the kernels' precompilation imports,
with the runtime's own version bounds; an editable install does not."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build_hooks"))
backend = pytest.importorskip("tabula_build_backend")


def test_pyproject_names_the_backend() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["build-system"]["build-backend"] == "tabula_build_backend"
    assert config["build-system"]["backend-path"] == ["build_hooks"]
    assert config["tool"]["setuptools"]["cmdclass"]["build_py"] == "tabula_build_backend.BuildPy"


def test_wheel_build_requires_the_runtime_kernel_dependencies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = [d for d in dependencies if d.startswith(("numba", "numpy", "chess", "cshogi"))]
    assert len(wanted) == 4
    wheel = backend.get_requires_for_build_wheel()
    assert set(wanted) <= set(wheel)
    assert not any(
        r.startswith(("numba", "onnxruntime", "click")) for r in backend.get_requires_for_build_editable()
    )
