"""Protocol latency while the engine thinks: how fast `stop` and a ping come back during an infinite search.

    python benchmarks/latency.py                      # UCI, default chess network, 50 samples each
    python benchmarks/latency.py --samples 100 --think 0.5
    python benchmarks/latency.py --protocol uci -- --threads 1   # flags after -- go to `tabula`

Measures over pipes against the real `tabula` program, as a GUI sees it:
  * ping: ``isready`` -> ``readyok`` sent while a ``go infinite`` runs (the search must go on);
  * stop: ``stop`` -> ``bestmove`` after the search has run ``--think`` seconds (+ jitter).
Prints p50 / p90 / p99 / max in milliseconds.  Figures, not assertions (the machine may be shared).

GTP (``--protocol gtp``, Go 19x19): the search is ``lz-analyze`` streaming, which any input line ends,
so both figures time ``protocol_version`` -> ``= 2`` sent during the stream (after 20-100 ms of
analysis, and after ``--think`` s), plus the time until the stream's closing empty line.

Extension point: a protocol is a :class:`Probe` in ``PROBES``.  USI fits as UCI does (``usi`` ->
``usiok``, ``isready`` -> ``readyok``, ``go infinite`` / ``stop`` -> ``bestmove``).  Add the subclass
and register it; nothing else changes.
"""

from __future__ import annotations

import argparse
import queue
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.process import tabula_command


class Pipe:
    """A `tabula` subprocess with timestamped output lines."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            tabula_command() + args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[tuple[float, str | None]] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put((time.perf_counter(), raw.rstrip("\n")))
        self.lines.put((time.perf_counter(), None))

    def send(self, line: str) -> float:
        """Send a line; returns the time it was written."""
        assert self.proc.stdin is not None
        t = time.perf_counter()
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return t

    def wait_for(self, match: Callable[[str], bool], timeout: float = 30.0) -> float:
        """Time the first line matching ``match`` arrived (earlier lines are dropped)."""
        deadline = time.perf_counter() + timeout
        while True:
            t, line = self.lines.get(timeout=max(0.0, deadline - time.perf_counter()))
            if line is None:
                raise EOFError("tabula exited")
            if match(line):
                return t

    def close(self) -> None:
        try:
            self.send("quit")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


class Probe:
    """How one protocol starts the engine, starts an endless search, pings and stops it."""

    name = ""
    args: tuple[str, ...] = ()
    search_name = "go infinite"
    labels = ("ping -> reply", "stop -> answer")

    def report(self) -> list[str]:
        """Extra figure lines (default: none)."""
        return []

    def handshake(self, pipe: Pipe) -> None:
        raise NotImplementedError

    def start_search(self, pipe: Pipe) -> None:
        raise NotImplementedError

    def ping(self, pipe: Pipe) -> float:
        """Send a ping during the search; returns the latency in seconds."""
        raise NotImplementedError

    def stop(self, pipe: Pipe) -> float:
        """End the search; returns the latency until its answer, in seconds."""
        raise NotImplementedError


class UciProbe(Probe):
    name = "uci"
    args = ("uci",)
    moves = "e2e4 e7e5"

    def handshake(self, pipe: Pipe) -> None:
        pipe.send(self.name)
        pipe.wait_for(lambda line: line == f"{self.name}ok")
        pipe.send("isready")  # loads the network
        pipe.wait_for(lambda line: line == "readyok", timeout=120)
        pipe.send(f"position startpos moves {self.moves}")

    def start_search(self, pipe: Pipe) -> None:
        pipe.send("go infinite")

    def ping(self, pipe: Pipe) -> float:
        t0 = pipe.send("isready")
        return pipe.wait_for(lambda line: line == "readyok") - t0

    def stop(self, pipe: Pipe) -> float:
        t0 = pipe.send("stop")
        return pipe.wait_for(lambda line: line.startswith("bestmove")) - t0


class UsiProbe(UciProbe):
    """USI pings and stops like UCI (``isready`` -> ``readyok``, ``stop`` -> ``bestmove``)."""

    name = "usi"
    args = ("usi",)
    moves = "7g7f 3c3d"


class GtpProbe(Probe):
    """GTP (Go 19x19, the default network): the "search" is ``lz-analyze`` streaming, and any input line
    ends it, so a ping is a stop too.  Both send ``protocol_version`` during the stream and time the
    end of the stream (its empty line) and the reply ``= 2``; a ping restarts the stream afterwards."""

    name = "gtp"
    args = ("gtp",)
    search_name = "lz-analyze streaming, 10 cs interval"
    labels = ("cmd -> reply   (after 20-100 ms of analysis)", "cmd -> reply   (after --think s)")

    def __init__(self) -> None:
        self.stream_ends: dict[str, list[float]] = {"ping": [], "stop": []}
        self._kind = "stop"  # who started the running stream: a ping restarts it

    def handshake(self, pipe: Pipe) -> None:
        pipe.send("protocol_version")
        pipe.wait_for(lambda line: line == "= 2")
        pipe.send("play b q16")
        pipe.send("play w d4")
        self.start_search(pipe)  # loads the network
        pipe.wait_for(lambda line: line.startswith("info move"), timeout=120)
        self.stop(pipe)
        self.stream_ends["stop"].clear()

    def start_search(self, pipe: Pipe) -> None:
        pipe.send("lz-analyze 10")
        pipe.wait_for(lambda line: line == "=")
        self._kind = "stop"

    def ping(self, pipe: Pipe) -> float:
        latency = self._command(pipe, "ping")
        self.start_search(pipe)
        self._kind = "ping"  # the next command comes after 20-100 ms of this stream
        return latency

    def stop(self, pipe: Pipe) -> float:
        return self._command(pipe, self._kind)

    def _command(self, pipe: Pipe, kind: str) -> float:
        t0 = pipe.send("protocol_version")
        end = pipe.wait_for(lambda line: line == "")
        self.stream_ends[kind].append(end - t0)
        return pipe.wait_for(lambda line: line == "= 2") - t0

    def report(self) -> list[str]:
        width = max(map(len, self.labels))
        return [
            f"  {'cmd -> stream end (after 20-100 ms)':<{width}}  {percentiles(self.stream_ends['ping'])}",
            f"  {'cmd -> stream end (after --think s)':<{width}}  {percentiles(self.stream_ends['stop'])}",
        ]


#: Registered protocols.
PROBES: dict[str, type[Probe]] = {"uci": UciProbe, "usi": UsiProbe, "gtp": GtpProbe}


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000.0 for s in samples)
    q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return f"p50 {q[49]:7.2f}  p90 {q[89]:7.2f}  p99 {q[98]:7.2f}  max {ms[-1]:7.2f} ms  (n={len(ms)})"


def measure(
    probe: Probe, samples: int, think_s: float, engine_flags: list[str]
) -> tuple[list[float], list[float]]:
    pipe = Pipe([*engine_flags, *probe.args])
    pings: list[float] = []
    stops: list[float] = []
    try:
        probe.handshake(pipe)
        probe.start_search(pipe)  # pings: all during one long search
        time.sleep(think_s)
        for _ in range(samples):
            pings.append(probe.ping(pipe))
            time.sleep(random.uniform(0.02, 0.1))
        probe.stop(pipe)
        for _ in range(samples):  # stops: one search each
            probe.start_search(pipe)
            time.sleep(think_s * random.uniform(0.8, 1.2))
            stops.append(probe.stop(pipe))
    finally:
        pipe.close()
    return pings, stops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", default="uci", choices=["uci", "usi", "gtp"])
    parser.add_argument("--samples", type=int, default=50, help="samples of each latency")
    parser.add_argument("--think", type=float, default=0.3, help="seconds of search before each stop")
    parser.add_argument("engine_flags", nargs="*", help="flags for tabula (after --)")
    options = parser.parse_args()
    if options.protocol not in PROBES:
        raise SystemExit(
            f"--protocol {options.protocol}: no probe yet; add a Probe subclass to PROBES in {__file__}"
        )
    probe = PROBES[options.protocol]()
    pings, stops = measure(probe, options.samples, options.think, options.engine_flags)
    print(f"protocol {probe.name}, default network, search running ({probe.search_name}):")
    width = max(map(len, probe.labels))
    print(f"  {probe.labels[0]:<{width}}  {percentiles(pings)}")
    print(f"  {probe.labels[1]:<{width}}  {percentiles(stops)}")
    for line in probe.report():
        print(line)


if __name__ == "__main__":
    main()
