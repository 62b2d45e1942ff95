"""USI ``go mate``: a tsume (mate) search with cshogi's df-pn solver.

cshogi's ``DfPn.search`` holds the GIL for its whole run, so a long search in this process would stop
the stdin reader thread (no ``stop``, no ``isready`` answer).  Hence two stages:

1. in this process, bounded: no legal move (``nomate``), a mate in one, then df-pn with
   ``QUICK_NODES`` nodes (tens of milliseconds) - most problems end here;
2. otherwise df-pn in a child interpreter (``python -m protocols.usi_mate SFEN NODES``: no fork of
   a threaded engine, no re-import of the main script) with ``MAX_NODES`` nodes, killed at the
   deadline or on ``stop``.  In a frozen bundle (no interpreter to start) one bigger in-process run
   is made instead.

Answers: ``checkmate <moves...>``, ``checkmate nomate`` (df-pn proved there is none), ``checkmate
timeout`` (deadline, ``stop``, or the node cap reached without a proof).  df-pn needs about 140 bytes
per node: ``MAX_NODES`` keeps the child under ~300 MB.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import cshogi

log = logging.getLogger("tabula.usi")

#: df-pn nodes searched in the engine process before a child process is started (~50 ms).
QUICK_NODES = 20_000
#: df-pn node cap of the child process (memory bound, see the module docstring).
MAX_NODES = 2_000_000
#: How often the waiting thread looks at the child, the deadline and ``stop`` (seconds).
POLL_S = 0.02


def solve(sfen: str, max_nodes: int) -> tuple[str, list[str]]:
    """Mate search for the side to move at ``sfen``: ``("mate", pv)``, ``("nomate", [])`` when
    disproved, ``("unknown", [])`` when the node cap was reached first."""
    board = cshogi.Board(sfen)
    if board.is_game_over():
        return "nomate", []
    one = board.mate_move_in_1ply()
    if one:
        return "mate", [cshogi.move_to_usi(one)]
    dfpn = cshogi.DfPn(nodes=max_nodes)
    if dfpn.search(board):
        return "mate", [cshogi.move_to_usi(m) for m in dfpn.get_pv(board)]
    if dfpn.searched_node >= max_nodes:
        return "unknown", []
    return "nomate", []


def main(argv: list[str]) -> int:
    """Child-process entry (``python -m protocols.usi_mate SFEN NODES``): prints one JSON line
    ``[outcome, pv]`` on its stdout (a pipe to the engine, not the protocol channel)."""
    sfen, nodes = " ".join(argv[:-1]), int(argv[-1])
    print(json.dumps(solve(sfen, nodes)), flush=True)
    return 0


class MateSearch:
    """One ``go mate`` run on its own thread; ``on_done`` gets the ``checkmate ...`` words (once)."""

    def __init__(self, sfen: str, time_ms: int | None, on_done: Callable[[str, list[str]], None]) -> None:
        self.sfen = sfen
        self.deadline = None if time_ms is None else time.monotonic() + time_ms / 1000.0
        self.on_done = on_done
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tabula-mate", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            outcome, pv = self._search()
        except Exception:
            log.exception("mate search failed")
            outcome, pv = "timeout", []
        self.on_done(outcome, pv)

    def _search(self) -> tuple[str, list[str]]:
        outcome, pv = solve(self.sfen, QUICK_NODES)
        if outcome != "unknown":
            return outcome, pv
        if self._stop.is_set() or self._expired():
            return "timeout", []
        if getattr(sys, "frozen", False):  # no child interpreter in a bundle: one bigger in-process run
            outcome, pv = solve(self.sfen, 10 * QUICK_NODES)
            return (outcome, pv) if outcome != "unknown" else ("timeout", [])
        return self._search_in_child()

    def _expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _search_in_child(self) -> tuple[str, list[str]]:
        """df-pn in a child interpreter, killed at the deadline or on ``stop``."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "protocols.usi_mate", *self.sfen.split(), str(MAX_NODES)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(Path(__file__).resolve().parent.parent),
        )
        try:
            while not (self._stop.is_set() or self._expired()):
                try:
                    out, _ = proc.communicate(timeout=POLL_S)
                except subprocess.TimeoutExpired:
                    continue
                outcome, pv = json.loads(out.decode("ascii").strip() or '["unknown", []]')
                return (outcome, pv) if outcome in ("mate", "nomate") else ("timeout", [])
            return "timeout", []
        except (ValueError, OSError):
            log.exception("mate search child failed")
            return "timeout", []
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
