"""Loading compiled trees' kernels (engine/search/kernel_build.py): compiling by argument types, telling
a filled cache from an empty one, a helper interpreter taking a part, and every game's parts covering
what its search compiles."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from engine.search import kernel_build
from engine.search.kernel_build import compile_for, is_cached, literal, load_kernels

ROOT = Path(__file__).resolve().parents[3]

TOY = """
import os
from pathlib import Path

import numba

MARKS = Path(os.environ["TOY_MARKS"])


@numba.njit(cache=True)
def entry(x):
    return x + 1


@numba.njit(cache=False)
def uncached(x):
    return x + 2


def _mark(name):
    with open(MARKS / name, "w") as f:
        f.write(str(os.getpid()))


def _part0():
    _mark("part0")


def _part1():
    if os.environ.get("TOY_FAIL"):
        raise RuntimeError("a helper that fails")
    _mark("part1")
    with open(MARKS / "part1_niceness", "w") as f:
        f.write(str(os.nice(0)))


def warm_up():
    _mark("warm_up")
    entry(1)


COMPILE_PARTS = (_part0, _part1)
COMPILED_ENTRY = entry
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """A module with two compile parts that leave marks (the pid that ran them) in ``TOY_MARKS``, its
    cache beside its source in ``tmp_path`` (numba's in-tree cache), importable by a helper interpreter
    (``PYTHONPATH``)."""
    name = f"toy_kernels_{os.getpid()}_{abs(hash(tmp_path)) % 10**6}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(TOY))
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("TOY_MARKS", str(marks))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT)]))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    yield module
    sys.modules.pop(name, None)


def marks(module: ModuleType) -> dict[str, int]:
    return {p.name: int(p.read_text()) for p in module.MARKS.iterdir()}


def test_compile_for_compiles_the_types_of_a_call_without_running_it() -> None:
    import numba

    calls = np.zeros(1, np.int64)

    @numba.njit
    def count(a: np.ndarray, n: int) -> int:
        a[0] += 1
        return n

    compile_for(count, calls, 3)
    compile_for(count, calls, literal(0))
    assert [str(s[1]) for s in count.signatures] == ["int64", "Literal[int](0)"]
    assert str(count.signatures[0][0]) == "array(int64, 1d, C)"
    assert calls[0] == 0  # compiled, never run
    assert count(calls, 3) == 3 and len(count.signatures) == 2  # the call found its overload


def test_is_cached_tells_an_empty_cache_from_a_filled_one(toy: ModuleType) -> None:
    assert not is_cached(toy.entry)
    toy.entry(1)  # compiled and written to the cache
    assert is_cached(toy.entry)
    toy.uncached(1)
    assert not is_cached(toy.uncached)  # no cache at all


def test_an_empty_cache_gives_every_part_to_a_helper_interpreter(toy: ModuleType) -> None:
    """No part compiles in the engine's process (numba holds the GIL while it compiles: a search beside
    it would miss its deadline), and the helpers yield to it (a lower priority)."""
    load_kernels(toy.__name__)
    seen = marks(toy)
    assert seen["warm_up"] == os.getpid()
    assert os.getpid() not in (seen["part0"], seen["part1"])
    assert seen["part0"] != seen["part1"]  # one helper a part, side by side
    assert seen["part1_niceness"] == os.nice(0) + kernel_build.HELPER_NICENESS


def test_a_filled_cache_runs_only_warm_up(toy: ModuleType) -> None:
    toy.entry(1)  # compiled and cached
    load_kernels(toy.__name__)
    assert set(marks(toy)) == {"warm_up"}


def test_a_frozen_bundle_runs_only_warm_up(toy: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_build.sys, "frozen", True, raising=False)
    load_kernels(toy.__name__)  # no interpreter to start: warm_up compiles
    assert set(marks(toy)) == {"warm_up"}


def test_a_helper_that_cannot_start_leaves_its_part_here(
    toy: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernel_build.sys, "executable", str(ROOT / "no-such-python"))
    load_kernels(toy.__name__)
    assert set(marks(toy)) == {"part0", "part1", "part1_niceness", "warm_up"}
    assert set(marks(toy).values()) - {os.nice(0)} == {os.getpid()}


def test_a_failing_helper_costs_only_time(toy: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOY_FAIL", "1")
    load_kernels(toy.__name__)  # the helper raised: warm_up compiles whatever it left
    assert set(marks(toy)) == {"part0", "warm_up"}


def _last_json_line(script: str, module: str, cache: Path) -> Any:
    """Run ``script`` with ``module`` in a fresh interpreter whose numba cache is the empty ``cache``;
    the JSON of its last line of output."""
    out = subprocess.run(
        [sys.executable, "-c", script, module],
        env=dict(os.environ, NUMBA_CACHE_DIR=str(cache)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


#: Run in a fresh interpreter with an empty cache: load a game's kernels while a thread that sleeps 1 ms
#: at a time records how late it wakes (the GIL held by the loading, or the machine); prints the delays.
_STALLS_WHILE_LOADING = """
import json, sys, threading, time
from engine.search.kernel_build import load_kernels
late, done = [], threading.Event()
def tick():
    while not done.is_set():
        t = time.perf_counter()
        time.sleep(0.001)
        late.append(time.perf_counter() - t - 0.001)
ticker = threading.Thread(target=tick)
ticker.start()
load_kernels(sys.argv[1])
done.set()
ticker.join()
print(json.dumps(late))
"""


@pytest.mark.slow
def test_a_first_run_compiles_without_stalling_the_engine(tmp_path: Path) -> None:
    """A first run compiles outside the engine's process: a search running beside the compilation is
    never held for long (numba holds the GIL while it compiles: 137 ms stalls, ten over 50 ms, for the
    Go tree when it compiled a part here; loading the cached code stalls 30-50 ms; about 13 s)."""
    late = _last_json_line(_STALLS_WHILE_LOADING, "engine.search.compiled_go", tmp_path)
    assert len([s for s in late if s > 0.06]) <= 1, sorted(late)[-5:]


#: Run in a fresh interpreter with an empty cache: every compile part of a game, then its ``warm_up``,
#: printing the kernels that ``warm_up`` still compiled, and those the first part compiled.
_WHAT_WARM_UP_COMPILES = """
import importlib, json, sys
from numba.core import event
module = importlib.import_module(sys.argv[1])
def compiled(run):
    with event.install_recorder("numba:compile") as rec:
        run()
    return sorted({ev.data["dispatcher"].py_func.__qualname__ for _, ev in rec.buffer if ev.is_start})
module.COMPILE_PARTS[1]()
first = compiled(module.COMPILE_PARTS[0])
print(json.dumps([compiled(module.warm_up), first]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "entry"),
    [
        ("engine.search.compiled_chess", "_select_leaves"),
        ("engine.search.compiled_go", "_select_leaves"),
        ("engine.search.compiled_shogi", "_select_leaves"),
    ],
)
def test_the_parts_compile_everything_a_search_does(module: str, entry: str, tmp_path: Path) -> None:
    """Each game's ``COMPILE_PARTS`` name the argument types its searches call the kernels with: after
    them a search's warm-up compiles nothing, and the entry that joins them is the first part's (numba's
    cache empty at the start; about 40 s of one core a game)."""
    after, first = _last_json_line(_WHAT_WARM_UP_COMPILES, module, tmp_path)
    assert after == []
    assert entry in first
    assert importlib.import_module(module).COMPILED_ENTRY.py_func.__name__ == entry
