"""Time use at a clock, measured the way a match runner sees it.

Plays Tabula (UCI, default chess network) against Stockfish at a Fischer clock with python-chess as the
referee: each side's clock is charged the wall time from sending `go` to receiving `bestmove`, the
increment is added after each move, and a side whose clock falls below zero loses on time.

    python benchmarks/timecontrol.py --games 4 --base 10 --inc 0.1
    python benchmarks/timecontrol.py --games 4 --base 1 --inc 0.01

Prints per game: result, plies, Tabula's time used / time available (base + increments received),
its slowest move against the clock it had, and whether it lost on time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import chess
import chess.engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.process import find_program, tabula_command


def stockfish_path() -> str:
    path = find_program("stockfish")
    if path is None:
        raise SystemExit("stockfish not found (apt-get install stockfish)")
    return path


def play_game(
    base_s: float, inc_s: float, tabula_white: bool, max_plies: int, skill: int
) -> dict[str, object]:
    tabula = chess.engine.SimpleEngine.popen_uci(tabula_command(), timeout=30)
    stockfish = chess.engine.SimpleEngine.popen_uci(stockfish_path())
    stockfish.configure({"Skill Level": skill, "Threads": 1, "Hash": 16})
    board = chess.Board()
    clocks = {chess.WHITE: base_s, chess.BLACK: base_s}
    received = 0.0
    used = 0.0
    worst_fraction = 0.0
    flagged = None
    try:
        while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
            side = board.turn
            engine = tabula if (side == chess.WHITE) == tabula_white else stockfish
            limit = chess.engine.Limit(
                white_clock=clocks[chess.WHITE],
                black_clock=clocks[chess.BLACK],
                white_inc=inc_s,
                black_inc=inc_s,
            )
            start = time.perf_counter()
            result = engine.play(board, limit)
            spent = time.perf_counter() - start
            is_tabula = engine is tabula
            if is_tabula:
                used += spent
                worst_fraction = max(worst_fraction, spent / max(clocks[side], 1e-9))
            clocks[side] -= spent
            if clocks[side] < 0:
                flagged = "tabula" if is_tabula else "stockfish"
                break
            clocks[side] += inc_s
            if is_tabula:
                received += inc_s
            board.push(result.move)
    finally:
        tabula.quit()
        stockfish.quit()
    outcome = board.outcome(claim_draw=True)
    if flagged:
        res = "tabula lost on time" if flagged == "tabula" else "stockfish lost on time"
    elif outcome is None:
        res = "unfinished (ply cap)"
    elif outcome.winner is None:
        res = f"draw ({outcome.termination.name.lower()})"
    else:
        res = "tabula won" if (outcome.winner == chess.WHITE) == tabula_white else "stockfish won"
    return {
        "result": res,
        "plies": board.ply(),
        "used": used,
        "available": base_s + received,
        "worst": worst_fraction,
        "flagged": flagged == "tabula",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--base", type=float, default=10.0, help="seconds")
    parser.add_argument("--inc", type=float, default=0.1, help="seconds")
    parser.add_argument("--max-plies", type=int, default=300)
    parser.add_argument("--skill", type=int, default=0, help="Stockfish Skill Level")
    args = parser.parse_args()
    total_used = total_avail = 0.0
    losses_on_time = 0
    print(f"clock {args.base:g}s + {args.inc:g}s, {args.games} games vs Stockfish (Skill Level {args.skill})")
    for g in range(args.games):
        r = play_game(args.base, args.inc, g % 2 == 0, args.max_plies, args.skill)
        total_used += r["used"]
        total_avail += r["available"]
        losses_on_time += int(bool(r["flagged"]))
        print(
            f"game {g + 1}: tabula {'white' if g % 2 == 0 else 'black'}, {r['result']}, {r['plies']} plies, "
            f"used {r['used']:.2f}s of {r['available']:.2f}s ({100 * r['used'] / r['available']:.0f}%), "
            f"slowest move {100 * r['worst']:.0f}% of the clock then"
        )
    print(
        f"total: used {100 * total_used / total_avail:.0f}% of the available time; losses on time: {losses_on_time}"
    )


if __name__ == "__main__":
    main()
