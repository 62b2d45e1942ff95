"""engine.kernel_cache: numba's cache of the package's kernels is stamped by source content (kept across a
new mtime, a copy to another folder; dropped when the source changes), lives in ``engine/_kernels/``, and
falls back to a seeded per-user folder where that is not writable.

Each case runs a small kernel module in a fresh interpreter, in a temporary copy of the package's
``engine/__init__.py``, ``jit.py`` and ``kernel_cache.py`` (so the checkout's cache is not touched), and
reads numba's own hit and miss counts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine import kernel_cache
from engine.kernel_cache import KernelCacheLocator, shipped_cache_dir, source_of, source_stamp

ROOT = Path(__file__).resolve().parents[2]

KERNEL = '''"""A test kernel."""
from engine.jit import njit


@njit
def triple(x: int) -> int:
    return 3 * x
'''

#: Imports the kernel, calls it, prints numba's cache hits and misses, and where the cache lives.
PROBE = """
import json, sys
import engine.kernel_cache as kc
if len(sys.argv) > 1:  # the package's folder is not writable
    real = kc._writable
    kc._writable = lambda folder: "_kernels" not in folder.parts and real(folder)
from engine.sub import sample
assert sample.triple(5) == 15
stats = sample.triple.stats
print(json.dumps({"hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values()),
                  "path": sample.triple._cache.cache_path}))
"""


def make_package(root: Path) -> Path:
    """A minimal ``engine`` package under ``root`` with ``engine/sub/sample.py``; that file's path."""
    (root / "engine" / "sub").mkdir(parents=True)
    for name in ("__init__.py", "jit.py", "kernel_cache.py"):
        shutil.copyfile(ROOT / "engine" / name, root / "engine" / name)
    (root / "engine" / "sub" / "__init__.py").write_text("")
    sample = root / "engine" / "sub" / "sample.py"
    sample.write_text(KERNEL)
    return sample


def probe(root: Path, tmp_path: Path, read_only: bool = False) -> dict[str, object]:
    """Run :data:`PROBE` with ``root`` first on the path and a private user cache folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env.update(PYTHONPATH=str(root), XDG_CACHE_HOME=str(tmp_path / "user-cache"))
    args = [sys.executable, "-c", PROBE, *(["read-only"] if read_only else [])]
    out = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_cache_is_kept_across_mtime_and_copy_and_dropped_on_change(tmp_path: Path) -> None:
    first = tmp_path / "first"
    sample = make_package(first)
    assert probe(first, tmp_path) == {
        "hits": 0,
        "misses": 1,
        "path": str(first / "engine" / "_kernels" / "sub"),
    }
    assert probe(first, tmp_path)["hits"] == 1  # the next process loads it
    os.utime(sample, (1_000_000_000, 1_000_000_000))  # an install's new mtime: still valid
    assert probe(first, tmp_path)["hits"] == 1
    moved = tmp_path / "moved"  # a copy elsewhere (pip's wheel into site-packages: new paths and mtimes)
    shutil.copytree(first, moved, copy_function=shutil.copyfile)
    shutil.rmtree(first)
    assert probe(moved, tmp_path) == {
        "hits": 1,
        "misses": 0,
        "path": str(moved / "engine" / "_kernels" / "sub"),
    }
    (moved / "engine" / "sub" / "sample.py").write_text(KERNEL + "\n# a changed source\n")
    assert probe(moved, tmp_path)["misses"] == 1  # stale: compiled again


def test_unwritable_package_falls_back_to_a_seeded_user_folder(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    make_package(root)
    assert probe(root, tmp_path)["misses"] == 1  # the shipped cache
    shipped = root / "engine" / "_kernels" / "sub"
    result = probe(root, tmp_path, read_only=True)
    user = Path(str(result["path"]))
    assert user.is_relative_to(tmp_path / "user-cache" / "numba" / "tabula" / "sub")
    assert (result["hits"], result["misses"]) == (1, 0)  # seeded from the shipped files, not compiled
    assert sorted(p.name for p in user.iterdir()) == sorted(p.name for p in shipped.iterdir())


def test_source_of_and_cache_folder() -> None:
    source = source_of("engine.games.chess_kernel")
    assert source == ROOT / "engine" / "games" / "chess_kernel.py"
    assert shipped_cache_dir(source) == ROOT / "engine" / "_kernels" / "games"
    assert source_of("numpy.core") is None  # not this package: numba's own locators
    assert source_of("engine.no_such_module") is None


def test_stamp_is_the_content_hash(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    stamp = source_stamp(path)
    os.utime(path, (2_000_000_000, 2_000_000_000))
    assert source_stamp(path) == stamp
    path.write_text("x = 2\n")
    assert source_stamp(path) != stamp


def test_stamp_covers_the_package_modules_imported(tmp_path: Path) -> None:
    """A kernel that inlines another module's (the search on the rules) is stale when that module
    changes: the stamp of a module covers the package's modules it imports, also through others."""
    package = tmp_path / "engine"
    package.mkdir()
    (package / "__init__.py").write_text("")
    rules = package / "rules.py"
    rules.write_text("X = 1\n")
    middle = package / "middle.py"
    middle.write_text("from engine import rules\n")
    search = package / "search.py"
    search.write_text("import numpy\nfrom engine.middle import rules\n")
    other = package / "other.py"
    other.write_text("Y = 1\n")
    stamp = source_stamp(search)
    other.write_text("Y = 2\n")
    assert source_stamp(search) == stamp  # not imported
    rules.write_text("X = 2\n")
    assert source_stamp(search) != stamp  # imported through middle


def test_numba_settings_take_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``NUMBA_CACHE_DIR`` set (numba's ``config.CACHE_DIR``), numba's own locator decides."""
    from engine import softmax_kernel

    func = softmax_kernel.gather_shifted.py_func
    assert KernelCacheLocator.from_function(func, func.__code__.co_filename) is not None
    monkeypatch.setattr(kernel_cache.config, "CACHE_DIR", "/somewhere")
    assert KernelCacheLocator.from_function(func, func.__code__.co_filename) is None


def test_installed_first_in_numbas_locators() -> None:
    import engine.jit  # noqa: F401  # installs it

    assert kernel_cache.locator_classes()[0] is KernelCacheLocator
