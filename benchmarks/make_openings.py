"""Write the opening suites (trainer/evaluate/openings/: chess.pgn, shogi.txt, go9/*.sgf, go19/*.sgf) from the short
lines below, each checked legal and, where a reference program can judge it, near balance; prints a
Markdown table of each.  The ladder (benchmarks/ladder.py) and ``tabula-train evaluate`` read them.

    python benchmarks/make_openings.py            # rewrite the suites in trainer/evaluate/openings/
    python benchmarks/make_openings.py --check    # only print the evaluations

Chess: python-chess checks every move; Stockfish (1 thread, depth 14) must give the position within
``--chess-cp`` (60) centipawns of equality.  Shogi: cshogi checks every move; Fairy-Stockfish (depth 12)
must be within ``--shogi-cp`` (200) centipawns: it scores even the main line 7g7f 3c3d +129 for sente at
that depth, so this keeps lines within about 70 cp of it.  Go 9x9 and 19x19: the stones must be distinct
points; GNU Go's ``estimate_score`` (komi 7.5) is printed, for information only (it means little this
early).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "trainer" / "evaluate" / "openings"

#: Well-known chess opening lines (SAN from the start position), 8-10 plies.
CHESS_LINES: list[tuple[str, str]] = [
    ("Ruy Lopez, Morphy Defence", "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6"),
    ("Ruy Lopez, Berlin Defence", "e4 e5 Nf3 Nc6 Bb5 Nf6 O-O Nxe4"),
    ("Italian Game, Giuoco Piano", "e4 e5 Nf3 Nc6 Bc4 Bc5 c3 Nf6"),
    ("Italian Game, Two Knights", "e4 e5 Nf3 Nc6 Bc4 Nf6 d3 Be7"),
    ("Scotch Game", "e4 e5 Nf3 Nc6 d4 exd4 Nxd4 Nf6"),
    ("Petrov Defence", "e4 e5 Nf3 Nf6 Nxe5 d6 Nf3 Nxe4"),
    ("Four Knights, Spanish", "e4 e5 Nf3 Nc6 Nc3 Nf6 Bb5 Bb4"),
    ("Vienna Game", "e4 e5 Nc3 Nf6 Bc4 Nc6 d3 Bb4"),
    ("Sicilian, Najdorf", "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6"),
    ("Sicilian, Taimanov", "e4 c5 Nf3 e6 d4 cxd4 Nxd4 Nc6"),
    ("Sicilian, Alapin", "e4 c5 c3 Nf6 e5 Nd5 d4 cxd4"),
    ("Sicilian, Closed", "e4 c5 Nc3 Nc6 g3 g6 Bg2 Bg7"),
    ("French, Winawer", "e4 e6 d4 d5 Nc3 Bb4 e5 c5"),
    ("French, Tarrasch", "e4 e6 d4 d5 Nd2 Nf6 e5 Nfd7"),
    ("Caro-Kann, Classical", "e4 c6 d4 d5 Nc3 dxe4 Nxe4 Bf5"),
    ("Caro-Kann, Advance", "e4 c6 d4 d5 e5 Bf5 Nf3 e6"),
    ("Pirc Defence", "e4 d6 d4 Nf6 Nc3 g6 Nf3 Bg7"),
    ("Scandinavian Defence", "e4 d5 exd5 Qxd5 Nc3 Qa5 d4 Nf6"),
    ("Queen's Gambit Declined", "d4 d5 c4 e6 Nc3 Nf6 Bg5 Be7"),
    ("Queen's Gambit Accepted", "d4 d5 c4 dxc4 Nf3 Nf6 e3 e6"),
    ("Slav Defence", "d4 d5 c4 c6 Nf3 Nf6 Nc3 dxc4"),
    ("Semi-Slav Defence", "d4 d5 c4 c6 Nc3 Nf6 Nf3 e6"),
    ("King's Indian Defence", "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6"),
    ("Grünfeld Defence", "d4 Nf6 c4 g6 Nc3 d5 cxd5 Nxd5"),
    ("Nimzo-Indian Defence", "d4 Nf6 c4 e6 Nc3 Bb4 e3 O-O"),
    ("Queen's Indian Defence", "d4 Nf6 c4 e6 Nf3 b6 g3 Bb7"),
    ("Bogo-Indian Defence", "d4 Nf6 c4 e6 Nf3 Bb4+ Bd2 Qe7"),
    ("Catalan Opening", "d4 Nf6 c4 e6 g3 d5 Bg2 Be7"),
    ("London System", "d4 d5 Bf4 Nf6 e3 c5 c3 Nc6"),
    ("Dutch Defence", "d4 f5 g3 Nf6 Bg2 e6 Nf3 Be7"),
    ("Modern Benoni", "d4 Nf6 c4 c5 d5 e6 Nc3 exd5 cxd5 d6"),
    ("English, Symmetrical", "c4 c5 Nc3 Nc6 g3 g6 Bg2 Bg7"),
    ("English, Reversed Sicilian", "c4 e5 Nc3 Nf6 Nf3 Nc6 g3 d5"),
    ("Réti Opening", "Nf3 d5 g3 Nf6 Bg2 e6 O-O Be7"),
    ("Bird Opening", "f4 d5 Nf3 Nf6 e3 g6 Be2 Bg7"),
    ("Alekhine Defence", "e4 Nf6 e5 Nd5 d4 d6 Nf3 Bg4"),
]

#: Common shogi openings (USI moves from the start position), 3-8 plies.
SHOGI_LINES: list[tuple[str, str]] = [
    ("Static rook, early 2f/8d", "7g7f 3c3d 2g2f 8c8d"),
    ("Aigakari", "2g2f 8c8d 2f2e 8d8e 6i7h 4a3b"),
    ("Bishop exchange", "7g7f 3c3d 8h2b+ 3a2b"),
    ("Bishop exchange, 7i8h", "7g7f 3c3d 8h2b+ 3a2b 7i8h"),
    ("Yagura", "7g7f 8c8d 6g6f 3c3d 6i7h 8d8e 8h7g"),
    ("Yagura, 7i6h", "7g7f 8c8d 7i6h 3c3d 6g6f"),
    ("Yagura, early 6g6f", "7g7f 8c8d 6g6f 3c3d"),
    ("Yokofudori setup", "2g2f 8c8d 7g7f 3c3d 2f2e 8d8e 6i7h 4a3b"),
    ("Sente Shikenbisha", "7g7f 3c3d 6g6f 8c8d 2h6h"),
    ("Sente Shikenbisha, 8h7g", "7g7f 3c3d 6g6f 8c8d 2h6h 8d8e 8h7g"),
    ("Sente Nakabisha", "7g7f 3c3d 5g5f 8c8d 2h5h"),
    ("Sente Sangenbisha", "7g7f 3c3d 2h7h"),
    ("Sente Sangenbisha, 8c8d", "7g7f 3c3d 2h7h 8c8d"),
    ("Sente Ishida", "7g7f 3c3d 7f7e 8c8d 2h7h"),
    ("Gote Shikenbisha", "2g2f 3c3d 7g7f 4c4d 4i5h 8b4b"),
    ("Gote Gokigen Nakabisha", "7g7f 5c5d 2g2f 8b5b"),
    ("Gote Mukaibisha", "2g2f 3c3d 2f2e 2b3c 7g7f 4c4d"),
    ("Gote Sangenbisha", "7g7f 3c3d 2g2f 4c4d 2f2e 2b3c 4i5h 8b7b"),
    ("Ibisha vs gote 4c4d", "7g7f 3c3d 2g2f 4c4d 3i4h 3a4b"),
    ("Gote Yagura", "2g2f 8c8d 7g7f 8d8e 8h7g 3c3d 7i8h"),
    ("Side pawn, quiet", "7g7f 8c8d 2g2f 8d8e 8h7g 3c3d 7i6h 4a3b"),
]

#: Short 9x9 Go openings (GTP vertices, Black first).
GO9_LINES: list[tuple[str, str]] = [
    ("tengen-c4", "E5 C4"),
    ("tengen-d3", "E5 D3"),
    ("tengen-c3", "E5 C3"),
    ("tengen-e3", "E5 E3"),
    ("tengen-c4-f3", "E5 C4 F3"),
    ("tengen-c4-f3-g4", "E5 C4 F3 G4"),
    ("d4-f6", "D4 F6"),
    ("c4-g6", "C4 G6"),
    ("c3-g7", "C3 G7"),
    ("c4-f6", "C4 F6"),
    ("e4-e6", "E4 E6"),
    ("d5-f5", "D5 F5"),
]

#: Common 19x19 fuseki: the first two to four corner moves (GTP vertices, Black first).
GO19_LINES: list[tuple[str, str]] = [
    ("hoshi-hoshi", "Q16 D4"),
    ("hoshi-komoku", "Q16 D3"),
    ("komoku-hoshi", "R16 D4"),
    ("komoku-komoku", "R16 C4"),
    ("nirensei", "Q16 D4 Q4"),
    ("hoshi-komoku-cross", "Q16 D3 C16"),
    ("four-hoshi", "Q16 D16 Q4 D4"),
    ("chinese-start", "Q16 D4 R4"),
    ("komoku-shimari", "R16 D4 P17 Q4"),
    ("san-san", "R17 D4"),
    ("takamoku", "P16 D4"),
    ("mokuhazushi", "P17 D4"),
]


def stockfish_cp(engine: object, board: object) -> int:
    """Stockfish's evaluation of ``board`` from White's side, centipawns (depth 14, 1 thread)."""
    import chess.engine

    info = engine.analyse(board, chess.engine.Limit(depth=14))  # type: ignore[attr-defined]
    return int(info["score"].white().score(mate_score=10000))


def chess_suite(limit: int) -> tuple[list[str], list[str]]:
    """PGN games of the balanced chess lines, and a Markdown table of all of them."""
    import chess
    import chess.engine
    import chess.pgn

    stockfish = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")
    if stockfish is None:
        raise SystemExit("stockfish not found (apt-get install stockfish)")
    games, rows = [], ["| opening | moves | Stockfish cp | kept |", "| --- | --- | --- | --- |"]
    with chess.engine.SimpleEngine.popen_uci(stockfish) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        for name, line in CHESS_LINES:
            board = chess.Board()
            for san in line.split():
                board.push_san(san)  # raises on an illegal move
            cp = stockfish_cp(engine, board)
            kept = abs(cp) <= limit
            rows.append(f"| {name} | {line} | {cp:+d} | {'yes' if kept else 'no'} |")
            if kept:
                game = chess.pgn.Game.from_board(board)
                game.headers["Event"] = "Tabula ladder opening"
                game.headers["Opening"] = name
                games.append(str(game))
    return games, rows


def fairy_cp(fairy: str, moves: str) -> int:
    """Fairy-Stockfish's evaluation (USI, depth 12) after ``moves``, centipawns from sente's side."""
    script = f"usi\nisready\nposition startpos moves {moves}\ngo depth 12\n"
    proc = subprocess.Popen(
        [fairy], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(script)
    proc.stdin.flush()
    cp = 0
    for line in proc.stdout:
        found = re.search(r"score (cp|mate) (-?\d+)", line)
        if found:
            cp = int(found[2]) if found[1] == "cp" else (10000 if int(found[2]) > 0 else -10000)
        if line.startswith("bestmove"):
            break
    proc.stdin.write("quit\n")
    proc.stdin.flush()
    proc.wait(timeout=10)
    return cp if len(moves.split()) % 2 == 0 else -cp  # USI scores are from the side to move


def shogi_suite(limit: int) -> tuple[list[str], list[str]]:
    """``startpos moves ...`` lines (cshogi.cli's --opening format) and a Markdown table."""
    import cshogi

    fairy = shutil.which("fairy-stockfish") or shutil.which("fairy-stockfish", path="/usr/games")
    if fairy is None:
        raise SystemExit("fairy-stockfish not found (apt-get install fairy-stockfish)")
    lines, rows = [], ["| opening | moves | Fairy-Stockfish cp | kept |", "| --- | --- | --- | --- |"]
    for name, moves in SHOGI_LINES:
        board = cshogi.Board()
        for usi in moves.split():
            move = board.move_from_usi(usi)
            if not board.is_legal(move):
                raise SystemExit(f"{name}: illegal move {usi}")
            board.push(move)
        cp = fairy_cp(fairy, moves)
        kept = abs(cp) <= limit
        rows.append(f"| {name} | {moves} | {cp:+d} | {'yes' if kept else 'no'} |")
        if kept:
            lines.append(f"startpos moves {moves}")
    return lines, rows


def sgf_point(vertex: str, size: int) -> str:
    """SGF coordinates of a GTP vertex (``C4`` -> ``cf`` on 9x9; GTP skips the letter I)."""
    column = "ABCDEFGHJKLMNOPQRST".index(vertex[0].upper())
    row = size - int(vertex[1:])
    return "abcdefghijklmnopqrs"[column] + "abcdefghijklmnopqrs"[row]


def go_sgf(moves: str, size: int = 9, komi: float = 7.5) -> str:
    """A one-line SGF of ``moves`` (Black first, alternating), as gogui-twogtp's -openings reads it."""
    nodes = "".join(f";{'BW'[i % 2]}[{sgf_point(v, size)}]" for i, v in enumerate(moves.split()))
    return f"(;FF[4]GM[1]SZ[{size}]KM[{komi}]{nodes})\n"


def gnugo_estimate(moves: str, size: int = 9) -> str:
    """GNU Go's ``estimate_score`` after ``moves`` (Chinese rules, komi 7.5), or ``-`` without GNU Go."""
    gnugo = shutil.which("gnugo") or shutil.which("gnugo", path="/usr/games")
    if gnugo is None:
        return "-"
    commands = [f"boardsize {size}", "clear_board", "komi 7.5"]
    commands += [f"play {'BW'[i % 2]} {v}" for i, v in enumerate(moves.split())]
    commands += ["estimate_score", "quit"]
    out = subprocess.run(
        [gnugo, "--mode", "gtp", "--chinese-rules"],
        input="\n".join(commands) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    replies = [r for r in out.split("\n\n") if r.strip()]
    return replies[-2].lstrip("= ").strip() if len(replies) >= 2 else "?"


def go_suite(lines: list[tuple[str, str]], size: int) -> tuple[dict[str, str], list[str]]:
    """``file name -> SGF`` of the ``size`` x ``size`` openings ``lines`` and a Markdown table."""
    files, rows = {}, ["| file | moves | GNU Go estimate_score |", "| --- | --- | --- |"]
    for i, (name, moves) in enumerate(lines, start=1):
        vertices = moves.split()
        if len(set(vertices)) != len(vertices):
            raise SystemExit(f"{name}: a point is played twice")
        file = f"{i:02d}-{name}.sgf"
        files[file] = go_sgf(moves, size)
        rows.append(f"| {file} | {moves} | {gnugo_estimate(moves, size)} |")
    return files, rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="print the evaluations, write nothing")
    parser.add_argument("--chess-cp", type=int, default=60)
    parser.add_argument("--shogi-cp", type=int, default=200)
    args = parser.parse_args()
    games, chess_rows = chess_suite(args.chess_cp)
    shogi_lines, shogi_rows = shogi_suite(args.shogi_cp)
    go_suites = {"go9": go_suite(GO9_LINES, 9), "go19": go_suite(GO19_LINES, 19)}
    tables = [("chess", chess_rows), ("shogi", shogi_rows)] + [(k, v[1]) for k, v in go_suites.items()]
    for title, rows in tables:
        print(f"\n{title}:\n" + "\n".join(rows))
    if args.check:
        return
    (HERE / "chess.pgn").write_text("\n\n".join(games) + "\n")
    (HERE / "shogi.txt").write_text("\n".join(shogi_lines) + "\n")
    for label, (go_files, _rows) in go_suites.items():
        go_dir = HERE / label
        go_dir.mkdir(exist_ok=True)
        for old in go_dir.glob("*.sgf"):
            old.unlink()
        for file, sgf in go_files.items():
            (go_dir / file).write_text(sgf)
    counts = ", ".join(f"{len(files)} {label}" for label, (files, _rows) in go_suites.items())
    print(
        f"\nwrote {len(games)} chess, {len(shogi_lines)} shogi, {counts} Go openings",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
