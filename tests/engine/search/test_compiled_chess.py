"""The compiled chess tree (engine/search/compiled_chess.py) searches exactly like engine.search.tree.Tree.

Both trees are driven in lockstep by the same deterministic evaluator (priors and value hashed from the
planes) or the uniform one on the same ChessState: at every batch the leaves must have identical planes
and legal indices in the same order, the trees the same node count, and at the end the root's visit
counts, value sums, priors and proof must be bit-for-bit equal.  Positions: the start, middlegames,
mates in one and two (the root mate search and the solver's proofs), stalemate traps, a threefold
repetition, the fifty-move rule and the length cap one or two moves away, insufficient material after a
capture, Chess960 with castling; batches of 1, 4 and 8 (virtual loss, collisions); the repetition
penalty, root noise, searchmoves, tree reuse, and the engine's search loop on both trees.  The kernel
helpers the tree needs (python-chess's move order, the root mate search) are checked against
ChessState on their own.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import chess
import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games import chess_kernel as ck
from engine.games.chess import POLICY_SIZE, ChessRules, ChessState
from engine.games.chess_kernel import MAX_MOVES
from engine.inference import UniformEvaluator
from engine.search.compiled_chess import CompiledChessTree, warm_up
from engine.search.config import SearchConfig
from tests.engine.search.lockstep import assert_array_path_same_as_evaluation_path
from tests.engine.search.lockstep import assert_same_root as _assert_same_root
from tests.engine.search.lockstep import lockstep_step as _step
from tests.engine.search.lockstep import search_nodes as _search
from tests.engine.search.one_batch import ChessTree
from tests.engine.search.reference_tree import Node, Tree

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP1B1PPP/R2QKB1R w KQ - 1 8"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
#: Checking mates in two (ChessState.find_mate finds each with 3 plies).
MATES_IN_TWO = [
    "3Q4/8/8/8/8/4KR2/8/2k5 w - - 0 1",
    "1K6/8/8/8/4QR2/8/8/6k1 w - - 0 1",
    "8/1k6/5Q2/3R4/8/7K/8/8 w - - 0 1",
    "8/5Q2/1p1KR3/8/8/6k1/8/8 w - - 0 1",
    "1k6/6K1/8/2R4p/8/5Q2/8/8 w - - 0 1",
    "8/1KR5/7p/6k1/8/8/5R2/8 w - - 0 1",
]
STALEMATE_TRAP = "k7/8/1Q6/8/8/8/8/7K w - - 0 1"  # most quiet moves stalemate the black king
FIFTY_NEAR = "8/8/4k3/8/2R5/8/4K3/5r2 w - - 97 120"  # three quiet plies draw by the fifty-move rule
INSUFFICIENT_NEAR = "8/8/4k3/8/4b3/3NK3/8/8 w - - 0 1"  # Kxe4 leaves king and knight against king
#: Knights out and back: the start position has occurred twice, black's Ng8 repeats it a third time.
SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]
CHESS960 = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
CHESS960_CASTLING = "nrb2qkr/pp1p1ppp/2pnp3/6b1/5PP1/3N3Q/PPPPP2P/NRBB2KR w KQkq - 0 5"  # g1h1 castles


class PlaneHashEvaluator(Evaluator):
    """Priors: a fixed random weight per policy index times a factor hashed from the planes and the
    index, normalised over the legal moves (float32, summed in index order so that the dense path,
    which lists the legal indices in increasing order, gets the same priors); value: the planes' CRC-32 mapped into (-0.9,
    0.9), float32-exact Python floats (so virtual loss rounds alike in any precision)."""

    def __init__(self, seed: int = 3) -> None:
        self._weights = np.random.default_rng(seed).uniform(0.05, 1.0, POLICY_SIZE)

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        out = []
        for p, idx in zip(planes, legal, strict=True):
            h = zlib.crc32(np.ascontiguousarray(p).tobytes())
            factor = 0.5 + ((h ^ (idx * 2654435761)) % 997) / 997.0
            prior = (self._weights[idx] * factor).astype(np.float32)
            prior /= prior[np.argsort(idx)].sum()  # the same in any order of the legal indices
            value = float(np.float32((h % 2001 - 1000) / 1000.0 * 0.9))
            out.append(Evaluation(prior.astype(np.float32), value))
        return out


def _state(fen: str | None = None, moves: Sequence[str] = (), rules: ChessRules | None = None) -> ChessState:
    rules = rules or ChessRules()
    board = chess.Board(fen, chess960=rules.chess960) if fen else chess.Board(chess960=rules.chess960)
    state = ChessState(board, rules)
    for text in moves:
        state.push(state.parse_move(text))
    return state


def _lockstep(
    state: ChessState, config: SearchConfig, evaluator: Evaluator, batch: int, rounds: int
) -> tuple[Tree, CompiledChessTree]:
    """Search ``state`` with both trees, ``rounds`` batches of up to ``batch`` leaves, asserting equal
    leaves, node counts and roots."""
    tree = Tree(state.copy(), config)
    compiled = ChessTree(state, config)
    for _ in range(rounds):
        _step(tree, compiled, evaluator, batch, count_nodes=True)
    _assert_same_root(tree, compiled)
    return tree, compiled


def _proven_nodes(node: Node | None) -> int:
    if node is None:
        return 0
    return int(node.proven != 0) + sum(_proven_nodes(child) for child in node.children)


def _terminal_nodes(node: Node | None) -> int:
    if node is None:
        return 0
    return int(node.terminal is not None) + sum(_terminal_nodes(child) for child in node.children)


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Load (or compile) the kernels once for the module."""
    warm_up()


CASES: list[tuple[str, ChessState]] = [
    ("start", _state()),
    ("middlegame", _state(MIDDLEGAME)),
    ("kiwipete", _state(KIWIPETE)),
    ("mate in one", _state(MATE_IN_ONE)),
    ("mate in two", _state(MATES_IN_TWO[0])),
    ("mate in two b", _state(MATES_IN_TWO[4])),
    ("stalemate trap", _state(STALEMATE_TRAP)),
    ("threefold", _state(None, SHUFFLE)),
    ("fifty moves", _state(FIFTY_NEAR)),
    ("insufficient", _state(INSUFFICIENT_NEAR)),
    ("length cap", _state(MIDDLEGAME, ["a2a3", "f6e4", "d2c1"], ChessRules(max_plies=5))),
    ("chess960", _state(CHESS960, rules=ChessRules(chess960=True))),
    ("chess960 castling", _state(CHESS960_CASTLING, rules=ChessRules(chess960=True))),
]


@pytest.mark.parametrize("batch", [1, 4, 8])
@pytest.mark.parametrize(("name", "state"), CASES, ids=[name for name, _ in CASES])
def test_same_search_as_tree(name: str, state: ChessState, batch: int) -> None:
    _lockstep(state, SearchConfig(), PlaneHashEvaluator(batch), batch, 240 // batch)


@pytest.mark.parametrize(("name", "state"), CASES[::2], ids=[name for name, _ in CASES[::2]])
def test_same_search_as_tree_uniform(name: str, state: ChessState) -> None:
    _lockstep(state, SearchConfig(), UniformEvaluator(state.info), 8, 40)


@pytest.mark.parametrize("fen", [MATE_IN_ONE, *MATES_IN_TWO[:3]])
def test_root_mate_search_proves_the_root(fen: str) -> None:
    """The root mate search proves the root won at its first expansion, with all the prior on the mate
    (ChessState.find_mate's move), as Tree does; without it both trees search alike too."""
    state = _state(fen)
    expected = state.find_mate(SearchConfig().root_mate_nodes)
    assert expected is not None
    _, compiled = _lockstep(state, SearchConfig(), PlaneHashEvaluator(), 4, 10)
    assert compiled.root_proof() == (1, expected[1])
    assert compiled.best_move() == expected[0]
    _lockstep(state, SearchConfig(root_mate_nodes=0), PlaneHashEvaluator(), 4, 40)


def test_proofs_and_terminal_nodes_below_the_root() -> None:
    """Near mates, stalemates and rule draws the search meets terminal nodes and proves nodes."""
    for fen in (MATE_IN_ONE, STALEMATE_TRAP, FIFTY_NEAR, INSUFFICIENT_NEAR):
        tree, _ = _lockstep(_state(fen), SearchConfig(root_mate_nodes=0), PlaneHashEvaluator(7), 4, 60)
        assert _proven_nodes(tree.root) > 0 and _terminal_nodes(tree.root) > 0


def test_terminal_roots() -> None:
    for fen, value in (("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", -1), ("k7/8/1Q6/8/8/8/8/7K b - - 0 1", 0)):
        compiled = ChessTree(_state(fen), SearchConfig())
        assert compiled.root_terminal
        planes, legal = compiled.select_leaves(4)
        assert planes.shape == (0, 119, 8, 8) and legal == []
        assert compiled.root_visits() == ([], pytest.approx(np.zeros(0)))
        assert Tree(_state(fen), SearchConfig()).root.terminal == value


def test_settings_collisions_and_budget() -> None:
    """No root FPU reduction, virtual loss 3, few collisions, a node budget that ends the search."""
    config = SearchConfig(
        fpu_reduction_root=0.0, fpu_reduction=0.5, virtual_loss=3, max_collisions=1, node_budget=300
    )
    tree, _ = _lockstep(_state(KIWIPETE), config, PlaneHashEvaluator(5), 8, 80)
    assert tree.full


def test_repetition_penalty() -> None:
    """A penalised repetition is terminal (unproven) and takes the repeating move's prior away."""
    config = SearchConfig(repetition_penalty=0.3, root_mate_nodes=0)
    state = _state(None, SHUFFLE[:4])
    tree, _ = _lockstep(state, config, PlaneHashEvaluator(11), 4, 80)
    assert _terminal_nodes(tree.root) > 0
    _lockstep(state, config, UniformEvaluator(state.info), 8, 30)


def test_root_noise_and_searchmoves() -> None:
    state = _state(MIDDLEGAME)
    noisy = SearchConfig(dirichlet_alpha=0.3, seed=5, fpu_reduction_root=0.0)
    _lockstep(state, noisy, PlaneHashEvaluator(2), 4, 40)
    tree = Tree(state.copy(), SearchConfig())
    compiled = ChessTree(state, SearchConfig())
    allowed = [state.parse_move(m) for m in ("a2a3", "e3e4", "f1d3")]
    tree.set_root_moves(allowed)
    compiled.set_root_moves(allowed)
    for _ in range(30):
        _step(tree, compiled, PlaneHashEvaluator(2), 4, count_nodes=True)
    _assert_same_root(tree, compiled)
    assert compiled.best_move() in allowed


def test_tree_reuse() -> None:
    """``advance`` keeps the played move's subtree: the searches go on alike (node counts aside: Tree
    takes the new root's visits as its node count, the compiled tree counts the kept nodes)."""
    state = _state(KIWIPETE)
    evaluator = PlaneHashEvaluator(9)
    tree, compiled = _lockstep(state, SearchConfig(), evaluator, 8, 30)
    for _ in range(3):
        move = tree.best_move()
        assert move is not None and compiled.best_move() == move
        tree.advance(move)
        compiled.advance(move)
        tree.reset_stats()
        compiled.reset_stats()
        for _ in range(20):
            _step(tree, compiled, evaluator, 8, count_nodes=False)
        _assert_same_root(tree, compiled)


def test_array_path_same_as_evaluation_path() -> None:
    """``select_leaves_arrays`` / ``backup_arrays`` with float32 or float64 prior rows make the same
    search as ``select_leaves`` / ``backup``."""
    state = _state(MIDDLEGAME)
    assert_array_path_same_as_evaluation_path(lambda: ChessTree(state, SearchConfig()), PlaneHashEvaluator(4))


def test_checks_and_rejections() -> None:
    state = _state()
    compiled = ChessTree(state, SearchConfig())
    with pytest.raises(RuntimeError):
        compiled.backup([])
    with pytest.raises(RuntimeError):
        compiled.backup_arrays(np.zeros((0, MAX_MOVES)), np.zeros(0))
    planes, legal = compiled.select_leaves_arrays(1)
    assert (
        planes.shape == (1, 119, 8, 8)
        and legal.indices.shape == (1, MAX_MOVES)
        and legal.counts.tolist() == [20]
    )
    assert legal.lists()[0].tolist() == ChessState().legal_moves_and_indices()[1].tolist()
    with pytest.raises(RuntimeError):
        compiled.select_leaves(1)
    with pytest.raises(ValueError):
        compiled.backup_arrays(np.ones((1, 10)), np.zeros(1))
    with pytest.raises(ValueError):
        compiled.backup([Evaluation(np.ones(3, np.float32), 0.0)])
    compiled.backup_arrays(np.full((1, MAX_MOVES), np.float32(0.05)), [0.0])
    assert len(compiled.root_visits()[0]) == 20 and compiled.node_count == 1
    with pytest.raises(ValueError):
        compiled.advance(chess.Move.from_uci("e2e5"))


def test_empty_selections_and_two_batches_in_flight() -> None:
    """An empty selection backs up nothing and gives its buffers back once: two batches selected
    after it (one in flight while the next is selected) get buffers of their own."""
    over = ChessTree(_state("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"), SearchConfig())
    planes, legal = over.select_leaves_arrays(4)
    assert planes.shape[0] == len(legal) == 0
    over.backup_arrays(np.zeros((0, MAX_MOVES), np.float32), np.zeros(0))
    compiled = ChessTree(_state(), SearchConfig())
    planes, legal = compiled.select_leaves_arrays(2)
    compiled.backup_arrays(np.full((len(legal), MAX_MOVES), np.float32(0.05)), [0.1])
    planes, legal = compiled.select_leaves_arrays(1)  # the root's child: one leaf, not a collision
    compiled.backup_arrays(np.zeros((1, MAX_MOVES)), [0.0])
    first, second = compiled.select_batch(3), compiled.select_batch(3)
    assert len(first) and len(second)
    assert first.buffers.planes is not second.buffers.planes
    for batch in (first, second):
        batch.start(UniformEvaluator(ChessState.info), None)
        compiled.backup_batch(batch)
    assert compiled.playouts == 2 + len(first) + len(second)


# ---- the kernel helpers the tree relies on -----------------------------------------------------------


def _random_positions(seed: int, count: int) -> list[tuple[str, bool]]:
    """Positions of random games from the start, Kiwipete and Chess960 starts, ``(fen, chess960)``."""
    rng = random.Random(seed)
    out: list[tuple[str, bool]] = []
    while len(out) < count:
        c960 = rng.random() < 0.3
        board = (
            chess.Board.from_chess960_pos(rng.randrange(960))
            if c960
            else chess.Board(rng.choice([None, KIWIPETE]))
        )
        for _ in range(rng.randrange(1, 70)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if not board.is_game_over():
            out.append((board.fen(), c960))
    return out


def test_legal_moves_in_python_chess_order() -> None:
    """``ordered_legal_into`` lists ChessState's legal moves in its order, with its policy indices."""
    moves = np.empty(ck.MAX_MOVES, np.int64)
    indices = np.empty(ck.MAX_MOVES, np.int64)
    special = [
        (f, False)
        for f in (KIWIPETE, "8/8/8/K1pP3r/8/8/8/7k w - c6 0 1", "4k3/8/8/8/8/5n2/6B1/4K2r w - - 0 1")
    ]
    for fen, c960 in special + _random_positions(1, 150):
        state = _state(fen, rules=ChessRules(chess960=c960))
        n = ck.ordered_legal_into(ck.from_chess_state(state), moves, indices)
        expected_moves, expected_indices = state.legal_moves_and_indices()
        assert [ck.to_chess_move(int(m), c960) for m in moves[:n]] == expected_moves
        assert indices[:n].tolist() == expected_indices.tolist()


@pytest.mark.parametrize("budget", [1, 6, 40, 5000])
def test_find_mate_equals_chess_state(budget: int) -> None:
    """The compiled root mate search finds what ``ChessState.find_mate`` finds, node budget included."""
    positions = [(f, False) for f in (MATE_IN_ONE, *MATES_IN_TWO, STALEMATE_TRAP)] + _random_positions(2, 30)
    for fen, c960 in positions:
        state = _state(fen, rules=ChessRules(chess960=c960))
        expected = state.find_mate(budget)
        move, plies = ck.find_mate(ck.from_chess_state(state, room=8), budget)
        got = (ck.to_chess_move(move, c960), plies) if move >= 0 else None
        assert got == expected, fen


@pytest.mark.parametrize(
    ("name", "state"), CASES[:4] + CASES[-2:], ids=[n for n, _ in CASES[:4] + CASES[-2:]]
)
def test_root_policy_indices_are_the_root_moves_indices(name: str, state: ChessState) -> None:
    """What self-play records a position's policy over: the kernel's indices of the root's moves, in slot
    order, are ``ChessState.move_to_index`` of each (and the Python tree's), after a search and after
    tree reuse."""
    tree, compiled = _lockstep(state, SearchConfig(), PlaneHashEvaluator(), 4, 20)
    for _ in range(2):
        moves, _ = compiled.root_visits()
        expected = [state.move_to_index(m) for m in moves]
        assert compiled.root_policy_indices().tolist() == expected == tree.root_policy_indices().tolist()
        if compiled.root_terminal or not len(moves):
            break
        best = compiled.best_move()
        assert best is not None
        compiled.advance(best)
        tree.advance(best)
        state = state.copy()
        state.push(best)
        _step(tree, compiled, PlaneHashEvaluator(), 4, count_nodes=False)


def test_mating_slot_equals_chess_state_mate_in_one() -> None:
    """``mating_slot`` picks ``ChessState.mate_in_one``'s move (the first mate in python-chess's order),
    on positions with one mate, several and none."""
    moves = np.empty(ck.MAX_MOVES, np.int64)
    indices = np.empty(ck.MAX_MOVES, np.int64)
    buf = np.empty(ck.MAX_MOVES, np.int64)
    several = "6k1/5ppp/8/8/8/8/5PPP/R3R1K1 w - - 0 1"  # Ra8# and Re8#
    positions = [(f, False) for f in (MATE_IN_ONE, several, *MATES_IN_TWO, STALEMATE_TRAP)]
    found = 0
    for fen, c960 in positions + _random_positions(3, 120):
        state = _state(fen, rules=ChessRules(chess960=c960))
        kernel = ck.from_chess_state(state, room=4)
        n = ck.ordered_legal_into(kernel, moves, indices)
        slot = ck.mating_slot(kernel, moves, n, buf)
        expected = state.mate_in_one()
        assert (ck.to_chess_move(int(moves[slot]), c960) if slot >= 0 else None) == expected, fen
        found += expected is not None
    assert found >= 2


def test_a_move_that_allows_mate_in_one_is_proven_lost() -> None:
    """After 1. f3 e5, 2. g4 allows Qh4#: the leaf after it is proven won for Black by the mate check (no
    network call), so the root's g2g4 is a proven loss and not the best move, in both trees alike; with
    ``mate_check`` off neither tree knows it after the same search."""
    state = _state(None, ["f2f3", "e7e5"])
    blunder = chess.Move.from_uci("g2g4")
    tree, compiled = _lockstep(state, SearchConfig(root_mate_nodes=0), UniformEvaluator(state.info), 8, 30)
    slot = tree.root.moves.index(blunder)
    assert compiled.root_slot_proofs()[slot] == -1 == tree.root_slot_proofs()[slot]
    assert compiled.best_move() != blunder
    _, blind = _lockstep(
        state, SearchConfig(root_mate_nodes=0, mate_check=False), UniformEvaluator(state.info), 8, 30
    )
    assert blind.root_slot_proofs()[slot] == 0


# ---- the engine's search loop on the compiled tree -----------------------------------------------------


@pytest.fixture(scope="module")
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool


@pytest.mark.parametrize("fen", [MIDDLEGAME, MATES_IN_TWO[2]])
def test_searcher_same_choices_as_tree(executor: ThreadPoolExecutor, fen: str) -> None:
    """The engine's search loop (a SearchTree) gives the same move, root statistics and report on both
    trees at a fixed node count."""
    state = _state(fen)
    evaluator = PlaneHashEvaluator(6)
    tree = Tree(state.copy(), SearchConfig())
    compiled = ChessTree(state, SearchConfig())
    expected = _search(tree, evaluator, 300, executor)
    got = _search(compiled, evaluator, 300, executor)
    assert got.best_move == expected.best_move and got.ponder_move == expected.ponder_move
    assert got.info.lines == expected.info.lines
    assert (got.info.nodes, got.info.depth, got.info.seldepth) == (
        expected.info.nodes,
        expected.info.depth,
        expected.info.seldepth,
    )
    _assert_same_root(tree, compiled)
