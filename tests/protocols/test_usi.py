"""USI (shogi): pure parse/format functions, then transcripts against the real `tabula` program.

Every command and every USI bad input of docs/protocols.md has a transcript here; each one ends by
checking the engine still answers (``isready`` -> ``readyok``).
"""

from __future__ import annotations

import io
import queue
import random
import re
import time

import cshogi
import pytest

from engine.games import get_game
from engine.network import int8_sibling
from engine.search.limits import Clock, SearchLimits
from engine.search.score import Score
from engine.search.searcher import PVLine, SearchInfo, SearchResult
from engine.search.time_manager import TimeConfig, allocate
from protocols import usi_mate
from protocols.settings import ProtocolSettings
from protocols.usi import UsiHandler, bestmove_lines, immediate_answer, option_specs
from protocols.usi_format import (
    START_SFEN,
    GoCommand,
    OptionSpec,
    PositionCommand,
    ascii_only,
    format_bestmove,
    format_checkmate,
    format_info,
    go_limits,
    mate_plies,
    parse_check,
    parse_go,
    parse_position,
    parse_setoption,
    parse_spin,
)
from tests.cpu_load import busy_cores
from tests.process import EngineProcess

#: Mate in one for sente: G*1b.
MATE_IN_ONE = "8k/9/8P/9/9/9/9/9/K8 b G 1"
#: Gote to move and mated (after G*1b above).
MATED = "8k/8G/8P/9/9/9/9/9/K8 w - 1"
#: Sente can declare an entering-king win (27-point rule: king in camp, 10 pieces, 28 points).
DECLARE_WIN = "RRBB1GGGG/4K4/3SS4/9/9/9/9/9/4k4 b 2P 1"
#: A 7-ply tsume found by cshogi's df-pn, with its solution.
TSUME = "1n1p1p+B2/lr6l/pp+Bg1s1p1/2s1pPk1p/P1P1P3P/3P5/2NSN1+l1N/1P1K1GRP1/L2GS4 b G2Pp 99"
TSUME_PV = "3h3g P*3e G*2e 3d4d 2e3e 4d3c 1g2e"
#: A position where df-pn needs millions of nodes (no answer within a second).
HARD = "2g2k1n1/lPs3s2/p+P+N2Pr1l/3p1Kppp/Pp3GPPP/LS1P2+b2/4P3b/1G7/L2R1G1Ns w N3P 116"

USI_BLOCK = [
    "id name Tabula",
    "id author The Tabula developers",
    "option name USI_Hash type spin default 256 min 1 max 1048576",
    "option name USI_Ponder type check default false",
    "option name Threads type spin default 1 min 0 max 1024",
    "option name BatchSize type spin default 16 min 1 max 4096",
    "option name Backend type combo default auto var auto var cpu var cuda var tensorrt",
    "option name Precision type combo default auto var auto var fp32 var int8",
    "option name WeightsFile type filename default <empty>",
    "option name MoveOverhead type spin default 100 min 0 max 60000",
    "option name CPuct type spin default 125 min 1 max 1000",
    "option name CPuctBase type spin default 19652 min 1 max 100000000",
    "option name FpuReduction type spin default 25 min 0 max 500",
    "option name FpuReductionRoot type spin default 25 min 0 max 500",
    "option name LCBVisitShare type spin default 0 min 0 max 100",
    "option name MultiPV type spin default 1 min 1 max 500",
    "option name MateThreatNodes type spin default 1000 min 0 max 10000000",
    "option name PolicyTemperature type spin default 300 min 10 max 1000",
    "option name MaxMovesToDraw type spin default 0 min 0 max 100000",
    "usiok",
]

INFO_RE = re.compile(
    r"info depth \d+ seldepth \d+( multipv \d+)?( score (cp -?\d+|mate -?\d+))? nodes \d+ nps \d+ hashfull \d+ time \d+"
    r"( pv( \S+)+)?"
)


# ==== pure functions ==============================================================================
def test_parse_position_forms() -> None:
    assert parse_position(["startpos"]) == PositionCommand(None, ())
    assert parse_position(["startpos", "moves", "7g7f", "3c3d"]) == PositionCommand(None, ("7g7f", "3c3d"))
    sfen = START_SFEN.split()
    assert parse_position(["sfen", *sfen, "moves", "7g7f"]) == PositionCommand(START_SFEN, ("7g7f",))
    assert parse_position(sfen) == PositionCommand(START_SFEN, ())  # without the word sfen
    assert parse_position(["sfen", *sfen[:3]]).sfen == " ".join(sfen[:3])  # move count omitted
    assert parse_position(["startpos", "moves"]) == PositionCommand(None, ())


def test_parse_position_end_markers_cut_the_moves() -> None:
    assert parse_position(["startpos", "moves", "7g7f", "resign", "3c3d"]) == PositionCommand(
        None, ("7g7f",), "resign"
    )
    assert parse_position(["startpos", "moves", "win"]) == PositionCommand(None, (), "win")
    assert parse_position(["startpos", "moves", "0000"]).moves == ("0000",)  # left to the rules: illegal


@pytest.mark.parametrize("args", [[], ["sfen"], ["sfen", "moves", "7g7f"], ["sfen", "startpos"]])
def test_parse_position_without_a_position(args: list[str]) -> None:
    with pytest.raises(ValueError):
        parse_position(args)


def test_parse_go_tokens() -> None:
    assert parse_go([]) == GoCommand()
    assert not parse_go([]).has_limits
    go = parse_go(["ponder", "btime", "1000", "wtime", "2000", "byoyomi", "300"])
    assert (go.ponder, go.btime, go.wtime, go.byoyomi) == (True, 1000, 2000, 300)
    go = parse_go(["btime", "0", "wtime", "0", "binc", "100", "winc", "200"])
    assert (go.binc, go.winc) == (100, 200) and go.has_limits
    assert parse_go(["infinite"]).infinite
    go = parse_go(["nodes", "500", "depth", "3", "movetime", "250"])
    assert (go.nodes, go.depth, go.movetime) == (500, 3, 250)
    assert parse_go(["perft", "3"]) == GoCommand(perft=3)
    assert parse_go(["perft", "0"]).bad_tokens == ("perft 0",)


def test_parse_go_mate() -> None:
    assert parse_go(["mate", "1000"]) == GoCommand(mate=True, mate_ms=1000)
    assert parse_go(["mate", "infinite"]) == GoCommand(mate=True)
    assert parse_go(["mate"]) == GoCommand(mate=True)


def test_parse_go_bad_tokens_are_collected_and_skipped() -> None:
    go = parse_go(["btime", "abc", "wtime", "1000", "foo", "byoyomi"])
    assert go.btime is None and go.wtime == 1000 and go.byoyomi is None
    assert go.bad_tokens == ("btime abc", "foo", "byoyomi")
    assert parse_go(["btime", "-50"]).btime == 0  # a negative clock is an empty one
    go = parse_go(["wtime", "infinite"])
    assert go.infinite and go.bad_tokens == ("wtime infinite",)


def test_go_limits_pick_the_clock_of_the_side_to_move() -> None:
    go = parse_go(["btime", "60000", "wtime", "30000", "binc", "1000", "winc", "2000"])
    assert go_limits(go, 0).clock == Clock(time_ms=60000, inc_ms=1000)
    assert go_limits(go, 1).clock == Clock(time_ms=30000, inc_ms=2000)
    go = parse_go(["btime", "0", "wtime", "5000", "byoyomi", "1000"])
    assert go_limits(go, 0).clock == Clock(time_ms=0, byoyomi_ms=1000)
    assert go_limits(go, 1).clock == Clock(time_ms=5000, byoyomi_ms=1000)
    assert go_limits(parse_go(["byoyomi", "700"]), 1).clock == Clock(time_ms=0, byoyomi_ms=700)
    assert go_limits(parse_go([]), 0) == SearchLimits()
    assert go_limits(parse_go(["nodes", "100", "ponder"]), 0) == SearchLimits(nodes=100, ponder=True)
    assert go_limits(parse_go(["movetime", "50"]), 0).movetime_ms == 50.0


@pytest.mark.parametrize("byoyomi", [100, 500, 1000, 5000])
def test_byoyomi_budget_is_spent_but_never_exceeded(byoyomi: int) -> None:
    config = TimeConfig(move_overhead_ms=100)
    for main_ms in (0, 1000, 600_000):
        limits = go_limits(parse_go(f"btime {main_ms} wtime {main_ms} byoyomi {byoyomi}".split()), 0)
        budget = allocate(limits, 40, config, finite_default=True)
        assert budget.hard_ms is not None and budget.hard_ms <= max(main_ms * 0.5 + byoyomi - 100, 5)
        if main_ms == 0:
            assert budget.hard_ms >= byoyomi - 100 - 1e-9 or byoyomi <= 100


def test_bare_go_gets_the_finite_default() -> None:
    budget = allocate(go_limits(parse_go([]), 0), 0, TimeConfig(), finite_default=True)
    assert budget.hard_ms == TimeConfig().default_ms


def test_parse_setoption() -> None:
    assert parse_setoption(["name", "USI_Hash", "value", "128"]) == ("USI_Hash", "128")
    assert parse_setoption(["name", "WeightsFile", "value", "/a", "b/c.onnx"]) == (
        "WeightsFile",
        "/a b/c.onnx",
    )
    assert parse_setoption(["name", "WeightsFile", "value"]) == ("WeightsFile", "")
    assert parse_setoption(["name", "Clear", "Hash"]) == ("Clear Hash", None)
    for bad in ([], ["value", "1"], ["name"], ["name", "value", "3"]):
        with pytest.raises(ValueError):
            parse_setoption(bad)


def test_parse_check_and_spin() -> None:
    assert parse_check("true") and not parse_check("False")
    with pytest.raises(ValueError):
        parse_check("maybe")
    assert parse_spin("5", 1, 10) == 5
    for bad in ("abc", "0", "11", None):
        with pytest.raises(ValueError):
            parse_spin(bad, 1, 10)


def _info(lines: list[PVLine]) -> SearchInfo:
    return SearchInfo(
        depth=3,
        seldepth=7,
        nodes=1234,
        evaluations=1000,
        time_ms=456,
        nps=2706,
        hashfull=12,
        lines=lines,
    )


def test_format_info_cp_mate_multipv() -> None:
    board = cshogi.Board()
    moves = [board.push_usi("7g7f"), board.push_usi("3c3d")]
    text = cshogi.move_to_usi
    cp = PVLine(moves[0], Score(cp=35), 100, 0.1, 0.2, moves)
    assert format_info(_info([cp]), text) == [
        "info depth 3 seldepth 7 score cp 35 nodes 1234 nps 2706 hashfull 12 time 456 pv 7g7f 3c3d"
    ]
    win = PVLine(moves[0], Score(cp=12800, mate=3), 100, 1.0, 0.2, moves[:1])
    lose = PVLine(moves[1], Score(cp=-12800, mate=-2), 5, -1.0, 0.1, [])
    assert format_info(_info([win, lose]), text, multipv=2) == [
        "info depth 3 seldepth 7 multipv 1 score mate 5 nodes 1234 nps 2706 hashfull 12 time 456 pv 7g7f",
        "info depth 3 seldepth 7 multipv 2 score mate -4 nodes 1234 nps 2706 hashfull 12 time 456",
    ]
    assert format_info(_info([]), text) == [
        "info depth 3 seldepth 7 nodes 1234 nps 2706 hashfull 12 time 456"
    ]


def test_mate_in_plies() -> None:
    assert [mate_plies(m) for m in (1, 2, 3, -1, -2)] == [1, 3, 5, -2, -4]


def test_format_bestmove_and_checkmate() -> None:
    assert format_bestmove("7g7f") == "bestmove 7g7f"
    assert format_bestmove("7g7f", "3c3d") == "bestmove 7g7f ponder 3c3d"
    assert format_checkmate(["G*1b"]) == "checkmate G*1b"
    assert format_checkmate(None, "nomate") == "checkmate nomate"
    assert format_checkmate([], "timeout") == "checkmate timeout"


def test_ascii_only_and_option_lines() -> None:
    assert ascii_only("net \u5c06\u68cb.onnx\nx") == "net ??.onnx x"
    assert OptionSpec("A", "spin", "3", 1, 9).line() == "option name A type spin default 3 min 1 max 9"
    assert OptionSpec("F", "filename", "").line() == "option name F type filename default <empty>"
    assert (
        OptionSpec("C", "combo", "x", choices=("x", "y")).line()
        == "option name C type combo default x var x var y"
    )
    assert OptionSpec("B", "button").line() == "option name B type button"


def test_declared_defaults_are_valid() -> None:
    for spec in option_specs(ProtocolSettings()):
        if spec.kind == "spin":
            assert (
                spec.low is not None and spec.high is not None and spec.low <= int(spec.default) <= spec.high
            )
        if spec.kind == "combo":
            assert spec.default in spec.choices


def test_immediate_answers_and_bestmove_lines() -> None:
    game = get_game("shogi")
    assert immediate_answer(game.state_from_text(MATED)) == "resign"
    assert immediate_answer(game.state_from_text(DECLARE_WIN)) == "win"
    state = game.new_state()
    assert immediate_answer(state) is None
    info = _info([])
    move, reply = state.parse_move("7g7f"), None
    assert bestmove_lines(state, SearchResult(move, reply, info, "time")) == ["bestmove 7g7f"]
    assert bestmove_lines(game.state_from_text(MATED), SearchResult(None, None, info, "terminal")) == [
        "bestmove resign"
    ]
    assert bestmove_lines(game.state_from_text(DECLARE_WIN), SearchResult(None, None, info, "terminal")) == [
        "bestmove win"
    ]


def test_mate_solver() -> None:
    assert usi_mate.solve(MATE_IN_ONE, 1000) == ("mate", ["G*1b"])
    assert usi_mate.solve(MATED, 1000) == ("nomate", [])
    assert usi_mate.solve(START_SFEN, 1000) == ("nomate", [])
    assert usi_mate.solve(TSUME, 100_000) == ("mate", TSUME_PV.split())
    assert usi_mate.solve(HARD, 1000) == ("unknown", [])


def _mate_run(sfen: str, time_ms: int | None, stop_after: float | None = None) -> tuple[str, list[str]]:
    box: list[tuple[str, list[str]]] = []
    search = usi_mate.MateSearch(sfen, time_ms, lambda o, p: box.append((o, p)))
    search.start()
    if stop_after is not None:
        time.sleep(stop_after)
        search.stop()
    assert search.wait(20)
    assert len(box) == 1
    return box[0]


def test_mate_search_in_a_child_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usi_mate, "QUICK_NODES", 5)  # force the child-process stage
    assert _mate_run(TSUME, 10_000) == ("mate", TSUME_PV.split())
    t = time.monotonic()
    assert _mate_run(HARD, 500) == ("timeout", [])  # killed at the deadline
    assert _mate_run(HARD, None, stop_after=0.3) == ("timeout", [])  # killed by stop
    assert time.monotonic() - t < 10


class _SlowSession:
    """Stands in for the session while ``isready`` loads a slow network."""

    evaluator = None
    searching = False
    prepared = False
    network_pending = True

    def ensure_ready(self, compiled_wait_s: float = 0.0) -> str:
        time.sleep(0.35)
        self.network_pending = False
        self.evaluator = object()
        return "network slow.onnx on CPU"


def test_isready_prints_empty_lines_while_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    from protocols import usi

    monkeypatch.setattr(usi, "HEARTBEAT_S", 0.1)
    stream = io.BytesIO()
    from protocols.loop import LineSource, Output

    handler = UsiHandler(Output(stream), LineSource(io.StringIO("")), ProtocolSettings())
    real = handler.session
    handler.session = _SlowSession()
    try:
        handler.handle("isready")
    finally:
        real.close()
    lines = stream.getvalue().decode().split("\n")
    assert lines[-3:] == ["info string network slow.onnx on CPU", "readyok", ""]
    assert 2 <= len(lines) - 3 <= 4 and all(line == "" for line in lines[:-3])


# ==== transcripts against the real program ========================================================
def start(engine_process, *flags: str) -> EngineProcess:
    """`tabula --threads 1 usi`, through `usi` and a first `isready` (network loaded)."""
    eng = engine_process("--threads", "1", *flags, "usi")
    eng.send("usi")
    assert eng.read_until(lambda line: line == "usiok", 30)[-1] == "usiok"
    eng.send("isready")
    got = eng.read_until(lambda line: line == "readyok", 60)
    assert got[-2].startswith("info string network ") and got[-1] == "readyok"
    return eng


def expect(eng: EngineProcess, *lines: str, timeout: float = 30.0) -> None:
    """The next lines are exactly ``lines``."""
    got = [eng.read_line(timeout) for _ in lines]
    assert got == list(lines)


def alive(eng: EngineProcess) -> None:
    """Nothing was printed since the last check, and the engine still answers."""
    eng.send("isready")
    expect(eng, "readyok")


def silent_for(eng: EngineProcess, seconds: float) -> None:
    with pytest.raises(queue.Empty):
        line = eng.lines.get(timeout=seconds)
        pytest.fail(f"unexpected output {line!r}")


def bestmove(eng: EngineProcess, timeout: float = 30.0) -> tuple[list[str], str]:
    """Lines up to the bestmove (all info lines well formed) and the bestmove line."""
    lines = eng.read_until(lambda line: line.startswith("bestmove"), timeout)
    for line in lines[:-1]:
        assert INFO_RE.fullmatch(line) or line.startswith("info string "), line
    return lines[:-1], lines[-1]


def assert_legal(sfen: str | None, moves: list[str], reply: str) -> None:
    """``reply`` (a bestmove line) is legal, and so is its ponder move after it."""
    board = cshogi.Board(sfen) if sfen else cshogi.Board()
    for m in moves:
        board.push_usi(m)
    words = reply.split(" ")
    assert words[0] == "bestmove" and len(words) in (2, 4)
    move = board.move_from_usi(words[1])
    assert board.is_legal(move), reply
    if len(words) == 4:
        assert words[2] == "ponder"
        board.push(move)
        assert board.is_legal(board.move_from_usi(words[3])), reply


def test_usi_block_and_isready(engine_process) -> None:
    eng = engine_process("--threads", "1", "usi")
    t = time.monotonic()
    eng.send("usi")
    expect(eng, *USI_BLOCK)
    assert time.monotonic() - t < 5
    eng.send("isready")
    line = eng.read_line(60)
    while line == "":  # the heartbeat while the network loads (a slow or busy machine)
        line = eng.read_line(60)
    on_cpu = line.endswith((" on CPU", " on CPU (uint8 planes: shogi.int8.uint8-planes.onnx)"))
    assert (line.startswith("info string network ") and on_cpu) or "uniform" in line
    expect(eng, "readyok")
    alive(eng)  # the network is loaded once: no second info string
    eng.send("usi")
    expect(eng, *USI_BLOCK)
    assert eng.close() == 0


def test_setoption_declared_and_undeclared(engine_process) -> None:
    eng = start(engine_process)
    for line in (
        "setoption name USI_Hash value 64",
        "setoption name Hash value 32",  # undeclared alias
        "setoption name USI_Ponder value true",
        "setoption name Ponder value false",  # undeclared alias
        "setoption name MultiPV value 2",
        "setoption name MoveOverhead value 50",
        "setoption name ByoyomiMargin value 60",
        "setoption name usi_hash value 16",  # names are matched case-insensitively
        "setoption name WeightsFile value <empty>",
    ):
        eng.send(line)
    alive(eng)  # none of them reloads the network: no output at all
    eng.send("setoption name BatchSize value 8")  # reloads at the next isready
    eng.send("isready")
    assert eng.read_line().startswith("info string network ")
    expect(eng, "readyok")


def _last_score(eng: EngineProcess) -> tuple[str, str, str]:
    """``(kind, value, bestmove)`` of the search just started: its last reported score and its move."""
    lines = eng.read_until(lambda line: line.startswith("bestmove"), 60)
    scores = [m.groups() for m in (re.search(r" score (cp|mate) (-?\d+)", line) for line in lines) if m]
    assert scores, lines
    return scores[-1][0], scores[-1][1], lines[-1]


def test_max_moves_to_draw(engine_process) -> None:
    """``MaxMovesToDraw N``: the position at game ply N (SFEN move number N + 1) is a draw, so one ply
    before it every move draws (``score cp 0``, proven at once); setting it keeps the position; the
    move number of an SFEN counts; bad values change nothing; 0 turns it off."""
    eng = start(engine_process)
    eng.send("position startpos moves 7g7f 3c3d 8h2b+")  # game ply 3, sente's bishop takes
    eng.send("setoption name MaxMovesToDraw value 4")
    alive(eng)
    eng.send("go nodes 400")
    kind, value, best = _last_score(eng)
    assert (kind, value) == ("cp", "0") and re.fullmatch(r"bestmove \S+( ponder \S+)?", best)
    # the same position as an SFEN with its move number (4): the state's own ply is 0
    eng.send("position sfen lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4")
    eng.send("go nodes 400")
    assert _last_score(eng)[:2] == ("cp", "0")
    # at the limit the game is over by length: searched all the same, a legal move answers
    eng.send("setoption name MaxMovesToDraw value 3")
    eng.send("go nodes 100")
    kind, value, best = _last_score(eng)
    assert (kind, value) == ("cp", "0") and best.startswith("bestmove ") and "resign" not in best
    eng.send("setoption name MaxMovesToDraw value -1")
    expect(eng, "info string bad value for MaxMovesToDraw: -1 is outside [0, 100000]; unchanged")
    eng.send("setoption name MaxMovesToDraw value 0")  # no limit: a real search, far from proven
    eng.send("go nodes 400")
    lines = eng.read_until(lambda line: line.startswith("bestmove"), 60)
    assert max(int(n) for n in re.findall(r" nodes (\d+)", " ".join(lines))) >= 100  # not proven at once
    alive(eng)
    assert eng.close() == 0


#: Gote to move, from a ladder game against Fairy-Stockfish: 38 of its 72 moves let sente mate (5-17 plies).
MATE_THREATS = "+R7l/1+B1pgk1s1/p5np1/2p1p1p1p/1p1n1p3/P1P5P/1P2P1PP1/3P1KS2/LNSG1G1NL w BGSLrp 54"


def test_mate_threat_nodes(engine_process) -> None:
    """``MateThreatNodes`` (default 1000): no move after which cshogi's df-pn proves a mate for the
    opponent is played; 0 turns the check off and a bad value changes nothing."""
    board = cshogi.Board(MATE_THREATS)
    threatened = set()
    for move in list(board.legal_moves):
        board.push(move)
        if not board.is_check() and cshogi.DfPn(31, 1000).search(board):
            threatened.add(cshogi.move_to_usi(move))
        board.pop()
    assert len(threatened) == 38
    eng = start(engine_process)
    eng.send(f"position sfen {MATE_THREATS}")
    eng.send("go nodes 400")
    best = eng.read_until(lambda line: line.startswith("bestmove"), 60)[-1].split()[1]
    assert best not in threatened
    eng.send("setoption name MateThreatNodes value -5")
    expect(eng, "info string bad value for MateThreatNodes: -5 is outside [0, 10000000]; unchanged")
    eng.send("setoption name MateThreatNodes value 0")
    eng.send("go nodes 100")
    assert eng.read_until(lambda line: line.startswith("bestmove"), 60)[-1].startswith("bestmove ")
    alive(eng)
    assert eng.close() == 0


def test_setoption_bad_input(engine_process) -> None:
    eng = start(engine_process)
    eng.send("setoption name NoSuchOption value 1")
    expect(eng, "info string unknown option NoSuchOption: ignored")
    eng.send("setoption name USI_Hash value lots")
    expect(eng, "info string bad value for USI_Hash: expected an integer, not 'lots'; unchanged")
    eng.send("setoption name MultiPV value 0")
    expect(eng, "info string bad value for MultiPV: 0 is outside [1, 500]; unchanged")
    eng.send("setoption name USI_Ponder value maybe")
    expect(eng, "info string bad value for USI_Ponder: expected true or false, not 'maybe'; unchanged")
    eng.send("setoption name Backend value quantum")
    expect(
        eng,
        "info string bad value for Backend: expected one of auto, cpu, cuda, tensorrt, not 'quantum'; unchanged",
    )
    eng.send("setoption name WeightsFile value /no/such/net.onnx")
    expect(eng, "info string bad value for WeightsFile: no such file: /no/such/net.onnx; unchanged")
    eng.send("setoption")
    expect(eng, "info string ignoring setoption: setoption needs 'name <id>'")
    alive(eng)  # the network was kept: no reload
    eng.send("position startpos")
    eng.send("go nodes 32")
    assert_legal(None, [], bestmove(eng)[1])


def test_weightsfile_option_reloads_the_network(engine_process, tmp_path) -> None:
    from weights import default_network

    net = default_network("shogi")
    assert net is not None
    eng = start(engine_process)
    eng.send(f"setoption name WeightsFile value {net}")
    eng.send("isready")
    line = eng.read_line()
    assert line.startswith(f"info string network {net} ")
    expect(eng, "readyok")
    wrong = tmp_path / "notanet.onnx"
    wrong.write_bytes(b"not onnx")
    eng.send(f"setoption name WeightsFile value {wrong}")
    eng.send("isready")
    line = eng.read_line()
    kept = (f"; keeping network {net}", f"; keeping network {int8_sibling(net)}")  # (int8 on a CPU)
    assert line.startswith(f"info string cannot use network {wrong}") and line.endswith(kept)
    expect(eng, "readyok")
    eng.send("go nodes 16")
    assert_legal(None, [], bestmove(eng)[1])


def test_position_forms_and_go_nodes(engine_process) -> None:
    eng = start(engine_process)
    eng.send("usinewgame")
    eng.send("position startpos moves 7g7f 3c3d")
    eng.send("go nodes 64")
    infos, reply = bestmove(eng)
    assert infos and INFO_RE.fullmatch(infos[-1])
    assert_legal(None, ["7g7f", "3c3d"], reply)
    eng.send(f"position sfen {START_SFEN} moves 2g2f")
    eng.send("go nodes 32")
    assert_legal(None, ["2g2f"], bestmove(eng)[1])
    eng.send(f"position {TSUME}")  # without the word sfen
    eng.send("go mate 5000")
    expect(eng, f"checkmate {TSUME_PV}")
    alive(eng)


def test_illegal_move_keeps_the_legal_prefix(engine_process) -> None:
    eng = start(engine_process)
    eng.send(f"position sfen {TSUME} moves 3h3g 7g7f")  # 7g7f: no sente piece there / wrong side
    expect(eng, "info string illegal move 7g7f (move 2): kept the position after 1 moves")
    eng.send("go mate 2000")  # gote to move after 3h3g: no mate for gote here
    assert eng.read_line(10).startswith("checkmate ")
    eng.send(f"position sfen {TSUME} moves 9z9y")
    expect(eng, "info string illegal move 9z9y (move 1): kept the position after 0 moves")
    eng.send("go mate 5000")
    expect(eng, f"checkmate {TSUME_PV}")
    alive(eng)


def test_malformed_sfen_keeps_the_old_position(engine_process) -> None:
    eng = start(engine_process)
    eng.send(f"position sfen {TSUME}")
    for bad in ("sfen lnsgkgsnl/9/9 b - 1", "sfen xyz", "sfen 9/9/9/9/9/9/9/9/9 b - 1", "sfen"):
        eng.send(f"position {bad}")
        line = eng.read_line()
        assert line.startswith(
            ("info string invalid sfen, position unchanged: ", "info string ignoring position: ")
        ), line
    eng.send("position")
    expect(eng, "info string ignoring position: position needs startpos or an SFEN; position unchanged")
    eng.send("go mate 5000")
    expect(eng, f"checkmate {TSUME_PV}")
    alive(eng)


def test_null_resign_and_win_inside_moves(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos moves 7g7f 0000 3c3d")
    expect(eng, "info string illegal move 0000 (move 2): kept the position after 1 moves")
    eng.send("go nodes 16")
    assert_legal(None, ["7g7f"], bestmove(eng)[1])
    eng.send("position startpos moves 7g7f 3c3d resign")
    expect(eng, "info string 'resign' ends the move list: moves from it on ignored")
    eng.send("go nodes 16")
    assert_legal(None, ["7g7f", "3c3d"], bestmove(eng)[1])
    eng.send("position startpos moves win 7g7f")
    expect(eng, "info string 'win' ends the move list: moves from it on ignored")
    eng.send("go nodes 16")
    assert_legal(None, [], bestmove(eng)[1])
    alive(eng)


def test_unknown_command(engine_process) -> None:
    eng = start(engine_process)
    eng.send("frobnicate now")
    expect(eng, "info string unknown command: frobnicate")
    eng.send("")
    eng.send("   \t ")
    alive(eng)


def test_bare_go_ends_on_its_own(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos")
    t = time.monotonic()
    eng.send("go")
    infos, reply = bestmove(eng, timeout=30)
    assert_legal(None, [], reply)
    assert time.monotonic() - t < 15
    # No clock: the search ends near its default budget.  Not a deadline test (the byoyomi tests below
    # are): on a fresh clone CI twice saw 5118 and 5184 ms here, a stall not yet explained.
    assert int(infos[-1].split(" time ")[1].split()[0]) <= TimeConfig().default_ms * 1.1
    alive(eng)


@pytest.mark.parametrize("side_moves", [[], ["7g7f"]])
def test_go_byoyomi_spends_it_and_never_exceeds_it(engine_process, side_moves: list[str]) -> None:
    eng = start(engine_process)
    eng.send("position startpos moves " + " ".join(side_moves) if side_moves else "position startpos")
    t = time.monotonic()
    eng.send("go btime 0 wtime 0 byoyomi 600")
    infos, reply = bestmove(eng)
    wall = time.monotonic() - t
    assert_legal(None, side_moves, reply)
    used = int(infos[-1].split(" time ")[1].split()[0])
    assert used < 600  # MoveOverhead (100 ms) kept back covers the last network batch
    assert wall < 3.0  # generous: the machine is shared
    eng.send("go byoyomi 300")  # byoyomi without clocks (cshogi's client)
    infos, reply = bestmove(eng)
    assert int(infos[-1].split(" time ")[1].split()[0]) < 300
    alive(eng)


#: Positions of one game (sente to move, gote to move, ...): each ``go`` searches a new position.
LOADED_GAME = ["7g7f", "3c3d", "2g2f", "8c8d", "2f2e", "8d8e", "6i7h", "4a3b", "2e2d", "2c2d"]


@pytest.mark.parametrize(
    ("go_args", "limit_ms"),
    [
        ("btime 0 wtime 0 byoyomi 600", 600),  # byoyomi after the main time (ShogiGUI, floodgate)
        ("byoyomi 300", 300),  # byoyomi alone (cshogi's client)
        ("btime 10000 wtime 10000", None),  # sudden death: the budget's hard limit, far inside the clock
    ],
)
def test_clock_is_kept_with_every_core_busy(engine_process, go_args: str, limit_ms: int | None) -> None:
    """With a busy loop on every core (the engine gets a fraction of the CPU, its threads wait for a
    core), neither the reported ``time`` nor the wall time from ``go`` to ``bestmove`` passes the
    limit: the byoyomi, or for sudden death the budget's hard limit (``allocate``) plus the move overhead
    that stands for the pipe.  The engine's own time stays within the hard limit in every search."""
    eng = start(engine_process)
    with busy_cores(seconds=60):
        for ply in range(len(LOADED_GAME) - 4):
            moves = LOADED_GAME[:ply]
            eng.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
            go = parse_go(go_args.split())
            budget = allocate(go_limits(go, ply % 2), ply, _shogi_time_config())
            assert budget.hard_ms is not None
            t = time.monotonic()
            eng.send("go " + go_args)
            infos, reply = bestmove(eng)
            wall_ms = (time.monotonic() - t) * 1000
            assert_legal(None, moves, reply)
            used = int(infos[-1].split(" time ")[1].split()[0])
            assert used <= budget.hard_ms, (go_args, ply, used, budget, infos[-1][:60])
            allowed = limit_ms if limit_ms is not None else budget.hard_ms + TimeConfig().move_overhead_ms
            assert wall_ms < allowed, (go_args, ply, used, wall_ms)
    alive(eng)


def _shogi_time_config() -> TimeConfig:
    low, high = get_game("shogi").profile.expected_moves
    return TimeConfig(min_expected_moves=low, max_expected_moves=high)


def test_go_clock_of_the_side_to_move(engine_process) -> None:
    eng = start(engine_process)
    # Gote to move with a tiny clock, sente with a huge one: gote's must be used.
    eng.send("position startpos moves 7g7f")
    eng.send("go btime 3600000 wtime 400 binc 0 winc 0")
    infos, reply = bestmove(eng)
    assert_legal(None, ["7g7f"], reply)
    assert int(infos[-1].split(" time ")[1].split()[0]) <= 400
    eng.send("go wtime abc btime 1000 movetime 200")
    expect(eng, "info string ignoring go tokens: wtime abc")
    assert_legal(None, ["7g7f"], bestmove(eng)[1])
    alive(eng)


def test_go_depth_and_movetime(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos")
    eng.send("go depth 2")
    infos, reply = bestmove(eng)
    assert_legal(None, [], reply)
    assert int(infos[-1].split("depth ")[1].split()[0]) >= 2
    eng.send("go movetime 300")
    infos, reply = bestmove(eng)
    assert int(infos[-1].split(" time ")[1].split()[0]) <= 300
    alive(eng)


def test_go_infinite_answers_isready_and_waits_for_stop(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos")
    eng.send("go infinite")
    time.sleep(1.2)
    eng.send("isready")
    lines = eng.read_until(lambda line: line == "readyok", 5)
    assert all(line.startswith("info ") for line in lines[:-1])
    eng.send("position startpos moves 2g2f")  # during the search: applied after it
    eng.send("setoption name MultiPV value 2")
    eng.send("stop")
    infos, reply = bestmove(eng, 10)
    assert_legal(None, [], reply)
    eng.send("go nodes 32")  # the deferred position and option are in force now
    infos, reply = bestmove(eng)
    assert_legal(None, ["2g2f"], reply)
    assert any(" multipv 2 " in line for line in infos)
    alive(eng)


def test_stop_and_ponderhit_when_idle_print_nothing(engine_process) -> None:
    eng = start(engine_process)
    eng.send("stop")
    eng.send("ponderhit")
    eng.send("gameover")
    eng.send("gameover win")
    alive(eng)


def test_ponder_then_ponderhit(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos moves 7g7f 3c3d")
    eng.send("go ponder btime 0 wtime 0 byoyomi 500")
    time.sleep(1.0)
    eng.send("isready")
    lines = eng.read_until(lambda line: line == "readyok", 5)
    assert not any(line.startswith("bestmove") for line in lines)
    t = time.monotonic()
    eng.send("ponderhit")
    _infos, reply = bestmove(eng)
    assert_legal(None, ["7g7f", "3c3d"], reply)
    assert time.monotonic() - t < 3.0
    alive(eng)


def test_ponder_miss_stop_still_sends_bestmove(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos moves 7g7f 3c3d")
    eng.send("go ponder byoyomi 500")
    time.sleep(0.5)
    eng.send("stop")
    assert_legal(None, ["7g7f", "3c3d"], bestmove(eng, 10)[1])
    eng.send("position startpos moves 7g7f 8c8d")
    eng.send("go byoyomi 300")
    assert_legal(None, ["7g7f", "8c8d"], bestmove(eng)[1])
    alive(eng)


@pytest.mark.parametrize("gameover", ["gameover", "gameover lose", "gameover draw"])
def test_gameover_during_ponder(engine_process, gameover: str) -> None:
    eng = start(engine_process)
    eng.send("position startpos moves 7g7f")
    eng.send("go ponder byoyomi 500")
    time.sleep(0.3)
    eng.send(gameover)
    assert_legal(None, ["7g7f"], bestmove(eng, 10)[1])  # one bestmove per go, even now
    eng.send("usinewgame")
    alive(eng)
    assert eng.close() == 0


def test_mated_root_resigns(engine_process) -> None:
    eng = start(engine_process)
    eng.send(f"position sfen {MATED}")
    eng.send("go byoyomi 500")
    expect(eng, "bestmove resign")
    eng.send("go infinite")  # even mated, infinite waits for stop
    time.sleep(0.5)
    eng.send("stop")
    _infos, reply = bestmove(eng, 10)
    assert reply == "bestmove resign"
    eng.send("go mate 1000")
    expect(eng, "checkmate nomate")
    alive(eng)


def test_mate_in_one_is_scored_in_plies(engine_process) -> None:
    eng = start(engine_process)
    eng.send(f"position sfen {MATE_IN_ONE}")
    eng.send("go nodes 400")
    infos, reply = bestmove(eng)
    assert reply == "bestmove G*1b"
    assert " score mate 1 " in infos[-1]
    alive(eng)


def test_entering_king_declaration(engine_process) -> None:
    eng = start(engine_process)
    eng.send(f"position sfen {DECLARE_WIN}")
    eng.send("go btime 1000 wtime 1000 byoyomi 1000")
    expect(eng, "bestmove win")
    alive(eng)


def test_go_perft_prints_stockfish_format(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos moves 7g7f")
    eng.send("go perft 2")
    lines = eng.read_until(lambda line: line.startswith("Nodes searched"), 60)
    board = cshogi.Board()
    board.push_usi("7g7f")
    divide = dict(line.split(": ") for line in lines[:-2])
    assert set(divide) == {cshogi.move_to_usi(m) for m in board.legal_moves}
    total = sum(len(list(_after(board, m).legal_moves)) for m in board.legal_moves)
    assert lines[-2:] == ["", f"Nodes searched: {total}"]
    expect(eng, "")
    eng.send("go perft zero")
    expect(eng, "info string ignoring go tokens: perft zero")


def _after(board: cshogi.Board, move: int) -> cshogi.Board:
    copy = cshogi.Board(board.sfen())
    copy.push(move)
    return copy


def test_go_mate_answers(engine_process) -> None:
    eng = start(engine_process)
    eng.send(f"position sfen {MATE_IN_ONE}")
    eng.send("go mate 1000")
    expect(eng, "checkmate G*1b")
    eng.send("position startpos")
    eng.send("go mate infinite")
    expect(eng, "checkmate nomate")
    eng.send(f"position sfen {HARD}")
    t = time.monotonic()
    eng.send("go mate 700")
    expect(eng, "checkmate timeout", timeout=10)
    assert time.monotonic() - t < 5
    eng.send("go mate infinite")
    time.sleep(0.5)
    eng.send("isready")  # answered during the mate search
    expect(eng, "readyok", timeout=3)
    eng.send("stop")
    expect(eng, "checkmate timeout", timeout=5)
    alive(eng)


def test_multipv_lines(engine_process) -> None:
    eng = start(engine_process)
    eng.send("setoption name MultiPV value 3")
    eng.send("position startpos")
    eng.send("go nodes 200")
    infos, reply = bestmove(eng)
    last = [line for line in infos if not line.startswith("info string")][-3:]
    assert [line.split(" multipv ")[1].split()[0] for line in last] == ["1", "2", "3"]
    pv_first = [line.split(" pv ")[1].split()[0] for line in last]
    assert len(set(pv_first)) == 3 and reply.split()[1] == pv_first[0]
    alive(eng)


def test_stdout_is_protocol_lines_only(engine_process) -> None:
    eng = start(engine_process)
    for line in (
        "position startpos",
        "go nodes 64",
        "frob",
        "setoption name X value 1",
        f"position sfen {MATED}",
        "go",
    ):
        eng.send(line)
    eng.read_until(lambda line: line == "bestmove resign", 30)
    assert eng.close() == 0
    raw = bytes(eng.raw_stdout)
    assert b"\r" not in raw and raw.endswith(b"\n")
    raw.decode("ascii")  # ASCII only
    words = {"id", "option", "usiok", "readyok", "info", "bestmove", "checkmate"}
    for line in raw.decode().split("\n")[:-1]:
        assert line == "" or line.split(" ")[0] in words, line


def test_eof_and_quit_during_search_exit_promptly(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos")
    eng.send("go infinite")
    time.sleep(0.5)
    assert eng.proc.stdin is not None
    t = time.monotonic()
    eng.proc.stdin.close()  # EOF behaves as quit
    assert eng.proc.wait(timeout=10) == 0
    assert time.monotonic() - t < 5
    eng = start(engine_process)
    eng.send("go infinite")
    time.sleep(0.3)
    eng.send("quit")
    assert eng.proc.wait(timeout=10) == 0


def test_commands_right_after_bestmove_apply_at_once(engine_process) -> None:
    eng = start(engine_process)
    for _ in range(5):
        eng.send("position startpos")
        eng.send("go nodes 16")
        bestmove(eng)
        eng.send("setoption name BatchSize value 4")  # the search thread may still be winding down
        eng.send("isready")
        got = eng.read_until(lambda line: line != "", 60)  # empty keep-alive lines while kernels compile
        assert got[-1].startswith("info string network ")  # applied: the network reloaded
        expect(eng, "readyok")
        eng.send("setoption name BatchSize value 8")


def test_deferred_commands_keep_their_order(engine_process) -> None:
    eng = start(engine_process)
    eng.send("position startpos")
    eng.send("go infinite")
    eng.send("position startpos moves 2g2f")  # during the search: deferred
    time.sleep(0.3)
    eng.send("stop")
    bestmove(eng, 10)
    eng.send(f"position sfen {MATE_IN_ONE}")  # after it: must win over the deferred one
    eng.send("go nodes 64")
    assert bestmove(eng)[1] == "bestmove G*1b"
    alive(eng)


# ==== go perft against cshogi on many positions ===================================================
def _cshogi_divide(board: cshogi.Board, depth: int) -> dict[str, int]:
    """Perft divide written directly on cshogi's board (push / pop / legal_moves): the reference."""

    def count(d: int) -> int:
        moves = list(board.legal_moves)
        if d == 1:
            return len(moves)
        total = 0
        for move in moves:
            board.push(move)
            total += count(d - 1)
            board.pop()
        return total

    divide = {}
    for move in list(board.legal_moves):
        board.push(move)
        divide[cshogi.move_to_usi(move)] = count(depth - 1) if depth > 1 else 1
        board.pop()
    return divide


#: Positions with drops, promotions (forced and optional), pawn-drop mate, nifu and checks.
PERFT_POSITIONS = [
    START_SFEN,
    "lnsg1g1nl/2k2rs2/ppppp1bpp/5pp2/9/2P1P4/PP1P1PP1P/1BK2S1R1/LNSG1G1NL w P 20",
    "lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3",
    "ln1g3+Rl/1ks4s1/pppp1p1pp/4p4/9/2P1P4/PP1P1PP1P/1+b1S2S2/LN1GKG1NL w BNPgp 40",
    "7nk/7s1/7G1/9/9/9/9/9/4K4 b GP 1",  # P*1b would be pawn-drop mate
    "4k4/6P2/6N2/1N7/L8/9/9/9/4K4 b PLN 1",  # forced promotions, no drops to dead squares
    "4k4/9/9/9/9/9/4P4/9/4K4 b P 1",  # nifu
    "lns4n+B/3rg2sl/+Bppp3g1/2k1ppppP/5K3/1PP1P4/P2G1PPPN/3S3RL/LN2G1S2 b 3P 53",  # in check
    TSUME,
    "8k/9/9/9/9/9/9/9/4K4 b R2G 1",
]


def _random_positions(count: int, seed: int) -> list[str]:
    """Positions of seeded random games (10-90 plies in), none of them over."""
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        board = cshogi.Board()
        for _ in range(rng.randrange(10, 90)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if not board.is_game_over() and len(list(board.legal_moves)) <= 120:
            found.append(board.sfen())
    return found


def test_go_perft_equals_cshogi_on_100_positions_to_depth_3() -> None:
    """`go perft 3` through the USI handler on 100 positions (well-known ones, then random-game ones)
    equals a perft written on cshogi's board, move by move and in total."""
    from protocols.loop import LineSource, Output

    stream = io.BytesIO()
    handler = UsiHandler(Output(stream), LineSource(io.StringIO("")), ProtocolSettings())
    positions = PERFT_POSITIONS + _random_positions(100 - len(PERFT_POSITIONS), seed=21)
    try:
        for sfen in positions:
            stream.seek(0)
            stream.truncate()
            handler.handle(f"position sfen {sfen}")
            handler.handle("go perft 3")
            lines = stream.getvalue().decode().split("\n")
            expected = _cshogi_divide(cshogi.Board(sfen), 3)
            divide = {move: int(n) for move, n in (line.split(": ") for line in lines[:-4])}
            assert divide == expected, sfen
            assert lines[-4:] == ["", f"Nodes searched: {sum(expected.values())}", "", ""], sfen
    finally:
        handler.session.close()
