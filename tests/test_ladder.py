"""benchmarks/ladder.py: the match clients' command lines, reading their records, the USI stopwatch and the
opening suites (no full games here)."""

from __future__ import annotations

import dataclasses
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.pgn
import pytest

from benchmarks import ladder
from benchmarks.ladder import (
    ADJUDICATION,
    CsaGame,
    Game,
    RungResult,
    Settings,
    chess_rungs,
    csa_outcome,
    cshogi_command,
    cshogi_opening_order,
    cutechess_command,
    go_games,
    go_rungs,
    parse_csa,
    parse_cutechess_pgn,
    parse_twogtp_dat,
    read_move_times,
    selected,
    shogi_games,
    shogi_rungs,
    twogtp_command_line,
    usi_wrapper,
)
from trainer.evaluate.elo import MatchResult, Pentanomial

REPO = Path(__file__).resolve().parent.parent
OPENINGS = REPO / "trainer" / "evaluate" / "openings"


def settings(tmp_path: Path, games: int = 20) -> Settings:
    return Settings(games=games, tabula=["/venv/bin/tabula", "--weights", "/w/net.onnx"], out=tmp_path)


# ---- command lines -----------------------------------------------------------------------------------


def test_cutechess_command_plays_pairs_on_the_clock(tmp_path: Path) -> None:
    rung = chess_rungs("/usr/games/stockfish")["sf-elo1350"]
    book = OPENINGS / "chess.pgn"
    command = cutechess_command(
        "/tools/cutechess-cli", settings(tmp_path), rung, tmp_path / "g.pgn", tmp_path / "t.err", book
    )
    assert command == [
        "/tools/cutechess-cli",
        "-engine",
        "name=Tabula",
        "cmd=/venv/bin/tabula",
        "arg=--weights",
        "arg=/w/net.onnx",
        "arg=uci",
        f"stderr={tmp_path / 't.err'}",
        "-engine",
        "name=Stockfish UCI_Elo 1350",
        "cmd=/usr/games/stockfish",
        "option.Threads=1",
        "option.Hash=16",
        "option.UCI_LimitStrength=true",
        "option.UCI_Elo=1350",
        "-each",
        "proto=uci",
        "tc=10+0.1",
        "-openings",
        f"file={book}",
        "format=pgn",
        "order=sequential",
        "-repeat",
        "-games",
        "2",
        "-rounds",
        "10",
        "-maxmoves",
        "300",
        "-recover",
        "-pgnout",
        str(tmp_path / "g.pgn"),
    ]
    # No adjudication that could favour either side; an odd count still alternates colours.
    assert not {"-draw", "-resign", "-tb"} & set(command)
    odd = cutechess_command("c", settings(tmp_path, games=3), rung, tmp_path / "g", tmp_path / "e", None)
    assert odd[odd.index("-repeat") :][:5] == ["-repeat", "-games", "1", "-rounds", "3"]
    assert "-openings" not in odd
    depth1 = chess_rungs("sf")["sf-skill0-d1"]
    tail = cutechess_command("c", settings(tmp_path), depth1, tmp_path / "g", tmp_path / "e", None)
    assert tail[tail.index("option.Skill Level=0") + 1] == "depth=1"
    assert "-concurrency" not in command  # one game at a time unless asked
    two = dataclasses.replace(settings(tmp_path), concurrency=2)
    both = cutechess_command("c", two, rung, tmp_path / "g", tmp_path / "e", None)
    assert both[both.index("-concurrency") + 1] == "2"
    judged = cutechess_command(
        "c",
        dataclasses.replace(settings(tmp_path), adjudicate=True),
        rung,
        tmp_path / "g",
        tmp_path / "e",
        None,
    )
    at = judged.index("-resign")
    assert judged[at : at + 8] == ADJUDICATION and judged[at + 8] == "-recover"


def test_cshogi_command_uses_byoyomi_alone_and_swaps_colours(tmp_path: Path) -> None:
    rung = shogi_rungs("/usr/games/fairy-stockfish")["fairy-5"]
    command = cshogi_command(
        settings(tmp_path, 4),
        rung,
        tmp_path / "tabula-usi",
        tmp_path / "opponent-usi",
        tmp_path / "g.csa",
        OPENINGS / "shogi.txt",
    )
    assert command == [
        sys.executable,
        "-m",
        "cshogi.cli",
        str(tmp_path / "tabula-usi"),
        str(tmp_path / "opponent-usi"),
        "--name1",
        "Tabula",
        "--name2",
        "Fairy-Stockfish Skill Level -5",
        "--options2",
        "Skill Level:-5,Threads:1,Hash:16",
        "--games",
        "4",
        "--byoyomi",
        "1000",
        "--draw",
        "300",
        "--opening",
        str(OPENINGS / "shogi.txt"),
        "--opening-seed",
        "1",
        "--csa",
        str(tmp_path / "g.csa"),
        "--multi-csa",
    ]
    # --time with --byoyomi makes Fairy-Stockfish 11.1 lose on time; --no-swap would break the pairs.
    assert not {"--time", "--inc", "--no-swap", "--resign", "--mate-win"} & set(command)


def test_usi_wrapper_is_one_executable_path(tmp_path: Path) -> None:
    """cshogi.cli starts an engine as ``Popen([path])``: the wrapper carries the stopwatch and arguments."""
    path = usi_wrapper(
        tmp_path / "tabula-usi", ["/venv/bin/tabula", "usi"], tmp_path / "t.times", tmp_path / "t.err"
    )
    text = path.read_text()
    assert text.startswith("#!/bin/sh\nexec ") and path.stat().st_mode & 0o111
    assert (
        f"usi_timer.py --log {tmp_path / 't.times'} --stderr {tmp_path / 't.err'} -- /venv/bin/tabula usi"
        in text
    )


def test_twogtp_command_has_the_referee_and_no_capture_all_dead(tmp_path: Path) -> None:
    rung = go_rungs("/usr/games/gnugo")["gnugo1"]
    command = twogtp_command_line(
        ["java", "-jar", "/tools/gogui-twogtp.jar"],
        settings(tmp_path, 10),
        rung,
        "/usr/games/gnugo",
        tmp_path / "games",
        OPENINGS / "go9",
    )
    assert command == [
        "java",
        "-jar",
        "/tools/gogui-twogtp.jar",
        "-black",
        "/venv/bin/tabula --weights /w/net.onnx gtp",
        "-white",
        "/usr/games/gnugo --mode gtp --level 1 --chinese-rules",
        "-referee",
        "/usr/games/gnugo --mode gtp --chinese-rules",
        "-size",
        "9",
        "-komi",
        "7.5",
        "-time",
        "1",
        "-alternate",
        "-games",
        "10",
        "-openings",
        str(OPENINGS / "go9"),
        "-sgffile",
        str(tmp_path / "games"),
        "-auto",
    ]
    assert not any("capture-all-dead" in word for word in command)
    assert ladder.gtp_program(["/a b/tabula", "gtp"]) == '"/a b/tabula" gtp'
    # twogtp refuses "-time 0.5" ("Invalid time specification"); half a minute is "30s"
    assert [ladder.twogtp_time(m) for m in (1, 10.0, 0.5, 0.25)] == ["1", "10", "30s", "15s"]


def test_missing_clients_exit_with_one_line_saying_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ladder, "TOOLS", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit, match=r"tag v1\.3\.1 .*libqt5core5a") as cutechess:
        ladder.cutechess_cli()
    with pytest.raises(SystemExit, match=r"tag v1\.5\.4a .*default-jre-headless") as twogtp:
        ladder.twogtp_command()
    assert "\n" not in str(cutechess.value) + str(twogtp.value)


def test_selected_keeps_ladder_order_and_refuses_unknown_keys() -> None:
    rungs = chess_rungs("sf")
    assert list(selected(rungs, ["sf-elo1600", "sf-skill0"])) == ["sf-skill0", "sf-elo1600"]
    assert selected(rungs, None) == rungs
    with pytest.raises(SystemExit, match="unknown rungs z"):
        selected(rungs, ["z"])
    assert list(shogi_rungs("f"))[:9] == [
        "fairy-20",
        "fairy-15",
        "fairy-10",
        "fairy-5",
        "fairy-3",
        "fairy-1",
        "fairy0",
        "fairy1",
        "fairy3",
    ]


# ---- reading the records -----------------------------------------------------------------------------

CUTECHESS_PGN = """\
[Event "?"]
[Site "?"]
[Date "2026.11.28"]
[Round "1"]
[White "Tabula"]
[Black "Stockfish Skill Level 0"]
[Result "1-0"]
[PlyCount "39"]
[Termination "time forfeit"]
[TimeControl "2+0.05"]

1. e4 {book} e5 {book} 2. Nf3 {book} Nc6 {book} 3. Bb5 {book} a6 {book}
4. Ba4 {book} Nf6 {book} 5. d3 {-0.02/3 0.011s} b5 {-0.05/14 0.43s}
6. Bb3 {-0.02/3 0.030s} Bb7 {-0.21/15 0.48s} 7. Nc3 {+0.04/4 0.015s}
Bd6 {-0.31/14 0.28s} 8. Nd5 {+0.08/4 0.018s} Na5 {-0.25/15 0.40s}
9. Nxf6+ {+0.14/5 0.080s} Qxf6 {+0.43/13 0.11s} 10. Be3 {+0.14/5 0.016s}
Nxb3 {+0.54/13 0.27s} 11. axb3 {+0.11/5 0.020s} Qe6 {+0.47/15 0.29s}
12. Ng5 {+0.11/5 0.020s} Qf6 {+0.42/13 0.096s} 13. h4 {+0.07/5 0.023s}
h6 {+0.77/8 0.024s} 14. Nf3 {+0.05/5 0.015s} O-O {+0.78/9 0.029s}
15. h5 {-0.02/4 0.042s} a5 {+0.63/11 0.076s} 16. c4 {+0.06/4 0.13s}
Bb4+ {+0.95/9 0.077s} 17. Ke2 {0.00/5 0.037s} bxc4 {+0.26/10 0.055s}
18. bxc4 {+0.06/6 0.024s} Ra6 {+0.60/10 0.033s} 19. Qb3 {+0.21/4 0.12s}
Bc6 {+0.73/9 0.060s} 20. c5 {+0.24/4 0.022s, Black loses on time} 1-0

[Event "?"]
[Site "?"]
[Date "2026.11.28"]
[Round "1"]
[White "Stockfish Skill Level 0"]
[Black "Tabula"]
[Result "1-0"]
[PlyCount "7"]

1. e4 {book} e5 {book} 2. Qh5 {+0.5/10 0.1s} Nc6 {-0.1/3 0.1s} 3. Bc4 {+1.0/9 0.1s}
Nf6 {-0.2/3 0.1s} 4. Qxf7# {+M1/1 0.01s, White mates} 1-0

[Event "?"]
[Site "?"]
[Date "2026.11.28"]
[Round "2"]
[White "Tabula"]
[Black "Stockfish Skill Level 0"]
[Result "0-1"]
[PlyCount "2"]
[Termination "illegal move"]

1. e4 {book} e5 {book, White makes an illegal move: e1e3} 0-1

[Event "?"]
[Site "?"]
[Date "2026.11.28"]
[Round "2"]
[White "Stockfish Skill Level 0"]
[Black "Tabula"]
[Result "1/2-1/2"]
[PlyCount "2"]

1. e4 {book} e5 {+0.00/1 0.1s, Draw by 3-fold repetition} 1/2-1/2

[Event "?"]
[Site "?"]
[Date "2026.11.28"]
[Round "3"]
[White "Tabula"]
[Black "Stockfish Skill Level 0"]
[Result "*"]
[Termination "unterminated"]

1. e4 *
"""


def test_cutechess_pgn_gives_results_endings_and_faults() -> None:
    games = parse_cutechess_pgn(CUTECHESS_PGN, ["Ruy Lopez", "Sicilian"])
    assert [g.number for g in games] == [1, 2, 3, 4]  # the unfinished fifth game is left out
    first, second, third, fourth = games
    assert (first.tabula_first, first.points, first.length) == (True, 1.0, 39)
    assert first.how == "time forfeit: Black loses on time"
    assert (first.fault, first.faulty, first.opening) == ("time", "opponent", "Ruy Lopez")
    assert (second.tabula_first, second.points, second.how, second.fault) == (False, 0.0, "White mates", None)
    assert second.opening == "Ruy Lopez" and third.opening == "Sicilian"
    assert (third.points, third.fault, third.faulty) == (0.0, "illegal", "Tabula")
    assert third.how == "White makes an illegal move: e1e3"
    assert (fourth.points, fourth.how) == (0.5, "Draw by 3-fold repetition")
    result = RungResult("chess", "cutechess-cli 1.3.1", "cutechess-cli ...", games)
    assert result.faults("Tabula") == (1, 0) and result.faults("opponent") == (0, 1)
    assert result.faults_text() == "1 / 0 (opponent 0 / 1)"


TWOGTP_DAT = """\
# Black: Tabula
# BlackCommand: /venv/bin/tabula gtp
# Referee: GNU Go
# Size: 9
# White: GNU Go
# WhiteLabel: GNU Go:3.8
#
#GAME\tRES_B\tRES_W\tRES_R\tALT\tDUP\tLEN\tTIME_B\tTIME_W\tCPU_B\tCPU_W\tERR\tERR_MSG
0\tW+0.5\tW+0.5\tW+0.5\t0\t-\t128\t37.9\t5.1\t0\t4.4\t0\t
1\tB+3.5\tW+2.5\tB+2.5\t1\t-\t90\t40.2\t4.0\t0\t3.9\t0\t
2\tB+R\tB+R\tB+R\t0\t-\t51\t20.0\t3.0\t0\t2.9\t0\t
3\t?\t?\t?\t1\t-\t12\t5.0\t1.0\t0\t1.0\t1\tTabula played invalid move: Z9
4\tB+7.5\tB+7.5\tB+7.5\t0\t-\t70\t63.5\t4.0\t0\t3.9\t0\t
5\t0\tW+1.5\tW+1.5\t1\t-\t88\t30.0\t4.0\t0\t3.9\t1\tGNU Go:3.8 exited
"""


def test_twogtp_dat_gives_referee_results_errors_time_and_agreement() -> None:
    rows = parse_twogtp_dat(TWOGTP_DAT)
    assert len(rows) == 6 and rows[0]["RES_R"] == "W+0.5" and rows[0]["ERR_MSG"] == ""
    games = go_games(rows, 60.0, "GNU Go", ["01-tengen-c4", "02-tengen-d3", "03-tengen-c3"])
    g0, g1, g2, g3, g4, g5 = games
    assert (g0.number, g0.tabula_first, g0.points, g0.length, g0.agree) == (1, True, 0.0, 128, True)
    assert g0.how.startswith("the opponent won by 0.5 points (referee); Tabula's final_score W+0.5")
    assert (g1.tabula_first, g1.points, g1.agree) == (False, 1.0, True)  # ALT: Tabula White, results its own
    assert g0.opening == g1.opening == "01-tengen-c4" and g2.opening == "02-tengen-d3"
    assert (g2.points, g2.agree) == (1.0, None) and g2.how.startswith("Tabula won by resignation")
    assert (g3.points, g3.fault, g3.faulty) == (0.0, "error", "Tabula")
    assert (g4.points, g4.fault, g4.faulty) == (0.0, "time", "Tabula")  # 63.5 s of a 60 s sudden death
    assert (g5.points, g5.fault, g5.faulty) == (1.0, "error", "opponent")
    result = RungResult("go9", "gogui-twogtp 1.5.4", "java -jar ...", games)
    assert result.faults_text() == "1 / 1 (opponent 1 / 0); final_score agreed 3/3"


CSHOGI_CSA = """\
V2
N+Tabula
N-Fairy-Stockfish Skill Level 0
PI
+
+7776FU
-3334FU
+2726FU
T0
'** 98 -8384FU
-8384FU
T1
%TORYO
/
V2
N+Fairy-Stockfish Skill Level 0
N-Tabula
PI
+
+7776FU
-3334FU
+2726FU
T0
-4132KI
T0
%SENNICHITE
/
V2
N+Tabula
N-Fairy-Stockfish Skill Level 0
PI
+
+2726FU
-8384FU
+7776FU
T0
"""


def test_cshogi_csa_gives_results_and_the_stopwatch_overrules_the_clock(tmp_path: Path) -> None:
    records = parse_csa(CSHOGI_CSA)
    assert len(records) == 2  # the third game is still being written
    assert records[0] == CsaGame(
        ("Tabula", "Fairy-Stockfish Skill Level 0"), ["+7776FU", "-3334FU", "+2726FU", "-8384FU"], "%TORYO"
    )
    assert csa_outcome(records[0]) == (0.0, "resignation")  # sente to move resigned
    assert csa_outcome(records[1]) == (0.5, "draw by repetition")
    assert csa_outcome(CsaGame(("a", "b"), ["+7776FU"], "%KACHI")) == (
        0.0,
        "won by entering-king declaration",
    )
    assert csa_outcome(CsaGame(("a", "b"), [], "%+ILLEGAL_ACTION"))[0] == 0.0
    times = tmp_path / "t.times"
    times.write_text(
        "newgame\nmove\t0\t150.0\t7g7f\nmove\t2\t999.0\t2g2f\nquit\nnewgame\nmove\t1\t1000.5\t3c3d\nquit\n"
    )
    assert read_move_times(times) == [[(0, 150.0, "7g7f"), (2, 999.0, "2g2f")], [(1, 1000.5, "3c3d")]]
    theirs = [[(1, 200.0, "3c3d"), (3, 1200.0, "8c8d")], [(0, 300.0, "7g7f")]]
    games = shogi_games(records, read_move_times(times), theirs, 1000.0, ["7g7f 3c3d"])
    assert (games[0].tabula_first, games[0].points, games[0].fault, games[0].faulty) == (
        True,
        1.0,
        "time",
        "opponent",
    )
    assert games[0].how.startswith(
        "opponent lost on time: move 4 took 1200 ms (byoyomi 1000 ms; cshogi.cli: resignation)"
    )
    assert (games[1].tabula_first, games[1].points, games[1].faulty) == (False, 0.0, "Tabula")  # 1000.5 ms
    assert games[1].opening == "7g7f 3c3d" and games[1].length == 4
    crashed = shogi_games(records[:1], [[(0, 10.0, "7g7f"), (-1, 0.0, "crash")]], [[]], 1000.0)
    assert (crashed[0].points, crashed[0].fault, crashed[0].faulty) == (0.0, "crash", "Tabula")
    assert ladder.is_mate(["+5756FU"]) is False


def test_cshogi_opening_order_is_the_one_cshogi_plays() -> None:
    """cshogi.cli seeds the global random with --opening-seed and shuffles the list."""
    lines = [f"startpos moves {i}" for i in range(14)]
    expected = list(lines)
    state = random.getstate()
    try:
        random.seed(1)
        random.shuffle(expected)
    finally:
        random.setstate(state)
    assert cshogi_opening_order(lines, 1) == expected


# ---- statistics and output ---------------------------------------------------------------------------


def game(number: int, points: float) -> Game:
    return Game(number, number % 2 == 1, points, "x", 40)


def test_paired_games_give_pentanomial_elo_and_unpaired_trinomial() -> None:
    games = [game(1, 1.0), game(2, 0.0), game(3, 1.0), game(4, 0.5)]
    result = RungResult("go9 1 min vs GNU Go --level 1", "gogui-twogtp 1.5.4", "java -jar x.jar -auto", games)
    assert result.pentanomial() == Pentanomial((0, 0, 1, 1, 0))
    elo, lo, hi, how = result.elo()
    assert how == "pentanomial" and (elo, lo, hi) == Pentanomial((0, 0, 1, 1, 0)).elo()
    assert result.match == MatchResult(2, 1, 1)
    row = result.row()
    assert row.startswith("| go9 1 min vs GNU Go --level 1 | gogui-twogtp 1.5.4 | 4 | +2 =1 -1 | 62% | ")
    assert row.endswith(" pentanomial | 0 / 0 (opponent 0 / 0) | `java -jar x.jar -auto` |")
    assert len(ladder.SUMMARY_HEADER[0].split("|")) == len(row.split("|"))
    lonely = RungResult("r", "c", "cmd", [game(1, 1.0), game(2, 0.0), game(4, 1.0)])
    assert lonely.pentanomial() is None and lonely.elo()[3] == "trinomial"
    assert lonely.elo()[:3] == MatchResult(2, 0, 1).elo()
    assert "Tabula +2 =0 -1 (66.7%) over 3 games" in lonely.line()


# ---- the USI stopwatch -------------------------------------------------------------------------------

FAKE_USI = """\
import sys, time
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "usi":
        print("id name fake", flush=True)
        print("usiok", flush=True)
    elif words[0] == "isready":
        print("readyok", flush=True)
    elif words[0] == "go":
        time.sleep(0.15)
        print("info depth 1 score cp 12 pv 7g7f", flush=True)
        print("bestmove 7g7f ponder 3c3d", flush=True)
    elif words[0] == "die":
        sys.exit(3)
    elif words[0] == "quit":
        break
"""


class Proxy:
    """The stopwatch around the fake engine, driven line by line as cshogi.cli drives it."""

    def __init__(self, tmp_path: Path) -> None:
        engine = tmp_path / "fake_usi.py"
        engine.write_text(FAKE_USI)
        self.log = tmp_path / "moves.tsv"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(REPO / "benchmarks" / "usi_timer.py"),
                "--log",
                str(self.log),
                "--",
                sys.executable,
                str(engine),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def until(self, prefix: str) -> list[str]:
        assert self.proc.stdout is not None
        lines: list[str] = []
        while not lines or not lines[-1].startswith(prefix):
            line = self.proc.stdout.readline()
            assert line, f"proxy closed its output; got {lines}"
            lines.append(line.rstrip("\n"))
        return lines


def test_usi_timer_relays_the_exchange_and_logs_move_times(tmp_path: Path) -> None:
    proxy = Proxy(tmp_path)
    try:
        proxy.send("usi")
        assert proxy.until("usiok") == ["id name fake", "usiok"]
        proxy.send("isready")
        assert proxy.until("readyok") == ["readyok"]
        proxy.send("usinewgame")
        proxy.send("position startpos moves 2g2f 8c8d")
        proxy.send("go byoyomi 1000")
        assert proxy.until("bestmove") == ["info depth 1 score cp 12 pv 7g7f", "bestmove 7g7f ponder 3c3d"]
        proxy.send("quit")
        assert proxy.proc.wait(timeout=20) == 0
    finally:
        proxy.proc.kill()
    games = read_move_times(proxy.log)
    assert len(games) == 1 and len(games[0]) == 1
    ply, ms, move = games[0][0]
    assert (ply, move) == (2, "7g7f") and 150 <= ms < 5000
    assert proxy.log.read_text().splitlines()[-1] == "quit"


def test_usi_timer_stands_in_for_a_crashed_engine(tmp_path: Path) -> None:
    """cshogi.cli would wait for ever on a dead engine: the stopwatch resigns for it and logs the crash."""
    proxy = Proxy(tmp_path)
    try:
        proxy.send("usi")
        proxy.until("usiok")
        proxy.send("usinewgame")
        proxy.send("die")
        deadline = time.monotonic() + 20
        while "crash" not in proxy.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        proxy.send("position startpos")
        proxy.send("go byoyomi 1000")
        assert proxy.until("bestmove") == ["bestmove resign"]
        proxy.send("isready")
        assert proxy.until("readyok") == ["readyok"]
        proxy.send("quit")
        assert proxy.proc.wait(timeout=20) == 0
    finally:
        proxy.proc.kill()
    assert proxy.log.read_text().splitlines() == ["newgame", "crash\t3"]
    assert read_move_times(proxy.log) == [[(-1, 0.0, "crash")]]


# ---- the opening suites ------------------------------------------------------------------------------


def test_chess_openings_are_legal_and_named() -> None:
    names = ladder.pgn_opening_names(OPENINGS / "chess.pgn")
    with open(OPENINGS / "chess.pgn", encoding="utf-8") as handle:
        games = []
        while (g := chess.pgn.read_game(handle)) is not None:
            games.append(g)
    assert 20 <= len(games) == len(names) <= 50 and len(set(names)) == len(names)
    for g in games:
        assert not g.errors and 6 <= g.end().ply() <= 12
        assert g.board().fen() == chess.STARTING_FEN


def test_shogi_openings_are_in_cshogis_format_and_legal() -> None:
    cshogi = pytest.importorskip("cshogi")
    lines = (OPENINGS / "shogi.txt").read_text().splitlines()
    assert len(lines) >= 10
    for line in lines:
        assert line.startswith("startpos moves ")  # cshogi.cli reads line[15:] as the moves
        board = cshogi.Board()
        for usi in line[15:].split():
            move = board.move_from_usi(usi)
            assert board.is_legal(move), line
            board.push(move)


def test_go_openings_are_short_alternating_sgf() -> None:
    files = sorted((OPENINGS / "go9").glob("*.sgf"))
    assert len(files) >= 8
    for file in files:
        text = file.read_text()
        assert "SZ[9]" in text
        moves = re.findall(r";([BW])\[[a-i]{2}\]", text)
        assert 2 <= len(moves) <= 4 and moves == ["B", "W", "B", "W"][: len(moves)], file.name


def test_openings_readme_says_how_each_suite_was_made() -> None:
    readme = (OPENINGS / "README.md").read_text()
    for word in ("chess.pgn", "shogi.txt", "go9/", "make_openings.py"):
        assert word in readme


def test_game_line_reads_well() -> None:
    g = Game(3, False, 0.0, "White mates", 87, "Sicilian, Najdorf", None, None)
    assert (
        g.line(("white", "black")) == "  game 3 (Sicilian, Najdorf), Tabula black: 0, White mates, 87 plies"
    )
    go = Game(2, True, 1.0, "Tabula won by resignation", 51, None, "time", "opponent")
    assert (
        go.line(("black", "white"), "moves")
        == "  game 2, Tabula black: 1, Tabula won by resignation, 51 moves [time: opponent]"
    )
