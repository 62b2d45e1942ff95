"""trainer.selfplay.player: many games on the engine's Tree, one evaluator call per step."""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games import get_game
from engine.inference import UniformEvaluator
from engine.search.gumbel import GumbelConfig
from trainer.config import SelfPlaySettings
from trainer.selfplay.player import SelfPlayer, search_configs


class CountingEvaluator(UniformEvaluator):
    """Uniform priors, a value that favours the first player a little, and a call log.  The compiled
    trees' dense calls go through :meth:`evaluate` too (the base class's dense path)."""

    evaluate_dense = Evaluator.evaluate_dense

    def __init__(self, info, black_value: float = 0.0):
        super().__init__(info)
        self.calls: list[int] = []
        self.black_value = black_value

    def evaluate(self, planes, legal):
        self.calls.append(len(legal))
        out = super().evaluate(planes, legal)
        # Go plane 16 is all ones when black is to move: the value is black_value for black, the
        # opposite for white (a consistent "black is lost" when negative).
        black = planes[:, 16, 0, 0] == 1.0
        return [
            dataclasses.replace(e, value=self.black_value if b else -self.black_value)
            for e, b in zip(out, black, strict=True)
        ]


def _settings(**kw) -> SelfPlaySettings:
    base = {
        "games_in_parallel": 6,
        "leaves_per_tree": 2,
        "simulations": 8,
        "sample_plies": 4,
        "resign_threshold": None,
        "positions_per_shard": 100,
    }
    base.update(kw)
    return SelfPlaySettings(**base)


def test_games_are_played_in_parallel_with_one_call_per_step() -> None:
    game = get_game("go", board_size=5)
    ev = CountingEvaluator(game.info)
    player = SelfPlayer(game, _settings(), ev, seed=3)
    games = player.play_games(8)
    assert len(games) == 8
    assert len(ev.calls) <= player.stats.steps  # one network call per step at most
    assert max(ev.calls) > 2 * 2  # leaves of several games shared a call
    assert sum(ev.calls) == player.stats.evaluations
    for g in games:
        assert g.reason in ("two-passes", "max-length")
        assert len(g.data.positions) == g.plies  # every move was a full search and was recorded
        for p in g.data.positions:
            assert abs(float(p.pi_value.sum()) - 1.0) < 1e-5
            assert len(p.pi_index) == len(p.pi_value) > 0
        z = g.data.z()
        if g.winner is not None:
            assert set(np.unique(z)) <= {-1.0, 1.0}
            assert all((zz > 0) == (pl == g.winner) for zz, pl in zip(z, g.data.players, strict=True))
        # the record replays legally
        state = game.new_state()
        for text in g.moves:
            state.push(state.parse_move(text))
        assert state.outcome() is not None


def test_noise_alpha_follows_the_game() -> None:
    for label, alpha in (("chess", 0.3), ("shogi", 0.15), ("go19", 0.03)):
        game = get_game(label)
        full, fast = search_configs(game, _settings())
        assert full.dirichlet_alpha == alpha == game.profile.noise_alpha
        assert full.dirichlet_epsilon == 0.25 and fast.dirichlet_alpha is None
    full, _ = search_configs(get_game("go9"), _settings(dirichlet_alpha=0.5))
    assert full.dirichlet_alpha == 0.5


def test_self_play_searches_for_root_mates_with_its_own_budget() -> None:
    game = get_game("shogi")
    full, fast = search_configs(game, _settings())
    assert full.root_mate_nodes == fast.root_mate_nodes == SelfPlaySettings().root_mate_nodes == 1000
    full, fast = search_configs(game, _settings(root_mate_nodes=0))
    assert full.root_mate_nodes == fast.root_mate_nodes == 0
    with pytest.raises(ValueError, match="root_mate_nodes"):
        SelfPlaySettings(root_mate_nodes=-1)


def test_resignation_and_played_out_games() -> None:
    game = get_game("go", board_size=5)
    # Every evaluation says black is lost: black resigns at its first move...
    ev = CountingEvaluator(game.info, black_value=-0.99)
    fixed = {"resign_threshold": -0.9, "resign_consecutive": 1, "resign_false_positive_target": None}
    player = SelfPlayer(game, _settings(**fixed, resign_playout_fraction=0.0), ev, seed=1)
    games = player.play_games(4)
    assert all(g.reason == "resign" and g.winner == 1 and g.plies == 0 for g in games)
    assert all(len(g.data.positions) == 1 for g in games)  # the resigning position is still recorded
    # ... unless the game is one of those played out, where the would-be resigner is noted.
    player = SelfPlayer(game, _settings(**fixed, resign_playout_fraction=1.0), ev, seed=1)
    games = player.play_games(3)
    assert all(g.played_out and g.reason != "resign" and g.would_resign == 0 for g in games)
    assert all(g.false_positive == (g.winner != 1) for g in games)


def test_resign_threshold_calibration() -> None:
    game = get_game("go", board_size=5)
    player = SelfPlayer(
        game,
        _settings(resign_threshold=-0.9, resign_consecutive=2, resign_calibration_games=20),
        CountingEvaluator(game.info),
        seed=1,
    )
    # the lowest threshold at which a player would have resigned: min over 2-move windows of their max
    slot = player._new_slot()
    for signal in (-0.5, -0.95, -0.96, 0.2):
        player._note_signal(slot, 0, signal)
    assert slot.resign_bound == [-0.95, float("inf")]
    # a played-out game won by player 1 teaches nothing about player 0's bound; a draw takes both
    slot.resign_allowed = False
    player._calibrate(slot, winner=1, reason="two-passes")
    player._calibrate(slot, winner=None, reason="max-length")
    player._calibrate(slot, winner=0, reason="two-passes")
    assert list(player.resign_samples) == [float("inf"), -0.95, -0.95]

    def calibrated(bounds: list[float]) -> SelfPlayer:
        fresh = SelfPlayer(game, player.settings, CountingEvaluator(game.info), seed=1)
        fresh.add_resign_samples(bounds)
        return fresh

    assert calibrated([]).resign_threshold is None  # calibrating: nobody resigns yet
    # 5% would be wrong at -0.9: the configured value stands
    assert calibrated([1.0] * 95 + [-0.95] * 5).resign_threshold == -0.9
    # 30% of winners fell to -0.97: go below it
    assert calibrated([1.0] * 70 + [-0.97] * 30).resign_threshold == pytest.approx(-0.97)
    fixed = SelfPlayer(
        game,
        _settings(resign_threshold=-0.9, resign_false_positive_target=None),
        CountingEvaluator(game.info),
    )
    assert fixed.resign_threshold == -0.9
    off = SelfPlayer(game, _settings(resign_threshold=None), CountingEvaluator(game.info))
    assert off.resign_threshold is None


def test_calibrated_games_are_played_out_until_enough_samples() -> None:
    game = get_game("go", board_size=5)
    ev = CountingEvaluator(game.info, black_value=-0.99)
    player = SelfPlayer(
        game,
        _settings(
            resign_threshold=-0.9,
            resign_consecutive=1,
            resign_playout_fraction=0.0,
            resign_calibration_games=3,
            games_in_parallel=1,
        ),
        ev,
        seed=1,
    )
    games = player.play_games(3)
    assert all(g.played_out and g.reason != "resign" for g in games) and len(player.resign_samples) == 3
    assert player.resign_threshold == min(-0.9, float(np.quantile(list(player.resign_samples), 0.05)))
    later = player.play_games(4)
    assert all(not g.played_out for g in later)  # calibrated, and no game is chosen to be played out
    assert all(g.winner == 1 for g in later if g.reason == "resign")  # only black's values are low


def test_playout_cap_randomisation_records_only_full_searches() -> None:
    game = get_game("go", board_size=5)
    ev = CountingEvaluator(game.info)
    player = SelfPlayer(
        game, _settings(playout_cap=True, full_search_fraction=0.25, fast_simulations=2), ev, seed=5
    )
    games = player.play_games(6)
    plies = sum(g.plies for g in games)
    recorded = sum(len(g.data.positions) for g in games)
    assert 0 < recorded < 0.6 * plies


def test_sampling_then_greedy() -> None:
    game = get_game("go", board_size=5)
    ev = CountingEvaluator(game.info)
    openings = set()
    for seed in range(4):
        player = SelfPlayer(game, _settings(games_in_parallel=1, sample_plies=3), ev, seed=seed)
        openings.add(tuple(player.play_games(1)[0].moves[:3]))
    assert len(openings) > 1  # sampled openings differ between seeds


def test_pipelined_self_play_plays_the_same_kind_of_games() -> None:
    game = get_game("go", board_size=5)
    ev = CountingEvaluator(game.info)
    player = SelfPlayer(game, _settings(pipeline=True, games_in_parallel=6), ev, seed=2)
    games = player.play_games(7)
    player.close()
    assert len(games) == 7
    assert max(ev.calls) <= 3 * 2  # a call holds the leaves of one half of the games
    for g in games:
        assert len(g.data.positions) == g.plies
        state = game.new_state()
        for text in g.moves:
            state.push(state.parse_move(text))
        assert state.outcome() is not None


def test_recorded_root_value_is_the_search_value_from_the_side_to_move() -> None:
    game = get_game("go", board_size=5)
    player = SelfPlayer(game, _settings(), CountingEvaluator(game.info, black_value=-0.6), seed=5)
    games = player.play_games(4)
    for g in games:
        q = np.array([p.q for p in g.data.positions])
        players = np.array(g.data.players)
        assert np.all(np.abs(q) <= 1.0)
        # every evaluation says "black is lost": black's roots average near -0.6, white's near +0.6
        assert q[players == 0].mean() < -0.3 and q[players == 1].mean() > 0.3


def test_root_value_of_a_proven_root_is_exact() -> None:
    from engine.search.config import SearchConfig
    from engine.search.limits import SearchLimits
    from engine.search.searcher import Searcher
    from engine.search.time_manager import TimeBudget
    from tests.engine.search.reference_tree import Tree
    from trainer.selfplay.player import root_value

    game = get_game("chess")
    # the leaf mate check off, so the root is evaluated (q below 1) before the root mate search proves it
    config = SearchConfig(batch_size=8, mate_check=False)
    tree = Tree(game.state_from_text("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"), config)
    Searcher(tree, UniformEvaluator(game.info), SearchLimits(nodes=50), TimeBudget(None, None, False)).run()
    assert tree.root.q < 1.0 and root_value(tree) == 1.0  # proven by the root mate search: exactly won


def test_gumbel_self_play_records_the_improved_policy_and_plays_its_own_move() -> None:
    game = get_game("go", board_size=5)
    settings = _settings(root_search="gumbel", gumbel_considered=4, simulations=8)
    full, fast = search_configs(game, settings)
    assert full.gumbel is not None and full.gumbel.simulations == 8 and full.gumbel.considered == 4
    assert full.dirichlet_alpha is None and fast.gumbel is None  # the Gumbel sample is the exploration
    ev = CountingEvaluator(game.info)
    player = SelfPlayer(game, settings, ev, seed=5)
    games = player.play_games(4)
    assert len(games) == 4
    spread = []
    for g in games:
        state = game.new_state()
        for text, p in zip(g.moves, g.data.positions, strict=False):
            assert abs(float(p.pi_value.sum()) - 1.0) < 1e-5
            spread.append(len(p.pi_index) / len(state.legal_moves()))
            state.push(state.parse_move(text))
    # the improved policy covers (nearly) every legal move, not only the handful a search of 8 visits
    assert float(np.mean(spread)) > 0.8
    assert player.stats.evaluations <= sum(g.plies for g in games) * (8 + 2)  # about n simulations a move


def test_unknown_root_search_is_refused() -> None:
    with pytest.raises(ValueError, match="root_search"):
        _settings(root_search="mcts")


def test_a_repeated_position_gets_a_full_search_under_playout_caps() -> None:
    # Every move is fast (full_search_fraction 0) except where the game repeats a position: there the
    # fast searches' favourite moves would shuffle on into a draw by repetition (shogi's sennichite).
    game = get_game("chess")
    settings = _settings(playout_cap=True, full_search_fraction=0.0, games_in_parallel=1)
    player = SelfPlayer(game, settings, UniformEvaluator(game.info), seed=0)
    player._fill_slots()
    slot = player.slots[0]
    assert slot is not None and not slot.full
    kinds = []
    for text in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3"]:
        player._advance(slot, slot.state.parse_move(text))
        kinds.append(slot.full)
    assert kinds == [False, False, False, True, True]  # the start, then the position after g1f3, again
    assert slot.tree.config.dirichlet_alpha is not None  # a full search: with root noise
    plain = SelfPlayer(game, dataclasses.replace(settings, playout_cap=False), UniformEvaluator(game.info))
    plain._fill_slots()
    assert plain.slots[0] is not None and plain.slots[0].full


class HashedEvaluator(Evaluator):
    """Priors and values hashed from the planes (float32-exact), so that any difference in the trees'
    walks shows in the games."""

    def __init__(self, policy_size: int) -> None:
        self._weights = np.random.default_rng(5).uniform(0.05, 1.0, policy_size)

    def evaluate(self, planes, legal):
        out = []
        for p, idx in zip(planes, legal, strict=True):
            h = zlib.crc32(np.ascontiguousarray(p).tobytes())
            prior = (self._weights[idx] * (0.5 + ((h ^ (idx * 2654435761)) % 997) / 997.0)).astype(np.float32)
            prior /= prior[np.argsort(idx)].sum()
            out.append(
                Evaluation(prior.astype(np.float32), float(np.float32((h % 2001 - 1000) / 1000.0 * 0.9)))
            )
        return out


def test_kept_eyes_are_never_filled_and_games_end_by_passes() -> None:
    # go_keep_eyes: no game fills one of the mover's own true eyes; without it the same player does
    # (uniform priors fill the board, eyes included, until groups are captured).
    game = get_game("go", board_size=5)
    filled = {}
    for keep in (True, False):
        settings = _settings(go_keep_eyes=keep, simulations=8, sample_plies=50)
        games = SelfPlayer(game, settings, CountingEvaluator(game.info), seed=5).play_games(6)
        count = 0
        for g in games:
            state = game.new_state()
            for text in g.moves:
                move = state.parse_move(text)
                if move != 25 and state.true_eyes(state.side_to_move)[move]:
                    count += 1
                state.push(move)
            if keep:
                assert g.reason == "two-passes"
        filled[keep] = count
    assert filled[True] == 0 and filled[False] > 0


@pytest.mark.parametrize(
    ("label", "games", "max_plies"), [("go5", 6, None), ("chess", 2, 40), ("shogi", 2, 40)]
)
def test_compiled_and_reference_trees_play_the_same_self_play_games(
    label, games, max_plies, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One search for the engine and self-play: the compiled trees (Go, chess, shogi) and the reference
    # tree make the same choices from the same seed: root noise, visit counts, sampled moves, targets.
    from tests.engine.search.reference_tree import Tree
    from trainer.selfplay import player as player_module

    compiled_trees = player_module.new_tree
    game = get_game(label) if label == "chess" else get_game("go", board_size=5)
    if max_plies is not None:
        game = get_game(label, max_plies=max_plies)
    played = {}
    for compiled in (True, False):
        if compiled:
            monkeypatch.setattr(player_module, "new_tree", compiled_trees)
        else:
            monkeypatch.setattr(
                player_module,
                "new_tree",
                lambda state, config, rng=None, q=None: Tree(state.copy(), config, None, rng),
            )
        ev = HashedEvaluator(game.info.policy_size)
        settings = _settings(games_in_parallel=3, simulations=12, leaves_per_tree=2)
        player = SelfPlayer(game, settings, ev, seed=7)
        played[compiled] = player.play_games(games)
    for fast, slow in zip(played[True], played[False], strict=True):
        assert fast.moves == slow.moves and fast.reason == slow.reason
        for a, b in zip(fast.data.positions, slow.data.positions, strict=True):
            order_a, order_b = np.argsort(a.pi_index), np.argsort(b.pi_index)
            assert np.array_equal(a.pi_index[order_a], b.pi_index[order_b])
            np.testing.assert_allclose(a.pi_value[order_a], b.pi_value[order_b], atol=1e-6)
            assert a.q == pytest.approx(b.q, abs=1e-4)


@pytest.mark.parametrize("pipeline", [False, True])
def test_compiled_self_play_calls_the_network_on_the_shared_rows(pipeline: bool) -> None:
    # The compiled trees write their leaves into one array per call (SharedRows): the network gets it
    # as it lies, and the games are the ones the reference tree plays (the lockstep test above).
    game = get_game("chess", max_plies=12)
    calls: list[bool] = []

    class Recording(HashedEvaluator):
        def infer_dense(self, planes, legal):
            calls.append(
                any(
                    np.shares_memory(planes, r.planes) and np.shares_memory(legal.indices, r.index)
                    for r in player._rows.values()
                )
            )
            return super().infer_dense(planes, legal)

    settings = dataclasses.replace(
        _settings(games_in_parallel=4, simulations=8, leaves_per_tree=2), pipeline=pipeline
    )
    player = SelfPlayer(game, settings, Recording(game.info.policy_size), seed=3)
    player.play_games(2)
    assert calls and all(calls)


def test_gumbel_self_play_counts_reused_visits_towards_its_schedule() -> None:
    # a search whose reused visits already meet some of the halving schedule's levels needs fewer fresh
    # simulations than its budget: fewer evaluations than 8 a move in all (each game's first root included)
    game = get_game("go", board_size=5)
    settings = _settings(root_search="gumbel", gumbel_considered=4, simulations=8)
    assert search_configs(game, settings)[0].gumbel == GumbelConfig(8, 4, reuse=True)
    player = SelfPlayer(game, settings, CountingEvaluator(game.info), seed=5)
    games = player.play_games(4)
    plies = sum(g.plies for g in games)
    assert player.stats.evaluations < plies * 8 * 0.9
