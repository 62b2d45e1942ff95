"""The stdin/stdout loop shared by the three protocols.

* A reader thread reads stdin line by line into a queue (so commands keep arriving while a search or a
  GTP analysis runs) and signals ``input_arrived``; the dispatcher (the main thread) hands each line to
  the protocol handler.  EOF behaves as ``quit``.
* :class:`Output` writes protocol lines with ``\\n`` endings on every platform, flushed per line, from
  any thread (search callbacks included) under one lock.  Nothing else writes to stdout.
* :func:`detect_protocol` reads the first line: ``uci`` -> UCI, ``usi`` -> USI, ``xboard`` (Arena's
  probe) is ignored and the next line decides, anything else -> GTP (that line is handled as GTP).
"""

from __future__ import annotations

import abc
import logging
import queue
import sys
import threading
import time
from typing import BinaryIO, TextIO

from engine.inference import STDOUT_REDIRECT_LOCK

log = logging.getLogger("tabula.protocol")

EOF_LINE: None = None


class Output:
    """Thread-safe line writer to the protocol channel (stdout by default)."""

    def __init__(self, stream: BinaryIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdout.buffer
        # The inference module redirects fd 1 while it probes execution providers; writing under the
        # same lock means no protocol line can be swallowed by a probe running on another thread.
        self._lock = STDOUT_REDIRECT_LOCK

    def line(self, text: str = "") -> None:
        """Write one line (``\\n`` ending, ASCII-safe) and flush."""
        data = (text + "\n").encode("utf-8", errors="replace")
        with self._lock:
            try:
                self._stream.write(data)
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):  # the GUI went away
                pass
        log.debug(">> %s", text)

    def lines(self, texts: list[str]) -> None:
        """Write several lines in one locked block (GTP multi-line replies)."""
        data = "".join(t + "\n" for t in texts).encode("utf-8", errors="replace")
        with self._lock:
            try:
                self._stream.write(data)
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass


class LineSource:
    """Lines from a text stream, read on a daemon thread.  ``get()`` returns ``None`` at EOF.

    ``arrived_at`` is when the line that ``get()`` returned last was read (``time.perf_counter()`` on the
    reader thread): a GUI's clock runs from when it sent ``go``, and on a busy machine the dispatcher
    may take the line from the queue tens of milliseconds later."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdin
        self._queue: queue.Queue[tuple[str | None, float]] = queue.Queue()
        self.arrived_at: float | None = None
        self.input_arrived = threading.Event()
        self._thread = threading.Thread(target=self._read, name="tabula-stdin", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for raw in self._stream:
                line = raw.rstrip("\r\n")
                self._queue.put((line, time.perf_counter()))
                self.input_arrived.set()
                log.debug("<< %s", line)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            log.warning("stdin closed: %s", exc)
        self._queue.put((EOF_LINE, time.perf_counter()))
        self.input_arrived.set()

    def get(self, timeout: float | None = None) -> str | None:
        """The next line (blocking), or ``None`` at EOF."""
        line, self.arrived_at = self._queue.get(timeout=timeout)
        if self._queue.empty():
            self.input_arrived.clear()
        if line is None:
            self._queue.put((None, self.arrived_at))  # stay at EOF for later callers
        return line

    def arrival(self) -> float:
        """When the line being handled was read (:attr:`arrived_at`; now, when no line was read yet)."""
        arrived = self.arrived_at
        return arrived if arrived is not None else time.perf_counter()

    def pending(self) -> bool:
        """True when a line is waiting."""
        return not self._queue.empty()


class Handler(abc.ABC):
    """A protocol: handles one line at a time; returns False to quit."""

    @abc.abstractmethod
    def handle(self, line: str) -> bool:
        """Handle one raw input line (without its line ending)."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op for handlers that hold nothing
        """Stop searches and release the engine (on quit and EOF)."""


def serve(handler: Handler, source: LineSource, first_line: str | None = None) -> None:
    """Dispatch lines to ``handler`` until it quits or stdin ends."""
    try:
        if first_line is not None and not handler.handle(first_line):
            return
        while True:
            line = source.get()
            if line is None:
                break
            try:
                if not handler.handle(line):
                    break
            except Exception:  # no input may kill the engine
                log.exception("error handling %r", line)
    finally:
        handler.close()


def detect_protocol(source: LineSource) -> tuple[str, str | None]:
    """Read lines until one decides the protocol.  Returns ``(name, line_to_replay)``.

    ``uci``/``usi`` are consumed here and replayed (so the handler prints its ``id`` block); ``xboard``
    and blank lines are skipped; any other line means GTP and is replayed to the GTP handler.
    """
    while True:
        line = source.get()
        if line is None:
            return "gtp", None
        word = line.strip().split()[0].lower() if line.strip() else ""
        if not word or word == "xboard":
            continue
        if word in ("uci", "usi"):
            return word, line
        return "gtp", line
