"""Search speed of the Python PUCT tree (engine/search/tree.py) against the compiled Go tree
(engine/search/compiled_go.py), all fed uniform priors and value 0 (so the figures are the tree alone):
``Tree`` and ``CompiledGoTree`` through ``UniformEvaluator``'s evaluations, and ``CompiledGoTree``
through its array path (``select_leaves_arrays`` / ``backup_arrays``: the same uniform priors as dense
arrays, no Python object per leaf).

    python benchmarks/compiled_go.py                       # 20,000 nodes on 9x9 and on 19x19
    python benchmarks/compiled_go.py --nodes 5000 --sizes 9 --batch 16
    python benchmarks/compiled_go.py --cold                # also the compile time with an empty cache

Each search starts from the empty board and loops select / evaluate / backup in batches of ``--batch``
leaves until the tree holds ``--nodes`` nodes.  Prints nodes per second of this process's CPU time
(``time.process_time``; the machine may be shared) and of wall time, then a table of nodes per CPU
second per board size with the compiled / Python ratios.
``--cold`` first times, in a child process with an empty numba cache, the first search of a few nodes
(compiling the Go kernel and the tree kernels) and the same again with the cache filled.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.evaluator import uniform_rows
from engine.games.go import GoRules, GoState
from engine.inference import UniformEvaluator
from engine.search.compiled_go import CompiledGoTree
from engine.search.config import SearchConfig
from engine.search.tree import Tree

_FIRST_SEARCH = (
    "import time; t = time.perf_counter();"
    "from benchmarks.compiled_go import search_compiled;"
    "search_compiled(9, 100, 8); print(f'{time.perf_counter() - t:.1f}')"
)


def search_python(size: int, nodes: int, batch: int) -> int:
    """Search the empty ``size`` board with ``Tree`` until it holds ``nodes`` nodes; the node count."""
    state = GoState(GoRules(board_size=size))
    evaluator = UniformEvaluator(state.info)
    tree = Tree(state, SearchConfig(batch_size=batch))
    while tree.node_count < nodes:
        leaves = tree.select_leaves(batch)
        planes = np.stack([leaf.planes for leaf in leaves]) if leaves else np.zeros(0, np.float32)
        tree.backup(leaves, evaluator.evaluate(planes, [leaf.legal for leaf in leaves]))
    return tree.node_count


def search_compiled(size: int, nodes: int, batch: int) -> int:
    """Search the empty ``size`` board with ``CompiledGoTree`` until it holds ``nodes`` nodes."""
    state = GoState(GoRules(board_size=size))
    evaluator = UniformEvaluator(state.info)
    tree = CompiledGoTree(state, SearchConfig(batch_size=batch))
    while tree.node_count < nodes:
        planes, legal = tree.select_leaves(batch)
        tree.backup(evaluator.evaluate(planes, legal))
    return tree.node_count


def search_arrays(size: int, nodes: int, batch: int) -> int:
    """Search the empty ``size`` board with ``CompiledGoTree``'s array path until it holds ``nodes``
    nodes: the priors of ``UniformEvaluator`` (float32 ``1 / L`` on the ``L`` legal moves,
    ``engine.evaluator.uniform_rows``), values 0 (a buffer made once): the same search as
    :func:`search_compiled`."""
    state = GoState(GoRules(board_size=size))
    tree = CompiledGoTree(state, SearchConfig(batch_size=batch))
    values = np.zeros(batch, np.float64)
    while tree.node_count < nodes:
        _, legal = tree.select_leaves_arrays(batch)
        tree.backup_arrays(uniform_rows(legal), values[: len(legal)])
    return tree.node_count


SEARCHES = {"Tree": search_python, "Compiled (evals)": search_compiled, "Compiled (arrays)": search_arrays}


def timed(name: str, size: int, nodes: int, batch: int) -> float:
    """Run one search (a key of :data:`SEARCHES`), print its speeds, return its nodes per CPU second."""
    search = SEARCHES[name]
    wall, cpu = time.perf_counter(), time.process_time()
    count = search(size, nodes, batch)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rate = count / cpu
    print(
        f"{size}x{size} {name:>17}: {count:>7} nodes  {rate:>10,.0f} nodes/s CPU  {count / wall:>10,.0f} wall"
    )
    return rate


def cold_compile() -> None:
    """Print the first search's time in child processes: empty numba cache, then filled cache."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold (empty cache)", "warm (cache filled)"):
            out = subprocess.run(
                [sys.executable, "-c", _FIRST_SEARCH],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            print(f"import + first 100-node search, {label}: {out.stdout.strip()} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[9, 19])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--cold", action="store_true", help="also time the compile with an empty numba cache")
    args = parser.parse_args()
    if args.cold:
        cold_compile()
    search_compiled(9, 10, args.batch)  # load (or compile) the kernels outside the timings
    search_arrays(9, 10, args.batch)
    rates = {
        size: {name: timed(name, size, args.nodes, args.batch) for name in SEARCHES} for size in args.sizes
    }
    print(f"\nnodes per CPU second, batch {args.batch}, {args.nodes} nodes")
    print(
        f"{'board':>5} "
        + " ".join(f"{name:>17}" for name in SEARCHES)
        + f" {'evals/Tree':>10} {'arrays/Tree':>11}"
    )
    for size, rate in rates.items():
        python = rate["Tree"]
        row = " ".join(f"{rate[name]:>17,.0f}" for name in SEARCHES)
        evals, arrays = rate["Compiled (evals)"] / python, rate["Compiled (arrays)"] / python
        print(f"{size:>3}x{size:<2}{row} {evals:>9.1f}x {arrays:>10.1f}x")


if __name__ == "__main__":
    main()
