"""Root verdicts from the tablebases in the search: the root's children proven, the DTZ-best win played
at once, losing moves excluded, real mates first; the same on the Python and the compiled chess tree."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import chess
import chess.syzygy
import pytest

from engine.chess_tablebase import SyzygyTables
from engine.games.chess import ChessState
from engine.inference import UniformEvaluator
from engine.search.compiled_chess import CompiledChessTree
from engine.search.config import SearchConfig
from engine.search.limits import SearchLimits
from engine.search.root_verdicts import TABLEBASE_PLIES, RootVerdicts
from engine.search.score import Score
from engine.search.searcher import Searcher, SearchResult
from engine.search.stoppers import StopReason
from engine.search.time_manager import TimeBudget
from engine.search.tree_protocol import SearchTree
from tests.engine.search.reference_tree import Tree
from tests.engine.search.test_compiled_chess import PlaneHashEvaluator
from tests.engine.test_chess_tablebase import KQK_MATE, KRK_DRAW_BY_CAPTURE, KRK_LOST, KRK_WIN, SYZYGY

TREES = [Tree, CompiledChessTree]


@pytest.fixture(scope="module")
def tables() -> SyzygyTables:
    return SyzygyTables(str(SYZYGY))


@pytest.fixture(scope="module")
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool


def _search(
    tree_class: type, fen: str, verdicts: RootVerdicts | None, nodes: int, executor: ThreadPoolExecutor
) -> tuple[SearchTree, SearchResult]:
    state = ChessState(chess.Board(fen))
    tree = tree_class(state.copy(), SearchConfig(root_mate_nodes=0))
    evaluator = PlaneHashEvaluator(3)
    searcher = Searcher(
        tree,
        evaluator,
        SearchLimits(nodes=nodes),
        TimeBudget(None, None, False),
        executor=executor,
        root_verdicts=verdicts,
    )
    return tree, searcher.run()


def _dtz_best(board: chess.Board) -> set[chess.Move]:
    """The winning moves of ``board`` that reach the next capture or pawn move soonest (python-chess)."""
    with chess.syzygy.open_tablebase(str(SYZYGY)) as reference:
        lengths = {}
        for move in board.legal_moves:
            after = board.copy()
            after.push(move)
            dtz = reference.probe_dtz(after)
            if dtz < 0:
                lengths[move] = -dtz
    best = min(lengths.values())
    return {m for m, n in lengths.items() if n == best}


@pytest.mark.parametrize("tree_class", TREES)
def test_won_root_plays_the_dtz_best_move_at_once(
    tree_class: type, tables: SyzygyTables, executor: ThreadPoolExecutor
) -> None:
    verdicts = tables.probe_root(ChessState(chess.Board(KRK_WIN)))
    tree, result = _search(tree_class, KRK_WIN, verdicts, 400, executor)
    assert result.stop_reason == StopReason.PROVEN
    assert result.best_move in _dtz_best(chess.Board(KRK_WIN))
    assert result.info.nodes < 10  # the root's evaluation and little more
    line = result.info.lines[0]
    assert (line.score, line.q) == (Score(cp=20000), 1.0)
    assert result.info.tbhits == verdicts.hits
    proof, plies = tree.root_proof()
    assert proof == 1 and plies > TABLEBASE_PLIES


@pytest.mark.parametrize("tree_class", TREES)
def test_lost_root_plays_the_longest_defence(
    tree_class: type, tables: SyzygyTables, executor: ThreadPoolExecutor
) -> None:
    verdicts = tables.probe_root(ChessState(chess.Board(KRK_LOST)))
    assert verdicts is not None
    tree, result = _search(tree_class, KRK_LOST, verdicts, 400, executor)
    assert result.stop_reason == StopReason.PROVEN and tree.root_proof()[0] == -1
    longest = max(verdicts.moves.values(), key=lambda v: v.plies).plies
    assert verdicts.moves[result.best_move].plies == longest
    assert result.info.lines[0].score == Score(cp=-20000)


@pytest.mark.parametrize("tree_class", TREES)
def test_drawn_root_excludes_the_losing_moves(
    tree_class: type, tables: SyzygyTables, executor: ThreadPoolExecutor
) -> None:
    """Kxb3 is the only draw: the losing moves are proven losses (never chosen), the search runs on."""
    verdicts = tables.probe_root(ChessState(chess.Board(KRK_DRAW_BY_CAPTURE)))
    tree, result = _search(tree_class, KRK_DRAW_BY_CAPTURE, verdicts, 60, executor)
    assert result.stop_reason == StopReason.NODES
    assert result.best_move == chess.Move.from_uci("c3b3")
    assert result.info.lines[0].score == Score(cp=0)
    proofs = dict(zip((tree.root_move(s) for s in range(4)), tree.root_slot_proofs().tolist(), strict=True))
    assert proofs == {m: 0 if m.uci() == "c3b3" else -1 for m in proofs}


@pytest.mark.parametrize("tree_class", TREES)
def test_a_mate_comes_before_tablebase_wins(
    tree_class: type, tables: SyzygyTables, executor: ThreadPoolExecutor
) -> None:
    verdicts = tables.probe_root(ChessState(chess.Board(KQK_MATE)))
    tree, result = _search(tree_class, KQK_MATE, verdicts, 400, executor)
    assert result.best_move == chess.Move.from_uci("g1g8")
    assert result.info.lines[0].score == Score(cp=12800, mate=1)
    assert tree.root_proof() == (1, 1)


def test_both_trees_make_the_same_search_with_verdicts(
    tables: SyzygyTables, executor: ThreadPoolExecutor
) -> None:
    verdicts = tables.probe_root(ChessState(chess.Board(KRK_DRAW_BY_CAPTURE)))
    (_, python), (_, compiled) = (_search(c, KRK_DRAW_BY_CAPTURE, verdicts, 80, executor) for c in TREES)
    assert compiled.best_move == python.best_move
    assert compiled.info.lines == python.info.lines and compiled.info.nodes == python.info.nodes


@pytest.mark.parametrize("tree_class", TREES)
def test_without_verdicts_nothing_changes(tree_class: type, executor: ThreadPoolExecutor) -> None:
    """No verdicts: no tbhits, no proof (the same search as before tablebases existed)."""
    tree, result = _search(tree_class, KRK_WIN, None, 60, executor)
    assert result.info.tbhits == 0 and tree.root_proof()[0] == 0
    assert result.stop_reason == StopReason.NODES


def test_prove_root_moves_waits_for_the_expanded_root() -> None:
    """Before the root is expanded there are no children to mark: nothing happens (the searcher applies
    the verdicts once it is)."""
    for tree_class in TREES:
        tree = tree_class(ChessState(chess.Board(KRK_WIN)), SearchConfig())
        tree.prove_root_moves({chess.Move.from_uci("b2a2"): (1, TABLEBASE_PLIES + 29)})
        assert tree.root_proof() == (0, 0) and not tree.root_expanded
        batch = tree.select_batch(1)
        batch.start(UniformEvaluator(ChessState.info), None)
        tree.backup_batch(batch)
        tree.prove_root_moves({chess.Move.from_uci("b2a2"): (1, TABLEBASE_PLIES + 29)})
        assert tree.root_proof() == (1, TABLEBASE_PLIES + 29)
        assert tree.best_move() == chess.Move.from_uci("b2a2")
