"""The search's PUCT parameters as options: declared alike in UCI and USI, set from the command line,
and changing the search they are set for (``protocols/search_options.py``)."""

from __future__ import annotations

import re

import pytest

from engine.options import EngineOptions
from engine.search.config import SearchConfig
from protocols import uci_format
from protocols.search_options import SEARCH_PARAMETERS, config_from_flags
from protocols.settings import ProtocolSettings
from protocols.usi import option_specs as usi_option_specs
from tests.process import EngineProcess

PAPER = {"CPuct": 125, "CPuctBase": 19652, "FpuReduction": 25, "FpuReductionRoot": 25}


@pytest.mark.parametrize("parameter", SEARCH_PARAMETERS, ids=lambda p: p.name)
def test_option_values_round_trip_through_the_config(parameter) -> None:  # type: ignore[no-untyped-def]
    for value in (parameter.low, (parameter.low + parameter.high) // 2, parameter.high):
        config = parameter.applied(SearchConfig(), value)
        assert parameter.option_value(config) == value
        assert getattr(config, parameter.field) == pytest.approx(value / parameter.scale)


def test_uci_and_usi_declare_the_paper_defaults() -> None:
    uci = {s.name: s.default for s in uci_format.option_specs(EngineOptions())}
    usi = {s.name: s.default for s in usi_option_specs(ProtocolSettings(engine=EngineOptions()))}
    assert {name: uci[name] for name in PAPER} == PAPER
    assert {name: int(usi[name]) for name in PAPER} == PAPER


def test_flags_set_the_config_and_the_declared_defaults() -> None:
    config = config_from_flags(SearchConfig(), {"cpuct": 2.5, "fpu_reduction": None, "cpuct_base": 1000.0})
    assert (config.c_init, config.c_base, config.fpu_reduction) == (2.5, 1000.0, SearchConfig().fpu_reduction)
    declared = {s.name: s.default for s in uci_format.option_specs(EngineOptions(search=config))}
    assert declared["CPuct"] == 250 and declared["CPuctBase"] == 1000


def _seldepth(engine: EngineProcess, cpuct: int, protocol: str) -> int:
    engine.send(f"setoption name CPuct value {cpuct}")
    engine.send("position startpos")
    engine.send("go nodes 600")
    lines = engine.read_until(lambda line: line.startswith("bestmove"), timeout=60)
    last = [line for line in lines if " seldepth " in line][-1]
    match = re.search(r" seldepth (\d+)", last)
    assert match is not None, (protocol, last)
    return int(match.group(1))


@pytest.mark.parametrize(("protocol", "ok"), [("uci", "uciok"), ("usi", "usiok")])
def test_cpuct_changes_the_search(engine_process, protocol: str, ok: str) -> None:  # type: ignore[no-untyped-def]
    """Almost no exploration (CPuct 1: c_init 0.01) follows the network's first choices deep; much
    exploration (CPuct 1000: 10.0) spreads the same nodes over the root's moves."""
    engine = engine_process(protocol)
    engine.send(protocol)
    engine.read_until(lambda line: line == ok, timeout=35)
    engine.send("isready")
    engine.read_until(lambda line: line == "readyok", timeout=60)
    greedy = _seldepth(engine, 1, protocol)
    wide = _seldepth(engine, 1000, protocol)
    assert greedy > wide + 3, (greedy, wide)
    engine.send("setoption name CPuct value 0")  # out of range: refused, the last value kept
    assert "unchanged" in engine.read_line(timeout=10)
