"""Openings beyond the project's own suites, for tuning and A/B matches: random legal lines.

Each line is ``--plies`` uniformly random legal moves from the start position (seeded), kept when a
reference program scores the position within ``--cp`` centipawns of equality and no earlier line
reached the same position.  Chess: Stockfish (1 thread, ``--depth``), written as an EPD file (one
position a line, ``id`` the line's moves in UCI) that cutechess-cli reads with ``-openings file=F
format=epd``.  Shogi: Fairy-Stockfish over USI (``--depth``), written as cshogi.cli's ``--opening``
file (``startpos moves ...`` lines)::

    python benchmarks/random_openings.py --count 400 --out runs/openings/chess-random-400.epd
    python benchmarks/random_openings.py --game shogi --count 200 --cp 150 --depth 8 \
        --out runs/openings/shogi-random-200.txt

Random lines reach positions no opening book has (a knight on the rim, a king walk) and so test a
search setting on positions the networks' training did not shape; the filter keeps them playable.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import chess
import chess.engine
import cshogi


def program(name: str) -> str:
    """A reference program's path (Debian puts them in /usr/games)."""
    path = shutil.which(name) or shutil.which(name, path="/usr/games")
    if path is None:
        raise SystemExit(f"Error: {name} not found (apt-get install {name})")
    return path


def random_openings(count: int, plies: int, depth: int, cp: int, seed: int) -> list[str]:
    """``count`` EPD lines of balanced positions after ``plies`` random legal moves."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    with chess.engine.SimpleEngine.popen_uci(program("stockfish")) as engine:
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


class FairyStockfish:
    """Fairy-Stockfish over USI, one process for every position."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [program("fairy-stockfish")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._send("usi")
        self._until("usiok")
        self._send("isready")
        self._until("readyok")

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def _until(self, prefix: str) -> list[str]:
        assert self.proc.stdout is not None
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            if line.startswith(prefix):
                return lines
        raise RuntimeError(f"fairy-stockfish ended before {prefix}")

    def score(self, moves: list[str], depth: int) -> int | None:
        """Centipawns for the side to move after ``moves``; ``None`` for a mate score."""
        self._send("usinewgame")
        self._send(f"position startpos moves {' '.join(moves)}")
        self._send(f"go depth {depth}")
        cp: int | None = 0
        for line in self._until("bestmove"):
            found = re.search(r"score (cp|mate) (-?\d+)", line)
            if found:
                cp = int(found[2]) if found[1] == "cp" else None
        return cp

    def close(self) -> None:
        self._send("quit")
        self.proc.wait(timeout=10)


def random_shogi_openings(count: int, plies: int, depth: int, cp: int, seed: int) -> list[str]:
    """``count`` ``startpos moves ...`` lines of balanced positions after ``plies`` random legal moves."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    fairy = FairyStockfish()
    try:
        while len(out) < count:
            board = cshogi.Board()
            moves: list[str] = []
            for _ in range(plies):
                legal = list(board.legal_moves)
                if not legal or board.is_game_over():
                    break
                move = rng.choice(legal)
                moves.append(cshogi.move_to_usi(move))
                board.push(move)
            key = board.sfen().rsplit(" ", 1)[0]
            if len(moves) != plies or board.is_game_over() or key in seen:
                continue
            seen.add(key)
            score = fairy.score(moves, depth)
            if score is not None and abs(score) <= cp:
                out.append("startpos moves " + " ".join(moves))
    finally:
        fairy.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", choices=["chess", "shogi"], default="chess")
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
    make = random_openings if args.game == "chess" else random_shogi_openings
    lines = make(args.count, args.plies, args.depth, args.cp, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} positions to {out}")


if __name__ == "__main__":
    main()
