"""The compiled Go rules (engine/games/go_kernel.py) against GoState: agreement, then random-playout speed.

    python benchmarks/go_kernel.py                          # 1,000 random 9x9 games, then the speeds
    python benchmarks/go_kernel.py --games 10000 --size 9
    python benchmarks/go_kernel.py --games 0 --seconds 10   # speeds only

1. Agreement: ``--games`` random games played by both rules in lockstep (the same random choice, an
   index into the legal moves, uniform, pass included).  At every ply: the legal-move sets, the points
   forbidden by positional superko (the kernel's ``superko_mask`` must all be missing from GoState's
   legal moves), the input planes; after every move: the board and its Zobrist hash; at the end: the
   outcome and the Tromp-Taylor score.  Prints the count of games that agreed on everything and the
   first disagreement.  Exits 1 on any disagreement.
2. Speed: uniformly random playouts (pass included) from the empty 9x9 and 19x19 boards for about
   ``--seconds`` each: GoState (``legal_moves`` + ``push``), the kernel driven from Python
   (``legal_mask`` + ``play``) and the kernel's compiled ``random_playout``; moves per second of this
   process's CPU time (all single-threaded; wall time on a shared machine measures the neighbours) and
   the ratio to GoState.  Figures, not assertions.
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


class Disagreement(Exception):
    """The two rules differ; the message says where."""


def _check(ok: bool, ply: int, what: str) -> None:
    if not ok:
        raise Disagreement(f"ply {ply}: {what}")


def lockstep_game(rules: GoRules, rng: random.Random) -> tuple[int, int, int]:
    """One random game played by both rules; returns ``(plies, captures, superko decisions)``.

    Raises:
        Disagreement: the first difference found.
    """
    state = GoState(rules)
    kernel = gk.new_state(rules)
    captures = superko = 0
    while True:
        ply = state.ply
        moves = state.legal_moves()
        _check(np.flatnonzero(gk.legal_mask(kernel)).tolist() == moves, ply, "legal moves differ")
        banned = np.flatnonzero(gk.superko_mask(kernel)).tolist()
        _check(not set(banned) & set(moves), ply, f"superko: GoState allows one of {banned}")
        superko += len(banned)
        _check(np.array_equal(gk.encode(kernel), state.encode()), ply, "input planes differ")
        if not moves:
            break
        move = moves[rng.randrange(len(moves))]
        stones = np.count_nonzero(state.board_array())
        state.push(move)
        gk.play(kernel, move)
        board = state.board_array()
        captures += int(np.count_nonzero(board) < stones + (move != rules.board_size**2))
        _check(np.array_equal(gk.board_array(kernel), board), ply, f"boards differ after move {move}")
        _check(gk.board_hash(kernel) == state.board_hash(), ply, f"hashes differ after move {move}")
    _check(gk.outcome(kernel) == state.outcome(), ply, f"outcome {gk.outcome(kernel)} != {state.outcome()}")
    _check(gk.score(kernel) == state.score(), ply, f"score {gk.score(kernel)} != {state.score()}")
    return ply, captures, superko


def agreement(games: int, size: int, seed: int) -> bool:
    """Play ``games`` lockstep games and print the tally; False on any disagreement."""
    rules = GoRules(board_size=size)
    agreed = plies = captures = superko = 0
    first = ""
    start, cpu = time.perf_counter(), time.process_time()
    for g in range(games):
        try:
            p, c, s = lockstep_game(rules, random.Random(seed + g))
        except Disagreement as exc:
            first = first or f"game {g} (seed {seed + g}): {exc}"
            continue
        agreed += 1
        plies, captures, superko = plies + p, captures + c, superko + s
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"agreement, {size}x{size}: {agreed}/{games} games agreed on every ply ({elapsed:.0f} s, {cpu:.0f} CPU s)"
    )
    print(f"  positions {plies}, captures {captures}, superko-forbidden moves {superko}")
    if first:
        print(f"  first disagreement: {first}")
    return agreed == games


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
    parser.add_argument("--games", type=int, default=1000, help="lockstep games (default 1000; 0 skips)")
    parser.add_argument("--size", type=int, default=9, help="board size of the lockstep games (default 9)")
    parser.add_argument("--seed", type=int, default=0, help="seed of game 0 (game g uses seed + g)")
    parser.add_argument("--seconds", type=float, default=5.0, help="CPU seconds per speed figure (0 skips)")
    args = parser.parse_args()
    ok = agreement(args.games, args.size, args.seed) if args.games else True
    if args.seconds > 0:
        for size in (9, 19):
            speed(size, args.seconds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
