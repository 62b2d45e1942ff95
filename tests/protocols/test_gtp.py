"""GTP v2: pure parse/format tests, then transcripts against the real `tabula` program.

The transcripts follow docs/protocols.md (the GTP section and the GTP bad-input list): every command, and
every bad input with the exact reply expected and a check that the engine still answers afterwards.
Most run on 9x9 (``--boardsize 9``) with one second of byo-yomi per move, so a ``genmove`` takes about
one second.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

from engine.games.go import GoState, fixed_handicap_points, point_to_vertex, vertex_to_point
from engine.search.limits import Clock
from engine.search.score import Score
from engine.search.searcher import PVLine, SearchInfo
from protocols import gtp, gtp_format, gtp_gogui, gtp_time
from protocols.gtp import play_on_instead_of_passing
from protocols.gtp_format import GtpError
from tests.process import EngineProcess

VERTEX = re.compile(r"[A-HJ-T]([1-9]|1[0-9])")
MOVE_REPLY = re.compile(r"= ([A-HJ-T]([1-9]|1[0-9])|pass|resign)")
INFO_ITEM = (
    r"info move ([A-HJ-T]\d+|pass) visits \d+ winrate \d+ prior \d+ order \d+ pv( ([A-HJ-T]\d+|pass))+"
)
INFO_LINE = re.compile(rf"{INFO_ITEM}( {INFO_ITEM})*")
KATA_ITEM = (
    r"info move ([A-HJ-T]\d+|pass) visits \d+ utility -?\d\.\d{6} winrate [01]\.\d{6} prior [01]\.\d{6} "
    r"order \d+ pv( ([A-HJ-T]\d+|pass))+"
)
KATA_LINE = re.compile(rf"{KATA_ITEM}( {KATA_ITEM})*( ownership( -?[01]\.\d{{6}})+)?")
#: Everything but the last row is white; A1 and C1 are white's two eyes (9x9).  Black has no move but
#: pass, and white has just passed: black to move has lost.
WEIGHTS = Path(__file__).resolve().parents[2] / "weights"
#: Real games that showed a fault (``tests/data/README.md``).
DATA = Path(__file__).resolve().parents[1] / "data"
LOST_FOR_BLACK_SGF = "(;GM[1]FF[4]SZ[9]KM[7.5]AW[aa:ih][bi][di:ii];W[])"


# =====================================================================================================
# Pure functions
# =====================================================================================================
class TestPreprocessAndParse:
    @pytest.mark.parametrize(
        "raw, expected",
        [
            ("name", "name"),
            ("name\r", "name"),
            ("play\tb\td4", "play b d4"),
            ("  play  b   d4  ", "play  b   d4"),
            ("na\x01me\x7f", "name"),
            ("# only a comment", ""),
            ("name # trailing comment", "name"),
            ("", ""),
            (" \t ", ""),
        ],
    )
    def test_preprocess(self, raw: str, expected: str) -> None:
        assert gtp_format.preprocess(raw) == expected

    def test_parse_command(self) -> None:
        assert gtp_format.parse_command("42 play  B\tD4") == gtp_format.Command(42, "play", ("B", "D4"))
        assert gtp_format.parse_command("genmove w") == gtp_format.Command(None, "genmove", ("w",))
        assert gtp_format.parse_command("PLAY b d4") == gtp_format.Command(None, "PLAY", ("b", "d4"))
        assert gtp_format.parse_command("7") == gtp_format.Command(7, "", ())
        assert gtp_format.parse_command("# x") is None
        assert gtp_format.parse_command("\r") is None

    def test_format_reply(self) -> None:
        assert gtp_format.format_reply(None, True, "2") == ["= 2", ""]
        assert gtp_format.format_reply(5, True) == ["=5", ""]
        assert gtp_format.format_reply(5, False, "illegal move") == ["?5 illegal move", ""]
        assert gtp_format.format_reply(None, True, "a\n\nb\n") == ["= a", "b", ""]
        assert gtp_format.format_reply(None, True, "\nboard\nrow") == ["=", "board", "row", ""]


class TestVertices:
    @pytest.mark.parametrize("size", [9, 19])
    def test_round_trip_agrees_with_the_rules(self, size: int) -> None:
        for point in range(size * size + 1):
            text = gtp_format.format_vertex(point, size)
            assert text == point_to_vertex(point, size)
            assert gtp_format.parse_vertex(text, size) == point == vertex_to_point(text, size)
            assert gtp_format.parse_vertex(text.lower(), size) == point

    def test_examples(self) -> None:
        assert gtp_format.parse_vertex("A1", 9) == 72
        assert gtp_format.parse_vertex("j9", 9) == 8
        assert gtp_format.parse_vertex("PASS", 9) == 81
        assert gtp_format.format_vertex(0, 19) == "A19"
        assert gtp_format.format_vertex(3 * 19 + 15, 19) == "Q16"

    @pytest.mark.parametrize("text", ["i5", "I5", "d", "4", "a0", "d4d", "zz", "", "resign", "d-4"])
    def test_not_a_vertex_is_a_syntax_error(self, text: str) -> None:
        with pytest.raises(GtpError, match="syntax error"):
            gtp_format.parse_vertex(text, 9)

    @pytest.mark.parametrize("text", ["k5", "a10", "T19", "z25"])
    def test_off_the_board_is_illegal(self, text: str) -> None:
        with pytest.raises(GtpError, match="illegal move"):
            gtp_format.parse_vertex(text, 9)

    def test_colours(self) -> None:
        assert [gtp_format.parse_colour(c) for c in ("b", "B", "black", "BLACK", "w", "White")] == [
            0,
            0,
            0,
            0,
            1,
            1,
        ]
        for bad in ("x", "", "bl", "0"):
            with pytest.raises(GtpError):
                gtp_format.parse_colour(bad)


class TestNumbersAndScores:
    def test_numbers(self) -> None:
        assert gtp_format.parse_float("6.5") == 6.5
        assert gtp_format.parse_float("-3") == -3.0
        for bad in ("abc", "nan", "inf", "", "6,5"):
            with pytest.raises(GtpError, match="syntax error"):
                gtp_format.parse_float(bad)
        with pytest.raises(GtpError, match="unacceptable size"):
            gtp_format.parse_int("abc", "unacceptable size")

    def test_format_score(self) -> None:
        assert gtp_format.format_score(2.5) == "B+2.5"
        assert gtp_format.format_score(-31.0) == "W+31"
        assert gtp_format.format_score(0.0) == "0"
        assert gtp_format.format_score(-0.5) == "W+0.5"


class TestBoardAndAnalysis:
    def test_board_lines(self) -> None:
        board = [[0] * 3 for _ in range(3)]
        board[0][0], board[2][2] = 1, 2
        lines = gtp_format.format_board(board, 3, 1, 7.5)
        assert lines == [
            "   A B C",
            " 3 X . . 3",
            " 2 . . . 2",
            " 1 . . O 1",
            "   A B C",
            "white to move, komi 7.5",
        ]
        assert all(line.strip() for line in lines)

    def test_analysis_line(self) -> None:
        lines = [
            PVLine(30, Score(0), 12, 0.2, 0.15, [30, 40, 50]),
            PVLine(81, Score(0), 3, -1.0, 0.0123, [81]),
            PVLine(0, Score(0), 0, 0.0, 0.5, [0]),
        ]
        info = SearchInfo(1, 1, 15, 15, 10, 1500, 0, lines)
        text = gtp_format.format_analysis(info, 9)
        assert text == (
            "info move D6 visits 12 winrate 6000 prior 1500 order 0 pv D6 E5 F4 "
            "info move pass visits 3 winrate 0 prior 123 order 1 pv pass"
        )
        assert INFO_LINE.fullmatch(text)
        assert gtp_format.format_analysis(SearchInfo(0, 0, 0, 0, 0, 0, 0, []), 9) == ""

    @pytest.mark.parametrize(
        "args, colour, interval",
        [
            ((), None, 1.0),
            (("b",), 0, 1.0),
            (("W", "50"), 1, 0.5),
            (("10",), None, 0.1),
            (("0",), None, 1.0),
            (("white", "interval", "25"), 1, 0.25),
        ],
    )
    def test_analyze_args(self, args: tuple[str, ...], colour: int | None, interval: float) -> None:
        assert gtp_format.parse_analyze_args(args) == gtp_format.AnalyzeRequest(colour, interval)
        assert gtp_format.parse_analyze_args(args, kata=True) == gtp_format.AnalyzeRequest(colour, interval)

    def test_analyze_move_counts_and_kata_switches(self) -> None:
        parse = gtp_format.parse_analyze_args
        assert parse(("b", "20", "minmoves", "3", "maxmoves", "5")) == gtp_format.AnalyzeRequest(0, 0.2, 3, 5)
        kata = parse(("w", "10", "ownership", "true", "pvVisits", "false", "rootInfo", "TRUE"), kata=True)
        assert kata == gtp_format.AnalyzeRequest(1, 0.1, ownership=True)
        assert parse(("ownership", "false"), kata=True) == gtp_format.AnalyzeRequest(None, 1.0)
        with pytest.raises(GtpError, match="syntax error"):
            parse(("ownership", "true"))  # lz-analyze has no ownership

    @pytest.mark.parametrize(
        "args",
        [("x",), ("b", "w"), ("interval",), ("10", "avoid", "b", "d4"), ("ownership",), ("ownership", "yes")],
    )
    def test_analyze_bad_args(self, args: tuple[str, ...]) -> None:
        with pytest.raises(GtpError, match="syntax error"):
            gtp_format.parse_analyze_args(args, kata=True)

    def test_kata_analysis_line(self) -> None:
        lines = [
            PVLine(30, Score(0), 12, 0.2, 0.15, [30, 40, 50]),
            PVLine(81, Score(0), 3, -1.0, 0.0123, [81]),
            PVLine(0, Score(0), 0, 0.0, 0.5, [0]),
        ]
        info = SearchInfo(1, 1, 15, 15, 10, 1500, 0, lines)
        own = np.linspace(-1.0, 1.0, 81)
        text = gtp_format.format_kata_analysis(info, 9, own)
        moves, owners = text.split(" ownership ")
        assert moves == (
            "info move D6 visits 12 utility 0.200000 winrate 0.600000 prior 0.150000 order 0 pv D6 E5 F4 "
            "info move pass visits 3 utility -1.000000 winrate 0.000000 prior 0.012300 order 1 pv pass"
        )
        assert [float(v) for v in owners.split()] == pytest.approx(own, abs=1e-6)
        assert KATA_LINE.fullmatch(text)
        assert gtp_format.format_kata_analysis(info, 9) == moves
        assert gtp_format.format_kata_analysis(SearchInfo(0, 0, 0, 0, 0, 0, 0, []), 9, own) == ""
        # minmoves lists the unsearched move too; maxmoves cuts the list (either format)
        assert gtp_format.format_kata_analysis(info, 9, min_moves=3).count("info move") == 3
        assert gtp_format.format_analysis(info, 9, min_moves=3).endswith(
            "info move A9 visits 0 winrate 5000 prior 5000 order 2 pv A9"
        )
        assert gtp_format.format_analysis(info, 9, max_moves=1).count("info move") == 1


class TestHandicapHelpers:
    @pytest.mark.parametrize(
        "size, count", [(9, 2), (9, 9), (19, 4), (19, 9), (19, 12), (9, 20), (5, 3), (2, 3)]
    )
    def test_free_handicap_points(self, size: int, count: int) -> None:
        points = gtp_format.free_handicap_points(count, size, lambda n: fixed_handicap_points(n, size))
        assert len(points) == count == len(set(points))
        assert all(0 <= p < size * size for p in points)
        if size >= 7:
            first = min(count, 9)
            assert set(fixed_handicap_points(first, size)) <= set(points)


class TestNetworkSizes:
    def test_shipped_and_given_networks(self) -> None:
        assert gtp.network_sizes(None) == [9, 19]
        assert gtp.network_sizes(str(WEIGHTS / "go9.onnx")) == [9]
        assert gtp.network_sizes(str(WEIGHTS / "chess.onnx")) == [9, 19]  # not Go: the shipped ones
        assert gtp.network_sizes("/nonexistent.onnx") == [9, 19]


class TestTimeKeeper:
    def test_no_time_control(self) -> None:
        keeper = gtp_time.TimeKeeper()
        assert keeper.clock(0) is None
        keeper.set_gtp(0, 1, 0)  # byo-yomi time but no stones: no limit
        assert keeper.clock(1) is None

    def test_absolute(self) -> None:
        keeper = gtp_time.TimeKeeper()
        keeper.set_gtp(300, 0, 0)
        assert keeper.clock(0) == Clock(time_ms=300_000)
        keeper.spent(0, 10)
        assert keeper.clock(0) == Clock(time_ms=290_000)
        assert keeper.clock(1) == Clock(time_ms=300_000)

    def test_canadian(self) -> None:
        keeper = gtp_time.TimeKeeper()
        keeper.set_gtp(0, 30, 5)  # no main time: byo-yomi from the first move
        assert keeper.clock(0) == Clock(time_ms=30_000, moves_to_go=5)
        keeper.spent(0, 2.0)
        assert keeper.clock(0) == Clock(time_ms=28_000, moves_to_go=4)
        keeper.time_left(0, 12, 3)  # 12 s for the last 3 stones of the period
        assert keeper.clock(0) == Clock(time_ms=12_000, moves_to_go=3)
        keeper.time_left(1, 100, 0)  # white still in main time
        assert keeper.clock(1) == Clock(time_ms=100_000, byoyomi_ms=6_000)
        for _ in range(3):
            keeper.spent(0, 1.0)
        assert keeper.clock(0) == Clock(time_ms=30_000, moves_to_go=5)  # a new period

    def test_one_second_per_move(self) -> None:
        keeper = gtp_time.TimeKeeper()
        keeper.set_gtp(0, 1, 1)
        for _ in range(3):
            assert keeper.clock(0) == Clock(time_ms=1_000, moves_to_go=1)
            keeper.spent(0, 0.9)

    def test_main_time_running_out(self) -> None:
        keeper = gtp_time.TimeKeeper()
        keeper.set_gtp(10, 20, 2)
        keeper.spent(1, 12.0)  # 2 s of this move were byo-yomi: the first stone of the period
        assert keeper.clock(1) == Clock(time_ms=18_000, moves_to_go=1)
        keeper.spent(1, 5.0)
        assert keeper.clock(1) == Clock(time_ms=20_000, moves_to_go=2)

    def test_kgs_byoyomi(self) -> None:
        keeper = gtp_time.TimeKeeper()
        keeper.set("byoyomi", 60, 10, 5)
        assert keeper.clock(0) == Clock(time_ms=60_000, byoyomi_ms=10_000)
        keeper.time_left(0, 8, 3)  # 8 s left in the current period, 3 periods
        assert keeper.clock(0) == Clock(time_ms=0, byoyomi_ms=8_000)

    def test_time_left_without_settings(self) -> None:
        keeper = gtp_time.TimeKeeper()
        keeper.time_left(0, 20, 4)
        assert keeper.clock(0) == Clock(time_ms=20_000, moves_to_go=4)
        assert keeper.clock(1) == Clock(time_ms=20_000)  # assumed alike until told


# =====================================================================================================
# Transcripts against the real program
# =====================================================================================================
def _replayed_go(sgf: Path, moves: int) -> GoState:
    """The first ``moves`` moves of the game in ``sgf`` on Tabula's board (each as ``play`` takes it)."""
    from protocols.sgf import read_game

    game = read_game(sgf.read_text())
    state = GoState.from_text(f"{game.size} 7.5 b " + "/".join(["." * game.size] * game.size))
    for colour, point in game.moves[:moves]:
        state.play_as(
            colour, game.size**2 if point is None else point[1] * game.size + point[0], superko=False
        )
    return state


class Gtp:
    """A GTP conversation with a `tabula` process: ``ask`` returns the reply lines."""

    def __init__(self, proc: EngineProcess) -> None:
        self.proc = proc

    def ask(self, command: str, timeout: float = 30.0) -> list[str]:
        """Send ``command`` and read its reply up to (not including) the empty line that ends it."""
        self.proc.send(command)
        lines = self.proc.read_until(lambda line: line == "", timeout)
        return lines[:-1]

    def ask_reply(self, timeout: float = 30.0) -> list[str]:
        """Read the next reply (a command was sent already)."""
        return self.proc.read_until(lambda line: line == "", timeout)[:-1]

    def one(self, command: str, timeout: float = 30.0) -> str:
        reply = self.ask(command, timeout)
        assert len(reply) == 1, reply
        return reply[0]

    def board(self) -> list[str]:
        return self.ask("showboard")

    def alive(self) -> None:
        """The engine still answers."""
        assert self.one("protocol_version") == "= 2"

    def check_stdout(self) -> None:
        raw = bytes(self.proc.raw_stdout)
        assert b"\r" not in raw
        assert raw == b"" or raw.endswith(b"\n")


@pytest.fixture
def go9(engine_process) -> Gtp:
    conversation = Gtp(engine_process("--boardsize", "9", "gtp"))
    assert conversation.one("time_settings 0 1 1") == "="  # one second per move
    return conversation


class TestRequiredCommands:
    def test_administrative(self, go9: Gtp) -> None:
        assert go9.one("protocol_version") == "= 2"
        assert go9.one("name") == "= Tabula"
        assert re.fullmatch(r"= \S+", go9.one("version"))
        commands = go9.ask("list_commands")
        commands[0] = commands[0].removeprefix("= ")
        required = {
            "protocol_version",
            "name",
            "version",
            "known_command",
            "list_commands",
            "quit",
            "boardsize",
            "clear_board",
            "komi",
            "play",
            "genmove",
        }
        expected = {
            "undo",
            "time_settings",
            "time_left",
            "kgs-time_settings",
            "final_score",
            "final_status_list",
            "showboard",
            "fixed_handicap",
            "place_free_handicap",
            "set_free_handicap",
            "kgs-genmove_cleanup",
            "loadsgf",
            "lz-analyze",
            "kata-analyze",
            "lz-genmove_analyze",
            "kata-genmove_analyze",
            "kata-set-rules",
            "kata-get-rules",
            "kgs-rules",
            "gogui-analyze_commands",
        }
        assert required | expected <= set(commands)
        assert go9.one("known_command play") == "= true"
        assert go9.one("known_command lz-analyze") == "= true"
        assert go9.one("known_command PLAY") == "= false"
        assert go9.one("known_command xyzzy") == "= false"
        go9.check_stdout()

    def test_boardsize(self, go9: Gtp) -> None:
        go9.one("play b e5")
        for bad in ("0", "30", "abc", "13", "-9", "9.5"):
            assert go9.one(f"boardsize {bad}") == "? unacceptable size"
        assert "X" in "".join(go9.board())  # a refused size keeps the game
        assert go9.one("boardsize 19") == "="
        assert go9.board()[1].startswith("   A B C D E F G H J K L M N O P Q R S T")
        assert go9.one("boardsize 9") == "="
        board = go9.board()
        assert board[1] == "   A B C D E F G H J" and "X" not in "".join(board)
        assert go9.one("boardsize") == "? syntax error"
        go9.alive()

    def test_boardsize_follows_the_weights_flag(self, engine_process) -> None:
        conversation = Gtp(engine_process("--weights", str(WEIGHTS / "go9.onnx"), "gtp"))
        assert conversation.board()[1] == "   A B C D E F G H J"  # --boardsize 19 has no network here
        assert conversation.one("boardsize 19") == "? unacceptable size"
        assert conversation.one("boardsize 9") == "="
        assert conversation.one("time_settings 0 1 1") == "="
        assert MOVE_REPLY.fullmatch(conversation.one("genmove b"))
        assert not any("uniform priors" in line for line in conversation.proc.stderr)

    def test_play_and_clear_board(self, go9: Gtp) -> None:
        assert go9.one("play b d4") == "="
        assert go9.one("play B E5") == "="  # case-insensitive colour and vertex; two black moves in a row
        assert go9.one("play white c3") == "="
        assert go9.one("play w pass") == "="
        board = go9.board()
        assert board[0] == "="
        assert board[7] == " 4 . . . X . . . . . 4"  # row k is line 11 - k
        assert board[6] == " 5 . . . . X . . . . 5"
        assert board[8] == " 3 . . O . . . . . . 3"
        assert board[-1] == "black to move, komi 7.5"
        assert go9.one("clear_board") == "="
        assert "X" not in "".join(go9.board()[2:-2])
        go9.check_stdout()

    def test_komi(self, go9: Gtp) -> None:
        assert go9.one("komi 6.5") == "="
        assert go9.one("komi -3") == "="
        assert go9.one("komi 0") == "="
        assert go9.one("komi abc") == "? syntax error"
        assert go9.one("komi") == "? syntax error"
        assert go9.board()[-1] == "black to move, komi 0"
        assert go9.one("final_score") == "= 0"  # empty board, no komi
        assert go9.one("play b e5") == "="
        assert go9.one("komi 0.5") == "="  # komi changes keep the board
        assert go9.one("final_score") == "= B+80.5"

    def test_komi_differing_from_the_network_warns_on_stderr(self, go9: Gtp) -> None:
        assert go9.one("komi 5.5") == "="
        assert MOVE_REPLY.fullmatch(go9.one("genmove b"))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any("komi 5.5 differs" in line for line in go9.proc.stderr):
            time.sleep(0.05)
        assert any("komi 5.5 differs from the komi 7.5" in line for line in go9.proc.stderr)
        go9.check_stdout()  # the warning went to stderr only

    def test_genmove_either_colour(self, go9: Gtp) -> None:
        first = go9.one("genmove b")
        assert MOVE_REPLY.fullmatch(first) and first != "= resign"
        second = go9.one("genmove b")  # black again: searched with black to move
        assert MOVE_REPLY.fullmatch(second)
        assert second != first or second == "= pass"
        third = go9.one("genmove w")
        assert MOVE_REPLY.fullmatch(third)
        board = "\n".join(go9.board())
        stones = sum(row.count("X") + row.count("O") for row in board.split("\n")[2:11])
        passes = [first, second, third].count("= pass")
        assert stones == 3 - passes
        assert go9.one("genmove x") == "? syntax error"
        assert go9.one("genmove") == "? syntax error"
        go9.alive()

    def test_genmove_respects_time_left(self, go9: Gtp) -> None:
        assert go9.one("time_left b 2 1") == "="  # two seconds for one stone
        start = time.monotonic()
        assert MOVE_REPLY.fullmatch(go9.one("genmove b"))
        assert time.monotonic() - start < 2.0

    def test_protocol_detected_from_the_first_line(self, engine_process) -> None:
        conversation = Gtp(engine_process("--boardsize", "9"))  # no subcommand: auto-detection
        assert conversation.one("1 name") == "=1 Tabula"  # the first line is answered too
        assert conversation.one("protocol_version") == "= 2"

    def test_quit_with_id(self, engine_process) -> None:
        conversation = Gtp(engine_process("gtp"))
        assert conversation.one("3 quit") == "=3"
        assert conversation.proc.proc.wait(timeout=10) == 0
        conversation.check_stdout()

    def test_eof_is_quit(self, engine_process) -> None:
        proc = engine_process("--boardsize", "9", "gtp")
        conversation = Gtp(proc)
        assert conversation.one("play b e5") == "="
        assert proc.proc.stdin is not None
        proc.proc.stdin.close()
        assert proc.proc.wait(timeout=10) == 0
        assert b"Traceback" not in "".join(proc.stderr).encode()


class TestBadInput:
    def test_line_preprocessing(self, go9: Gtp) -> None:
        assert go9.one("name\r") == "= Tabula"
        go9.proc.send("# a comment line")
        go9.proc.send("")
        go9.proc.send("   ")
        go9.proc.send("\t")
        assert go9.one("name # a trailing comment") == "= Tabula"  # nothing was answered in between
        assert go9.one("play\tb\td4") == "="
        assert go9.one("play  w   e5 ") == "="
        assert go9.one("na\x01me") == "= Tabula"
        assert go9.one("42 name") == "=42 Tabula"
        assert go9.one("7 PLAY b d4") == "?7 unknown command"
        assert go9.one("8 play b i3") == "?8 syntax error"
        assert go9.one("9") == "?9 syntax error"
        go9.check_stdout()

    def test_unknown_commands(self, go9: Gtp) -> None:
        assert go9.one("PLAY b d4") == "? unknown command"
        assert go9.one("xyzzy 1 2") == "? unknown command"
        assert go9.one("Name") == "? unknown command"
        assert "X" not in "".join(go9.board()[2:-2])
        go9.alive()

    def test_bad_vertices_and_colours(self, go9: Gtp) -> None:
        assert go9.one("play b i5") == "? syntax error"  # no column I
        assert go9.one("play b I5") == "? syntax error"
        assert go9.one("play b k5") == "? illegal move"  # off the 9x9 board
        assert go9.one("play b a10") == "? illegal move"
        assert go9.one("play b a0") == "? syntax error"
        assert go9.one("play x d4") == "? syntax error"
        assert go9.one("play b") == "? syntax error"
        assert go9.one("play b d4 d5") == "? syntax error"
        assert "X" not in "".join(go9.board()[2:-2])
        go9.alive()

    def test_occupied_suicide_ko_keep_the_board(self, go9: Gtp) -> None:
        assert go9.one("play b d4") == "="
        before = go9.board()
        assert go9.one("play w d4") == "? illegal move"  # occupied
        assert go9.one("play b D4") == "? illegal move"
        assert go9.board() == before
        # suicide: white A1 inside black A2 B1
        assert go9.one("play b a2") == "="
        assert go9.one("play b b1") == "="
        before = go9.board()
        assert go9.one("play w a1") == "? illegal move"
        assert go9.board() == before
        # ko: black E4 takes white D4 (inside black C4 D5 D3); white retaking at once repeats the position
        go9.one("clear_board")
        for move in ["b c4", "w d4", "b d5", "w e5", "b d3", "w e3", "b h9", "w f4", "b e4"]:
            assert go9.one(f"play {move}") == "=", move
        board = go9.board()
        assert board[7] == " 4 . . X . X O . . . 4"  # black E4 captured D4
        assert go9.one("play w d4") == "? illegal move"  # immediate retake: ko
        assert go9.board() == board
        assert go9.one("play w j1") == "="  # a ko threat elsewhere ...
        assert go9.one("play b j2") == "="
        assert go9.one("play w d4") == "="  # ... then the retake is legal
        go9.alive()

    def test_undo(self, go9: Gtp) -> None:
        assert go9.one("undo") == "? cannot undo"
        empty = go9.board()
        assert go9.one("play b e5") == "="
        assert go9.one("play w d4") == "="
        assert go9.one("undo") == "="
        assert go9.one("undo") == "="
        assert go9.board() == empty
        assert go9.one("undo") == "? cannot undo"
        assert MOVE_REPLY.fullmatch(go9.one("genmove b"))
        assert go9.one("undo") == "="
        assert go9.board() == empty
        go9.alive()


class TestTimeCommands:
    def test_time_settings(self, go9: Gtp) -> None:
        assert go9.one("time_settings 300 30 5") == "="
        assert go9.one("time_settings 0 1 0") == "="  # no limit
        assert go9.one("time_settings 10 0 0") == "="  # absolute
        assert go9.one("time_settings a b c") == "? syntax error"
        assert go9.one("time_settings 1 2") == "? syntax error"
        assert go9.one("time_settings -1 0 0") == "? syntax error"
        assert go9.one("time_left b 10 0") == "="
        assert go9.one("time_left W 5 2") == "="
        assert go9.one("time_left x 5 2") == "? syntax error"
        assert go9.one("time_left b five 2") == "? syntax error"
        assert go9.one("kgs-time_settings none") == "="
        assert go9.one("kgs-time_settings absolute 600") == "="
        assert go9.one("kgs-time_settings byoyomi 600 30 5") == "="
        assert go9.one("kgs-time_settings canadian 600 30 25") == "="
        assert go9.one("kgs-time_settings byoyomi 600") == "? syntax error"
        assert go9.one("kgs-time_settings fischer 600 10") == "? syntax error"
        assert go9.one("kgs-time_settings") == "? syntax error"
        go9.alive()


class TestEndOfGame:
    def test_final_score_and_status(self, go9: Gtp) -> None:
        assert go9.one("final_score") == "= W+7.5"
        assert go9.one("play b e5") == "="
        assert go9.one("final_score") == "= B+73.5"
        assert go9.one("play w d4") == "="
        assert go9.one("final_score") == "= W+7.5"  # no empty point reaches only one colour
        assert go9.one("final_status_list alive") in ("= E5 D4", "= D4 E5")
        assert go9.one("final_status_list dead") == "="
        assert go9.one("final_status_list seki") == "="
        assert go9.one("final_status_list sleeping") == "? syntax error"

    @staticmethod
    def _walls_with_dead_stones(gtp: Gtp) -> None:
        """Black wall on column C, white walls on columns D and G, a dead white stone at A5 in black's
        area and a dead black stone at H5 in white's."""
        for row in range(1, 10):
            for move in (f"b C{row}", f"w D{row}", f"w G{row}"):
                assert gtp.one(f"play {move}") == "="
        assert gtp.one("play w A5") == "="
        assert gtp.one("play b H5") == "="

    def test_area_scoring_removes_dead_stones(self, go9: Gtp) -> None:
        self._walls_with_dead_stones(go9)
        # black A-C (27 points) against white D-J (54), komi 7.5
        assert go9.one("final_score", timeout=60) == "= W+34.5"
        assert go9.one("final_status_list dead", timeout=60) == "= A5 H5"
        alive = go9.one("final_status_list alive", timeout=60).split()[1:]
        assert len(alive) == 27 and "A5" not in alive and "C5" in alive and "G5" in alive
        assert go9.one("final_status_list seki", timeout=60) == "="

    def test_tromp_taylor_scoring_counts_every_stone(self, engine_process) -> None:
        gtp = Gtp(engine_process("--boardsize", "9", "--scoring", "tromp-taylor", "gtp"))
        self._walls_with_dead_stones(gtp)
        # the stones at A5 and H5 count, and the regions they touch are nobody's: 10 to 37 points
        assert gtp.one("final_score") == "= W+34.5"
        assert gtp.one("final_status_list dead") == "="
        assert len(gtp.one("final_status_list alive").split()) == 1 + 29

    def test_resign_and_loadsgf(self, go9: Gtp, tmp_path: Path) -> None:
        sgf = tmp_path / "lost.sgf"
        sgf.write_text(LOST_FOR_BLACK_SGF)
        assert go9.one(f"loadsgf {sgf}") == "="
        board = go9.board()
        assert board[-3] == " 1 . O . O O O O O O 1" and board[-1] == "black to move, komi 7.5"
        assert go9.one("final_score") == "= W+88.5"
        # Without a clock (a managed clock plays an only move at once, unsearched) the search proves
        # that the only legal move, pass, ends the game lost.
        assert go9.one("kgs-time_settings none") == "="
        assert go9.one("genmove b") == "= resign"
        assert go9.board() == board  # resigning plays nothing
        assert go9.one("kgs-genmove_cleanup b") == "= pass"
        missing = go9.one("loadsgf /nonexistent/file.sgf")
        assert missing == "? cannot load file /nonexistent/file.sgf: no such file"
        bad = tmp_path / "bad.sgf"
        bad.write_text("(;GM[1]SZ[9];B[ee]")
        assert (
            go9.one(f"loadsgf {bad}")
            == f"? cannot load file {bad}: unbalanced parentheses: the game tree is not closed"
        )
        big = tmp_path / "big.sgf"
        big.write_text("(;GM[1]SZ[13];B[ee])")
        assert go9.one(f"loadsgf {big}") == f"? unacceptable size: {big} is 13x13 (sizes: 9, 19)"
        assert go9.board() == [*board[:-1], "white to move, komi 7.5"]  # failed loads keep the position
        go9.alive()

    def test_an_opponents_superko_repetition_is_played_and_the_game_goes_on(self, go9: Gtp) -> None:
        """A real game (``tests/data/go9-superko-repeat.sgf``): GNU Go's 95th move, B J4, repeats an
        earlier position.  GNU Go and GoGui allow it, so ``play`` accepts it (the game ended there
        when Tabula refused it), ``loadsgf`` loads the whole record, and ``genmove`` answers with a move
        that repeats nothing."""
        sgf = DATA / "go9-superko-repeat.sgf"
        assert go9.one(f"loadsgf {sgf} 95") == "="  # before move 95
        assert go9.one("play b J4") == "="
        assert go9.ask("showboard")[-1] == "white to move, komi 7.5"
        reply = go9.one("genmove w")
        assert MOVE_REPLY.fullmatch(reply), reply
        after_j4 = _replayed_go(sgf, 94)
        after_j4.play_as(0, after_j4.vertex_to_point("J4"), superko=False)
        vertex = reply.removeprefix("= ")
        if vertex not in ("pass", "resign"):  # Tabula's own move repeats no earlier position
            assert after_j4.is_legal_for(1, after_j4.vertex_to_point(vertex), superko=True), vertex
        assert go9.one("undo") == "=" and go9.one("undo") == "="  # the genmove, then J4
        assert go9.one("play b J4") == "="
        assert go9.one(f"loadsgf {sgf}") == "="  # the whole record, J4 included
        assert go9.one("play w pass") == "="
        assert go9.one("play b J4") == "? illegal move"  # occupied: the basic rules still hold
        go9.alive()

    def test_no_resignation_with_threshold_zero(self, engine_process, tmp_path: Path) -> None:
        conversation = Gtp(engine_process("--boardsize", "9", "--resign-threshold", "0", "gtp"))
        sgf = tmp_path / "lost.sgf"
        sgf.write_text(LOST_FOR_BLACK_SGF)
        assert conversation.one(f"loadsgf {sgf}") == "="
        assert conversation.one("genmove b") == "= pass"

    def test_loadsgf_move_number(self, go9: Gtp, tmp_path: Path) -> None:
        sgf = tmp_path / "game.sgf"
        sgf.write_text("(;GM[1]FF[4]SZ[9]KM[6.5]HA[2]AB[cc][gg];W[ee];B[dd](;W[ff];B[])(;W[aa]))")
        assert go9.one(f"loadsgf {sgf} 2") == "="  # the position before move 2
        board = go9.board()
        assert board[4] == " 7 . . X . . . . . . 7"
        assert board[6] == " 5 . . . . O . . . . 5"
        assert board[-1] == "black to move, komi 6.5"
        assert go9.one(f"loadsgf {sgf}") == "="  # the whole main line (W F4, then B passes)
        board = go9.board()
        assert board[5] == " 6 . . . X . . . . . 6" and board[7] == " 4 . . . . . O . . . 4"
        assert board[-1] == "white to move, komi 6.5"
        assert [go9.one("undo") for _ in range(4)] == ["="] * 4  # W E5, B D6, W F4, B pass
        assert go9.one("undo") == "? cannot undo"  # the setup stones are not moves
        assert go9.one("loadsgf") == "? syntax error"
        assert go9.one(f"loadsgf {sgf} x") == "? syntax error"

    def test_genmove_never_fills_its_own_true_eyes(self, engine_process, tmp_path: Path) -> None:
        # 19x19: black's ten top rows with 36 true eyes (rows 18, 16, 14, 12, even columns), white's
        # nine bottom rows with 36 of its own; komi 30.5, so black is behind by 11.5 and passing loses
        # (white passes back).  Black's legal moves are its eyes and pass: the search, seeing the pass
        # lose, fills an eye with --fill-eyes; by default (--keep-eyes) it may only pass.
        columns = "abcdefghijklmnopqrs"
        stones: tuple[list[str], list[str]] = ([], [])
        for r in range(19):
            for c in range(19):
                if not (r % 2 == 1 and c % 2 == 1 and r != 9):  # not an eye
                    stones[r > 9].append(f"[{columns[c]}{columns[r]}]")
        sgf = tmp_path / "eyes.sgf"
        sgf.write_text(f"(;GM[1]FF[4]SZ[19]KM[30.5]AB{''.join(stones[0])}AW{''.join(stones[1])}PL[B])")
        replies = {}
        for flag in ("--keep-eyes", "--fill-eyes"):
            gtp = Gtp(engine_process("--boardsize", "19", "--resign-threshold", "0", flag, "gtp"))
            assert gtp.one(f"loadsgf {sgf}") == "="
            assert gtp.one("final_score") == "= W+11.5"
            replies[flag] = gtp.one("genmove b", timeout=60).removeprefix("= ")
            gtp.alive()
        assert replies["--keep-eyes"] == "pass"
        point = replies["--fill-eyes"]
        assert VERTEX.fullmatch(point), point  # an eye: black has no other point to play
        row, column = 19 - int(point[1:]), "ABCDEFGHJKLMNOPQRST".index(point[0])
        assert row % 2 == 1 and column % 2 == 1 and row < 9

    def test_genmove_cleanup_does_not_pass_on_an_open_board(self, go9: Gtp) -> None:
        assert go9.one("play w pass") == "="
        reply = go9.one("kgs-genmove_cleanup b")
        assert VERTEX.fullmatch(reply.removeprefix("= ")), reply

    def test_moves_after_two_passes(self, go9: Gtp) -> None:
        """KGS resumes a finished game with kgs-genmove_cleanup when the players disagree."""
        for move in ("b e5", "w pass", "b pass"):
            assert go9.one(f"play {move}") == "="
        assert go9.one("final_score") == "= B+73.5"
        reply = go9.one("kgs-genmove_cleanup w")
        assert VERTEX.fullmatch(reply.removeprefix("= ")), reply
        assert MOVE_REPLY.fullmatch(go9.one("genmove b"))


class TestHandicap:
    def test_fixed_handicap(self, go9: Gtp) -> None:
        assert go9.one("fixed_handicap 1") == "? invalid number of stones"
        assert go9.one("fixed_handicap 10") == "? invalid number of stones"
        assert go9.one("fixed_handicap x") == "? syntax error"
        assert go9.one("fixed_handicap 2") == "= C3 G7"
        board = go9.board()
        assert board[-1] == "white to move, komi 7.5"
        assert go9.one("fixed_handicap 2") == "? board not empty"
        assert go9.one("undo") == "? cannot undo"
        assert go9.one("clear_board") == "="
        assert go9.one("fixed_handicap 9") == "= C3 G7 C7 G3 C5 G5 E3 E7 E5"
        assert go9.one("clear_board") == "="
        assert go9.one("play b e5") == "="
        assert go9.one("fixed_handicap 2") == "? board not empty"
        go9.alive()

    def test_place_free_handicap(self, go9: Gtp) -> None:
        assert go9.one("place_free_handicap 1") == "? invalid number of stones"
        assert go9.one("place_free_handicap 81") == "? invalid number of stones"
        reply = go9.one("place_free_handicap 3")
        vertices = reply.removeprefix("= ").split()
        assert len(set(vertices)) == 3 and all(VERTEX.fullmatch(v) for v in vertices)
        assert go9.one("place_free_handicap 3") == "? board not empty"
        assert go9.one("clear_board") == "="
        assert len(go9.one("place_free_handicap 12").split()) == 13

    def test_set_free_handicap(self, go9: Gtp) -> None:
        assert go9.one("set_free_handicap a1") == "? bad vertex list"
        assert go9.one("set_free_handicap a1 a1") == "? bad vertex list"
        assert go9.one("set_free_handicap a1 pass") == "? bad vertex list"
        assert go9.one("set_free_handicap a1 i5") == "? bad vertex list"
        assert go9.one("set_free_handicap A1 j9 e5") == "="
        board = go9.board()
        assert board[2] == " 9 . . . . . . . . X 9" and board[-1] == "white to move, komi 7.5"
        assert go9.one("set_free_handicap c3 d4") == "? board not empty"
        assert MOVE_REPLY.fullmatch(go9.one("genmove w"))


class TestAnalysis:
    def test_stream_stops_at_any_input(self, go9: Gtp) -> None:
        assert go9.one("play b e5") == "="
        go9.proc.send("5 lz-analyze w 10")
        assert go9.proc.read_line(30) == "=5"
        first = go9.proc.read_line(30)
        assert INFO_LINE.fullmatch(first), first
        go9.proc.send("name")
        stream = go9.proc.read_until(lambda line: line == "", 30)
        assert all(INFO_LINE.fullmatch(line) for line in stream[:-1]), stream
        assert go9.ask_reply() == ["= Tabula"]
        # a blank line also ends the stream, and is otherwise ignored
        go9.proc.send("lz-analyze 10")
        assert go9.proc.read_line(30) == "="
        assert INFO_LINE.fullmatch(go9.proc.read_line(30))
        go9.proc.send("")
        go9.proc.read_until(lambda line: line == "", 30)
        assert go9.one("name") == "= Tabula"
        board = go9.board()
        assert board[-1] == "white to move, komi 7.5"  # analysis plays nothing
        go9.check_stdout()

    def test_kata_analyze_with_ownership(self, go9: Gtp) -> None:
        for move in ("b e5", "w c3"):
            assert go9.one(f"play {move}") == "="
        go9.proc.send("7 kata-analyze b 10 ownership true")
        assert go9.proc.read_line(30) == "=7"
        first = go9.proc.read_line(30)
        assert KATA_LINE.fullmatch(first), first
        owners = [float(v) for v in first.split(" ownership ")[1].split()]
        assert len(owners) == 81 and all(-1.0 <= v <= 1.0 for v in owners)
        # row by row from A9: E5 (black's stone) is index 4 * 9 + 4, C3 (white's) 6 * 9 + 2; black's view
        assert owners[4 * 9 + 4] > 0.0 > owners[6 * 9 + 2]
        go9.proc.send("play b g7")  # ends the stream (then played): white to move
        stream = go9.proc.read_until(lambda line: line == "", 30)
        assert all(KATA_LINE.fullmatch(line) for line in stream[:-1]), stream
        assert go9.ask_reply() == ["="]
        go9.proc.send("kata-analyze 10 ownership true")  # the side to move: white
        assert go9.proc.read_line(30) == "="
        white = [float(v) for v in go9.proc.read_line(30).split(" ownership ")[1].split()]
        assert white[4 * 9 + 4] < 0.0 < white[6 * 9 + 2]  # white's view
        go9.proc.send("name")
        go9.proc.read_until(lambda line: line == "", 30)
        assert go9.ask_reply() == ["= Tabula"]
        assert go9.one("kata-analyze 10 ownership maybe") == "? syntax error"
        assert go9.one("known_command kata-analyze") == "= true"
        go9.check_stdout()

    def test_analysis_of_the_other_colour_and_commands_after(self, go9: Gtp) -> None:
        assert go9.one("play b e5") == "="
        before = go9.board()
        go9.proc.send("lz-analyze b 10")  # black analysed although white is to move
        assert go9.proc.read_line(30) == "="
        assert INFO_LINE.fullmatch(go9.proc.read_line(30))
        go9.proc.send("play w d4")
        go9.proc.read_until(lambda line: line == "", 30)
        assert go9.ask_reply() == ["="]
        assert go9.board()[-1] == "black to move, komi 7.5"
        assert go9.board() != before
        assert MOVE_REPLY.fullmatch(go9.one("genmove b"))
        assert go9.one("lz-analyze x") == "? syntax error"  # a bad request starts no stream
        go9.alive()

    def test_quit_and_eof_during_analysis(self, engine_process) -> None:
        for end in ("quit", "eof"):
            proc = engine_process("--boardsize", "9", "gtp")
            conversation = Gtp(proc)
            proc.send("lz-analyze 10")
            assert proc.read_line(30) == "="
            assert INFO_LINE.fullmatch(proc.read_line(30))
            if end == "quit":
                proc.send("quit")
                proc.read_until(lambda line: line == "", 30)
                assert conversation.ask_reply() == ["="]
            else:
                assert proc.proc.stdin is not None
                proc.proc.stdin.close()
                proc.read_until(lambda line: line == "", 30)
            assert proc.proc.wait(timeout=10) == 0
            conversation.check_stdout()


def _parses_as(kind: str, lines: list[str], size: int) -> bool:
    """Whether a GTP answer (its lines, ``=`` removed) reads as GoGui's analyze type ``kind``."""
    rows = [line.split() for line in lines]
    if kind == "dboard":
        return len(rows) == size and all(
            len(row) == size and all(-1.0 <= float(v) <= 1.0 for v in row) for row in rows
        )
    if kind == "sboard":
        return len(rows) == size and all(len(row) == size for row in rows)
    if kind == "plist":
        return all(VERTEX.fullmatch(word) for row in rows for word in row)
    if kind == "string":
        return True
    raise AssertionError(f"no parser for {kind}")


class TestGuiExtensions:
    """GoGui's analyze menu, the ``*-genmove_analyze`` streams (Lizzie, Sabaki) and the rules commands
    (KataGo's ``kata-set-rules``, kgsGtp's ``kgs-rules``)."""

    def test_gogui_analyze_commands_run_and_parse_as_their_types(self, go9: Gtp) -> None:
        for move in ("b e5", "w c3", "b g7"):
            assert go9.one(f"play {move}") == "="
        menu = go9.ask("gogui-analyze_commands")
        menu[0] = menu[0].removeprefix("= ")
        assert len(menu) >= 5
        kinds = set()
        for entry in menu:
            kind, label, command = entry.split("/")
            assert kind in gtp_gogui.GOGUI_TYPES and label and command, entry
            reply = go9.ask(command, timeout=60)
            assert reply[0].startswith("="), (command, reply)
            reply[0] = reply[0].removeprefix("=").strip()
            lines = [line for line in reply if line]
            assert _parses_as(kind, lines, 9), (command, reply)
            kinds.add(kind)
            if command == "tabula-ownership":  # black's view, the top row first
                own = np.array([[float(v) for v in line.split()] for line in lines])
                assert own[4, 4] > 0.0 > own[6, 2]  # E5 black's, C3 white's
            if command == "tabula-policy":  # the side to move's prior: 0 on stones, sums to at most 1
                policy = np.array([[float(v) for v in line.split()] for line in lines])
                assert policy[4, 4] == policy[6, 2] == policy[2, 6] == 0.0
                assert 0.5 < policy.sum() <= 1.0 + 1e-3
        assert {"dboard", "sboard", "plist", "string"} <= kinds
        assert go9.one("tabula-policy percentage") == "? syntax error"
        assert go9.one("tabula-ownership b") == "? syntax error"
        go9.check_stdout()

    @pytest.mark.parametrize("command", ["kata-genmove_analyze", "lz-genmove_analyze"])
    def test_genmove_analyze_streams_then_plays(self, go9: Gtp, command: str) -> None:
        pattern = KATA_LINE if command.startswith("kata") else INFO_LINE
        # a first search loads the network on the mover's second of byo-yomi (and may have no time left
        # for a report): it comes first here
        assert MOVE_REPLY.fullmatch(go9.one("genmove b"))
        go9.proc.send(f"3 {command} w 10")
        assert go9.proc.read_line(30) == "=3"
        stream = go9.proc.read_until(lambda line: line == "", 60)[:-1]
        *infos, played = stream
        assert infos and all(pattern.fullmatch(line) for line in infos), stream
        move = re.fullmatch(r"play ([A-HJ-T]\d)", played)
        assert move, played
        # the move is on the board, white's (O), and black is to move
        point = vertex_to_point(move.group(1), 9)
        row, col = divmod(point, 9)
        board = go9.board()
        assert board[2 + row].split()[1 + col] == "O" and board[-1] == "black to move, komi 7.5"
        # the side to move by default; ownership as in kata-analyze; a bad request starts nothing
        if command.startswith("kata"):
            go9.proc.send(f"{command} 10 ownership true")
            assert go9.proc.read_line(30) == "="
            stream = go9.proc.read_until(lambda line: line == "", 60)[:-1]
            assert " ownership " in stream[0] and stream[-1].startswith("play ")
            assert go9.board()[-1] == "white to move, komi 7.5"
        assert go9.one(f"{command} x") == "? syntax error"
        go9.alive()
        go9.check_stdout()

    @staticmethod
    def _dead_white_stone(gtp: Gtp) -> None:
        """A black wall on column C, a white one on D, and a dead white stone at A5 in black's area."""
        for row in range(1, 10):
            for move in (f"b C{row}", f"w D{row}"):
                assert gtp.one(f"play {move}") == "="
        assert gtp.one("play w A5") == "="

    def test_rules_change_the_count(self, go9: Gtp) -> None:
        self._dead_white_stone(go9)
        board = go9.board()
        # area (the default, chinese): A5 removed, black A-C 27 points, white D-J 54, komi 7.5
        assert go9.one("final_score", timeout=60) == "= W+34.5"
        assert '"friendlyPassOk":true' in go9.one("kata-get-rules")
        assert go9.one("kata-set-rules tromp-taylor") == "="
        # every stone counts: black has its 9 wall stones (A5 touches the rest), white 54 and A5
        assert go9.one("final_score") == "= W+53.5"
        assert go9.one("final_status_list dead") == "="
        assert '"friendlyPassOk":false' in go9.one("kata-get-rules")
        for bad, reply in (
            ("kata-set-rules japanese", "? territory scoring (japanese) is not supported"),
            ("kata-set-rules go-go-go", "? unknown rules go-go-go"),
            ("kata-set-rules", "? syntax error"),
            ("kgs-rules japanese", "? territory scoring (japanese) is not supported"),
            ("kgs-rules tromp-taylor", "? unknown rules tromp-taylor"),
        ):
            assert go9.one(bad).startswith(reply), bad
            assert go9.one("final_score") == "= W+53.5"  # the rules are kept
        assert go9.one("kgs-rules chinese") == "="
        assert go9.one("final_score", timeout=60) == "= W+34.5"
        assert go9.one("final_status_list dead", timeout=60) == "= A5"
        assert go9.one("kata-set-rules Chinese-OGS") == "="
        assert go9.one("final_score", timeout=60) == "= W+34.5"
        assert go9.board() == board  # the rules change no stone
        go9.alive()


class TestBoard19:
    def test_default_19x19_game(self, engine_process) -> None:
        conversation = Gtp(engine_process("gtp"))
        assert conversation.one("time_settings 0 1 1") == "="
        assert conversation.one("play b q16") == "="
        reply = conversation.one("genmove w")
        assert MOVE_REPLY.fullmatch(reply) and reply != "= resign"
        assert conversation.one("play b t19") == "=" or reply == "= T19"
        assert conversation.one("play w i19") == "? syntax error"
        assert conversation.one("play w u19") == "? illegal move"
        board = conversation.board()
        assert len(board) == 1 + 21 + 1 and board[2].startswith("19 ")


class TestPassingUnderAreaScoring:
    """``play_on_instead_of_passing``: the rule that turns a pass into a cleanup move."""

    @staticmethod
    def _position(rows: str) -> GoState:
        lines = rows.split()
        return GoState.from_text(f"{len(lines)} 7.5 w {'/'.join(lines)}")

    def test_dead_stones_on_the_board_keep_the_game_going(self) -> None:
        state = self._position("..XO... ..XO... ..XO... O.XO.X. ..XO... ..XO... ..XO...")
        assert play_on_instead_of_passing(state, "area")
        assert not play_on_instead_of_passing(state, "tromp-taylor")  # every stone alive: pass at will

    def test_a_settled_position_may_pass(self) -> None:
        state = self._position(".X.XO.O XXXXOOO .X.XO.O XXXXOOO .X.XO.O XXXXOOO .X.XO.O")
        assert not play_on_instead_of_passing(state, "area")

    def test_neutral_points_are_filled_before_passing(self) -> None:
        # the same two living groups with an empty column between them (dame)
        state = self._position(".X.X.O.O XXXX.OOO .X.X.O.O XXXX.OOO .X.X.O.O XXXX.OOO .X.X.O.O XXXX.OOO")
        assert play_on_instead_of_passing(state, "area")

    def test_an_ended_game_needs_no_more_moves(self) -> None:
        state = self._position("..XO... ..XO... ..XO... O.XO.X. ..XO... ..XO... ..XO...")
        state.push(state.board_size**2)
        state.push(state.board_size**2)
        assert not play_on_instead_of_passing(state, "area")


# ==== the wait for the compiled search's kernels comes out of the mover's clock ==========================
def test_the_wait_for_kernels_is_bounded_by_the_clock() -> None:
    assert gtp.compiled_wait_s(None) == gtp.COMPILED_WAIT_S
    assert gtp.compiled_wait_s(Clock(time_ms=600_000)) == gtp.COMPILED_WAIT_S  # 30 s allowed, 3 s cap
    assert gtp.compiled_wait_s(Clock(time_ms=10_000)) == pytest.approx(0.5)
    assert gtp.compiled_wait_s(Clock(time_ms=0.0, byoyomi_ms=1000)) == pytest.approx(0.25)


def test_time_spent_before_the_search_is_taken_from_main_time_then_the_period() -> None:
    assert gtp.clock_less(None, 1.0) is None
    assert gtp.clock_less(Clock(time_ms=5000, byoyomi_ms=1000), 1.0) == Clock(time_ms=4000, byoyomi_ms=1000)
    assert gtp.clock_less(Clock(time_ms=300, byoyomi_ms=1000), 0.5) == Clock(time_ms=0, byoyomi_ms=800)
    canadian = Clock(time_ms=20_000, moves_to_go=5)  # in a Canadian period: its time left, stones to play
    assert gtp.clock_less(canadian, 2.0) == Clock(time_ms=18_000, moves_to_go=5)
    assert gtp.clock_less(Clock(time_ms=100, byoyomi_ms=100), 1.0) == Clock(time_ms=0, byoyomi_ms=0)
