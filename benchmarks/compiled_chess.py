"""Search speed of the Python PUCT tree (engine/search/tree.py) against the compiled chess tree
(engine/search/compiled_chess.py), all fed uniform priors and value 0 (so the figures are the tree and
the rules alone): ``Tree`` and ``CompiledChessTree`` through ``UniformEvaluator``'s evaluations, and
``CompiledChessTree`` through its array path (``select_leaves_arrays`` / ``backup_arrays``: the same
uniform priors as dense arrays, no Python object per leaf).

    python benchmarks/compiled_chess.py                    # 20,000 nodes, start and a middlegame
    python benchmarks/compiled_chess.py --nodes 5000 --batch 16
    python benchmarks/compiled_chess.py --cold             # also the compile time with an empty cache

Each search loops select / evaluate / backup in batches of ``--batch`` leaves until the tree holds
``--nodes`` nodes (the default settings otherwise: the root mate search included).  Prints nodes per
second of this process's CPU time (``time.process_time``; the machine may be shared) and of wall time,
then a table of nodes per CPU second per position with the compiled / Python ratios.  ``--cold`` first
times, in a child process with an empty numba cache, the import and a first search of a few nodes
(compiling the chess kernel and the tree kernels: ``warm_up``) and the same again with the cache filled.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import chess
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.games.chess import ChessState
from engine.inference import UniformEvaluator
from engine.search.compiled_chess import CompiledChessTree, warm_up
from engine.search.config import SearchConfig
from engine.search.tree import Tree

POSITIONS = {
    "start": chess.STARTING_FEN,
    "middlegame": "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP1B1PPP/R2QKB1R w KQ - 1 8",
}

_FIRST_SEARCH = (
    "import time; t = time.perf_counter();"
    "from engine.search.compiled_chess import warm_up; warm_up();"
    "print(f'{time.perf_counter() - t:.1f}')"
)


def search_python(fen: str, nodes: int, batch: int) -> int:
    """Search ``fen`` with ``Tree`` until it holds ``nodes`` nodes; the node count."""
    state = ChessState(chess.Board(fen))
    evaluator = UniformEvaluator(state.info)
    tree = Tree(state, SearchConfig(batch_size=batch))
    while tree.node_count < nodes:
        leaves = tree.select_leaves(batch)
        planes = np.stack([leaf.planes for leaf in leaves]) if leaves else np.zeros(0, np.float32)
        tree.backup(leaves, evaluator.evaluate(planes, [leaf.legal for leaf in leaves]))
    return tree.node_count


def search_compiled(fen: str, nodes: int, batch: int) -> int:
    """Search ``fen`` with ``CompiledChessTree`` (evaluations) until it holds ``nodes`` nodes."""
    state = ChessState(chess.Board(fen))
    evaluator = UniformEvaluator(state.info)
    tree = CompiledChessTree(state, SearchConfig(batch_size=batch))
    while tree.node_count < nodes:
        planes, legal = tree.select_leaves(batch)
        tree.backup(evaluator.evaluate(planes, legal))
    return tree.node_count


def search_arrays(fen: str, nodes: int, batch: int) -> int:
    """Search ``fen`` with ``CompiledChessTree``'s array path until it holds ``nodes`` nodes: the dense
    priors of ``UniformEvaluator.evaluate_dense`` (float32 ``1 / L`` on the legal moves), the same
    search as :func:`search_compiled`."""
    state = ChessState(chess.Board(fen))
    evaluator = UniformEvaluator(state.info)
    tree = CompiledChessTree(state, SearchConfig(batch_size=batch))
    while tree.node_count < nodes:
        planes, legal = tree.select_leaves_arrays(batch)
        tree.backup_arrays(*evaluator.evaluate_dense(planes, legal))
    return tree.node_count


SEARCHES = {"Tree": search_python, "Compiled (evals)": search_compiled, "Compiled (arrays)": search_arrays}


def timed(name: str, position: str, nodes: int, batch: int) -> float:
    """Run one search (a key of :data:`SEARCHES`), print its speeds, return its nodes per CPU second."""
    search = SEARCHES[name]
    wall, cpu = time.perf_counter(), time.process_time()
    count = search(POSITIONS[position], nodes, batch)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rate = count / cpu
    print(
        f"{position:>10} {name:>17}: {count:>7} nodes  {rate:>10,.0f} nodes/s CPU  {count / wall:>10,.0f} wall"
    )
    return rate


def cold_compile() -> None:
    """Print the import and warm-up time in child processes: empty numba cache, then filled cache."""
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
            print(f"import + warm_up, {label}: {out.stdout.strip()} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--positions", nargs="+", choices=sorted(POSITIONS), default=list(POSITIONS))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--cold", action="store_true", help="also time the compile with an empty numba cache")
    args = parser.parse_args()
    if args.cold:
        cold_compile()
    warm_up()  # load (or compile) the kernels outside the timings
    rates = {
        pos: {name: timed(name, pos, args.nodes, args.batch) for name in SEARCHES} for pos in args.positions
    }
    print(f"\nnodes per CPU second, batch {args.batch}, {args.nodes} nodes")
    print(
        f"{'position':>10} "
        + " ".join(f"{name:>17}" for name in SEARCHES)
        + f" {'evals/Tree':>10} {'arrays/Tree':>11}"
    )
    for position, rate in rates.items():
        python = rate["Tree"]
        row = " ".join(f"{rate[name]:>17,.0f}" for name in SEARCHES)
        evals, arrays = rate["Compiled (evals)"] / python, rate["Compiled (arrays)"] / python
        print(f"{position:>10} {row} {evals:>9.1f}x {arrays:>10.1f}x")


if __name__ == "__main__":
    main()
