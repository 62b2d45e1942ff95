"""build_hooks/tabula_build_backend.py: a wheel build and an editable install both install what the
kernels' precompilation imports, with the runtime's own version bounds (and nothing else of the
runtime); the wheel's kernels go into the build folder, an editable install's into the checkout."""

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
    editable = backend.get_requires_for_build_editable()
    assert set(wanted) <= set(editable)
    assert not any(r.startswith(("onnxruntime", "click")) for r in [*wheel, *editable])


@pytest.mark.parametrize("editable", [False, True])
def test_the_kernels_go_into_the_build_folder_or_the_checkout(
    editable: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[str, Path]] = []
    monkeypatch.setattr(backend.build_py, "run", lambda self: None)  # setuptools' own copying
    monkeypatch.setattr(backend, "precompile", lambda lib: calls.append(("wheel", lib)))
    monkeypatch.setattr(backend, "precompile_in_place", lambda root: calls.append(("in place", root)))
    monkeypatch.chdir(tmp_path)
    command = backend.BuildPy.__new__(backend.BuildPy)
    command.editable_mode, command.build_lib = editable, str(tmp_path / "lib")
    command.run()
    assert calls == [("in place", tmp_path) if editable else ("wheel", tmp_path / "lib")]
    monkeypatch.setenv("TABULA_PRECOMPILE", "0")
    command.run()
    assert len(calls) == 1
