"""The PUCT tree on positions with known answers, and its bookkeeping invariants."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import chess
import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games import get_game
from engine.inference import UniformEvaluator
from engine.search.config import SearchConfig
from engine.search.limits import SearchLimits
from engine.search.proof import Proof
from engine.search.searcher import Searcher
from engine.search.time_manager import TimeBudget
from tests.engine.search.evaluators import constant, stone_balance
from tests.engine.search.reference_cache import NNCache
from tests.engine.search.reference_tree import Node, Tree

NO_TIME = TimeBudget(None, None, False)


def chess_state(fen: str | None = None, moves: tuple[str, ...] = ()):
    game = get_game("chess")
    state = game.state_from_text(fen) if fen else game.new_state()
    for m in moves:
        state.push(state.parse_move(m))
    return state


def run(tree: Tree, evaluator, nodes: int, executor=None):
    return Searcher(tree, evaluator, SearchLimits(nodes=nodes), NO_TIME, executor=executor).run()


def walk_nodes(node: Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if n.children:
            stack.extend(c for c in n.children if c is not None)


def assert_consistent(tree: Tree) -> None:
    """No virtual loss left, nothing pending, N(s) = 1 + sum N(s, a) for every evaluated inner node."""
    for node in walk_nodes(tree.root):
        assert not node.pending
        if node.expanded and node.terminal is None:
            assert node.visits == pytest.approx(1.0 + node.child_n.sum())
            assert np.all(node.child_n >= 0)
            assert node.visited_prior == pytest.approx(node.prior[node.child_n > 0].sum())
            for slot, child in enumerate(node.children):
                if child is not None:
                    assert child.visits == pytest.approx(node.child_n[slot])
                    assert -node.child_w[slot] == pytest.approx(child.value_sum)


def test_chess_mate_in_one_found_with_uniform_priors() -> None:
    state = chess_state("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    tree = Tree(state, SearchConfig(batch_size=8))
    result = run(tree, UniformEvaluator(state.info), 400)
    assert result.best_move == chess.Move.from_uci("a1a8")
    line = result.info.lines[0]
    assert line.score.mate == 1
    assert tree.root.proven == Proof.WIN


def test_chess_root_mate_in_one_is_proven_by_the_mate_check_or_the_root_mate_search() -> None:
    """A root with a mate in one: the leaf mate check proves it at the first walk, before any network
    call; without it the root mate search proves it after the root's one evaluation; without both the
    search only learns it by visits."""
    fen = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    for config, evaluations in (
        (SearchConfig(batch_size=8), 0),
        (SearchConfig(batch_size=8, mate_check=False), 1),
    ):
        tree = Tree(chess_state(fen), config)
        result = run(tree, constant(0.0), 50)
        assert (
            tree.evaluations == evaluations and tree.root.proven == Proof.WIN and tree.root.proven_plies == 1
        )
        assert result.best_move == chess.Move.from_uci("a1a8") and result.info.lines[0].score.mate == 1
        slot = tree.root.moves.index(result.best_move)
        assert tree.root.prior[slot] == 1.0  # all the prior on the mate: self-play learns it one-hot
        assert_consistent(tree)
    off = Tree(chess_state(fen), SearchConfig(batch_size=8, root_mate_nodes=0, mate_check=False))
    run(off, constant(0.0), 8)
    assert off.evaluations > 1 and off.root.prior[slot] < 1.0


def test_chess_root_mate_search_plays_a_checking_mate_in_two() -> None:
    state = chess_state("8/3r4/k1P1r3/5p1p/2q4P/8/6R1/1b4K1 b - - 3 92")
    tree = Tree(state, SearchConfig(batch_size=8))
    result = run(tree, constant(0.0), 50)
    assert tree.root.proven == Proof.WIN and tree.root.proven_plies == 3
    assert result.best_move == chess.Move.from_uci("d7d1") and result.info.lines[0].score.mate == 2
    assert_consistent(tree)


def test_mated_root_has_no_move() -> None:
    state = chess_state(None, ("f2f3", "e7e5", "g2g4", "d8h4"))
    tree = Tree(state, SearchConfig())
    result = run(tree, UniformEvaluator(state.info), 100)
    assert result.best_move is None
    assert result.stop_reason == "terminal"


def test_repetition_is_valued_as_a_draw() -> None:
    # After Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1, black's Ng8 repeats the start position a third time.
    state = chess_state(None, ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"))
    # Every non-terminal position looks won for its side to move, so every other black move looks lost:
    # the draw by repetition (exactly 0) is the best black has.
    tree = Tree(state, SearchConfig(batch_size=4))
    result = run(tree, constant(0.9), 600)
    assert result.best_move == chess.Move.from_uci("f6g8")
    slot = tree.root.moves.index(chess.Move.from_uci("f6g8"))
    assert tree.root.children[slot].terminal == 0.0
    _, q, _, _ = tree.slot_stats(slot)
    assert q == 0.0


def test_visits_sum_to_nodes_and_virtual_loss_is_removed() -> None:
    state = chess_state("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    tree = Tree(state, SearchConfig(batch_size=16, virtual_loss=3))
    with ThreadPoolExecutor(1) as ex:
        result = run(tree, UniformEvaluator(state.info), 1000, ex)
    assert result.info.nodes == 1000
    assert tree.root.visits == pytest.approx(1000)
    assert tree.root.child_n.sum() == pytest.approx(999)
    assert_consistent(tree)


def test_cancelled_leaves_leave_no_virtual_loss() -> None:
    state = chess_state()
    tree = Tree(state, SearchConfig(batch_size=8))
    run(tree, UniformEvaluator(state.info), 50)
    leaves = tree.select_leaves(8)
    assert leaves and any(n.pending for n in walk_nodes(tree.root))
    tree.cancel(leaves)
    assert_consistent(tree)


def test_search_leaves_root_state_unchanged() -> None:
    state = chess_state(None, ("e2e4",))
    before = (state.to_text(), state.encode().copy(), state.ply)
    tree = Tree(state, SearchConfig())
    run(tree, UniformEvaluator(state.info), 300)
    assert (state.to_text(), state.ply) == before[::2]
    assert np.array_equal(state.encode(), before[1])


def test_node_limited_search_is_deterministic() -> None:
    def visits() -> list[float]:
        state = chess_state()
        tree = Tree(state, SearchConfig(batch_size=8))
        with ThreadPoolExecutor(1) as ex:
            run(tree, constant(0.1), 500, ex)
        return list(tree.root.child_n)

    assert visits() == visits()


def test_tree_reuse_keeps_the_subtree() -> None:
    state = chess_state()
    tree = Tree(state, SearchConfig())
    run(tree, UniformEvaluator(state.info), 500)
    best_slot = int(np.argmax(tree.root.child_n))
    move = tree.root.moves[best_slot]
    child = tree.root.children[best_slot]
    visits = child.visits
    tree.advance(move)
    assert tree.root is child
    assert tree.root.visits == visits
    assert tree.state.ply == 1
    result = run(tree, UniformEvaluator(state.info), 200)
    assert tree.root.visits == pytest.approx(visits + result.info.nodes)
    assert_consistent(tree)


def test_tree_reuse_of_an_unsearched_move_starts_fresh() -> None:
    state = chess_state()
    tree = Tree(state, SearchConfig())
    run(tree, UniformEvaluator(state.info), 5)
    unvisited = next(m for m, c in zip(tree.root.moves, tree.root.children, strict=True) if c is None)
    tree.advance(unvisited)
    assert tree.root.visits == 0 and not tree.root.expanded


def test_node_budget_holds_and_ends_the_search() -> None:
    state = chess_state()
    tree = Tree(state, SearchConfig(node_budget=200, batch_size=8))
    result = run(tree, UniformEvaluator(state.info), 100_000)
    assert result.stop_reason == "full"
    assert tree.node_count <= 200
    assert_consistent(tree)


def test_searchmoves_restricts_the_root() -> None:
    state = chess_state()
    tree = Tree(state, SearchConfig())
    only = (chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h3"))
    limits = SearchLimits(nodes=200, searchmoves=only)
    result = Searcher(tree, UniformEvaluator(state.info), limits, NO_TIME).run()
    assert result.best_move in only
    for move, n in zip(tree.root.moves, tree.root.child_n, strict=True):
        if move not in only:
            assert n == 0


def test_dirichlet_noise_changes_root_priors_only_when_configured() -> None:
    state = chess_state()
    plain = Tree(state.copy(), SearchConfig())
    noisy = Tree(state.copy(), SearchConfig(dirichlet_alpha=0.3, seed=1))
    for tree in (plain, noisy):
        run(tree, UniformEvaluator(state.info), 20)
    assert np.allclose(plain.root.prior, 1 / 20)
    assert not np.allclose(noisy.root.prior, 1 / 20)
    assert noisy.root.prior.sum() == pytest.approx(1.0)


def test_cache_hits_count_as_nodes_without_network_calls() -> None:
    state = chess_state()
    cache = NNCache(10_000)
    evaluator = constant(0.0)
    tree = Tree(state.copy(), SearchConfig(batch_size=1), cache)
    run(tree, evaluator, 100)
    calls = evaluator.positions
    tree2 = Tree(state.copy(), SearchConfig(batch_size=1), cache)
    result = run(tree2, evaluator, 100)
    assert result.info.nodes == 100
    assert tree2.cache_hits > 50
    assert evaluator.positions - calls < 50


def test_go_capture_that_saves_a_big_group() -> None:
    """5x5, white to move.  The eight white stones on the left have one liberty (A1); the black stone
    B3 inside them has one liberty (C3).  White C3 captures B3 and saves the group; anything else lets
    black A1 capture eight stones.  (Row 5 on top.)

        5  W W B . .
        4  W W B . .
        3  W B . B .
        2  W W B . .
        1  . W B . .
           A B C D E
    """
    game = get_game("go", board_size=5, komi=0.5)
    state = game.new_state()
    layout = {
        1: ["A5", "B5", "A4", "B4", "A3", "A2", "B2", "B1"],
        0: ["C5", "C4", "B3", "D3", "C2", "C1"],
    }
    for colour, vertices in layout.items():
        for v in vertices:
            state.play_as(colour, state.vertex_to_point(v))
    assert state.side_to_move == 1
    tree = Tree(state, SearchConfig(batch_size=4))
    result = run(tree, stone_balance(5), 400)
    assert state.move_to_text(result.best_move).upper() == "C3"


def test_shogi_mate_in_one_found_with_uniform_priors() -> None:
    # Gote king in the corner (1a), a sente pawn on 1c: the gold drop G*1b (guarded by the pawn) mates.
    game = get_game("shogi")
    state = game.state_from_text("8k/9/8P/9/9/9/9/9/4K4 b G 1")
    tree = Tree(state, SearchConfig(batch_size=8))
    result = run(tree, UniformEvaluator(state.info), 600)
    assert state.move_to_text(result.best_move) == "G*1b"
    assert result.info.lines[0].score.mate == 1


def test_shogi_mate_in_one_proves_the_root_without_the_network() -> None:
    state = get_game("shogi").state_from_text("8k/9/8P/9/9/9/9/9/4K4 b G 1")
    tree = Tree(state, SearchConfig(batch_size=8))
    assert tree.select_leaves(4) == []  # nothing for the network: the first walk proves the root
    assert tree.evaluations == 0 and tree.root.proven == Proof.WIN and tree.root.proven_plies == 1
    assert state.move_to_text(tree.best_move()) == "G*1b"
    assert_consistent(tree)
    off = Tree(state.copy(), SearchConfig(batch_size=8, mate_check=False))
    assert len(off.select_leaves(1)) == 1  # without the check the root goes to the network


def test_shogi_root_mate_search_proves_a_longer_mate_at_the_root() -> None:
    # No mate in one: the root goes to the network once, then the df-pn search proves it.
    state = get_game("shogi").state_from_text("8k/9/9/9/9/9/9/9/4K4 b R2G 1")
    expected, plies = state.find_mate(5000)
    tree = Tree(state, SearchConfig(batch_size=8))
    result = run(tree, UniformEvaluator(state.info), 50)
    assert tree.evaluations == 1 and tree.root.proven == Proof.WIN and tree.root.proven_plies == plies
    assert result.best_move == expected
    assert tree.slot_stats(tree.root.moves.index(expected))[3] == plies
    assert_consistent(tree)
    # The defender's root (proven lost, never expanded) is searched afresh and answers with a move.
    tree.advance(expected)
    assert tree.root.proven == 0 and not tree.root_terminal
    reply = run(tree, UniformEvaluator(state.info), 50).best_move
    assert reply in tree.state.legal_moves()
    fresh = get_game("shogi").state_from_text("8k/9/9/9/9/9/9/9/4K4 b R2G 1")
    off = Tree(fresh, SearchConfig(batch_size=8, root_mate_nodes=0))
    run(off, UniformEvaluator(state.info), 50)
    assert off.root.proven != Proof.WIN and off.evaluations > 1


def test_shogi_replies_that_allow_a_mate_in_one_are_proven_losses() -> None:
    # Gote to move: 25 of its 31 moves allow a sente mate in one; 4c4d 6c6d 8c8d 9a9c 2a3c 8a9c do not
    # (4c4d and 2a3c give check: cshogi's mate search must not be asked there).
    state = get_game("shogi").state_from_text(
        "lns4n+B/3rg2sl/+Bppp1p1g1/2k1p1ppP/5K3/1PP1P4/P2G1PPPN/3S3RL/LN2G1S2 w 3P 52"
    )
    tree = Tree(state, SearchConfig(batch_size=8))
    result = run(tree, UniformEvaluator(state.info), 200)
    assert state.move_to_text(result.best_move) in {"4c4d", "6c6d", "8c8d", "9a9c", "2a3c", "8a9c"}
    proven = 0
    for slot, move in enumerate(tree.root.moves):
        child = tree.root.children[slot]
        if child is None or child.visits == 0:
            continue
        state.push(move)
        allows_mate = _has_mate_in_one(state)  # by trying every reply, not through cshogi's search
        state.pop()
        assert (child.proven == Proof.WIN and child.proven_plies == 1) == allows_mate, state.move_to_text(
            move
        )
        proven += allows_mate
        if allows_mate:
            assert child.visits == 1  # proven on its first visit, never searched again
    assert proven == 25
    assert_consistent(tree)


def _has_mate_in_one(state) -> bool:
    for reply in state.legal_moves():
        state.push(reply)
        outcome = state.outcome()
        state.pop()
        if outcome is not None and outcome.value < 0:
            return True
    return False


def test_depth_limit_counts_only_evaluated_playouts() -> None:
    """Leaves still waiting for the network do not count towards the average depth (``go depth``)."""
    tree = Tree(chess_state(), SearchConfig(batch_size=16))
    result = Searcher(tree, UniformEvaluator(tree.state.info), SearchLimits(depth=2), NO_TIME).run()
    assert result.stop_reason == "depth"
    assert result.info.depth >= 2 and result.info.nodes > 17


class _SlowEvaluator(UniformEvaluator):
    """A network call that takes ``delay`` seconds (a loaded machine, a big net)."""

    overlaps = True  # a network: the search runs its calls on the executor
    evaluate_dense = Evaluator.evaluate_dense  # the searches' dense calls through evaluate (the sleep)

    def __init__(self, info, delay: float) -> None:
        super().__init__(info)
        self.delay = delay

    def evaluate(self, planes, legal):
        import time

        time.sleep(self.delay)
        return super().evaluate(planes, legal)


def test_hard_limit_and_stop_do_not_wait_for_a_slow_network_call() -> None:
    """The hard time limit holds even when a network call outlasts it; stop answers mid-call."""
    import threading
    import time

    from engine.search.searcher import SearchControl

    with ThreadPoolExecutor(max_workers=1) as executor:
        state = chess_state()
        tree = Tree(state, SearchConfig(batch_size=8))
        t = time.perf_counter()
        result = Searcher(
            tree,
            _SlowEvaluator(state.info, 0.15),
            SearchLimits(movetime_ms=200),
            TimeBudget(200, 200, False),
            executor=executor,
        ).run()
        assert result.best_move is not None and result.stop_reason == "time"
        assert time.perf_counter() - t < 0.29  # not 0.45 (two more calls waited for)
        assert_consistent(tree)
        tree = Tree(state, SearchConfig(batch_size=8))
        control = SearchControl()
        threading.Timer(0.4, control.stop.set).start()
        t = time.perf_counter()
        result = Searcher(
            tree, _SlowEvaluator(state.info, 0.3), SearchLimits(infinite=True), NO_TIME, control, executor
        ).run()
        assert result.best_move is not None and result.stop_reason == "stop"
        assert time.perf_counter() - t < 0.55
        assert_consistent(tree)


def test_root_over_by_repetition_with_moves_left_is_still_searched() -> None:
    # The start position has occurred three times: a draw by rule, but a GUI asking for a move gets one.
    state = chess_state(None, ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8"))
    assert state.outcome() is not None and state.legal_moves()
    tree = Tree(state, SearchConfig())
    result = run(tree, UniformEvaluator(state.info), 100)
    assert result.best_move in state.legal_moves()
    assert result.info.nodes >= 100


# ---- the reference tree's network cache ----------------------------------------------------------------------------------------


def _ev(v: float) -> Evaluation:
    return Evaluation(np.ones(1, np.float32), v)


def test_nncache_is_bounded_lru() -> None:
    cache = NNCache(3)
    for k in "abc":
        cache.put(k, _ev(ord(k)))
    assert cache.get("a") is not None  # a is now the most recent: b is the oldest
    cache.put("d", _ev(0))
    assert len(cache) == 3 and "b" not in cache and {"a", "c", "d"} <= {k for k in "abcd" if k in cache}
    assert cache.get("b") is None
    assert (cache.hits, cache.misses) == (1, 1) and cache.hit_rate == 0.5
    cache.put("c", _ev(1))  # refresh: c most recent, a now oldest
    cache.resize(2)
    assert "a" not in cache and "c" in cache and "d" in cache and cache.capacity == 2
    cache.get(("tuple", 1))
    cache.clear()
    assert len(cache) == 0 and cache.hits == cache.misses == 0


def test_nncache_zero_capacity_stores_nothing() -> None:
    cache = NNCache(0)
    cache.put("a", _ev(0))
    assert len(cache) == 0 and cache.get("a") is None
    with pytest.raises(ValueError):
        NNCache(-1)
