"""The session facade: positions, searches on the worker thread, stop/ponderhit, tree reuse."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from engine.games import IllegalMoveError, InvalidPositionError
from engine.options import EngineOptions
from engine.search.limits import Clock, SearchLimits
from engine.search.searcher import SearchResult
from engine.search.stoppers import StopReason
from engine.session import Session
from tests.engine.search.one_batch import node_count, root_visits


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


# ==== the compiled search's kernels: loaded with the network, waited for as the protocol allows =======
@pytest.fixture
def gated_kernels(monkeypatch: pytest.MonkeyPatch):
    """Chess's compiled tree stands for a module whose ``warm_up`` (the kernels' loading) ends only when
    the returned event is set: a first run's compilation, as long as the test wants."""
    import sys
    import types

    from engine import kernel_loading as session_module
    from engine.search import compiled_chess

    gate = threading.Event()
    module = types.ModuleType("tabula_test_gated_kernels")
    module.warm_up = lambda: gate.wait(30)  # type: ignore[attr-defined]
    module.reserve = lambda state, config, budget: False  # type: ignore[attr-defined]
    module.TREE = compiled_chess.CompiledChessTree  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(session_module.COMPILED_TREES, "chess", module.__name__)
    yield gate
    gate.set()


def test_ensure_ready_waits_for_the_kernels_up_to_its_budget(
    session: Session, gated_kernels: threading.Event
) -> None:
    assert not session.prepared
    t = time.monotonic()
    note = session.ensure_ready(compiled_wait_s=0.3)
    waited = time.monotonic() - t
    assert waited >= 0.3  # the budget counts from the call: the network's loading is inside it
    assert session.compiled_search_pending and not session.prepared
    assert "compiling the search kernels (first run: a search waits for them)" in note
    gated_kernels.set()
    t = time.monotonic()
    note = session.ensure_ready(compiled_wait_s=10)
    assert time.monotonic() - t < 5
    assert session.prepared and "compiling" not in note


def test_ensure_ready_returns_as_soon_as_the_kernels_are_loaded(
    session: Session, gated_kernels: threading.Event
) -> None:
    threading.Timer(0.2, gated_kernels.set).start()
    t = time.monotonic()
    session.ensure_ready(compiled_wait_s=20)
    assert 0.15 < time.monotonic() - t < 10
    assert session.prepared


def test_a_search_waits_for_the_kernels_then_searches(
    session: Session, gated_kernels: threading.Event
) -> None:
    # No isready first: the search starts the loading and waits for it (a fixed node count: no clock).
    results: list[SearchResult] = []
    session.go(SearchLimits(nodes=30), None, results.append)
    assert not session.wait(0.3) and not results
    assert session.compiled_search_pending
    gated_kernels.set()
    assert session.wait(30)
    assert results[0].info.nodes >= 30 and results[0].stop_reason == StopReason.NODES
    assert session.prepared  # isready has nothing left to wait for


def test_a_clocked_search_plays_the_networks_choice_when_the_kernels_are_late(
    session: Session, gated_kernels: threading.Event
) -> None:
    # The kernels still compiling (a first run), a search with a clock waits half its soft time, then
    # answers with the network's most probable move instead of losing on time.
    session.set_options(move_overhead_ms=20)
    t = time.perf_counter()
    result = session.search(SearchLimits(movetime_ms=400))
    elapsed = time.perf_counter() - t
    assert 0.1 < elapsed < 1.5
    assert result.best_move in session.state.legal_moves() and result.info.nodes == 0
    assert result.info.lines and result.info.lines[0].move == result.best_move
    assert session.compiled_search_pending
    gated_kernels.set()
    assert session.wait_for_compiled_search(30)
    assert session.search(SearchLimits(nodes=30)).info.nodes >= 30


def test_stop_ends_the_wait_for_the_kernels(session: Session, gated_kernels: threading.Event) -> None:
    results: list[SearchResult] = []
    session.go(SearchLimits(infinite=True), None, results.append)
    assert not session.wait(0.2)
    session.stop()
    assert session.wait(5)
    assert results[0].best_move in session.state.legal_moves() and results[0].info.nodes == 0


def test_isready_reserves_the_compiled_trees_memory_up_to_hash() -> None:
    from engine.search.compiled_tree import EDGE_BYTES, NODE_BYTES, POOL

    POOL.clear()
    session = Session("go9", EngineOptions(hash_mb=16, weights_file="/nonexistent.onnx"))
    session.ensure_ready(compiled_wait_s=60)
    assert session.prepared
    assert session.wait_for_reservation(60)  # ensure_ready waited for it within its budget
    fit = (16 << 20) // (NODE_BYTES + 82 * EDGE_BYTES)
    taken = POOL.take(1, fit * 82, 82)  # the reserved set: a search's tree takes it
    assert taken.move.shape[0] >= fit * 82
    POOL.give(taken)
    assert session.search(SearchLimits(nodes=200)).best_move is not None
    session.close()
    POOL.clear()


def test_hash_bounds_the_compiled_trees_bytes_not_a_python_node_estimate() -> None:
    """``Hash`` is the tree's memory: a compiled tree fills it with its own bytes per node and edge
    (hashfull 1000 when it is full), where the Python tree's estimate of 5,000 bytes a node would
    have ended the search at about half the nodes (the engine stopped thinking early)."""
    from engine.search.compiled_tree import EDGE_BYTES, NODE_BYTES, used_bytes
    from tests.engine.search.reference_tree import BYTES_PER_NODE

    session = Session("go9", EngineOptions(hash_mb=1, weights_file="/nonexistent.onnx"))
    session.ensure_ready(compiled_wait_s=60)
    infos = []
    result = session.search(SearchLimits(nodes=1_000_000), infos.append)
    assert result.stop_reason == "full"
    tree = session._tree
    assert tree is not None and type(tree).__name__ == "CompiledGoTree"
    used = int(used_bytes(tree._arrays, tree._params))
    # over by the leaves of the last two batches at most (one in flight while the next is selected)
    assert 1 << 20 <= used < (1 << 20) + 2 * 16 * (NODE_BYTES + 82 * EDGE_BYTES)
    assert node_count(tree) > (1 << 20) // (NODE_BYTES + 82 * EDGE_BYTES)  # as if every node were expanded
    assert node_count(tree) > 1.5 * (1 << 20) // BYTES_PER_NODE
    assert infos[-1].hashfull == 1000
    session.close()


def test_shogi_hands_the_int8_network_uint8_planes_with_the_same_search(tmp_path: Path) -> None:
    """The shipped shogi int8 copy has a uint8-planes model beside it: the session's network takes the
    planes the compiled tree writes as uint8, and a search of a fixed number of nodes visits exactly what
    the same search with float planes (the same two files without that model) visits."""
    from engine.search.compiled_shogi import CompiledShogiTree
    from weights import weights_dir

    for name in ("shogi.onnx", "shogi.int8.onnx"):
        (tmp_path / name).write_bytes((weights_dir() / name).read_bytes())
    moves = ["7g7f", "3c3d", "2g2f", "8c8d", "2f2e", "8d8e", "6i7h", "4a3b"]
    visits = []
    for options in (
        EngineOptions(threads=1),
        EngineOptions(threads=1, weights_file=str(tmp_path / "shogi.onnx")),
    ):
        session = Session("shogi", options)
        note = session.ensure_ready(180)
        assert ("uint8 planes" in note) == (options.weights_file is None), note
        session.set_position(None, moves)
        result = session.search(SearchLimits(nodes=600))
        tree = session._tree
        assert isinstance(tree, CompiledShogiTree)
        assert tree.quantization == getattr(session.evaluator, "planes_quantization", None)
        assert (tree.quantization is not None) == (options.weights_file is None)
        visits.append((result.best_move, root_visits(tree)[1].tolist()))
    assert visits[0] == visits[1]
