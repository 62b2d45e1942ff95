"""The compiled shogi rules (engine/games/shogi_rules_kernel.py) against cshogi driven from Python: perft
speed as a ratio, measured in one run.

    python benchmarks/shogi_rules_kernel.py             # agreement to depth 3 on the perft set, then speeds
    python benchmarks/shogi_rules_kernel.py --depth 0   # speeds only

1. Agreement: perft to ``--depth`` (at most the set's own depth) on the test suite's perft set
   (``PERFT_POSITIONS`` in tests/engine/games/test_shogi_rules_kernel.py), the kernel against cshogi.
   Prints the count that agreed and every disagreement; exits 1 on any.
2. Perft speed: leaf nodes per second of this process's CPU time on the start position and a
   middlegame full of drops, the kernel (last ply bulk-counted) against cshogi's ``Board`` pushed and
   popped from Python (:func:`cshogi_perft`, the same bulk counting), both to the
   same depth, and the ratio.  Figures, not assertions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cshogi

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.games import shogi_rules_kernel as rk
from engine.games.shogi import STARTING_SFEN, ShogiState
from tests.engine.games.test_shogi_rules_kernel import PERFT_POSITIONS

#: ``(name, sfen, depth)`` of the speed runs.
SPEED_POSITIONS = (
    ("start", STARTING_SFEN, 4),
    ("middlegame", "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1", 3),
)


def cshogi_perft(board: cshogi.Board, depth: int) -> int:
    """Perft on a bare cshogi board (the last ply bulk-counted); ``board`` is unchanged."""
    if depth <= 0:
        return 1
    moves = board.legal_moves
    if depth == 1:
        return len(moves)
    total = 0
    for move in list(moves):
        board.push(move)
        total += cshogi_perft(board, depth - 1)
        board.pop()
    return total


def agreement(depth: int) -> int:
    """Perft on the perft set, kernel vs cshogi; returns the number of disagreements."""
    bad = 0
    for sfen, own_depth in PERFT_POSITIONS:
        d = min(depth, own_depth)
        mine = rk.perft(rk.from_shogi_state(ShogiState(sfen=sfen)), d)
        ref = cshogi_perft(cshogi.Board(sfen), d)
        if mine != ref:
            bad += 1
            print(f"  DISAGREE {sfen} depth {d}: kernel {mine}, cshogi {ref}")
    print(f"perft agreement: {len(PERFT_POSITIONS) - bad}/{len(PERFT_POSITIONS)} positions")
    return bad


def perft_speed() -> None:
    """Kernel and cshogi perft nodes/s (CPU time) to the same depth, and their ratio."""
    for name, sfen, depth in SPEED_POSITIONS:
        state = rk.from_shogi_state(ShogiState(sfen=sfen), room=depth + 1)
        rk.perft(state, 2)  # compiled (or loaded from the cache) before timing
        t0 = time.process_time()
        nodes = rk.perft(state, depth)
        kernel = nodes / (time.process_time() - t0)
        board = cshogi.Board(sfen)
        t0 = time.process_time()
        ref_nodes = cshogi_perft(board, depth)
        ref = ref_nodes / (time.process_time() - t0)
        assert nodes == ref_nodes, (name, nodes, ref_nodes)
        print(
            f"perft {name} depth {depth} ({nodes:,} nodes): kernel {kernel:,.0f} nodes/s, "
            f"cshogi from Python {ref:,.0f} nodes/s, ratio {kernel / ref:.2f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--depth", type=int, default=3, help="agreement perft depth (0: skip)")
    args = parser.parse_args()
    bad = agreement(args.depth) if args.depth > 0 else 0
    perft_speed()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
