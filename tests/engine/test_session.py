"""The session facade: positions, searches on the worker thread, stop/ponderhit, tree reuse."""

from __future__ import annotations

import threading
import time

import pytest

from engine.games import IllegalMoveError, InvalidPositionError
from engine.search.limits import Clock, SearchLimits
from engine.session import EngineOptions, Session


@pytest.fixture
def session():
    s = Session("chess", EngineOptions(weights_file="/nonexistent.onnx", info_interval_s=0.05))
    yield s
    s.close()


def test_missing_network_falls_back_loudly_to_uniform(session: Session) -> None:
    note = session.ensure_ready()
    assert "uniform" in note and "/nonexistent.onnx" in note


def test_bad_move_keeps_the_previous_position(session: Session) -> None:
    session.set_position(None, ["e2e4"])
    with pytest.raises(IllegalMoveError) as err:
        session.set_position(None, ["d2d4", "e7e5", "d4d5", "e5e4", "d5d6", "e4e3", "a1a8"])
    assert err.value.args[1] == 6
    assert session.state.ply == 1
    with pytest.raises(InvalidPositionError):
        session.set_position("not a fen", [])
    assert session.state.ply == 1


def test_go_reports_info_and_exactly_one_result(session: Session) -> None:
    infos, results = [], []
    session.set_position(None, ["e2e4"])
    session.go(SearchLimits(nodes=300), infos.append, results.append)
    session.wait(30)
    assert len(results) == 1 and results[0].best_move is not None
    assert infos and infos[-1].nodes >= 300


def test_infinite_search_answers_only_after_stop(session: Session) -> None:
    results = []
    session.go(SearchLimits(infinite=True), None, results.append)
    time.sleep(0.3)
    assert not results and session.searching
    t = time.perf_counter()
    session.stop()
    session.wait(5)
    assert len(results) == 1 and time.perf_counter() - t < 3.0


def test_infinite_search_of_a_mate_waits_for_stop(session: Session) -> None:
    results = []
    session.set_position("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", [])
    session.go(SearchLimits(infinite=True), None, results.append)
    time.sleep(0.5)
    assert not results
    session.stop()
    session.wait(5)
    assert results[0].best_move.uci() == "a1a8"


def test_ponder_clock_starts_at_ponderhit(session: Session) -> None:
    results = []
    limits = SearchLimits(ponder=True, clock=Clock(2000))
    session.go(limits, None, results.append)
    time.sleep(0.6)  # longer than the whole budget: still pondering
    assert not results
    t = time.perf_counter()
    session.ponderhit()
    session.wait(5)
    elapsed = time.perf_counter() - t
    assert results and elapsed < 3.0


def test_movetime_is_kept(session: Session) -> None:
    session.set_options(move_overhead_ms=20)
    t = time.perf_counter()
    result = session.search(SearchLimits(movetime_ms=300))
    elapsed = time.perf_counter() - t
    assert result.best_move is not None
    # Stops at about the movetime (generous bound: CI machines are shared; figures go in benchmarks).
    assert 0.2 < elapsed < 2.0


def test_tree_is_reused_when_the_game_continues(session: Session) -> None:
    session.wait_for_compiled_search()  # else the first tree found ready kernels replace it (by design)
    session.set_position(None, ["e2e4"])
    first = session.search(SearchLimits(nodes=400))
    tree = session._tree
    reply = first.best_move
    session.set_position(None, ["e2e4", session.state.move_to_text(reply)])
    session.search(SearchLimits(nodes=50))
    assert session._tree is tree
    session.set_position(None, ["d2d4"])
    session.search(SearchLimits(nodes=50))
    assert session._tree is not tree


def test_searching_another_position_leaves_the_session_position(session: Session) -> None:
    session.set_position(None, ["e2e4"])
    position = session.game.state_from_text("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    result = session.search(SearchLimits(nodes=200), position=position)
    assert position.move_to_text(result.best_move) == "a1a8"  # the mate of the given position
    assert session.state.ply == 1 and session.state.to_text().startswith("rnbqkbnr/pppppppp/8/8/4P3/")
    assert position.to_text().startswith("6k1/5ppp/")  # searched on a copy
    assert session._tree is None  # one tree at a time: the next search starts afresh
    assert session.search(SearchLimits(nodes=50)).best_move in session.state.legal_moves()


def test_stop_while_idle_is_harmless(session: Session) -> None:
    session.stop()
    session.ponderhit()
    assert session.wait(0.1)
    assert session.search(SearchLimits(nodes=10)).best_move is not None


def test_searches_from_another_thread_do_not_block_the_caller(session: Session) -> None:
    done = threading.Event()
    session.go(SearchLimits(infinite=True), None, lambda _r: done.set())
    assert not done.wait(0.2)
    session.stop()
    assert done.wait(5)
