"""The Go rules' speed (engine/games/go_kernel.py, and GoState, the Python view over it): random playouts.

    python benchmarks/go_kernel.py               # about 5 CPU seconds a figure
    python benchmarks/go_kernel.py --seconds 10

Uniformly random playouts (pass included) from the empty 9x9 and 19x19 boards for about ``--seconds``
each: GoState (``legal_moves`` + ``push``: what the protocols and the trainer's games pay a move), the
kernel driven from Python (``legal_mask`` + ``play``) and the kernel's compiled ``random_playout``;
moves per second of this process's CPU time (all single-threaded; wall time on a shared machine
measures the neighbours) and the ratio to GoState.  Figures, not assertions.  That the rules are right
is the tests' job (tests/engine/games/test_go.py: hand-made positions and random games against a slow
flood-fill reference).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.games import go_kernel as gk
from engine.games.go import GoRules, GoState


def go_state_playouts(rules: GoRules, seconds: float) -> tuple[int, float]:
    """Random playouts with GoState for about ``seconds`` of CPU time: ``(moves, CPU seconds)``."""
    rng = random.Random(0)
    moves = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        state = GoState(rules)
        while legal := state.legal_moves():
            state.push(legal[rng.randrange(len(legal))])
            moves += 1
    return moves, time.process_time() - start


def kernel_python_playouts(rules: GoRules, seconds: float) -> tuple[int, float]:
    """Random playouts with the kernel driven move by move from Python: ``(moves, CPU seconds)``."""
    rng = np.random.default_rng(0)
    root = gk.new_state(rules)
    moves = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        kernel = gk.copy_state(root)
        while (legal := np.flatnonzero(gk.legal_mask(kernel))).size:
            gk.play(kernel, int(legal[rng.integers(legal.size)]))
            moves += 1
    return moves, time.process_time() - start


def kernel_compiled_playouts(rules: GoRules, seconds: float) -> tuple[int, float]:
    """Random playouts with the kernel's compiled ``random_playout``: ``(moves, CPU seconds)``."""
    root = gk.new_state(rules)
    moves = 0
    game = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        moves += gk.random_playout(gk.copy_state(root), game)
        game += 1
    return moves, time.process_time() - start


def speed(size: int, seconds: float) -> None:
    """Print the random-playout speed of each implementation on a ``size`` board."""
    rules = GoRules(board_size=size)
    runners: list[tuple[str, Callable[[GoRules, float], tuple[int, float]]]] = [
        ("GoState (legal_moves + push)", go_state_playouts),
        ("kernel from Python (legal_mask + play)", kernel_python_playouts),
        ("kernel random_playout (compiled loop)", kernel_compiled_playouts),
    ]
    for warm_up in (kernel_python_playouts, kernel_compiled_playouts):  # compile or load the code first
        warm_up(rules, 0.01)
    base = 0.0
    print(f"random playouts, {size}x{size} (about {seconds:g} CPU s each):")
    for name, run in runners:
        moves, elapsed = run(rules, seconds)
        rate = moves / elapsed
        base = base or rate
        print(f"  {name:40s} {rate:12,.0f} moves/s  x{rate / base:8.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="CPU seconds per figure (default 5)")
    args = parser.parse_args()
    for size in (9, 19):
        speed(size, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
