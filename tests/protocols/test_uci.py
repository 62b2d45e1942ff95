"""UCI: pure parse/format tests, then transcripts against the real `tabula` program.

Transcripts follow docs/protocols.md (the checklist): every command, and every UCI bad input with the answer
expected and a check that the engine still answers afterwards (``isready`` -> ``readyok``).
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import chess
import cshogi
import pytest

from engine.games import get_game
from engine.options import EngineOptions
from engine.search.config import SearchConfig
from engine.search.limits import Clock
from engine.search.score import Score
from engine.search.searcher import PVLine, SearchInfo
from engine.search.time_manager import TimeConfig, allocate
from engine.strength import StrengthTable
from protocols import uci_format as fmt
from tests.cpu_load import busy_cores
from tests.process import EngineProcess
from weights import strength_table_path

WEIGHTS = Path(__file__).resolve().parents[2] / "weights"
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # a1a8#
MATED = "R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1"  # black is mated
STALEMATE = "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"
SHOGI_START = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"
#: A shogi move in Fairy-Stockfish / cutechess coordinates (what UCI shogi clients read).
FAIRY_MOVE = re.compile(r"[a-i][1-9][a-i][1-9]\+?|[PLNSGBR]@[a-i][1-9]")
#: Every line Tabula may write under UCI.
PROTOCOL_LINE = re.compile(
    r"(id (name|author) .+|option name .+|uciok|readyok|info .+|bestmove \S+( ponder \S+)?)"
)


# =====================================================================================================
# Pure functions
# =====================================================================================================
class TestOptions:
    def test_declarations_are_valid_for_clients(self) -> None:
        for spec in fmt.option_specs(EngineOptions()):
            if spec.type == "spin":
                assert spec.min <= spec.default <= spec.max, spec
            if spec.type == "combo":
                assert spec.default in spec.vars, spec

    def test_declaration_lines(self) -> None:
        specs = {s.name: s.declaration() for s in fmt.option_specs(EngineOptions())}
        assert specs["Hash"] == "option name Hash type spin default 256 min 1 max 65536"
        assert specs["Threads"] == "option name Threads type spin default 0 min 0 max 256"
        assert (
            specs["Backend"]
            == "option name Backend type combo default auto var auto var cpu var cuda var tensorrt"
        )
        assert (
            specs["Precision"] == "option name Precision type combo default auto var auto var fp32 var int8"
        )
        assert specs["WeightsFile"] == "option name WeightsFile type string default <empty>"
        assert specs["Ponder"] == "option name Ponder type check default false"
        assert specs["UCI_Variant"] == "option name UCI_Variant type combo default chess var chess var shogi"
        # shogi under UCI speaks the chess-style coordinates of cutechess-cli and Fairy-Stockfish by default
        assert specs["ShogiNotation"] == "option name ShogiNotation type combo default uci var usi var uci"
        assert set(specs) >= {
            "BatchSize",
            "MoveOverhead",
            "MultiPV",
            "UCI_ShowWDL",
            "UCI_Chess960",
        }

    def test_policy_temperature_in_hundredths_with_the_game_default(self) -> None:
        specs = {s.name: s for s in fmt.option_specs(EngineOptions())}
        assert specs["PolicyTemperature"].declaration() == (
            "option name PolicyTemperature type spin default 220 min 10 max 1000"
        )
        chosen = {s.name: s for s in fmt.option_specs(EngineOptions(policy_temperature=1.25))}
        assert chosen["PolicyTemperature"].default == 125  # the command line's --policy-temperature

    def test_lcb_visit_share_in_percent_with_the_game_default(self) -> None:
        specs = {s.name: s for s in fmt.option_specs(EngineOptions())}
        assert specs["LCBVisitShare"].declaration() == (
            "option name LCBVisitShare type spin default 10 min 0 max 100"
        )  # chess's: its SPRT on cutechess-cli (docs/tuning.md)
        off = EngineOptions(search=SearchConfig(lcb_ratio=0.0))  # --lcb-visit-share 0
        assert {s.name: s for s in fmt.option_specs(off)}["LCBVisitShare"].default == 0

    def test_defaults_follow_command_line_and_widen_ranges(self) -> None:
        specs = {
            s.name: s for s in fmt.option_specs(EngineOptions(hash_mb=100_000, weights_file="/x/net.onnx"))
        }
        assert specs["Hash"].default == 100_000 and specs["Hash"].max == 100_000
        assert specs["WeightsFile"].declaration().endswith("default /x/net.onnx")

    def test_parse_values(self) -> None:
        specs = {s.name: s for s in fmt.option_specs(EngineOptions())}
        assert specs["Ponder"].parse_value("TRUE") is True
        assert specs["Ponder"].parse_value("false") is False
        assert specs["Hash"].parse_value(" 64 ") == 64
        assert specs["Hash"].parse_value("64.0") == 64
        assert specs["Backend"].parse_value("CPU") == "cpu"
        assert specs["WeightsFile"].parse_value("<empty>") == ""
        assert specs["WeightsFile"].parse_value("") == ""
        assert specs["WeightsFile"].parse_value("/a b/c.onnx") == "/a b/c.onnx"
        assert fmt.OptionSpec("Clear", "button").parse_value(None) is True
        for name, bad in [
            ("Ponder", "yes"),
            ("Hash", "abc"),
            ("Hash", "0"),
            ("Hash", "1e9"),
            ("Backend", "gpu"),
            ("MultiPV", None),
        ]:
            with pytest.raises(fmt.OptionValueError):
                specs[name].parse_value(bad)


class TestSetoption:
    @pytest.mark.parametrize(
        "line, expected",
        [
            ("setoption name Hash value 128", ("Hash", "128")),
            ("setoption name Skill Level value 3", ("Skill Level", "3")),
            ("setoption name WeightsFile value /a b/c d.onnx", ("WeightsFile", "/a b/c d.onnx")),
            ("setoption name WeightsFile value", ("WeightsFile", "")),
            ("setoption name WeightsFile value <empty>", ("WeightsFile", "<empty>")),
            ("setoption name Clear Hash", ("Clear Hash", None)),
            ("SETOPTION NAME hash VALUE 5", ("hash", "5")),
            ("setoption\tname  Hash\tvalue  7 ", ("Hash", "7")),
        ],
    )
    def test_parse(self, line: str, expected: tuple[str, str | None]) -> None:
        assert fmt.parse_setoption(line) == expected

    @pytest.mark.parametrize(
        "line", ["setoption", "setoption name", "setoption Hash value 3", "setoption name  value 3"]
    )
    def test_malformed(self, line: str) -> None:
        with pytest.raises(fmt.UciParseError):
            fmt.parse_setoption(line)


class TestPosition:
    def test_startpos(self) -> None:
        assert fmt.parse_position(["startpos"]) == fmt.PositionCommand("startpos", None, ())
        assert fmt.parse_position(["startpos", "moves", "e2e4", "e7e5"]).moves == ("e2e4", "e7e5")
        assert fmt.parse_position(["startpos", "junk", "moves", "e2e4"]).moves == ("e2e4",)
        assert fmt.parse_position(["startpos", "moves"]).moves == ()

    def test_fen_and_sfen(self) -> None:
        fen = chess.STARTING_FEN.split()
        cmd = fmt.parse_position(["fen", *fen, "moves", "e2e4"])
        assert cmd == fmt.PositionCommand("fen", chess.STARTING_FEN, ("e2e4",))
        assert fmt.parse_position(["sfen", *SHOGI_START.split()]).text == SHOGI_START

    @pytest.mark.parametrize("args", [[], ["fen"], ["fen", "moves", "e2e4"], ["e2e4"], ["moves"]])
    def test_malformed(self, args: list[str]) -> None:
        with pytest.raises(fmt.UciParseError):
            fmt.parse_position(args)


class TestGo:
    def test_all_parameters(self) -> None:
        go = fmt.parse_go(
            [
                "searchmoves",
                "e2e4",
                "d2d4",
                "ponder",
                "wtime",
                "1000",
                "btime",
                "2000",
                "winc",
                "10",
                "binc",
                "20",
                "movestogo",
                "5",
                "depth",
                "3",
                "nodes",
                "400",
                "mate",
                "2",
                "movetime",
                "50",
                "infinite",
            ]
        )
        assert go.searchmoves == ["e2e4", "d2d4"]
        assert (go.ponder, go.infinite) == (True, True)
        assert (go.wtime, go.btime, go.winc, go.binc, go.movestogo) == (1000, 2000, 10, 20, 5)
        assert (go.depth, go.nodes, go.mate, go.movetime) == (3, 400, 2, 50)
        assert go.warnings == []

    def test_bad_tokens_are_ignored(self) -> None:
        go = fmt.parse_go(["wtime", "abc", "btime", "1000", "depth", "-2", "nodes", "frob", "5", "movestogo"])
        assert go.wtime is None and go.btime == 1000 and go.depth is None and go.nodes is None
        assert len(go.warnings) == 5  # wtime abc, depth -2, nodes frob, unknown 5, movestogo without value
        assert fmt.parse_go(["wtime", "btime", "300"]).btime == 300

    def test_negative_clock_kept(self) -> None:  # cutechess sends negative clocks with a time margin
        assert fmt.parse_go(["wtime", "-50"]).wtime == -50

    def test_limits_use_the_clock_of_the_side_to_move(self) -> None:
        go = fmt.parse_go(["wtime", "1000", "btime", "2000", "winc", "10", "binc", "20", "movestogo", "7"])
        assert fmt.go_limits(go, 0).clock == Clock(1000.0, 10.0, 7)
        assert fmt.go_limits(go, 1).clock == Clock(2000.0, 20.0, 7)
        assert fmt.go_limits(fmt.parse_go(["btime", "100"]), 0).clock is None

    def test_limits(self) -> None:
        assert fmt.go_limits(fmt.parse_go([]), 0).unbounded
        limits = fmt.go_limits(fmt.parse_go(["infinite", "ponder", "movetime", "30", "nodes", "9"]), 0, ["m"])
        assert limits.infinite and limits.ponder and limits.movetime_ms == 30.0 and limits.nodes == 9
        assert limits.searchmoves == ("m",)


class TestFormat:
    def _info(self, lines: list[PVLine]) -> SearchInfo:
        return SearchInfo(
            depth=4,
            seldepth=9,
            nodes=1234,
            evaluations=1000,
            time_ms=567,
            nps=2176,
            hashfull=12,
            lines=lines,
        )

    def test_info_lines(self) -> None:
        info = self._info(
            [
                PVLine("m1", Score(cp=35), 700, 0.3, 0.2, ["m1", "m2"]),
                PVLine("m3", Score(cp=-12800, mate=-2), 5, -1.0, 0.1, ["m3"]),
            ]
        )
        assert fmt.format_info(info, [["e2e4", "e7e5"], ["a2a3"]]) == [
            "info depth 4 seldepth 9 multipv 1 score cp 35 nodes 1234 nps 2176 hashfull 12 time 567 pv e2e4 e7e5",
            "info depth 4 seldepth 9 multipv 2 score mate -2 nodes 1234 nps 2176 hashfull 12 time 567 pv a2a3",
        ]
        wdl = fmt.format_info(info, [["e2e4"], ["a2a3"]], show_wdl=True)
        w, d, l = (int(x) for x in re.search(r"wdl (\d+) (\d+) (\d+)", wdl[0]).groups())
        assert w + d + l == 1000 and w > l
        assert " score mate -2 wdl 0 0 1000 nodes" in wdl[1]
        assert fmt.format_info(self._info([]), []) == []

    def test_bestmove_and_no_move(self) -> None:
        assert fmt.format_bestmove("e2e4") == "bestmove e2e4"
        assert fmt.format_bestmove("e2e4", "e7e5") == "bestmove e2e4 ponder e7e5"
        assert fmt.format_no_move(True) == ["info depth 0 score mate 0", "bestmove (none)"]
        assert fmt.format_no_move(False) == ["info depth 0 score cp 0", "bestmove (none)"]
        assert fmt.format_info_string("a\nb  c") == "info string a b c"


class TestShogiNotation:
    @pytest.mark.parametrize(
        "fairy, usi",
        [
            ("c3c4", "7g7f"),
            ("g7g6", "3c3d"),
            ("b2h8+", "8h2b+"),
            ("P@e5", "P*5e"),
            ("a1i9", "9i1a"),
            ("R@a9", "R*9a"),
        ],
    )
    def test_examples(self, fairy: str, usi: str) -> None:
        assert fmt.fairy_to_usi_move(fairy) == usi
        assert fmt.usi_to_fairy_move(usi) == fairy

    def test_every_legal_move_round_trips(self) -> None:
        board = cshogi.Board("ln1g5/1r2S1k2/p2pppn2/2ps2p1p/1p7/2P3P1P/PPSPPPN2/2GK3R1/LN3G2L b BGSLPbp 1")
        for move in board.legal_moves:
            usi = cshogi.move_to_usi(move)
            assert fmt.fairy_to_usi_move(fmt.usi_to_fairy_move(usi)) == usi

    def test_other_text_passes_through(self) -> None:
        for text in ("e2e4x", "0000", "resign", "7g7f"):
            assert fmt.fairy_to_usi_move(text) == text

    def test_fen_to_sfen(self) -> None:
        assert fmt.fairy_fen_to_sfen(SHOGI_START) == SHOGI_START
        assert (
            fmt.fairy_fen_to_sfen("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL[-] w - 1")
            == SHOGI_START
        )
        assert (
            fmt.fairy_fen_to_sfen("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL[] w - - 0 1")
            == SHOGI_START
        )
        after_two = "lnsgkgsnl/1r5b1/pp1pppppp/2p6/9/6P2/PPPPPP1PP/1B5R1/LNSGKGSNL"
        assert fmt.fairy_fen_to_sfen(after_two + "[PPbp] w - - 2 2") == after_two + " b 2Pbp 3"
        assert fmt.fairy_fen_to_sfen(after_two + "[] b - - 1 1") == after_two + " w - 2"
        with pytest.raises(fmt.UciParseError):
            fmt.fairy_fen_to_sfen(after_two + "[P1] w - 1")


# =====================================================================================================
# Transcripts against the real program
# =====================================================================================================
def _pushed(board: chess.Board, move: chess.Move) -> chess.Board:
    after = board.copy(stack=False)
    after.push(move)
    return after


def start(engine_process, *flags: str) -> EngineProcess:
    """`tabula [flags] uci` after the uci handshake."""
    engine = engine_process(*flags, "uci")
    engine.send("uci")
    engine.read_until(lambda line: line == "uciok", timeout=35)
    return engine


def ready(engine: EngineProcess, timeout: float = 30.0) -> list[str]:
    """``isready`` and the lines up to ``readyok`` (what came before it included)."""
    engine.send("isready")
    return engine.read_until(lambda line: line == "readyok", timeout=timeout)


def go(engine: EngineProcess, command: str, timeout: float = 60.0) -> list[str]:
    """Send a ``go`` and read up to its ``bestmove``."""
    engine.send(command)
    return engine.read_until(lambda line: line.startswith("bestmove"), timeout=timeout)


def bestmove(lines: list[str]) -> tuple[str, str | None]:
    words = lines[-1].split()
    assert words[0] == "bestmove" and len(words) in (2, 4), lines[-1]
    return words[1], words[3] if len(words) == 4 else None


def infos(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("info string")]


def assert_no_bestmove(engine: EngineProcess, seconds: float) -> None:
    """No ``bestmove`` within ``seconds`` (progress ``info`` lines may come); ``isready`` still answers."""
    with pytest.raises(TimeoutError):
        engine.read_until(lambda line: line.startswith("bestmove"), timeout=seconds)
    assert ready(engine, timeout=5)[-1] == "readyok"


def assert_legal(board: chess.Board, move: str) -> None:
    assert chess.Move.from_uci(move) in board.legal_moves, (board.fen(), move)


class TestHandshake:
    def test_uci_answers_at_once_without_loading(self, engine_process) -> None:
        engine = engine_process("uci")
        t0 = time.monotonic()
        engine.send("uci")
        lines = engine.read_until(lambda line: line == "uciok", timeout=35)
        assert time.monotonic() - t0 < 10  # loose: the machine is shared; latency is in benchmarks/latency.py
        assert lines[:2] == ["id name Tabula", "id author The Tabula developers"]
        assert all(line.startswith("option name ") for line in lines[2:-1])
        table = StrengthTable.load(strength_table_path("chess"))  # the shipped table declares UCI_Elo
        declared = fmt.option_specs(EngineOptions(), (table.min_elo, table.max_elo))
        assert lines[2:-1] == [spec.declaration() for spec in declared]
        assert not infos(lines)  # no network report: nothing was loaded
        assert engine.close() == 0

    def test_auto_detection_and_arena_xboard_probe(self, engine_process) -> None:
        engine = engine_process()
        engine.send("xboard")
        engine.send("uci")
        assert engine.read_until(lambda line: line == "uciok", timeout=35)[0] == "id name Tabula"
        assert ready(engine)[-1] == "readyok"

    def test_isready_loads_and_reports_once(self, engine_process) -> None:
        engine = start(engine_process)
        first = ready(engine)
        assert len(first) == 2 and first[0].startswith("info string network ") and "chess.onnx" in first[0]
        assert ready(engine) == ["readyok"]
        engine.send("uci")  # uci again: the id block again
        assert engine.read_until(lambda line: line == "uciok")[0] == "id name Tabula"

    def test_debug_and_unknown_commands(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        engine.send("debug on")
        engine.send("frobnicate now")
        assert engine.read_line() == "info string unknown command: frobnicate now"
        engine.send("register later")
        lines = go(engine, "go nodes 10")
        assert "info string search ended: nodes" in lines
        engine.send("debug off")
        assert "info string search ended: nodes" not in go(engine, "go nodes 10")
        assert ready(engine) == ["readyok"]

    def test_crlf_tabs_and_spaces(self, engine_process) -> None:
        engine = start(engine_process)
        engine.proc.stdin.write(b"isready\r\n\r\n   \nposition\tstartpos  moves   e2e4\t e7e5\r\n")
        engine.proc.stdin.flush()
        assert engine.read_until(lambda line: line == "readyok")[-1] == "readyok"
        board = chess.Board()
        board.push_uci("e2e4")
        board.push_uci("e7e5")
        assert_legal(board, bestmove(go(engine, "go nodes 20"))[0])

    def test_quit_and_eof(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send("quit")
        assert engine.proc.wait(timeout=10) == 0
        engine = start(engine_process)
        ready(engine)
        engine.send("go infinite")
        time.sleep(0.3)
        engine.proc.stdin.close()
        assert engine.proc.wait(timeout=10) == 0  # EOF is quit, even during a search


class TestSetoptionTranscript:
    def test_options_accepted_silently(self, engine_process) -> None:
        engine = start(engine_process)
        for line in [
            "setoption name Hash value 64",
            "setoption name hash value 32",
            "setoption name Threads value 1",
            "setoption name BatchSize value 8",
            "setoption name Backend value cpu",
            "setoption name MoveOverhead value 50",
            "setoption name PolicyTemperature value 120",
            "setoption name Ponder value true",
            "setoption name UCI_Chess960 value false",
            "setoption name WeightsFile value <empty>",
            "setoption name WeightsFile value",
        ]:
            engine.send(line)
        lines = ready(engine)
        assert len(lines) == 2 and lines[0].startswith("info string network"), lines

    def test_precision_picks_the_network_copy(self, engine_process) -> None:
        engine = start(engine_process, "--backend", "cpu")
        reports = {}
        for precision in ("auto", "fp32", "int8"):
            engine.send(f"setoption name Precision value {precision}")
            lines = [line for line in ready(engine) if line.startswith("info string network")]
            assert len(lines) == 1 and "chess.onnx on " in lines[0], lines  # the file asked for
            reports[precision] = lines[0].split(" on ")[1].split()[0]  # the file running
        assert reports == {"auto": "chess.int8.onnx", "fp32": "chess.onnx", "int8": "chess.int8.onnx"}
        assert go(engine, "go nodes 50")[-1].startswith("bestmove ")

    def test_multipv_and_wdl(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send("setoption name MultiPV value 3")
        engine.send("setoption name UCI_ShowWDL value true")
        lines = go(engine, "go nodes 200")
        last = [line for line in lines if line.startswith("info depth")][-3:]
        assert [line.split(" multipv ")[1].split()[0] for line in last] == ["1", "2", "3"]
        pattern = re.compile(
            r"info depth \d+ seldepth \d+ multipv \d score cp -?\d+ wdl \d+ \d+ \d+ nodes 200 nps \d+ hashfull \d+ time \d+ pv( \S+)+"
        )
        assert all(pattern.fullmatch(line) for line in last), last
        engine.send("setoption name UCI_ShowWDL value false")
        assert not any(" wdl " in line for line in go(engine, "go nodes 50"))

    @pytest.mark.parametrize(
        "line, message",
        [
            ("setoption name NoSuchOption value 3", "info string unknown option 'NoSuchOption' ignored"),
            (
                "setoption name Hash value abc",
                "info string option Hash unchanged: Hash takes an integer, not 'abc'",
            ),
            (
                "setoption name Hash value 0",
                "info string option Hash unchanged: Hash must be within 1..65536, not 0",
            ),
            ("setoption name Hash", "info string option Hash unchanged: Hash takes an integer, not ''"),
            (
                "setoption name Ponder value maybe",
                "info string option Ponder unchanged: Ponder takes true or false, not 'maybe'",
            ),
            (
                "setoption name Backend value gpu",
                "info string option Backend unchanged: Backend takes one of auto, cpu, cuda, tensorrt, not 'gpu'",
            ),
            (
                "setoption name UCI_Variant value xiangqi",
                "info string option UCI_Variant unchanged: UCI_Variant takes one of chess, shogi, not 'xiangqi'",
            ),
            (
                "setoption name WeightsFile value /no/such/net.onnx",
                "info string option WeightsFile unchanged: no such file '/no/such/net.onnx'",
            ),
            ("setoption", "info string setoption needs: setoption name <id> [value <x>]"),
        ],
    )
    def test_bad_options_are_reported_and_ignored(self, engine_process, line: str, message: str) -> None:
        engine = start(engine_process)
        ready(engine)
        engine.send(line)
        assert engine.read_line() == message
        assert ready(engine) == ["readyok"]
        assert_legal(chess.Board(), bestmove(go(engine, "go nodes 10"))[0])

    def test_weights_file_with_spaces_and_wrong_game(self, engine_process, tmp_path: Path) -> None:
        folder = tmp_path / "my nets"
        folder.mkdir()
        shutil.copy(WEIGHTS / "chess.onnx", folder / "chess copy.onnx")
        shutil.copy(WEIGHTS / "shogi.onnx", folder / "shogi.onnx")
        engine = start(engine_process)
        engine.send(f"setoption name WeightsFile value {folder / 'chess copy.onnx'}")
        lines = ready(engine)
        assert lines[0].startswith(f"info string network {folder / 'chess copy.onnx'} on"), lines
        engine.send(f"setoption name WeightsFile value {folder / 'shogi.onnx'}")
        lines = ready(engine)
        assert lines[0].startswith("info string cannot use network"), lines
        kept = f"; keeping network {folder / 'chess copy.onnx'}"  # the last good one plays on
        assert lines[0].endswith(kept), lines
        assert_legal(chess.Board(), bestmove(go(engine, "go nodes 20"))[0])


class TestPositionTranscript:
    def test_startpos_moves(self, engine_process) -> None:
        engine = start(engine_process)
        moves = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6"]
        engine.send("position startpos moves " + " ".join(moves))
        board = chess.Board()
        for m in moves:
            board.push_uci(m)
        assert_legal(board, bestmove(go(engine, "go nodes 30"))[0])

    def test_fen(self, engine_process) -> None:
        engine = start(engine_process)
        fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
        engine.send(f"position fen {fen} moves f1b5 a7a6")
        board = chess.Board(fen)
        board.push_uci("f1b5")
        board.push_uci("a7a6")
        assert_legal(board, bestmove(go(engine, "go nodes 30"))[0])

    def test_illegal_move_keeps_the_legal_prefix(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        engine.send("position startpos moves e2e4 e7e5 e1e8 g1f3")
        assert engine.read_line().startswith("info string illegal move 'e1e8' at index 2")
        assert ready(engine) == ["readyok"]
        board = chess.Board()
        board.push_uci("e2e4")
        board.push_uci("e7e5")
        assert_legal(board, bestmove(go(engine, "go nodes 30"))[0])

    @pytest.mark.parametrize(
        "bad",
        [
            "position fen not/a/fen w - - 0 1",
            "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
            "position fen",
            "position",
            "position e2e4",
            "position sfen " + SHOGI_START,
        ],
    )
    def test_malformed_position_keeps_the_old_one(self, engine_process, bad: str) -> None:
        engine = start(engine_process)
        ready(engine)
        fen = "4k3/8/8/8/8/8/4P3/4K3 b - - 0 1"
        engine.send(f"position fen {fen}")
        engine.send(bad)
        assert engine.read_line().startswith("info string position ignored")
        assert ready(engine) == ["readyok"]
        assert_legal(chess.Board(fen), bestmove(go(engine, "go nodes 30"))[0])

    def test_ucinewgame_and_go_before_any_position(self, engine_process) -> None:
        engine = start(engine_process)
        assert_legal(chess.Board(), bestmove(go(engine, "go nodes 20"))[0])  # no position yet: start position
        engine.send("position fen 4k3/8/8/8/8/8/4P3/4K3 b - - 0 1")
        engine.send("ucinewgame")
        assert_legal(chess.Board(), bestmove(go(engine, "go nodes 20"))[0])

    def test_chess960_castling_notation(self, engine_process) -> None:
        fen = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"
        engine = start(engine_process)
        engine.send(f"position fen {fen}")
        assert bestmove(go(engine, "go nodes 20 searchmoves e1g1"))[0] == "e1g1"
        engine.send("setoption name UCI_Chess960 value true")
        engine.send("position fen r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w HAha - 0 1")
        assert bestmove(go(engine, "go nodes 20 searchmoves e1h1"))[0] == "e1h1"
        engine.send("position fen r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w HAha - 0 1 moves e1h1")
        assert_legal(
            chess.Board("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R4RK1 b kq - 1 1"),
            bestmove(go(engine, "go nodes 20"))[0],
        )


class TestGoTranscript:
    def test_limits(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        lines = go(engine, "go nodes 60")
        assert re.search(r" nodes 60 ", [line for line in lines if line.startswith("info depth")][-1])
        assert_legal(chess.Board(), bestmove(go(engine, "go depth 2"))[0])
        t0 = time.monotonic()
        assert_legal(chess.Board(), bestmove(go(engine, "go movetime 300"))[0])
        assert (
            0.15 < time.monotonic() - t0 < 10
        )  # movetime 300 minus MoveOverhead 100 is searched; loose upper bound
        t0 = time.monotonic()
        assert_legal(chess.Board(), bestmove(go(engine, "go wtime 3000 btime 3000 winc 100 binc 100"))[0])
        assert time.monotonic() - t0 < 3  # within the 3 s clock
        assert_legal(chess.Board(), bestmove(go(engine, "go wtime 10000 btime 10000 movestogo 40"))[0])
        t0 = time.monotonic()  # cutechess sends a negative clock when the engine is inside its time margin
        assert_legal(chess.Board(), bestmove(go(engine, "go wtime -50 btime 1000"))[0])
        assert time.monotonic() - t0 < 3

    def test_quick_position_go_cycles_are_never_deferred(self, engine_process) -> None:
        engine = start(engine_process)
        board = chess.Board()
        for _ in range(12):  # a GUI sends position + go as soon as it reads bestmove
            engine.send(
                "position startpos moves " + " ".join(m.uci() for m in board.move_stack)
                if board.move_stack
                else "position startpos"
            )
            lines = go(engine, "go nodes 8")
            assert not any("deferred" in line for line in lines), lines
            move = bestmove(lines)[0]
            assert_legal(board, move)
            board.push_uci(move)

    def test_root_over_by_repetition_still_gets_a_move(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        engine.send("position startpos moves g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8")
        lines = go(engine, "go nodes 10")
        # The root is searched like any other (the draw is the GUI's to adjudicate): a real info line.
        assert lines[-2].startswith("info depth") and " nodes 10 " in lines[-2]
        assert_legal(chess.Board(), bestmove(lines)[0])

    def test_mate_score_and_go_mate(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send(f"position fen {MATE_IN_ONE}")
        lines = go(engine, "go mate 1")
        assert bestmove(lines)[0] == "a1a8"
        assert " score mate 1 " in [line for line in lines if line.startswith("info depth")][-1]

    def test_bare_go_is_finite(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        t0 = time.monotonic()
        assert_legal(chess.Board(), bestmove(go(engine, "go", timeout=30))[0])
        assert time.monotonic() - t0 < 15  # TimeConfig.default_ms (5 s) plus slack for a loaded machine

    def test_go_perft_prints_stockfish_format(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send("position startpos moves e2e4 d7d5")
        engine.send("go perft 3")
        lines = engine.read_until(lambda line: line.startswith("Nodes searched"), timeout=60)
        board = chess.Board()
        board.push_uci("e2e4")
        board.push_uci("d7d5")
        divide = dict(line.split(": ") for line in lines[:-2])
        assert set(divide) == {m.uci() for m in board.legal_moves}
        total = sum(int(n) for n in divide.values())
        assert lines[-2:] == ["", f"Nodes searched: {total}"]
        for move in board.legal_moves:  # each count against python-chess's own
            board.push(move)
            below = sum(len(list(_pushed(board, m).legal_moves)) for m in board.legal_moves)
            board.pop()
            assert int(divide[move.uci()]) == below
        assert engine.read_line(10) == ""  # Stockfish ends the report with a blank line
        assert not any(line.startswith("bestmove") for line in ready(engine))  # perft is not a search

    def test_go_perft_3_equals_python_chess(self, engine_process) -> None:
        """The compiled perft behind ``go perft``, divide and total, on positions with castling both
        ways, en passant, promotions, a check, and Chess960 castling (king-takes-rook notation)."""
        cases = [
            (False, "fen r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", []),
            (False, "fen r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", []),
            (False, "startpos", ["e2e4", "g8f6", "e4e5", "d7d5"]),  # e5d6 en passant
            (False, "fen 4k3/8/8/8/1b6/8/3P4/4K3 w - - 0 1", ["e1f2", "b4c5"]),  # pin, then check
            (True, "fen bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", []),
            (
                True,
                "fen qbbnrnkr/pppppppp/8/8/8/8/PPPPPPPP/QBBNRNKR w KQkq - 0 1",
                ["c2c4", "c7c6", "a2a4", "f8e6", "b1e4"],
            ),
        ]
        engine = start(engine_process)
        for chess960, position, moves in cases:
            engine.send(f"setoption name UCI_Chess960 value {str(chess960).lower()}")
            engine.send(f"position {position}" + (f" moves {' '.join(moves)}" if moves else ""))
            engine.send("go perft 3")
            lines = engine.read_until(lambda line: line.startswith("Nodes searched"), timeout=60)
            fen = chess.STARTING_FEN if position == "startpos" else position[4:]
            board = chess.Board(fen, chess960=chess960)
            for text in moves:
                board.push_uci(text)
            expected = {}
            for move in board.legal_moves:
                board.push(move)
                expected[move.uci()] = sum(  # python-chess's Chess960 moves are king-takes-rook
                    _pushed(board, m).legal_moves.count() for m in board.legal_moves
                )
                board.pop()
            divide = {text: int(n) for text, n in (line.split(": ") for line in lines[:-2])}
            assert divide == expected, position
            assert lines[-2:] == ["", f"Nodes searched: {sum(expected.values())}"]
            assert engine.read_line(10) == ""

    def test_go_perft_under_uci_shogi_writes_chess_style_moves(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send("setoption name UCI_Variant value shogi")
        engine.send("position startpos")
        engine.send("go perft 2")
        lines = engine.read_until(lambda line: line.startswith("Nodes searched"), timeout=60)
        assert lines[-1] == "Nodes searched: 900" and "g3g4: 30" in lines  # USI 7g7f in Fairy's coordinates

    def test_bad_go_tokens_are_ignored(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        lines = go(engine, "go wtime abc btime 1000 nodes 20 frob")
        assert infos(lines)[:2] == [
            "info string wtime 'abc' ignored: not a number",
            "info string unknown go parameter 'frob' ignored",
        ]
        assert_legal(chess.Board(), bestmove(lines)[0])

    def test_searchmoves(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        assert bestmove(go(engine, "go nodes 40 searchmoves a2a3"))[0] == "a2a3"
        lines = go(engine, "go nodes 40 searchmoves e2e5 a2a3 zz")
        assert "info string searchmoves: e2e5 is not legal here, dropped" in lines
        assert bestmove(lines)[0] == "a2a3"
        lines = go(engine, "go searchmoves e2e5 nodes 20")
        assert "info string searchmoves: no legal move left, searching all moves" in lines
        assert_legal(chess.Board(), bestmove(lines)[0])

    def test_ponder_move(self, engine_process) -> None:
        engine = start(engine_process)
        best, ponder = bestmove(go(engine, "go nodes 200"))
        board = chess.Board()
        assert_legal(board, best)
        assert ponder is not None
        board.push_uci(best)
        assert_legal(board, ponder)

    def test_no_legal_move(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send(f"position fen {MATED}")
        assert go(engine, "go nodes 10")[-2:] == ["info depth 0 score mate 0", "bestmove (none)"]
        engine.send(f"position fen {STALEMATE}")
        assert go(engine, "go")[-2:] == ["info depth 0 score cp 0", "bestmove (none)"]
        engine.send(f"position fen {MATED}")
        engine.send("go infinite")  # mated root: still no bestmove before stop
        assert_no_bestmove(engine, 1.0)
        engine.send("stop")
        assert engine.read_until(lambda line: line.startswith("bestmove"), timeout=10)[-2:] == [
            "info depth 0 score mate 0",
            "bestmove (none)",
        ]
        engine.send("go ponder")  # and none before ponderhit
        assert_no_bestmove(engine, 1.0)
        engine.send("ponderhit")
        assert engine.read_until(lambda line: line.startswith("bestmove"), timeout=10)[-2:] == [
            "info depth 0 score mate 0",
            "bestmove (none)",
        ]


#: Moves of one game: each ``go`` of the loaded-clock test searches a new position.
LOADED_GAME = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6"]


@pytest.mark.parametrize(
    ("go_args", "limit_ms"),
    [
        ("wtime 10000 btime 10000", None),  # sudden death (cutechess-cli's 10 s game, early)
        ("wtime 600 btime 600", 600),  # nearly out of time: the budget is the floor, the clock the limit
        ("wtime 2000 btime 2000 winc 100 binc 100", None),  # Fischer increment
        ("movetime 500", 500),
    ],
)
def test_clock_is_kept_with_every_core_busy(engine_process, go_args: str, limit_ms: int | None) -> None:
    """With a busy loop on every core, the reported ``time`` stays within the budget's hard limit
    (``allocate`` with the engine's settings) and the wall time from ``go`` to ``bestmove`` within that
    limit plus the move overhead, or within ``limit_ms`` (``movetime``; a clock so short that the budget
    is the 5 ms floor, less than the root's network call: the clock itself, less the move overhead for
    the reported time): no loss on time on a busy machine."""
    engine = start(engine_process, "--threads", "1")
    ready(engine)
    low, high = get_game("chess").profile.expected_moves
    config = TimeConfig(min_expected_moves=low, max_expected_moves=high)
    with busy_cores(seconds=60):
        for ply in range(len(LOADED_GAME) - 3):
            moves = LOADED_GAME[:ply]
            engine.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
            budget = allocate(fmt.go_limits(fmt.parse_go(go_args.split()), ply % 2), ply, config)
            assert budget.hard_ms is not None
            t = time.monotonic()
            lines = go(engine, "go " + go_args)
            wall_ms = (time.monotonic() - t) * 1000
            board = chess.Board()
            for move in moves:
                board.push_uci(move)
            assert_legal(board, bestmove(lines)[0])
            last = [line for line in lines if " time " in line][-1]
            used = int(last.split(" time ")[1].split()[0])
            own = (
                budget.hard_ms
                if limit_ms is None
                else max(budget.hard_ms, limit_ms - config.move_overhead_ms)
            )
            assert used <= own, (go_args, ply, used, budget, last[:60])
            allowed = limit_ms if limit_ms is not None else budget.hard_ms + config.move_overhead_ms
            assert wall_ms < allowed, (go_args, ply, used, wall_ms)
    assert ready(engine, timeout=10)[-1] == "readyok"


class TestStopPonder:
    def test_infinite_waits_for_stop_and_answers_isready(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        engine.send("go infinite")
        deadline = time.monotonic() + 2.5
        lines: list[str] = []
        while time.monotonic() < deadline:  # isready during the search: readyok, and no bestmove
            t0 = time.monotonic()
            engine.send("isready")
            lines += engine.read_until(lambda line: line == "readyok", timeout=5)
            assert time.monotonic() - t0 < 5.0  # answered during the search (figures: benchmarks/latency.py)
            time.sleep(0.2)
        assert not any(line.startswith("bestmove") for line in lines)
        engine.send("stop")
        lines = engine.read_until(lambda line: line.startswith("bestmove"), timeout=10)
        assert_legal(chess.Board(), bestmove(lines)[0])
        engine.send("stop")  # stop and ponderhit while idle: no output
        engine.send("ponderhit")
        assert ready(engine) == ["readyok"]

    def test_ponder_then_ponderhit(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send("position startpos moves e2e4")
        engine.send("go ponder wtime 2000 btime 2000 winc 0 binc 0")
        assert_no_bestmove(engine, 1.5)  # pondering: no bestmove before ponderhit
        engine.send("ponderhit")
        lines = engine.read_until(lambda line: line.startswith("bestmove"), timeout=10)
        board = chess.Board()
        board.push_uci("e2e4")
        assert_legal(board, bestmove(lines)[0])

    def test_ponder_then_stop(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send("go ponder")
        assert_no_bestmove(engine, 1.0)
        engine.send("stop")
        assert_legal(
            chess.Board(),
            bestmove(engine.read_until(lambda line: line.startswith("bestmove"), timeout=10))[0],
        )
        assert ready(engine) == ["readyok"]

    def test_setoption_and_position_during_infinite_are_deferred(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        engine.send("go infinite")
        time.sleep(0.3)
        engine.send("setoption name MultiPV value 2")
        engine.send("position startpos moves e2e4")
        engine.send("ucinewgame")
        engine.send("position startpos moves d2d4")
        lines = ready(engine, timeout=5)  # stdin is not blocked
        assert infos(lines) == [
            "info string setoption deferred until the search ends",
            "info string position deferred until the search ends",
            "info string ucinewgame deferred until the search ends",
            "info string position deferred until the search ends",
        ]
        engine.send("stop")
        assert_legal(
            chess.Board(),
            bestmove(engine.read_until(lambda line: line.startswith("bestmove"), timeout=10))[0],
        )
        lines = go(engine, "go nodes 50")  # the queued commands were applied in order
        board = chess.Board()
        board.push_uci("d2d4")
        assert_legal(board, bestmove(lines)[0])
        assert any(" multipv 2 " in line for line in lines)

    def test_go_during_search_answers_both(self, engine_process) -> None:
        engine = start(engine_process)
        ready(engine)
        engine.send("go infinite")
        time.sleep(0.3)
        engine.send("go nodes 20")
        first = engine.read_until(lambda line: line.startswith("bestmove"), timeout=10)
        second = engine.read_until(lambda line: line.startswith("bestmove"), timeout=10)
        assert_legal(chess.Board(), bestmove(first)[0])
        assert_legal(chess.Board(), bestmove(second)[0])
        assert_no_bestmove(engine, 0.5)


class TestShogiVariant:
    def test_shogi_and_back_to_chess(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send("setoption name UCI_Variant value shogi")
        lines = ready(engine)
        assert "shogi.onnx" in lines[0]
        engine.send("position startpos moves 7g7f 3c3d")
        board = cshogi.Board()
        board.push_usi("7g7f")
        board.push_usi("3c3d")
        best, _ponder = bestmove(go(engine, "go nodes 40"))
        # replies in Fairy-Stockfish coordinates by default (what cutechess-cli reads)
        assert FAIRY_MOVE.fullmatch(best), best
        assert board.is_legal(board.move_from_usi(fmt.fairy_to_usi_move(best))), best
        # position sfen / fen (SFEN or Fairy-Stockfish FEN) and Fairy-Stockfish move notation as input
        for command in (
            f"position sfen {SHOGI_START} moves 7g7f 3c3d 8h2b+",
            f"position fen {SHOGI_START} moves c3c4 g7g6 b2h8+",
            "position fen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL[-] w - 1 moves 7g7f 3c3d 8h2b+",
        ):
            engine.send(command)
            after = cshogi.Board()
            for m in ("7g7f", "3c3d", "8h2b+"):
                after.push_usi(m)
            best = fmt.fairy_to_usi_move(bestmove(go(engine, "go nodes 30"))[0])
            assert after.is_legal(after.move_from_usi(best)), (command, best)
        # a drop in the position
        engine.send("position startpos moves 7g7f 3c3d 8h2b+ 3a2b B*4e")
        drop = cshogi.Board()
        for m in ("7g7f", "3c3d", "8h2b+", "3a2b", "B*4e"):
            drop.push_usi(m)
        best = fmt.fairy_to_usi_move(bestmove(go(engine, "go nodes 30"))[0])
        assert drop.is_legal(drop.move_from_usi(best))
        # replies in USI notation on request
        engine.send("setoption name ShogiNotation value usi")
        engine.send("position startpos moves c3c4")
        best = bestmove(go(engine, "go nodes 30"))[0]
        assert re.fullmatch(r"[1-9][a-i][1-9][a-i]\+?|[PLNSGBR]\*[1-9][a-i]", best), best
        one = cshogi.Board()
        one.push_usi("7g7f")
        assert one.is_legal(one.move_from_usi(best))
        # bad shogi input
        engine.send("position startpos moves 7g7f 7g7f")
        assert engine.read_line().startswith("info string illegal move '7g7f' at index 1")
        engine.send("position sfen garbage b - 1")
        assert engine.read_line().startswith("info string position ignored")
        assert ready(engine) == ["readyok"]
        # back to chess
        engine.send("setoption name UCI_Variant value chess")
        lines = ready(engine)
        assert "chess.onnx" in lines[0]
        engine.send("position startpos moves e2e4")
        board_c = chess.Board()
        board_c.push_uci("e2e4")
        assert_legal(board_c, bestmove(go(engine, "go nodes 30"))[0])

    def test_shogi_mated_root(self, engine_process) -> None:
        engine = start(engine_process)
        engine.send("setoption name UCI_Variant value shogi")
        engine.send("position sfen 4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1")  # gote's king is mated by the gold
        assert go(engine, "go nodes 10")[-2:] == ["info depth 0 score mate 0", "bestmove (none)"]


def test_stdout_holds_only_protocol_lines(engine_process) -> None:
    engine = start(engine_process, "--backend", "auto")
    for line in [
        "setoption name Backend value auto",
        "isready",
        "setoption name UCI_ShowWDL value true",
        "position startpos moves e2e4",
    ]:
        engine.send(line)
    go(engine, "go nodes 100")
    engine.send("setoption name UCI_Variant value shogi")
    ready(engine)
    go(engine, "go nodes 30")
    engine.send("bogus")
    engine.send("position fen bad")
    ready(engine)
    assert engine.close() == 0
    raw = bytes(engine.raw_stdout)
    assert b"\r" not in raw and raw.endswith(b"\n")
    for line in raw.decode().split("\n")[:-1]:
        assert PROTOCOL_LINE.fullmatch(line), line
