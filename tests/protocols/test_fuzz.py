"""Property-based fuzzing of the three protocols (hypothesis).

One engine process per protocol receives thousands of random and mutated lines (the checklist's bad
input, valid commands with their tokens dropped, duplicated, swapped or replaced, random text with
tabs, control characters and non-ASCII).  After every line the test sends a probe (`isready` for UCI
and USI, a GTP `name` with a unique id) and requires its answer: the engine never exits, never goes
silent and never stops answering.  Lines that would legitimately end the process (`quit`) are left
out.  GTP searches are bounded by resetting both clocks to zero before any line that could search.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.process import EngineProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

#: Examples per protocol (each one to three lines): several thousand lines in all.
EXAMPLES = 1200

UCI_CORPUS = [
    "uci",
    "debug on",
    "debug off",
    "ucinewgame",
    "stop",
    "ponderhit",
    "isready",
    "setoption name Hash value 32",
    "setoption name MultiPV value 3",
    "setoption name UCI_ShowWDL value true",
    "setoption name UCI_Chess960 value true",
    "setoption name UCI_Chess960 value false",
    "setoption name UCI_Variant value shogi",
    "setoption name UCI_Variant value chess",
    "setoption name WeightsFile value <empty>",
    "setoption name Nope value 3",
    "setoption name Hash value abc",
    "setoption name",
    "setoption",
    "setoption name Clear Hash",
    "position startpos",
    "position startpos moves e2e4 e7e5 g1f3",
    "position startpos moves e2e4 e2e4",
    "position fen rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1 moves e7e5",
    "position fen 8/8/8/8 w - - 0 1",
    "position fen",
    "position",
    "position startpos moves",
    "position fen 6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",
    "position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
    "go nodes 30",
    "go depth 2",
    "go movetime 20",
    "go wtime 1000 btime 1000 winc 10 binc 10",
    "go wtime abc",
    "go searchmoves e2e4 a1a8 nodes 20",
    "go infinite",
    "go ponder nodes 20",
    "go mate 1",
    "go nodes -5",
    "go movestogo 0 wtime 50",
    "xboard",
    "protover 2",
]
USI_CORPUS = [
    "usi",
    "usinewgame",
    "stop",
    "ponderhit",
    "gameover",
    "gameover win",
    "gameover lose",
    "isready",
    "setoption name USI_Hash value 32",
    "setoption name USI_Ponder value true",
    "setoption name MultiPV value 2",
    "setoption name Nope value 1",
    "setoption name BatchSize value zero",
    "setoption",
    "position startpos",
    "position startpos moves 7g7f 3c3d 8h2b+",
    "position startpos moves 7g7f 7g7f",
    "position sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1 moves 2g2f",
    "position lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",
    "position sfen garbage",
    "position sfen 8k/9/8P/9/9/9/9/9/4K4 b G 1",
    "position startpos moves 0000 resign win",
    "position",
    "go byoyomi 30",
    "go btime 100 wtime 100 byoyomi 20",
    "go btime 100 wtime 100 binc 10 winc 10",
    "go nodes 30",
    "go",
    "go infinite",
    "go ponder btime 0 wtime 0 byoyomi 20",
    "go mate 100",
    "go mate infinite",
    "go depth 1",
    "go movetime 20",
    "go byoyomi x",
]
GTP_CORPUS = [
    "protocol_version",
    "name",
    "version",
    "list_commands",
    "known_command play",
    "known_command foo",
    "boardsize 9",
    "boardsize 19",
    "boardsize 0",
    "boardsize 30",
    "boardsize abc",
    "clear_board",
    "komi 6.5",
    "komi abc",
    "komi -3",
    "play b d4",
    "play B D4",
    "play w e5",
    "play b i9",
    "play b z99",
    "play b pass",
    "play x d4",
    "play b",
    "PLAY b d4",
    "undo",
    "genmove b",
    "genmove w",
    "genmove x",
    "kgs-genmove_cleanup b",
    "time_settings 0 1 1",
    "time_settings 10 0 0",
    "time_settings a b c",
    "time_left b 0 1",
    "time_left w 10 0",
    "kgs-time_settings byoyomi 0 1 1",
    "kgs-time_settings none",
    "final_score",
    "final_status_list alive",
    "final_status_list dead",
    "showboard",
    "fixed_handicap 2",
    "fixed_handicap 10",
    "fixed_handicap x",
    "place_free_handicap 3",
    "set_free_handicap d4 q16",
    "set_free_handicap d4 d4",
    "loadsgf /nonexistent.sgf",
    "loadsgf",
    "lz-analyze 5",
    "lz-analyze b 1",
    "kata-analyze w 1 ownership true",
    "kata-analyze ownership",
    "# a comment",
    "1 name",
    "  name  ",
    "name\t",
    "\tplay b c3",
]
CORPUS = {"uci": UCI_CORPUS, "usi": USI_CORPUS, "gtp": GTP_CORPUS}

#: Commands that search: for GTP they run synchronously, so the clocks are reset before them.
GTP_SEARCHING = re.compile(r"^\s*\d*\s*(genmove|kgs-genmove_cleanup|reg_genmove)\b", re.IGNORECASE)
QUIT = re.compile(r"quit|exit", re.IGNORECASE)
GTP_PROBE_ID = 424242

ODD_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=60
)
TOKEN = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(
        [
            "name",
            "value",
            "moves",
            "startpos",
            "fen",
            "sfen",
            "infinite",
            "ponder",
            "b",
            "w",
            "pass",
            "resign",
            "0000",
            "<empty>",
            "-",
            "+",
            "*",
            "#",
            "\t",
            "\x00",
            "\x1b",
            "é",
            "一",
        ]
    ),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=8),
)


@st.composite
def mutated(draw: st.DrawFn, corpus: list[str]) -> str:
    """A corpus line with a few token-level mutations."""
    tokens = draw(st.sampled_from(corpus)).split(" ")
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["drop", "dup", "swap", "replace", "insert", "case", "cut"]))
        i = draw(st.integers(0, max(0, len(tokens) - 1)))
        if op == "drop" and len(tokens) > 1:
            del tokens[i]
        elif op == "dup":
            tokens.insert(i, tokens[i])
        elif op == "swap" and len(tokens) > 1:
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "replace":
            tokens[i] = draw(TOKEN)
        elif op == "insert":
            tokens.insert(i, draw(TOKEN))
        elif op == "case":
            tokens[i] = tokens[i].upper()
        elif op == "cut":
            tokens[i] = tokens[i][: draw(st.integers(0, len(tokens[i])))]
    sep = draw(st.sampled_from([" ", "  ", "\t", " \t "]))
    return sep.join(tokens)


def lines_for(protocol: str) -> st.SearchStrategy[list[str]]:
    corpus = CORPUS[protocol]
    line = st.one_of(st.sampled_from(corpus), mutated(corpus), mutated(corpus), ODD_TEXT)
    line = line.filter(lambda text: not QUIT.search(text))
    if protocol != "gtp":
        line = line.filter(lambda text: text.strip().split(" ")[0].lower() != "isready")
    return st.lists(line, min_size=1, max_size=3)


class Prober:
    """One engine process and the probe that must be answered after every line."""

    def __init__(self, protocol: str, process: EngineProcess) -> None:
        self.protocol = protocol
        self.process = process
        self.lines_sent = 0

    def send_and_probe(self, lines: list[str]) -> None:
        for line in lines:
            if self.protocol == "gtp" and GTP_SEARCHING.match(line.replace("\t", " ")):
                self.process.send("time_left b 0 1")
                self.process.send("time_left w 0 1")
            self.process.send(line)
            self.lines_sent += 1
        if self.protocol == "gtp":
            self.process.send(f"{GTP_PROBE_ID} name")
            expected = f"={GTP_PROBE_ID} Tabula"
        else:
            self.process.send("isready")
            expected = "readyok"
        try:
            self.process.read_until(lambda out: out == expected, timeout=60)
        except (TimeoutError, EOFError) as exc:
            raise AssertionError(f"no {expected!r} after {lines!r}: {exc}") from None
        assert self.process.proc.poll() is None, f"engine exited after {lines!r}"


def start_prober(protocol: str) -> Iterator[Prober]:
    process = EngineProcess([protocol, "--boardsize", "9"])
    if protocol != "gtp":
        process.send(protocol)
        process.read_until(lambda out: out in ("uciok", "usiok"), timeout=30)
    else:
        # Any search stays short: clocks at zero mean one evaluation and a move.
        process.send("time_settings 0 1 1")
    prober = Prober(protocol, process)
    yield prober
    print(f"{protocol}: {prober.lines_sent} fuzzed lines, engine alive and answering after each")
    assert process.close() == 0


@pytest.fixture(scope="module")
def uci_prober() -> Iterator[Prober]:
    yield from start_prober("uci")


@pytest.fixture(scope="module")
def usi_prober() -> Iterator[Prober]:
    yield from start_prober("usi")


@pytest.fixture(scope="module")
def gtp_prober() -> Iterator[Prober]:
    yield from start_prober("gtp")


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
        HealthCheck.too_slow,
    ],
)


@FUZZ_SETTINGS
@given(lines=lines_for("uci"))
def test_uci_survives_any_line(uci_prober: Prober, lines: list[str]) -> None:
    uci_prober.send_and_probe(lines)


@FUZZ_SETTINGS
@given(lines=lines_for("usi"))
def test_usi_survives_any_line(usi_prober: Prober, lines: list[str]) -> None:
    usi_prober.send_and_probe(lines)


@FUZZ_SETTINGS
@given(lines=lines_for("gtp"))
def test_gtp_survives_any_line(gtp_prober: Prober, lines: list[str]) -> None:
    gtp_prober.send_and_probe(lines)
