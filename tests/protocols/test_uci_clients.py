"""UCI against real clients: python-chess's ``chess.engine`` (options, analyse, play, a full game against
Debian's Stockfish with both clocks checked) and shogi through ``UCI_Variant`` against Fairy-Stockfish.

Each game prints its result (run ``pytest -s`` to see it).
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Iterator

import chess
import chess.engine
import cshogi
import pytest

from protocols.uci_format import fairy_to_usi_move, usi_to_fairy_move
from tests.process import find_program, tabula_command

STOCKFISH = find_program("stockfish")
FAIRY = find_program("fairy-stockfish")
#: Shogi moves in Fairy-Stockfish / cutechess-cli coordinates and in USI notation.
FAIRY_MOVE = re.compile(r"[a-i][1-9][a-i][1-9]\+?|[PLNSGBR]@[a-i][1-9]")
USI_MOVE = re.compile(r"[1-9][a-i][1-9][a-i]\+?|[PLNSGBR]\*[1-9][a-i]")


@pytest.fixture
def tabula() -> Iterator[chess.engine.SimpleEngine]:
    engine = chess.engine.SimpleEngine.popen_uci(tabula_command(), timeout=30)
    try:
        yield engine
    finally:
        engine.quit()


def test_options_parse(tabula: chess.engine.SimpleEngine) -> None:
    options = tabula.options
    assert tabula.id["name"] == "Tabula"
    expected = {
        "Hash": "spin",
        "Threads": "spin",
        "BatchSize": "spin",
        "Backend": "combo",
        "WeightsFile": "string",
        "MoveOverhead": "spin",
        "MultiPV": "spin",
        "Ponder": "check",
        "UCI_ShowWDL": "check",
        "UCI_Chess960": "check",
        "UCI_Variant": "combo",
    }
    for name, kind in expected.items():
        assert options[name].type == kind, name
    assert options["Hash"].default == 256 and options["Hash"].min == 1
    assert options["WeightsFile"].default in ("", "<empty>")  # python-chess keeps the UCI spelling
    assert options["UCI_Variant"].var == ["chess", "shogi"]
    tabula.configure({"Hash": 64, "BatchSize": 8, "WeightsFile": ""})
    tabula.ping()


def test_analyse_with_node_limit(tabula: chess.engine.SimpleEngine) -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    info = tabula.analyse(board, chess.engine.Limit(nodes=200))
    assert isinstance(info["score"], chess.engine.PovScore)
    assert info["nodes"] == 200
    assert info["pv"] and info["pv"][0] in board.legal_moves
    infos = tabula.analyse(board, chess.engine.Limit(nodes=100), multipv=3, info=chess.engine.INFO_ALL)
    assert len(infos) == 3 and len({i["pv"][0] for i in infos}) == 3
    tabula.configure({"UCI_ShowWDL": True})
    wdl = tabula.analyse(board, chess.engine.Limit(nodes=50))["wdl"]
    assert sum(wdl.relative) == 1000


def test_analyse_mate(tabula: chess.engine.SimpleEngine) -> None:
    board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    info = tabula.analyse(board, chess.engine.Limit(mate=1))
    assert info["score"].relative == chess.engine.Mate(1)
    assert info["pv"][0] == chess.Move.from_uci("a1a8")


def test_play_with_clock_and_ponder(tabula: chess.engine.SimpleEngine) -> None:
    board = chess.Board()
    for _ in range(4):
        t0 = time.perf_counter()
        result = tabula.play(
            board, chess.engine.Limit(white_clock=5, black_clock=5, white_inc=0.1, black_inc=0.1)
        )
        assert time.perf_counter() - t0 < 5
        assert result.move in board.legal_moves
        board.push(result.move)
    result = tabula.play(board, chess.engine.Limit(nodes=100), ponder=True)  # ponders after answering
    assert result.move in board.legal_moves and result.ponder is not None
    board.push(result.move)
    assert result.ponder in board.legal_moves
    board.push(result.ponder)
    result = tabula.play(board, chess.engine.Limit(nodes=50))  # ponder miss: stop, then the new search
    assert result.move in board.legal_moves


def test_play_mated_position(tabula: chess.engine.SimpleEngine) -> None:
    board = chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1")
    result = tabula.play(board, chess.engine.Limit(nodes=10))  # "bestmove (none)"
    assert result.move is None
    tabula.ping()


@pytest.mark.slow
@pytest.mark.skipif(STOCKFISH is None, reason="stockfish is not installed (apt-get install stockfish)")
def test_game_against_stockfish() -> None:
    """Tabula at 2 s + 0.05 s against Stockfish (Skill Level 0, 2 s + 0.05 s, 20k nodes per move)."""
    base, inc = 2.0, 0.05
    tabula = chess.engine.SimpleEngine.popen_uci(tabula_command(), timeout=30)
    stockfish = chess.engine.SimpleEngine.popen_uci(STOCKFISH, timeout=30)
    stockfish.configure({"Skill Level": 0, "Threads": 1, "Hash": 16})
    # isready before the clocks start, as cutechess-cli and the GUIs wait for readyok before a game:
    # Tabula's answer waits for its network and search kernels (seconds on a slow machine), which
    # python-chess's first play() would otherwise charge to ply 0 (it sends ucinewgame, isready there)
    tabula.ping()
    board = chess.Board()
    clocks = {chess.WHITE: base, chess.BLACK: base}
    slowest = 0.0
    try:
        while not board.is_game_over(claim_draw=True) and board.ply() < 400:
            side = board.turn
            is_tabula = side == chess.WHITE
            engine = tabula if is_tabula else stockfish
            limit = chess.engine.Limit(
                white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK], white_inc=inc, black_inc=inc
            )
            if not is_tabula:
                limit.nodes = 20_000
            t0 = time.perf_counter()
            result = engine.play(board, limit)
            spent = time.perf_counter() - t0
            assert result.move in board.legal_moves, (board.fen(), result.move)
            if is_tabula:
                assert spent <= clocks[side], (
                    f"tabula lost on time: {spent:.3f} s with {clocks[side]:.3f} s left at ply {board.ply()}"
                )
                slowest = max(slowest, spent)
            clocks[side] = clocks[side] - spent + inc
            board.push(result.move)
    finally:
        tabula.quit()
        stockfish.quit()
    outcome = board.outcome(claim_draw=True)
    result_text = outcome.result() if outcome else "unfinished (ply cap)"
    reason = outcome.termination.name.lower() if outcome else "ply cap"
    print(
        f"\n[uci client game] Tabula (white, 2+0.05) vs Stockfish (Skill Level 0): {result_text} by {reason} "
        f"after {board.ply()} plies; tabula clock left {clocks[chess.WHITE]:.2f} s, slowest move {slowest * 1000:.0f} ms"
    )


class PipeEngine:
    """A UCI program over plain pipes (python-chess cannot parse shogi moves)."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.lines: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._cond:
                self.lines.append(raw.rstrip("\n"))
                self._cond.notify_all()

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = 30.0) -> str:
        """The next line starting with ``prefix`` (earlier lines are dropped)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                while self.lines:
                    line = self.lines.pop(0)
                    if line.startswith(prefix):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no {prefix!r} line within {timeout} s")
                self._cond.wait(left)

    def close(self) -> None:
        try:
            self.send("quit")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


@pytest.mark.slow
@pytest.mark.skipif(
    FAIRY is None, reason="fairy-stockfish is not installed (apt-get install fairy-stockfish)"
)
def test_shogi_through_uci_variant_against_fairy_stockfish() -> None:
    """As ``cutechess-cli -variant shogi -engine cmd=tabula -engine cmd=fairy-stockfish`` plays it
    (cutechess-cli itself is not packaged here): Tabula gets no engine option but ``UCI_Variant shogi``,
    both engines get one move list in Fairy-Stockfish's UCI coordinates and ``go`` with both clocks
    (white, the first player, is sente).  As cutechess-cli's shogi board does, a reply that is not in
    those coordinates, or not legal, forfeits (fails); a cshogi board (USI) keeps the game."""
    plies, clock_ms, inc_ms = 24, 10_000, 100
    tabula = PipeEngine(tabula_command())  # cmd=tabula: no subcommand, the first line (uci) decides
    fairy = PipeEngine([FAIRY])
    board = cshogi.Board()
    moves: list[str] = []  # Fairy-Stockfish coordinates, as sent to both engines
    clocks = {cshogi.BLACK: float(clock_ms), cshogi.WHITE: float(clock_ms)}  # cshogi BLACK: sente
    try:
        for engine, options in ((tabula, []), (fairy, ["setoption name Skill Level value 0"])):
            engine.send("uci")
            engine.expect("uciok")
            engine.send("setoption name UCI_Variant value shogi")
            for line in options:
                engine.send(line)
            engine.send("ucinewgame")
            engine.send("isready")
            engine.expect("readyok")
        while len(moves) < plies and not board.is_game_over():
            engine = tabula if board.turn == cshogi.BLACK else fairy  # Tabula is sente (moves first)
            engine.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
            sente, gote = clocks[cshogi.BLACK], clocks[cshogi.WHITE]
            engine.send(f"go wtime {sente:.0f} btime {gote:.0f} winc {inc_ms} binc {inc_ms}")
            started = time.monotonic()
            answer = engine.expect("bestmove").split()[1]
            clocks[board.turn] += inc_ms - 1000 * (time.monotonic() - started)
            assert FAIRY_MOVE.fullmatch(answer), f"illegal move {answer!r}: not in UCI shogi coordinates"
            move = board.move_from_usi(fairy_to_usi_move(answer))
            assert move and board.is_legal(move), (board.sfen(), answer)
            assert clocks[board.turn] > 0, f"time forfeit after {answer}"
            board.push(move)
            moves.append(answer)
        tabula.send("isready")
        tabula.expect("readyok")
    finally:
        tabula.close()
        fairy.close()
    status = "game over" if board.is_game_over() else "unfinished"
    winner = ("Fairy-Stockfish" if board.turn == cshogi.BLACK else "Tabula") if board.is_game_over() else "-"
    print(
        f"\n[uci client game] shogi via UCI_Variant, no engine option: Tabula (sente, 10+0.1) vs "
        f"Fairy-Stockfish (Skill Level 0): {status} after {len(moves)} plies, winner {winner}; "
        f"Tabula's clock left {clocks[cshogi.BLACK] / 1000:.1f} s; moves: {' '.join(moves)}"
    )


@pytest.mark.slow
@pytest.mark.skipif(
    FAIRY is None, reason="fairy-stockfish is not installed (apt-get install fairy-stockfish)"
)
def test_shogi_usi_notation_against_fairy_stockfish() -> None:
    """Tabula with ``ShogiNotation usi`` (moves in and out in USI notation); the test translates for
    Fairy-Stockfish (UCI coordinates)."""
    tabula = PipeEngine([*tabula_command(), "uci"])
    fairy = PipeEngine([FAIRY])
    board = cshogi.Board()
    usi_moves: list[str] = []
    try:
        for engine in (tabula, fairy):
            engine.send("uci")
            engine.expect("uciok")
            engine.send("setoption name UCI_Variant value shogi")
        tabula.send("setoption name ShogiNotation value usi")
        while len(usi_moves) < 10 and not board.is_game_over():
            gote = board.turn == cshogi.WHITE
            engine = tabula if gote else fairy  # Tabula is gote here
            listed = usi_moves if engine is tabula else [usi_to_fairy_move(m) for m in usi_moves]
            engine.send("position startpos moves " + " ".join(listed) if listed else "position startpos")
            engine.send("go nodes 100" if engine is tabula else "go depth 1")
            answer = engine.expect("bestmove").split()[1]
            if engine is tabula:
                assert USI_MOVE.fullmatch(answer), answer
            usi = answer if engine is tabula else fairy_to_usi_move(answer)
            move = board.move_from_usi(usi)
            assert move and board.is_legal(move), (board.sfen(), answer)
            board.push(move)
            usi_moves.append(usi)
    finally:
        tabula.close()
        fairy.close()
    print(
        f"\n[uci client game] shogi, Tabula in USI notation (gote) vs Fairy-Stockfish: {len(usi_moves)} legal plies: {' '.join(usi_moves)}"
    )
