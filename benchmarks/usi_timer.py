"""A USI engine behind a stopwatch: relays stdin and stdout line by line to and from ``COMMAND`` and logs
the wall time from each ``go`` to the engine's ``bestmove``.

    python benchmarks/usi_timer.py --log moves.tsv [--stderr engine.err] -- tabula usi

``cshogi.cli`` enforces no clock when it is given a byoyomi alone, so the strength ladder starts both
engines through this proxy and counts a move over the byoyomi as a loss (benchmarks/ladder.py).  The log
gets one tab-separated line per event, flushed at once:

    newgame                      usinewgame was relayed
    move  PLY  MS  BESTMOVE      the move after PLY plies took MS milliseconds, go to bestmove
    quit                         quit was relayed
    crash  RC                    the engine exited without being asked (exit status RC)

After a crash the proxy stands in for the engine so that the match runner does not hang (cshogi.cli waits
for ever on a closed pipe): it answers ``bestmove resign`` to a pending or later ``go``, ``readyok`` and
``usiok``, and exits on ``quit``.  Only the standard library: the proxy must start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import threading
import time
from typing import IO, BinaryIO


class Stopwatch:
    """The proxy's state, shared by the stdin relay and the engine's stdout relay."""

    def __init__(self, log: IO[str], out: BinaryIO) -> None:
        self.log = log
        self.out = out
        self.lock = threading.Lock()
        self.ply = 0
        self.started: float | None = None  # perf_counter at the pending go
        self.crashed = False
        self.quitting = False

    def write_log(self, *fields: object) -> None:
        with self.lock:
            self.log.write("\t".join(str(f) for f in fields) + "\n")
            self.log.flush()

    def answer(self, line: str) -> None:
        """Write ``line`` to the match runner."""
        with self.lock:
            self.out.write(line.encode() + b"\n")
            self.out.flush()

    def command(self, line: str) -> None:
        """Note a command from the match runner (before it is relayed, so the clock starts first)."""
        words = line.split()
        if not words:
            return
        if words[0] == "usinewgame":
            self.write_log("newgame")
        elif words[0] == "position":
            self.ply = len(words) - words.index("moves") - 1 if "moves" in words else 0
        elif words[0] == "go":
            self.started = time.perf_counter()
        elif words[0] == "quit":
            self.quitting = True
            self.write_log("quit")

    def bestmove(self, line: str) -> None:
        """The engine answered: log the time since ``go``."""
        if self.started is None:
            return
        ms = 1000.0 * (time.perf_counter() - self.started)
        self.started = None
        words = line.split()
        self.write_log("move", self.ply, f"{ms:.1f}", words[1] if len(words) > 1 else "?")

    def stand_in(self, line: str) -> bool:
        """Answer ``line`` for a crashed engine; False on quit."""
        word = line.split()[0] if line.split() else ""
        if word == "go":
            self.started = None
            self.answer("bestmove resign")
        elif word == "isready":
            self.answer("readyok")
        elif word == "usi":
            self.answer("id name crashed engine")
            self.answer("usiok")
        return word != "quit"


def relay_engine_output(engine: subprocess.Popen[bytes], watch: Stopwatch) -> None:
    """Copy the engine's stdout to ours; on its exit, stand in for it."""
    assert engine.stdout is not None
    for raw in engine.stdout:
        text = raw.decode("utf-8", "replace").strip()
        if text.startswith("bestmove"):
            watch.bestmove(text)
        with watch.lock:
            watch.out.write(raw if raw.endswith(b"\n") else raw + b"\n")
            watch.out.flush()
    rc = engine.wait()
    if not watch.quitting:
        watch.crashed = True
        watch.write_log("crash", rc)
        if watch.started is not None:
            watch.answer("bestmove resign")
            watch.started = None


def relay_commands(stdin: BinaryIO, engine: subprocess.Popen[bytes], watch: Stopwatch) -> None:
    """Copy our stdin to the engine, noting each command; returns on quit or end of input."""
    assert engine.stdin is not None
    for raw in stdin:
        line = raw.decode("utf-8", "replace").strip()
        if watch.crashed:
            if not watch.stand_in(line):
                return
            continue
        watch.command(line)
        try:
            engine.stdin.write(raw if raw.endswith(b"\n") else raw + b"\n")
            engine.stdin.flush()
        except (BrokenPipeError, OSError):
            time.sleep(0.2)  # let the output relay see the exit and mark the crash
            if watch.crashed and not watch.stand_in(line):
                return
        if watch.quitting:
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", required=True, help="append the move times here")
    parser.add_argument("--stderr", default=None, help="the engine's stderr (default: discarded)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the engine's command line")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no engine command after --")
    err = open(args.stderr, "ab") if args.stderr else subprocess.DEVNULL  # noqa: SIM115 (lives as long as the engine)
    with open(args.log, "a", encoding="utf-8") as log:
        engine = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        watch = Stopwatch(log, sys.stdout.buffer)
        output = threading.Thread(target=relay_engine_output, args=(engine, watch), daemon=True)
        output.start()
        relay_commands(sys.stdin.buffer, engine, watch)
        watch.quitting = True  # quit, or the match runner went away: the engine's exit is no crash
        if engine.stdin is not None and not engine.stdin.closed:
            with contextlib.suppress(OSError):
                engine.stdin.close()
        try:
            engine.wait(timeout=10)
        except subprocess.TimeoutExpired:
            engine.kill()
            engine.wait()
        output.join(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
