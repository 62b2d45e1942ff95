"""Driving a `tabula` program over pipes with timeouts (shared by protocol, binary and benchmark code)."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path


def find_program(name: str) -> str | None:
    """A reference program on the PATH or in /usr/games (where Debian installs stockfish, gnugo ...)."""
    return shutil.which(name) or shutil.which(name, path="/usr/games")


def tabula_command() -> list[str]:
    """The installed `tabula` program (falls back to `python -m protocols`)."""
    exe = shutil.which(
        "tabula", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    )
    return [exe] if exe else [sys.executable, "-m", "protocols"]


class EngineProcess:
    """A `tabula` subprocess with line-level send/expect and timeouts (never hangs a test)."""

    def __init__(
        self,
        args: list[str],
        cwd: str | None = None,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """Start ``command`` (default: the installed `tabula`) with ``args``."""
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            (command if command is not None else tabula_command()) + args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self.raw_stdout = bytearray()
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.raw_stdout.extend(raw)
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", "replace"))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def read_line(self, timeout: float = 10.0) -> str:
        line = self.lines.get(timeout=timeout)
        if line is None:
            self.lines.put(None)
            raise EOFError("engine closed stdout; stderr:\n" + "".join(self.stderr[-30:]))
        return line

    def read_until(self, predicate: Callable[[str], bool], timeout: float = 30.0) -> list[str]:
        """Lines up to and including the first one matching ``predicate``."""
        deadline = time.monotonic() + timeout
        out: list[str] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"no matching line within {timeout}s; got {out[-10:]}; stderr: {''.join(self.stderr[-20:])}"
                )
            try:
                line = self.read_line(left)
            except queue.Empty:
                continue
            out.append(line)
            if predicate(line):
                return out

    def close(self) -> int:
        try:
            if self.proc.poll() is None:
                self.send("quit")
            return self.proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
            self.proc.kill()
            return self.proc.wait()


class GtpPlayer:
    """A GTP program on pipes: ``ask`` returns ``(ok, text)`` or raises ``TimeoutError``."""

    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def ask(self, command: str, timeout: float = 60.0) -> tuple[bool, str]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        reply: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"{self.name}: no reply to {command!r} within {timeout}s") from None
            if line is None:
                raise EOFError(f"{self.name} exited during {command!r}: {''.join(self.stderr[-20:])}")
            if line == "" and reply:
                break
            if line != "" or reply:
                reply.append(line)
        head = reply[0]
        assert head[:1] in "=?", f"{self.name}: not a GTP reply to {command!r}: {reply}"
        text = "\n".join([head[1:].strip(), *reply[1:]]).strip()
        return head.startswith("="), text

    def must(self, command: str, timeout: float = 60.0) -> str:
        ok, text = self.ask(command, timeout)
        assert ok, f"{self.name} refused {command!r}: {text}"
        return text

    def close(self) -> None:
        try:
            self.ask("quit", timeout=10)
            self.proc.wait(timeout=10)
        except (OSError, TimeoutError, EOFError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
