"""Cold start as a GUI sees it: how long `tabula` takes to answer its handshake and `isready`, with numba's
cache empty (a first run) and then filled (every later run).

    python benchmarks/cold_start.py                    # UCI (chess), USI (shogi), GTP (Go 9x9)
    python benchmarks/cold_start.py --protocols uci --runs 3

Each round starts the real program over pipes with ``NUMBA_CACHE_DIR`` pointing at a fresh folder (cold),
then compiles in a fresh process whatever that program did not finish compiling before it quit (timed;
on an empty cache the engine compiles on every core, ``engine/search/kernel_build.py``),
then starts the program again on the same folder (warm), and prints per protocol:

* handshake: program start -> ``uciok`` / ``usiok`` / the answer to ``protocol_version``;
* ready: ``isready`` -> ``readyok`` (the network and, within the protocol's budget, the compiled search's
  kernels: ``protocols/uci.py`` and ``protocols/usi.py``, ``COMPILED_WAIT_S``), and whether the engine
  then said it was still compiling (``info string ... compiling the search kernels``), and if so when
  the compiled search was ready (``isready`` asked again until one is answered at once);
* GTP has no ``isready``: its kernels load from start-up; ``genmove`` -> answer with 1 s byo-yomi, and the
  time from start to that answer.

``--first-search NODES`` measures instead what a user's first game gets from the cache the program
finds as installed (no ``NUMBA_CACHE_DIR``: a fresh ``pip install .`` or the PyInstaller bundle, whose
build precompiled the kernels, ``engine/precompile.py``): per game, two starts in a row of the program,
each timing ``isready`` -> ``readyok`` (GTP: ``lz-analyze`` -> its first line) and a first search of NODES nodes from the start position (UCI and
USI ``go nodes``; Go, which GTP cannot limit by nodes, ``lz-analyze`` until the root's moves hold NODES
visits, timed from its first analysis line) and the same search again (a new game), and each start's first search over the warm figure
(the faster of the two repeated searches):

    python benchmarks/cold_start.py --first-search 8000 --program /tmp/venv/bin/tabula
    python benchmarks/cold_start.py --first-search 8000 --program dist/tabula/tabula --games chess shogi

Figures, not assertions: the machine may be shared (say so when you report them).
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.process import tabula_command

#: An ``isready`` answered within this many seconds found the compiled search loaded (UCI waits up to 3 s).
READY_WITHIN_S = 2.0
#: How long the benchmark asks again while a first run still compiles (seconds from the first ``isready``).
STILL_COMPILING_CAP_S = 180.0


class Pipe:
    """A `tabula` subprocess whose output lines arrive timestamped on a queue."""

    def __init__(self, args: list[str], env: dict[str, str], program: list[str] | None = None) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [*(program or tabula_command()), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            env=env,
        )
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line.rstrip("\n")))

    def send(self, line: str) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return time.monotonic()

    def wait_for(self, match: Callable[[str], bool], timeout: float = 180.0) -> tuple[float, list[str]]:
        """The time the first line matching ``match`` arrived, and every line up to it."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            at, line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            seen.append(line)
            if match(line):
                return at, seen

    def close(self) -> None:
        try:
            self.send("quit")
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def engine_protocol(protocol: str, env: dict[str, str], program: list[str] | None = None) -> str:
    """One start of the UCI or USI program: the handshake, ``isready`` and what it said."""
    pipe = Pipe(["--threads", "1", protocol], env, program)
    try:
        pipe.send(protocol)
        ok = "uciok" if protocol == "uci" else "usiok"
        at, _ = pipe.wait_for(lambda line: line == ok)
        handshake = at - pipe.started
        asked = pipe.send("isready")
        at, seen = pipe.wait_for(lambda line: line == "readyok")
        ready = at - asked
        compiling = any("compiling the search kernels" in line for line in seen)
        state = "compiled search ready"
        # each isready waits for the kernels up to the protocol's budget: ask until one is quick
        if compiling:
            again = float("inf")
            while again >= READY_WITHIN_S and at - asked < STILL_COMPILING_CAP_S:
                again = pipe.send("isready")
                at, _ = pipe.wait_for(lambda line: line == "readyok")
                again = at - again
            state = f"still compiling after readyok; compiled search ready {at - asked:.2f} s after isready"
        return f"handshake {handshake:5.2f} s   isready -> readyok {ready:6.2f} s   ({state})"
    finally:
        pipe.close()


def gtp(env: dict[str, str], program: list[str] | None = None) -> str:
    """One start of the GTP program: ``protocol_version`` and a first ``genmove`` at 1 s byo-yomi."""
    pipe = Pipe(["--threads", "1", "--boardsize", "9", "gtp"], env, program)
    try:
        pipe.send("protocol_version")
        at, _ = pipe.wait_for(lambda line: line.startswith("="))
        handshake = at - pipe.started
        for command in ("boardsize 9", "clear_board", "time_settings 0 1 1"):
            pipe.send(command)
            pipe.wait_for(lambda line: line.startswith(("=", "?")))
        asked = pipe.send("genmove b")
        at, _ = pipe.wait_for(lambda line: line.startswith(("=", "?")))
        return (
            f"handshake {handshake:5.2f} s   genmove (1 s byo-yomi) {at - asked:5.2f} s   "
            f"start -> first move {at - pipe.started:5.2f} s"
        )
    finally:
        pipe.close()


GAME_OF = {"uci": "chess", "usi": "shogi", "gtp": "go"}


def finish_compiling(protocol: str, env: dict[str, str]) -> str:
    """Load (compile what is missing of) the protocol's game's compiled search in a fresh process as the
    engine does (:func:`~engine.search.kernel_build.load_kernels`), so the warm round finds a full cache
    even when the cold round's program quit before its compilation ended (a helper it started may still
    be writing: then this compiles what is missing itself)."""
    game = GAME_OF[protocol]
    code = (
        "import time; from engine.search.tree_factory import COMPILED_TREES as T\n"
        "from engine.search.kernel_build import load_kernels\n"
        f"t = time.monotonic(); name = T.get({game!r})\n"
        "if name: load_kernels(name)\n"
        "print(f'{time.monotonic() - t:.2f}' if name else 'none')"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    seconds = out.stdout.strip()
    return "no compiled tree" if seconds == "none" else f"{seconds} s"


#: The games of ``--first-search``: the program's arguments and protocol.
FIRST_SEARCH_GAMES: dict[str, tuple[list[str], str]] = {
    "chess": (["uci"], "uci"),
    "shogi": (["usi"], "usi"),
    "go9": (["--boardsize", "9", "gtp"], "gtp"),
    "go19": (["--boardsize", "19", "gtp"], "gtp"),
}
NODES = re.compile(r"\bnodes (\d+)")
VISITS = re.compile(r"\bvisits (\d+)")


def _timed_search(pipe: Pipe, protocol: str, nodes: int) -> tuple[float, float | None]:
    """From a new game's start position, one search of ``nodes`` nodes: its nodes/s (UCI, USI: nodes
    counted by the engine's last ``info``, time from the command to the answer) and, for GTP, the seconds
    from the command to its first analysis line."""
    if protocol in ("uci", "usi"):
        pipe.send(f"{protocol}newgame")  # an empty tree and network cache
        pipe.send("position startpos")
        asked = pipe.send(f"go nodes {nodes}")
        at, seen = pipe.wait_for(lambda line: line.startswith("bestmove"), timeout=600)
        searched = max((int(m.group(1)) for line in seen if (m := NODES.search(line))), default=0)
        return searched / (at - asked), None
    pipe.send("clear_board")
    pipe.wait_for(lambda line: line.startswith(("=", "?")))
    asked = pipe.send("lz-analyze 10")
    # timed from the first analysis line (GTP has no isready: the command itself waits for the network
    # and the compiled search, as genmove does) to the one that reaches ``nodes`` visits
    first: tuple[float, int] | None = None
    total = 0
    while total < nodes:  # the root's moves' visits, summed, in each analysis line
        at, seen = pipe.wait_for(lambda line: line.startswith("info move"), timeout=600)
        total = sum(int(v) for v in VISITS.findall(seen[-1]))
        first = first or (at, total)
    pipe.send("name")  # any line ends the analysis
    pipe.wait_for(lambda line: line.startswith("= Tabula"))
    assert first is not None
    return (total - first[1]) / (at - first[0]), first[0] - asked


def first_search(game: str, nodes: int, program: list[str] | None) -> tuple[float, float, float]:
    """One start of the program on ``game``: the seconds until it was ready to search (UCI, USI:
    ``isready`` -> ``readyok``; GTP, which has no isready: ``lz-analyze`` -> its first line), the nodes/s
    of its first search of ``nodes`` nodes from the start position, and of the same search again (a new
    game: empty tree and network cache) with everything loaded."""
    args, protocol = FIRST_SEARCH_GAMES[game]
    pipe = Pipe(args, dict(os.environ), program)
    try:
        ready = None
        if protocol in ("uci", "usi"):
            pipe.send(protocol)
            pipe.wait_for(lambda line: line == ("uciok" if protocol == "uci" else "usiok"))
            asked = pipe.send("isready")
            at, _ = pipe.wait_for(lambda line: line == "readyok")
            ready = at - asked
        first, first_line = _timed_search(pipe, protocol, nodes)
        again, _ = _timed_search(pipe, protocol, nodes)
        return ready if ready is not None else first_line or 0.0, first, again
    finally:
        pipe.close()


def first_searches(games: list[str], nodes: int, program: list[str] | None) -> None:
    """``--first-search``: per game, two starts in a row, each one's first search against the warm
    figure (the faster of the two starts' repeated searches)."""
    for game in games:
        starts = [first_search(game, nodes, program) for _ in range(2)]
        warm = max(again for _, _, again in starts)
        ready_label = (
            "lz-analyze -> first line" if FIRST_SEARCH_GAMES[game][1] == "gtp" else "isready -> readyok"
        )
        for label, (ready, first, again) in zip(("first start", "second start"), starts, strict=True):
            print(
                f"{game:5s} {label:12s} {ready_label} {ready:5.2f} s   first search {first:7.0f} nodes/s   "
                f"again {again:7.0f}   first / warm {first / warm:.2f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--protocols", nargs="+", default=["uci", "usi", "gtp"], choices=["uci", "usi", "gtp"]
    )
    parser.add_argument("--runs", type=int, default=1, help="cold/warm rounds per protocol")
    parser.add_argument(
        "--first-search", type=int, metavar="NODES", help="the installed cache's first search"
    )
    parser.add_argument(
        "--games", nargs="+", default=list(FIRST_SEARCH_GAMES), choices=list(FIRST_SEARCH_GAMES)
    )
    parser.add_argument("--program", help="the program to start (default: the installed `tabula`)")
    args = parser.parse_args()
    program = [args.program] if args.program else None
    if args.first_search:
        first_searches(args.games, args.first_search, program)
        return
    for protocol in args.protocols:
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="tabula-numba-cache-") as cache:
                env = dict(os.environ, NUMBA_CACHE_DIR=cache)
                for label in ("cold (empty cache)", "warm (cache filled)"):
                    figures = (
                        gtp(env, program) if protocol == "gtp" else engine_protocol(protocol, env, program)
                    )
                    print(f"{protocol:4s} {label:20s} {figures}", flush=True)
                    if label.startswith("cold"):
                        rest = finish_compiling(protocol, env)
                        print(
                            f"{protocol:4s} {'':20s} the rest of the first run's compilation: {rest}",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
