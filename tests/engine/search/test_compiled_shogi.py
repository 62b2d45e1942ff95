"""The compiled shogi tree (engine/search/compiled_shogi.py) searches exactly like engine.search.tree.Tree.

Both trees are driven in lockstep by the same deterministic evaluator (priors and value hashed from the
planes) or the uniform one on the same ShogiState: at every batch the leaves must have identical planes
and legal indices in the same order, the trees the same node count, and at the end the root's visit
counts, value sums, priors and proof must be bit-for-bit equal.  Positions: the start, an opening,
middlegames of random games (captures, drops, promotions), mates in one at the root and below it (the
mate-in-one check and the root's df-pn), perpetual check and sennichite one move away, an entering-king
declaration, the ply limit one or two plies away; batches of 1, 4 and 8 (virtual loss, collisions);
the repetition penalty, root noise (also on a root that a mate in one expands), searchmoves, tree
reuse, and the engine's search loop on both trees.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games.shogi import POLICY_SIZE, ShogiRules, ShogiState
from engine.inference import UniformEvaluator
from engine.search.compiled_shogi import MAX_MOVES, CompiledShogiTree, warm_up
from engine.search.config import SearchConfig
from tests.engine.search.lockstep import assert_array_path_same_as_evaluation_path
from tests.engine.search.lockstep import assert_same_root as _assert_same_root
from tests.engine.search.lockstep import lockstep_step as _step
from tests.engine.search.lockstep import search_nodes as _search
from tests.engine.search.one_batch import ShogiTree
from tests.engine.search.reference_tree import Node, Tree

OPENING = ["7g7f", "3c3d", "2g2f", "8c8d", "2f2e", "8d8e", "6i7h", "4a3b"]
MIDDLEGAME = "lnsg1g1nl/2k2rs2/ppppp1bpp/5pp2/9/2P1P4/PP1P1PP1P/1BK2S1R1/LNSG1G1NL w P 20"
#: G*5b mates (the pawn on 5c guards the gold); the root's mate in one.
MATE_AT_ROOT = "4k4/9/4P4/9/9/9/9/9/4K4 b G 1"
#: Gote to move with sente threatening mates in one: mates below the root.
MATE_BELOW = "4k4/9/4P4/9/9/9/9/9/4K4 w G 1"
#: A rook checks the king back and forth: after these moves 4e5e repeats the first position a fourth
#: time, every move since a check by sente, so sente loses (perpetual check).
PERPETUAL = "4k4/9/9/9/4R4/9/9/9/K8 w - 1"
PERPETUAL_MOVES = ["5a4a", "5e4e", "4a5a", "4e5e"] * 2 + ["5a4a", "5e4e", "4a5a"]
#: Kings shuffling from the start: a fourth occurrence (a plain draw) one move away.
SHUFFLE = ["5i5h", "5a5b", "5h5i", "5b5a"] * 2 + ["5i5h", "5a5b", "5h5i"]
#: Sente may declare an entering-king win here (and after any quiet reply).
ENTERING_KING = "+L+NSGKGS+N+L/1R5B1/PPPPPPPPP/9/9/9/9/9/8k b 2P 1"


class PlaneHashEvaluator(Evaluator):
    """Priors: a fixed random weight per policy index times a factor hashed from the planes and the
    index, normalised over the legal moves (float32, summed in index order so that the dense path gets
    the same priors); value: the planes' CRC-32 mapped into (-0.9, 0.9), float32-exact Python floats."""

    def __init__(self, seed: int = 3) -> None:
        self._weights = np.random.default_rng(seed).uniform(0.05, 1.0, POLICY_SIZE)

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        out = []
        for p, idx in zip(planes, legal, strict=True):
            h = zlib.crc32(np.ascontiguousarray(p).tobytes())
            factor = 0.5 + ((h ^ (idx * 2654435761)) % 997) / 997.0
            prior = (self._weights[idx] * factor).astype(np.float32)
            prior /= prior[np.argsort(idx)].sum()
            value = float(np.float32((h % 2001 - 1000) / 1000.0 * 0.9))
            out.append(Evaluation(prior.astype(np.float32), value))
        return out


def _state(sfen: str | None = None, moves: Sequence[str] = (), rules: ShogiRules | None = None) -> ShogiState:
    state = ShogiState(rules, sfen=sfen)
    for text in moves:
        state.push(state.parse_move(text))
    return state


def _random_state(seed: int, plies: int, rules: ShogiRules | None = None) -> ShogiState:
    """A random game from the start, ``plies`` long (captures, drops and promotions come up)."""
    rng = random.Random(seed)
    state = ShogiState(rules)
    for _ in range(plies):
        moves = state.legal_moves()
        if not moves:
            break
        state.push(rng.choice(moves))
        if state.outcome() is not None:
            state.pop()
            break
    return state


def _lockstep(
    state: ShogiState, config: SearchConfig, evaluator: Evaluator, batch: int, rounds: int
) -> tuple[Tree, CompiledShogiTree]:
    """Search ``state`` with both trees, ``rounds`` batches of up to ``batch`` leaves, asserting equal
    leaves, node counts and roots."""
    tree = Tree(state.copy(), config)
    compiled = ShogiTree(state, config)
    for _ in range(rounds):
        _step(tree, compiled, evaluator, batch, count_nodes=True)
    _assert_same_root(tree, compiled)
    return tree, compiled


def _count(node: Node | None, what: str) -> int:
    """Nodes below (and at) ``node`` that are proven (``what == "proven"``) or terminal."""
    if node is None:
        return 0
    here = node.proven != 0 if what == "proven" else node.terminal is not None
    return int(here) + sum(_count(child, what) for child in node.children)


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Load (or compile) the kernels once for the module."""
    warm_up()


CASES: list[tuple[str, ShogiState]] = [
    ("start", _state()),
    ("opening", _state(None, OPENING)),
    ("middlegame", _state(MIDDLEGAME)),
    ("random 60", _random_state(1, 60)),
    ("random 120", _random_state(2, 120)),
    ("mate at root", _state(MATE_AT_ROOT)),
    ("mate below", _state(MATE_BELOW)),
    ("perpetual check", _state(PERPETUAL, PERPETUAL_MOVES)),
    ("sennichite", _state(None, SHUFFLE)),
    ("entering king", _state(ENTERING_KING)),
    ("ply limit", _state(None, OPENING, ShogiRules(max_plies=10))),
    # MIDDLEGAME is at game ply 19: the draw comes 3 plies below the root (MaxMovesToDraw 22)
    ("game ply limit", _state(MIDDLEGAME, [], ShogiRules(draw_game_ply=22))),
]


@pytest.mark.parametrize("batch", [1, 4, 8])
@pytest.mark.parametrize(("name", "state"), CASES, ids=[name for name, _ in CASES])
def test_same_search_as_tree(name: str, state: ShogiState, batch: int) -> None:
    _lockstep(state, SearchConfig(), PlaneHashEvaluator(batch), batch, 240 // batch)


@pytest.mark.parametrize(("name", "state"), CASES[::2], ids=[name for name, _ in CASES[::2]])
def test_same_search_as_tree_uniform(name: str, state: ShogiState) -> None:
    _lockstep(state, SearchConfig(), UniformEvaluator(state.info), 8, 40)


@pytest.mark.parametrize(("name", "state"), CASES, ids=[name for name, _ in CASES])
def test_same_search_without_mate_checks(name: str, state: ShogiState) -> None:
    """Without the mate in one and the root's df-pn the searches are alike too (mates then reached as
    terminal nodes)."""
    config = SearchConfig(mate_check=False, root_mate_nodes=0)
    _lockstep(state, config, PlaneHashEvaluator(4), 4, 50)


def test_mates_perpetual_check_and_rule_endings_are_found() -> None:
    """The positions above do what they are for: a mate in one proves the root; perpetual check, the
    fourfold repetition, the declaration and the ply limit make terminal nodes; mates below the root
    are proven."""
    _, compiled = _lockstep(_state(MATE_AT_ROOT), SearchConfig(), PlaneHashEvaluator(), 4, 5)
    assert compiled.root_proof() == (1, 1)
    assert compiled.best_move() == _state(MATE_AT_ROOT).parse_move("G*5b")
    state = _state(PERPETUAL, PERPETUAL_MOVES)
    perpetual = state.parse_move("4e5e")
    tree = Tree(state.copy(), SearchConfig())
    compiled = ShogiTree(state, SearchConfig())
    tree.set_root_moves([perpetual])
    compiled.set_root_moves([perpetual])
    for _ in range(5):
        _step(tree, compiled, PlaneHashEvaluator(), 4, count_nodes=True)
    _assert_same_root(tree, compiled)
    slot = compiled.root_visits()[0].index(perpetual)
    assert compiled.slot_stats(slot)[2] == -1  # the repeating check loses for its mover
    for sfen, moves, rules in (
        (None, SHUFFLE, None),
        (ENTERING_KING, [], None),
        (None, OPENING, ShogiRules(max_plies=10)),
        (MIDDLEGAME, [], ShogiRules(draw_game_ply=22)),
        (MATE_BELOW, [], None),
    ):
        tree, _ = _lockstep(_state(sfen, moves, rules), SearchConfig(), PlaneHashEvaluator(7), 4, 40)
        assert _count(tree.root, "terminal") > 0 and _count(tree.root, "proven") > 0


def test_terminal_root() -> None:
    """A checkmated root is terminal (-1) and gives no leaves."""
    mated = _state(MATE_AT_ROOT, ["G*5b"])
    compiled = ShogiTree(mated, SearchConfig())
    assert compiled.root_terminal
    planes, legal = compiled.select_leaves(4)
    assert planes.shape == (0, 362, 9, 9) and legal == []
    assert Tree(mated.copy(), SearchConfig()).root.terminal == -1


def test_settings_collisions_and_budget() -> None:
    """No root FPU reduction, virtual loss 3, few collisions, a node budget that ends the search."""
    config = SearchConfig(
        fpu_reduction_root=0.0, fpu_reduction=0.5, virtual_loss=3, max_collisions=1, node_budget=300
    )
    tree, _ = _lockstep(_state(MIDDLEGAME), config, PlaneHashEvaluator(5), 8, 80)
    assert tree.full


def test_repetition_penalty() -> None:
    """A penalised repetition is terminal (unproven) and takes the repeating move's prior away."""
    config = SearchConfig(repetition_penalty=0.3)
    state = _state(None, SHUFFLE[:4])
    tree, _ = _lockstep(state, config, PlaneHashEvaluator(11), 4, 80)
    assert _count(tree.root, "terminal") > 0
    _lockstep(state, config, UniformEvaluator(state.info), 8, 30)
    _lockstep(_state(PERPETUAL, PERPETUAL_MOVES), config, PlaneHashEvaluator(3), 4, 40)


def test_root_noise_and_searchmoves() -> None:
    state = _state(None, OPENING)
    noisy = SearchConfig(dirichlet_alpha=0.15, seed=5, fpu_reduction_root=0.0)
    _lockstep(state, noisy, PlaneHashEvaluator(2), 4, 40)
    _lockstep(_state(MATE_AT_ROOT), noisy, PlaneHashEvaluator(2), 4, 20)  # noise on a root a mate expands
    tree = Tree(state.copy(), SearchConfig())
    compiled = ShogiTree(state, SearchConfig())
    allowed = [state.parse_move(m) for m in ("9g9f", "3i4h", "2e2d")]
    tree.set_root_moves(allowed)
    compiled.set_root_moves(allowed)
    for _ in range(30):
        _step(tree, compiled, PlaneHashEvaluator(2), 4, count_nodes=True)
    _assert_same_root(tree, compiled)
    assert compiled.best_move() in allowed


@pytest.mark.parametrize("noise", [None, 0.15])
def test_tree_reuse(noise: float | None) -> None:
    """``advance`` keeps the played move's subtree: the searches go on alike (node counts aside: Tree
    takes the new root's visits as its node count, the compiled tree counts the kept nodes), with root
    noise drawn alike on every new root, into the perpetual check and the ply limit."""
    config = SearchConfig(dirichlet_alpha=noise, seed=3)
    for state, moves in (
        (_state(None, OPENING), 6),
        (_state(PERPETUAL, PERPETUAL_MOVES[:-3]), 4),
        (_state(None, OPENING[:4], ShogiRules(max_plies=8)), 4),
    ):
        evaluator = PlaneHashEvaluator(9)
        tree, compiled = _lockstep(state, config, evaluator, 8, 30)
        for _ in range(moves):
            move = tree.best_move()
            assert move is not None and compiled.best_move() == move
            tree.advance(move)
            compiled.advance(move)
            tree.reset_stats()
            compiled.reset_stats()
            if tree.root_terminal:
                assert compiled.root_terminal
                break
            for _ in range(20):
                _step(tree, compiled, evaluator, 8, count_nodes=False)
            _assert_same_root(tree, compiled)


def test_array_path_same_as_evaluation_path() -> None:
    """``select_leaves_arrays`` / ``backup_arrays`` with float32 or float64 prior rows make the same
    search as ``select_leaves`` / ``backup``."""
    state = _state(MIDDLEGAME)
    assert_array_path_same_as_evaluation_path(lambda: ShogiTree(state, SearchConfig()), PlaneHashEvaluator(4))


def test_checks_and_rejections() -> None:
    state = _state()
    compiled = ShogiTree(state, SearchConfig())
    with pytest.raises(RuntimeError):
        compiled.backup([])
    planes, legal = compiled.select_leaves_arrays(1)
    assert (
        planes.shape == (1, 362, 9, 9)
        and legal.indices.shape == (1, MAX_MOVES)
        and legal.counts.tolist() == [30]
    )
    assert legal.lists()[0].tolist() == state.legal_moves_and_indices()[1].tolist()
    with pytest.raises(RuntimeError):
        compiled.select_leaves(1)
    with pytest.raises(ValueError):
        compiled.backup_arrays(np.ones((1, 10)), np.zeros(1))
    compiled.backup_arrays(np.full((1, MAX_MOVES), np.float32(1 / 30)), [0.0])
    assert len(compiled.root_visits()[0]) == 30 and compiled.node_count == 1
    with pytest.raises(ValueError):
        compiled.advance(state.parse_move("7g7f") | 0x3F)  # not a legal move int


def test_empty_selections_and_two_batches_in_flight() -> None:
    """An empty selection backs up nothing; two batches selected one after the other (one in flight
    while the next is selected) get buffers of their own and back up in order."""
    over = ShogiTree(_state(MATE_AT_ROOT, ["G*5b"]), SearchConfig())
    planes, legal = over.select_leaves_arrays(4)
    assert planes.shape[0] == len(legal) == 0
    over.backup_arrays(np.zeros((0, MAX_MOVES), np.float32), np.zeros(0))
    compiled = ShogiTree(_state(), SearchConfig())
    planes, legal = compiled.select_leaves_arrays(2)
    compiled.backup_arrays(np.full((len(legal), MAX_MOVES), np.float32(1 / 30)), [0.1])
    first, second = compiled.select_batch(3), compiled.select_batch(3)
    assert len(first) and len(second)
    assert first.buffers.planes is not second.buffers.planes
    for batch in (first, second):
        batch.start(UniformEvaluator(ShogiState.info), None)
        compiled.backup_batch(batch)
    assert compiled.playouts == 1 + len(first) + len(second)


# ---- the engine's search loop on the compiled tree -----------------------------------------------------


@pytest.fixture(scope="module")
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool


@pytest.mark.parametrize("sfen", [MIDDLEGAME, MATE_BELOW])
def test_searcher_same_choices_as_tree(executor: ThreadPoolExecutor, sfen: str) -> None:
    """The engine's search loop (a SearchTree) gives the same move, root statistics and report on both
    trees at a fixed node count."""
    state = _state(sfen)
    evaluator = PlaneHashEvaluator(6)
    tree = Tree(state.copy(), SearchConfig())
    compiled = ShogiTree(state, SearchConfig())
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
