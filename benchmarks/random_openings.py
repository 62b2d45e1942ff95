"""Chess openings beyond the project's own suites, for tuning and A/B matches: random legal lines.

Each line is ``--plies`` uniformly random legal moves from the start position (seeded), kept when
Stockfish (1 thread, ``--depth``) scores the position within ``--cp`` centipawns of equality and no
earlier line reached the same position.  The output is an EPD file (one position a line, ``id`` the
line's moves in UCI) that cutechess-cli reads with ``-openings file=F format=epd``::

    python benchmarks/random_openings.py --count 400 --out runs/openings/chess-random-400.epd

Random lines reach positions no opening book has (a knight on the rim, a king walk) and so test a
search setting on positions the networks' training did not shape; the filter keeps them playable.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from pathlib import Path

import chess
import chess.engine


def stockfish() -> str:
    """Stockfish's path (Debian puts it in /usr/games)."""
    path = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")
    if path is None:
        raise SystemExit("Error: stockfish not found (apt-get install stockfish)")
    return path


def random_openings(count: int, plies: int, depth: int, cp: int, seed: int) -> list[str]:
    """``count`` EPD lines of balanced positions after ``plies`` random legal moves."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    with chess.engine.SimpleEngine.popen_uci(stockfish()) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        while len(out) < count:
            board = chess.Board()
            for _ in range(plies):
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(rng.choice(moves))
            if board.is_game_over() or board.ply() != plies:
                continue
            key = board.epd()
            if key in seen:
                continue
            seen.add(key)
            score = engine.analyse(board, chess.engine.Limit(depth=depth))["score"].white()
            if score.is_mate() or abs(score.score() or 0) > cp:
                continue
            line = " ".join(m.uci() for m in board.move_stack)
            out.append(f'{key} id "{line}"; c0 "sf{depth} {score.score():+d}";')
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--plies", type=int, default=6)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--cp", type=int, default=60, help="largest |score| kept, centipawns")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.count < 1 or args.plies < 1 or args.depth < 1:
        print("Error: --count, --plies and --depth must be at least 1", file=sys.stderr)
        raise SystemExit(2)
    lines = random_openings(args.count, args.plies, args.depth, args.cp, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} positions to {out}")


if __name__ == "__main__":
    main()
