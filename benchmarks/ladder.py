"""Strength ladder: the real `tabula` program (its default networks, or ``--weights``) against real programs
at a fixed short time control on this machine, every game recorded.

    python benchmarks/ladder.py chess --games 10            # Stockfish: UCI_LimitStrength at its lowest
                                                            # UCI_Elo, then Skill Level 0; 10 s + 0.1 s
    python benchmarks/ladder.py shogi --games 10            # Fairy-Stockfish at its lowest Skill Level,
                                                            # byoyomi 1 s (cshogi's match runner)
    python benchmarks/ladder.py go9 --games 10              # GNU Go --level 1, then --level 10; Tabula
                                                            # 1 s per move, komi 7.5, Chinese rules

Colours alternate.  Each rung prints every game (result, plies, how it ended) and the score of Tabula
with a 95% Elo interval (``trainer.elo``).  Chess games are refereed by python-chess (clocks charged
with the wall time from ``go`` to ``bestmove``; a fallen flag loses), shogi games by ``cshogi.cli``, Go
games here over GTP (every move checked by ``engine.games.go``, the final position counted
Tromp-Taylor after GNU Go, run with ``--capture-all-dead``, has removed its dead stones).

Figures, not assertions: the result depends on the machine and what else it runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.process import GtpPlayer, find_program, tabula_command
from trainer.elo import MatchResult


def program(name: str) -> str:
    """The reference program ``name``, or exit saying how to install it."""
    path = find_program(name)
    if path is None:
        raise SystemExit(f"{name} not found (apt-get install {name})")
    return path


def spin_minimum(command: list[str], hello: str, option: str) -> int:
    """The ``min`` of a UCI/USI spin option, read from the program's own option list."""
    import subprocess

    out = subprocess.run(
        command, input=f"{hello}\nquit\n", capture_output=True, text=True, timeout=30, check=False
    ).stdout
    for line in out.splitlines():
        if line.startswith(f"option name {option} type spin"):
            words = line.split()
            return int(words[words.index("min") + 1])
    raise SystemExit(f"{command[0]} lists no spin option {option!r} after {hello!r}")


def tally(results: list[float]) -> MatchResult:
    return MatchResult(
        sum(r == 1.0 for r in results), sum(r == 0.5 for r in results), sum(r == 0.0 for r in results)
    )


def report(rung: str, results: list[float]) -> str:
    line = f"{rung}: Tabula {tally(results).describe()} over {len(results)} games"
    print(line, flush=True)
    return line


# ---- chess -------------------------------------------------------------------------------------------


def chess_game(
    tabula_cmd: list[str],
    opponent: dict[str, object],
    base: float,
    inc: float,
    tabula_white: bool,
    max_plies: int,
) -> tuple[float, str, int]:
    """One game; returns ``(Tabula's points, how it ended, plies)``."""
    import chess
    import chess.engine

    tabula = chess.engine.SimpleEngine.popen_uci(tabula_cmd, timeout=60)
    stockfish = chess.engine.SimpleEngine.popen_uci(program("stockfish"))
    try:
        stockfish.configure({"Threads": 1, "Hash": 16, **opponent})
        board = chess.Board()
        clocks = {chess.WHITE: base, chess.BLACK: base}
        while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
            tabula_moves = (board.turn == chess.WHITE) == tabula_white
            engine = tabula if tabula_moves else stockfish
            limit = chess.engine.Limit(
                white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK], white_inc=inc, black_inc=inc
            )
            start = time.perf_counter()
            move = engine.play(board, limit).move
            clocks[board.turn] -= time.perf_counter() - start
            if clocks[board.turn] < 0:
                return (
                    (0.0 if tabula_moves else 1.0),
                    ("Tabula" if tabula_moves else "Stockfish") + " lost on time",
                    board.ply(),
                )
            clocks[board.turn] += inc
            if move is None:
                break
            board.push(move)
    finally:
        tabula.quit()
        stockfish.quit()
    outcome = board.outcome(claim_draw=True)
    if outcome is None:
        return 0.5, f"adjudicated a draw at the {max_plies}-ply cap", board.ply()
    how = outcome.termination.name.lower().replace("_", " ")
    if outcome.winner is None:
        return 0.5, f"draw by {how}", board.ply()
    tabula_won = outcome.winner == (chess.WHITE if tabula_white else chess.BLACK)
    return (
        (1.0 if tabula_won else 0.0),
        ("Tabula" if tabula_won else "Stockfish") + f" won by {how}",
        board.ply(),
    )


def chess_ladder(args: argparse.Namespace, tabula_cmd: list[str]) -> list[str]:
    elo_min = spin_minimum([program("stockfish")], "uci", "UCI_Elo")
    skill_min = spin_minimum([program("stockfish")], "uci", "Skill Level")
    rungs: list[tuple[str, dict[str, object]]] = [
        (f"Stockfish UCI_LimitStrength UCI_Elo {elo_min}", {"UCI_LimitStrength": True, "UCI_Elo": elo_min}),
        (f"Stockfish Skill Level {skill_min}", {"Skill Level": skill_min}),
    ]
    lines = []
    for name, options in rungs:
        print(f"== chess, {args.base:g} s + {args.inc:g} s: Tabula vs {name}", flush=True)
        results = []
        for g in range(args.games):
            white = g % 2 == 0
            points, how, plies = chess_game(tabula_cmd, options, args.base, args.inc, white, args.max_plies)
            results.append(points)
            print(
                f"  game {g + 1}: Tabula {'white' if white else 'black'}: {points:g} ({how}, {plies} plies)",
                flush=True,
            )
        lines.append(report(f"chess {args.base:g}+{args.inc:g} vs {name}", results))
    return lines


# ---- shogi -------------------------------------------------------------------------------------------


def shogi_ladder(args: argparse.Namespace, tabula_cmd: list[str]) -> list[str]:
    import cshogi.cli

    if len(tabula_cmd) != 1:
        raise SystemExit("cshogi.cli needs the installed `tabula` program (pip install .)")
    fairy = program("fairy-stockfish")
    skill_min = spin_minimum([fairy], "usi", "Skill Level")
    name = f"Fairy-Stockfish Skill Level {skill_min}"
    print(f"== shogi, byoyomi {args.byoyomi} ms: Tabula vs {name} (cshogi.cli)", flush=True)
    results: list[float] = []
    seen = {"won": 0, "lost": 0}

    def after_game(totals: dict) -> bool:  # cshogi.cli passes running totals after each game
        won, lost = totals["engine1_won"], totals["engine2_won"]
        points = 1.0 if won > seen["won"] else 0.0 if lost > seen["lost"] else 0.5
        seen.update(won=won, lost=lost)
        results.append(points)
        side = "sente" if len(results) % 2 == 1 else "gote"
        print(f"  game {len(results)}: Tabula {side}: {points:g}", flush=True)
        return True

    options1 = dict(args.tabula_option or [])
    if args.weights:
        options1["WeightsFile"] = str(Path(args.weights).resolve())
    cshogi.cli.main(
        tabula_cmd[0],
        fairy,
        options1=options1,
        options2={"Skill Level": skill_min, "Threads": 1, "USI_Hash": 16},
        names=["Tabula", name],
        games=args.games,
        byoyomi=args.byoyomi,
        draw=args.max_plies,
        csa=args.record,
        multi_csa=bool(args.record),
        print_summary=False,
        callback=after_game,
    )
    return [report(f"shogi byoyomi {args.byoyomi} ms vs {name}", results)]


# ---- Go ----------------------------------------------------------------------------------------------


def go_game(
    tabula: GtpPlayer, gnugo: GtpPlayer, size: int, komi: float, tabula_black: bool, max_moves: int
) -> tuple[float, str, int]:
    from engine.games import get_game

    for player in (tabula, gnugo):
        player.must(f"boardsize {size}")
        player.must("clear_board")
        player.must(f"komi {komi}")
    state = get_game("go", board_size=size, komi=komi).new_state()
    players = {"b": tabula if tabula_black else gnugo, "w": gnugo if tabula_black else tabula}
    colour, passes, plies = "b", 0, 0
    while plies < max_moves:
        move = players[colour].must(f"genmove {colour}", timeout=120).upper()
        if move == "RESIGN":
            tabula_lost = (colour == "b") == tabula_black
            return (0.0 if tabula_lost else 1.0), f"{'Tabula' if tabula_lost else 'GNU Go'} resigned", plies
        state.play_as(0 if colour == "b" else 1, state.vertex_to_point(move))
        players["w" if colour == "b" else "b"].must(f"play {colour} {move}")
        plies += 1
        passes = passes + 1 if move == "PASS" else 0
        if passes == 2:
            break
        colour = "w" if colour == "b" else "b"
    result = state.result_string()  # Tromp-Taylor: B+3.5, W+10.5, 0
    winner = result[:1]
    if winner not in ("B", "W"):
        return 0.5, f"jigo ({result})", plies
    tabula_won = (winner == "B") == tabula_black
    ended = "two passes" if passes == 2 else f"the {max_moves}-move cap"
    return (
        (1.0 if tabula_won else 0.0),
        f"{result} after {ended} (GNU Go counts {gnugo.must('final_score', 120)})",
        plies,
    )


def go_ladder(args: argparse.Namespace, tabula_cmd: list[str]) -> list[str]:
    gnugo_path = program("gnugo")
    lines = []
    for level in args.levels:
        name = f"GNU Go --level {level}"
        print(
            f"== Go {args.size}x{args.size}, komi {args.komi}, Tabula {args.seconds:g} s/move: Tabula vs {name}",
            flush=True,
        )
        results = []
        for g in range(args.games):
            black = g % 2 == 0
            tabula = GtpPlayer("tabula", [*tabula_cmd, "--boardsize", str(args.size), "gtp"])
            gnugo = GtpPlayer(
                "gnugo",
                [gnugo_path, "--mode", "gtp", "--chinese-rules", "--capture-all-dead", "--level", str(level)],
            )
            try:
                tabula.must(f"time_settings 0 {args.seconds:g} 1")
                points, how, plies = go_game(tabula, gnugo, args.size, args.komi, black, args.max_plies)
            finally:
                tabula.close()
                gnugo.close()
            results.append(points)
            print(
                f"  game {g + 1}: Tabula {'black' if black else 'white'}: {points:g} ({how}, {plies} moves)",
                flush=True,
            )
        lines.append(report(f"go{args.size} {args.seconds:g} s/move vs {name}", results))
    return lines


# ---- main --------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("game", choices=["chess", "shogi", "go9", "go19"])
    parser.add_argument("--games", type=int, default=10, help="games per rung (colours alternate)")
    parser.add_argument("--weights", default=None, help="network for Tabula (default: its default network)")
    parser.add_argument("--base", type=float, default=10.0, help="chess: seconds on each clock")
    parser.add_argument("--inc", type=float, default=0.1, help="chess: increment in seconds")
    parser.add_argument("--byoyomi", type=int, default=1000, help="shogi: byoyomi in milliseconds")
    parser.add_argument("--seconds", type=float, default=1.0, help="Go: Tabula's seconds per move")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 10], help="Go: GNU Go levels")
    parser.add_argument("--komi", type=float, default=7.5)
    parser.add_argument(
        "--max-plies",
        type=int,
        default=None,
        help="adjudicate a draw here (default: chess 400, shogi 320, Go 2 N^2 moves)",
    )
    parser.add_argument("--record", default=None, help="shogi: CSA file of the games")
    parser.add_argument("--tabula-option", nargs=2, action="append", metavar=("NAME", "VALUE"))
    args = parser.parse_args()
    tabula_cmd = tabula_command()
    if args.weights and args.game != "shogi":
        tabula_cmd += ["--weights", str(Path(args.weights).resolve())]
    if args.game.startswith("go"):
        args.size = int(args.game[2:])
    default_cap = {"chess": 400, "shogi": 320}.get(args.game, 2 * getattr(args, "size", 19) ** 2)
    args.max_plies = args.max_plies or default_cap
    start = time.time()
    ladders: dict[str, Callable[[argparse.Namespace, list[str]], list[str]]] = {
        "chess": chess_ladder,
        "shogi": shogi_ladder,
        "go9": go_ladder,
        "go19": go_ladder,
    }
    lines = ladders[args.game](args, tabula_cmd)
    print(f"-- {args.game} ladder, {time.time() - start:.0f} s:")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
