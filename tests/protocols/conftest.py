"""Fixtures for driving the real `tabula` program in protocol tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.process import EngineProcess, tabula_command

__all__ = ["EngineProcess", "engine_process", "tabula_command"]


@pytest.fixture
def engine_process() -> Iterator[Callable[..., EngineProcess]]:
    """Factory fixture: ``engine_process("uci")`` starts `tabula uci`; all are killed afterwards."""
    started: list[EngineProcess] = []

    def start(*args: str, cwd: str | None = None) -> EngineProcess:
        proc = EngineProcess(list(args), cwd)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait()
