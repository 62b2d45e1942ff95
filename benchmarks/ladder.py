"""Strength ladder: the real `tabula` program (its default networks, or ``--weights``) against real programs
at a fixed short time control on this machine, every game recorded.  The rungs go from weak to strong,
so a climb shows before the first wins against the reference programs' full strength:

    python benchmarks/ladder.py chess --games 4     # OpenSpiel MCTS (random rollouts) 100 and 1,000
                                                    # simulations, Stockfish Skill Level 0 at depth 1, 2
                                                    # and 3, at Skill Level 0, at its lowest UCI_Elo,
                                                    # then at Skill Level 1, 2 and 3
    python benchmarks/ladder.py shogi --games 4     # Fairy-Stockfish Skill Level -20, -15, -10, -5, -3,
                                                    # -1, 0,
                                                    # then gpsusi (when installed); byoyomi 1 s
    python benchmarks/ladder.py go9 --games 4       # OpenSpiel MCTS 100 and 1,000, GNU Go levels 0, 1, 5,
                                                    # 10, then Pachi (when installed); Tabula 1 s a move
    python benchmarks/ladder.py go9 --rungs gnugo1 --games 10 --summary

``--rungs`` picks rungs by key (``--list`` shows them); ``--summary`` ends with one Markdown table for the
README and the MANIFEST.  Colours alternate.  Each rung prints every game (result, length, how it
ended) and Tabula's score with Elo and its 95% interval (``trainer.elo``).  Chess games are refereed by
python-chess (Tabula's clock charged with the wall time from ``go`` to ``bestmove``; a fallen flag loses;
opponents limited by depth or simulations have no clock), shogi games by ``cshogi.cli`` (lengths and
endings read back from its CSA record), Go games here over GTP (every move checked by
``engine.games.go``; the final position counted as gogui-twogtp's referee counts, by area with dead
stones removed (``engine.games.go_ownership``), GNU Go run with ``--capture-all-dead``; the
Tromp-Taylor count, Tabula's own ``final_score`` and GNU Go's are printed beside it).

Figures, not assertions: the result depends on the machine and what else it runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.openspiel_bots import ChessMcts, GoMctsGtp
from protocols.gtp import judge_position
from protocols.gtp_format import format_score
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
    out = subprocess.run(
        command, input=f"{hello}\nquit\n", capture_output=True, text=True, timeout=30, check=False
    ).stdout
    for line in out.splitlines():
        if line.startswith(f"option name {option} type spin"):
            words = line.split()
            return int(words[words.index("min") + 1])
    raise SystemExit(f"{command[0]} lists no spin option {option!r} after {hello!r}")


@dataclasses.dataclass
class Game:
    """One ladder game from Tabula's side."""

    points: float  # 1 win, 0.5 draw, 0 loss
    how: str
    length: int | None  # plies (chess, shogi) or moves (Go); None when unknown


@dataclasses.dataclass
class RungResult:
    name: str
    games: list[Game]

    @property
    def match(self) -> MatchResult:
        points = [g.points for g in self.games]
        return MatchResult(points.count(1.0), points.count(0.5), points.count(0.0))

    def line(self) -> str:
        return f"{self.name}: Tabula {self.match.describe()} over {len(self.games)} games"

    def row(self) -> str:
        """A Markdown table row: rung, games, +W =D -L, score, Elo [95%], mean length."""
        m = self.match
        elo, low, high = m.elo()
        lengths = [g.length for g in self.games if g.length is not None]
        mean = f"{sum(lengths) / len(lengths):.0f}" if lengths else "-"
        return (
            f"| {self.name} | {m.games} | +{m.wins} ={m.draws} -{m.losses} | {100 * m.score:.0f}% "
            f"| {elo:+.0f} [{low:+.0f}, {high:+.0f}] | {mean} |"
        )


SUMMARY_HEADER = [
    "| rung | games | result | score | Elo [95%] | mean length |",
    "| --- | --- | --- | --- | --- | --- |",
]


def print_game(number: int, side: str, game: Game, unit: str) -> None:
    length = f", {game.length} {unit}" if game.length is not None else ""
    print(f"  game {number}: Tabula {side}: {game.points:g} ({game.how}{length})", flush=True)


def finish_rung(name: str, games: list[Game]) -> RungResult:
    result = RungResult(name, games)
    print(result.line(), flush=True)
    return result


# ---- chess -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ChessRung:
    """A chess opponent: Stockfish with ``options`` (on the clock, or to ``depth``), or OpenSpiel's MCTS
    bot with ``mcts`` simulations."""

    name: str
    options: dict[str, object] = dataclasses.field(default_factory=dict)
    depth: int | None = None
    mcts: int | None = None


class ChessOpponent:
    """The moves of a :class:`ChessRung` (python-chess moves)."""

    def __init__(self, rung: ChessRung, seed: int) -> None:
        import chess.engine

        self.rung = rung
        self.bot = ChessMcts(rung.mcts, seed) if rung.mcts is not None else None
        self.engine = None
        if self.bot is None:
            self.engine = chess.engine.SimpleEngine.popen_uci(program("stockfish"))
            self.engine.configure({"Threads": 1, "Hash": 16, **rung.options})

    @property
    def clocked(self) -> bool:
        return self.bot is None and self.rung.depth is None

    def play(self, board: Any, clock_limit: Any) -> Any:
        import chess.engine

        if self.bot is not None:
            return board.parse_san(self.bot.move_san(board.fen()))
        assert self.engine is not None
        limit = chess.engine.Limit(depth=self.rung.depth) if self.rung.depth is not None else clock_limit
        return self.engine.play(board, limit).move

    def close(self) -> None:
        if self.engine is not None:
            self.engine.quit()


def chess_game(
    tabula_cmd: list[str],
    rung: ChessRung,
    base: float,
    inc: float,
    tabula_white: bool,
    max_plies: int,
    seed: int,
) -> Game:
    """One game from the start position."""
    import chess
    import chess.engine

    tabula = chess.engine.SimpleEngine.popen_uci(tabula_cmd, timeout=60)
    opponent = ChessOpponent(rung, seed)
    try:
        board = chess.Board()
        clocks = {chess.WHITE: base, chess.BLACK: base}
        while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
            tabula_moves = (board.turn == chess.WHITE) == tabula_white
            limit = chess.engine.Limit(
                white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK], white_inc=inc, black_inc=inc
            )
            start = time.perf_counter()
            move = tabula.play(board, limit).move if tabula_moves else opponent.play(board, limit)
            if tabula_moves or opponent.clocked:
                clocks[board.turn] -= time.perf_counter() - start
                if clocks[board.turn] < 0:
                    loser = "Tabula" if tabula_moves else "the opponent"
                    return Game(0.0 if tabula_moves else 1.0, f"{loser} lost on time", board.ply())
                clocks[board.turn] += inc
            if move is None:
                break
            board.push(move)
    finally:
        tabula.quit()
        opponent.close()
    outcome = board.outcome(claim_draw=True)
    if outcome is None:
        return Game(0.5, f"adjudicated a draw at the {max_plies}-ply cap", board.ply())
    how = outcome.termination.name.lower().replace("_", " ")
    if outcome.winner is None:
        return Game(0.5, f"draw by {how}", board.ply())
    tabula_won = outcome.winner == (chess.WHITE if tabula_white else chess.BLACK)
    return Game(
        1.0 if tabula_won else 0.0,
        ("Tabula" if tabula_won else "the opponent") + f" won by {how}",
        board.ply(),
    )


def chess_rungs() -> dict[str, ChessRung]:
    """The chess rungs, weakest first, keyed for ``--rungs``."""
    stockfish = [program("stockfish")]
    skill = spin_minimum(stockfish, "uci", "Skill Level")
    elo = spin_minimum(stockfish, "uci", "UCI_Elo")
    sf = f"Stockfish Skill Level {skill}"
    return {
        "mcts100": ChessRung("OpenSpiel MCTS 100 simulations", mcts=100),
        "mcts1000": ChessRung("OpenSpiel MCTS 1000 simulations", mcts=1000),
        "sf-depth1": ChessRung(f"{sf}, depth 1", {"Skill Level": skill}, depth=1),
        "sf-depth2": ChessRung(f"{sf}, depth 2", {"Skill Level": skill}, depth=2),
        "sf-depth3": ChessRung(f"{sf}, depth 3", {"Skill Level": skill}, depth=3),
        "sf-skill": ChessRung(sf, {"Skill Level": skill}),
        "sf-elo": ChessRung(f"Stockfish UCI_Elo {elo}", {"UCI_LimitStrength": True, "UCI_Elo": elo}),
        **{
            f"sf-skill{level}": ChessRung(f"Stockfish Skill Level {level}", {"Skill Level": level})
            for level in (skill + 1, skill + 2, skill + 3)
        },
    }


def chess_ladder(args: argparse.Namespace, tabula_cmd: list[str]) -> list[RungResult]:
    results = []
    for key, rung in selected(chess_rungs(), args.rungs).items():
        print(f"== chess, {args.base:g} s + {args.inc:g} s: Tabula vs {rung.name} [{key}]", flush=True)
        games = []
        for g in range(args.games):
            white = g % 2 == 0
            games.append(chess_game(tabula_cmd, rung, args.base, args.inc, white, args.max_plies, seed=g))
            print_game(g + 1, "white" if white else "black", games[-1], "plies")
        results.append(finish_rung(f"chess {args.base:g}+{args.inc:g} vs {rung.name}", games))
    return results


def selected(rungs: dict[str, Any], keys: list[str] | None) -> dict[str, Any]:
    """The rungs named by ``--rungs`` (all by default), in ladder order."""
    if not keys:
        return rungs
    unknown = [k for k in keys if k not in rungs]
    if unknown:
        raise SystemExit(f"unknown rungs {', '.join(unknown)}; this ladder has {', '.join(rungs)}")
    return {k: v for k, v in rungs.items() if k in keys}


# ---- shogi -------------------------------------------------------------------------------------------


def shogi_rungs() -> dict[str, tuple[str, list[str], dict[str, object]]]:
    """``key -> (name, command, USI options)``, weakest first: Fairy-Stockfish's Skill Levels, gpsusi."""
    fairy = program("fairy-stockfish")
    low = spin_minimum([fairy], "usi", "Skill Level")
    rungs: dict[str, tuple[str, list[str], dict[str, object]]] = {}
    for skill in sorted({max(low, s) for s in (-20, -15, -10, -5, -3, -1, 0)}):
        options: dict[str, object] = {"Skill Level": skill, "Threads": 1, "USI_Hash": 16}
        rungs[f"fairy{skill}"] = (f"Fairy-Stockfish Skill Level {skill}", [fairy], options)
    gps = find_program("gpsusi")
    if gps is not None:
        rungs["gpsusi"] = ("gpsusi", [gps], {})
    return rungs


def shogi_ladder(args: argparse.Namespace, tabula_cmd: list[str]) -> list[RungResult]:
    if len(tabula_cmd) != 1:
        raise SystemExit("cshogi.cli needs the installed `tabula` program (pip install .)")
    results = []
    for key, (name, command, options) in selected(shogi_rungs(), args.rungs).items():
        print(f"== shogi, byoyomi {args.byoyomi} ms: Tabula vs {name} [{key}] (cshogi.cli)", flush=True)
        games = shogi_match(args, tabula_cmd[0], name, command[0], options)
        for g, game in enumerate(games):
            print_game(g + 1, "sente" if g % 2 == 0 else "gote", game, "plies")
        results.append(finish_rung(f"shogi byoyomi {args.byoyomi} ms vs {name}", games))
    return results


def shogi_match(
    args: argparse.Namespace, tabula: str, name: str, opponent: str, options: dict[str, object]
) -> list[Game]:
    """``args.games`` games through ``cshogi.cli``; lengths and endings from its CSA record."""
    import cshogi.cli
    import cshogi.CSA

    points: list[float] = []
    seen = {"won": 0, "lost": 0}

    def after_game(totals: dict[str, int]) -> bool:  # cshogi.cli passes running totals after each game
        won, lost = totals["engine1_won"], totals["engine2_won"]
        points.append(1.0 if won > seen["won"] else 0.0 if lost > seen["lost"] else 0.5)
        seen.update(won=won, lost=lost)
        return True

    options1 = dict(args.tabula_option or [])
    if args.weights:
        options1["WeightsFile"] = str(Path(args.weights).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        record = args.record or str(Path(tmp) / "games.csa")
        cshogi.cli.main(
            tabula,
            opponent,
            options1=options1,
            options2=options,
            names=["Tabula", name],
            games=args.games,
            byoyomi=args.byoyomi,
            draw=args.max_plies,
            csa=record,
            multi_csa=True,
            print_summary=False,
            callback=after_game,
        )
        parsed = cshogi.CSA.Parser.parse_file(record)[-len(points) :] if points else []
    endings = [(len(p.moves), p.endgame.lstrip("%").lower()) for p in parsed]
    if len(endings) != len(points):
        endings = [(None, "?")] * len(points)
    return [Game(pt, how, n) for pt, (n, how) in zip(points, endings, strict=True)]


# ---- Go ----------------------------------------------------------------------------------------------


def go_game(
    tabula: GtpPlayer, opponent: Any, size: int, komi: float, tabula_black: bool, max_moves: int
) -> Game:
    """One game over GTP, every move checked here; Tromp-Taylor count at the end."""
    from engine.games import get_game

    for player in (tabula, opponent):
        player.must(f"boardsize {size}")
        player.must("clear_board")
        player.must(f"komi {komi}")
    state = get_game("go", board_size=size, komi=komi).new_state()
    players = {"b": tabula if tabula_black else opponent, "w": opponent if tabula_black else tabula}
    colour, passes, moves = "b", 0, 0
    while moves < max_moves:
        move = players[colour].must(f"genmove {colour}", timeout=300).upper()
        if move == "RESIGN":
            tabula_lost = (colour == "b") == tabula_black
            return Game(
                0.0 if tabula_lost else 1.0, f"{'Tabula' if tabula_lost else 'the opponent'} resigned", moves
            )
        state.play_as(0 if colour == "b" else 1, state.vertex_to_point(move))
        players["w" if colour == "b" else "b"].must(f"play {colour} {move}")
        moves += 1
        passes = passes + 1 if move == "PASS" else 0
        if passes == 2:
            break
        colour = "w" if colour == "b" else "b"
    # Counted as gogui-twogtp's referee counts: area, dead stones removed (the ladder's own judgement,
    # engine.games.go_ownership), with Tromp-Taylor, Tabula's final_score and the opponent's beside it.
    score = judge_position(state, 256).score
    result = format_score(score)
    ended = "two passes" if passes == 2 else f"the {max_moves}-move cap"
    counts = f"Tromp-Taylor {state.result_string()}, Tabula counts {tabula.must('final_score', 120)}"
    if isinstance(opponent, GtpPlayer):
        counts += f", {opponent.name} counts {opponent.must('final_score', 120)}"
    if score == 0:
        return Game(0.5, f"jigo after {ended}; {counts}", moves)
    tabula_won = (score > 0) == tabula_black
    return Game(1.0 if tabula_won else 0.0, f"{result} after {ended}; {counts}", moves)


def go_rungs() -> dict[str, tuple[str, Callable[[int], Any]]]:
    """``key -> (name, make the opponent for game g)``, weakest first."""
    rungs: dict[str, tuple[str, Callable[[int], Any]]] = {}
    for sims in (100, 1000):
        rungs[f"mcts{sims}"] = (f"OpenSpiel MCTS {sims} simulations", lambda g, n=sims: GoMctsGtp(n, seed=g))
    gnugo = find_program("gnugo")
    if gnugo is not None:
        for level in (0, 1, 5, 10):
            command = [gnugo, "--mode", "gtp", "--chinese-rules", "--capture-all-dead", "--level", str(level)]
            rungs[f"gnugo{level}"] = (f"GNU Go --level {level}", lambda _g, c=command: GtpPlayer("gnugo", c))
    pachi = find_program("pachi")
    if pachi is not None:
        rungs["pachi"] = ("Pachi (1 thread)", lambda _g: GtpPlayer("pachi", [pachi, "-t", "1"]))
    return rungs


def go_ladder(args: argparse.Namespace, tabula_cmd: list[str]) -> list[RungResult]:
    results = []
    for key, (name, make) in selected(go_rungs(), args.rungs).items():
        print(
            f"== Go {args.size}x{args.size}, komi {args.komi}, Tabula {args.seconds:g} s/move: Tabula vs {name} [{key}]",
            flush=True,
        )
        games = []
        for g in range(args.games):
            black = g % 2 == 0
            tabula = GtpPlayer("tabula", [*tabula_cmd, "--boardsize", str(args.size), "gtp"])
            opponent = make(g)
            try:
                tabula.must(f"time_settings 0 {args.seconds:g} 1")
                games.append(go_game(tabula, opponent, args.size, args.komi, black, args.max_plies))
            finally:
                tabula.close()
                opponent.close()
            print_game(g + 1, "black" if black else "white", games[-1], "moves")
        results.append(finish_rung(f"go{args.size} {args.seconds:g} s/move vs {name}", games))
    return results


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
    parser.add_argument("--komi", type=float, default=7.5)
    parser.add_argument(
        "--max-plies",
        type=int,
        default=None,
        help="adjudicate a draw here (default: chess 400, shogi 320, Go 2 N^2 moves)",
    )
    parser.add_argument("--record", default=None, help="shogi: CSA file of the games")
    parser.add_argument("--tabula-option", nargs=2, action="append", metavar=("NAME", "VALUE"))
    parser.add_argument(
        "--rungs", nargs="+", default=None, help="rung keys to play (default: all; see --list)"
    )
    parser.add_argument("--list", action="store_true", help="print the rung keys of this ladder and exit")
    parser.add_argument("--summary", action="store_true", help="end with one Markdown table of the rungs")
    args = parser.parse_args()
    tabula_cmd = tabula_command()
    if args.weights and args.game != "shogi":
        tabula_cmd += ["--weights", str(Path(args.weights).resolve())]
    if args.game.startswith("go"):
        args.size = int(args.game[2:])
    default_cap = {"chess": 400, "shogi": 320}.get(args.game, 2 * getattr(args, "size", 19) ** 2)
    args.max_plies = args.max_plies or default_cap
    rungs: dict[str, Callable[[], dict[str, Any]]] = {"chess": chess_rungs, "shogi": shogi_rungs}
    if args.list:
        for key in rungs.get(args.game, go_rungs)():
            print(key)
        return
    start = time.time()
    ladders: dict[str, Callable[[argparse.Namespace, list[str]], list[RungResult]]] = {
        "chess": chess_ladder,
        "shogi": shogi_ladder,
        "go9": go_ladder,
        "go19": go_ladder,
    }
    results = ladders[args.game](args, tabula_cmd)
    print(f"-- {args.game} ladder, {time.time() - start:.0f} s:")
    for result in results:
        print(result.line())
    if args.summary:
        print("\n".join([*SUMMARY_HEADER, *(r.row() for r in results)]))


if __name__ == "__main__":
    main()
