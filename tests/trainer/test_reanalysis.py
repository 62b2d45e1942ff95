"""Reanalysis: stored positions rebuilt from their games' moves, searched again, their new targets written
beside the shards and used by the replay buffer in place of self-play's."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games.base import Game, GameInfo
from engine.inference import UniformEvaluator
from trainer.config import (
    GameSettings,
    ReplaySettings,
    RunConfig,
    SelfPlaySettings,
    config_from_toml,
    config_to_toml,
    make_game,
)
from trainer.learn.replay import ReplayBuffer
from trainer.selfplay.player import FinishedGame, SelfPlayer
from trainer.selfplay.reanalysis import (
    StoredPosition,
    WorkerReanalysis,
    pick_positions,
    reanalyse,
    reanalysis_count,
    rebuild,
)
from trainer.selfplay.worker import ShardSink
from trainer.store.overlays import (
    OverlayError,
    TargetOverlay,
    list_overlays,
    overlay_name,
    prune_overlays,
    read_overlay,
    write_overlay,
)
from trainer.store.runfolder import RunFolder
from trainer.store.shards import list_shards, read_shard


class ValueEvaluator(UniformEvaluator):
    """Uniform priors and one value for every position (from its side to move).  The compiled trees'
    dense calls go through :meth:`evaluate` too (the base class's dense path)."""

    evaluate_dense = Evaluator.evaluate_dense

    def __init__(self, info: GameInfo, value: float) -> None:
        super().__init__(info)
        self.value = value

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        return [dataclasses.replace(e, value=self.value) for e in super().evaluate(planes, legal)]


def _settings(**changes: object) -> SelfPlaySettings:
    base = SelfPlaySettings(
        games_in_parallel=3,
        leaves_per_tree=2,
        simulations=12,
        resign_threshold=None,
        sample_plies=1000,
        root_mate_nodes=0,
        positions_per_shard=10**9,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def _game(label: str) -> tuple[Game, GameSettings]:
    settings = {
        "go5": GameSettings(name="go", size=5, max_plies=40),
        "chess": GameSettings(name="chess", size=None, max_plies=24),
        "shogi": GameSettings(name="shogi", size=None, max_plies=24),
    }[label]
    return make_game(settings), settings


def _self_play(
    folder: RunFolder, label: str, games: int = 3, seed: int = 1
) -> tuple[Game, list[FinishedGame]]:
    """Self-play ``games`` short games with uniform priors into one shard of ``folder``."""
    game, settings = _game(label)
    folder.create()
    player = SelfPlayer(game, _settings(), UniformEvaluator(game.info), seed=seed)
    finished = player.play_games(games)
    sink = ShardSink(folder, game.info, settings, worker=0, positions_per_shard=10**9)
    sink.add(finished)
    sink.flush()
    return game, finished


@pytest.mark.parametrize("label", ["go5", "chess", "shogi"])
def test_stored_positions_are_rebuilt_from_their_games_moves(tmp_path: Path, label: str) -> None:
    folder = RunFolder(tmp_path)
    game, finished = _self_play(folder, label)
    (path,) = list_shards(folder.shards)
    shard = read_shard(path, game.info)
    assert shard.meta["moves"] == [list(g.moves) for g in finished]
    for row in range(len(shard)):
        ply = int(shard.arrays["ply"][row])
        moves = tuple(shard.meta["moves"][int(shard.arrays["game"][row])][:ply])
        state = rebuild(game, StoredPosition(shard, row, moves))
        assert state is not None and state.ply == ply  # the planes matched, or rebuild said None
    picked = pick_positions([shard], 50, np.random.default_rng(0))
    assert len(picked) == 50 and all(rebuild(game, p) is not None for p in picked)
    # moves that lead elsewhere (one move short) are refused, not searched
    wrong = StoredPosition(shard, picked[0].row, picked[0].moves[:-1]) if picked[0].moves else None
    if wrong is not None:
        assert rebuild(game, wrong) is None
    assert rebuild(game, StoredPosition(shard, picked[0].row, ("not-a-move",))) is None


def test_shards_without_moves_are_passed_over(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    game, _ = _self_play(folder, "go5")
    shard = read_shard(list_shards(folder.shards)[0], game.info)
    del shard.meta["moves"]  # as shards written before reanalysis existed
    assert pick_positions([shard], 10, np.random.default_rng(0)) == []


def test_search_positions_gives_the_targets_self_play_records(tmp_path: Path) -> None:
    game, _ = _game("chess")
    evaluator = ValueEvaluator(game.info, 0.5)
    player = SelfPlayer(game, _settings(simulations=40), evaluator, seed=2)
    start = game.new_state()
    after = start.copy()
    after.push(after.parse_move("e2e4"))
    targets = player.search_positions([start, after], simulations=30)
    assert len(targets) == 2
    for state, target in zip([start, after], targets, strict=True):
        legal = set(state.legal_moves_and_indices()[1].tolist())
        assert set(target.indices.tolist()) <= legal and len(target.indices) > 1
        assert target.pi.dtype == np.float32 and abs(float(target.pi.sum()) - 1.0) < 1e-5
        assert np.all(target.pi > 0)
        # every position is worth +0.5 to its side to move: the root's children, most of the visits,
        # are worth -0.5 to the root's side, the grandchildren +0.5
        assert -0.5 < target.q < 0.0
    assert player.stats.evaluations >= 2 * 30 - 2


def test_overlay_round_trip_and_pruning(tmp_path: Path) -> None:
    targets = [
        ("00000000001000-w000-p0000001-000000.npz", 3, np.array([5, 9]), np.array([0.25, 0.75]), 0.4),
        ("00000000002000-w000-p0000001-000001.npz", 0, np.array([1]), np.array([1.0]), -2.0),
    ]
    overlay = TargetOverlay.build(targets, network_step=7, simulations=32, worker=1)
    path = write_overlay(tmp_path, overlay, worker=1)
    back = read_overlay(path)
    assert back.positions() == [(targets[0][0], 3, 0), (targets[1][0], 0, 1)]
    indices, shares, q = back.target(0)
    assert indices.tolist() == [5, 9] and shares.tolist() == [0.25, 0.75] and q == pytest.approx(0.4)
    assert back.target(1)[2] == -1.0  # clipped to [-1, 1]
    assert back.meta["network_step"] == 7
    # a file cut short is refused, not half-read
    cut = tmp_path / overlay_name(2)
    cut.write_bytes(path.read_bytes()[:100])
    with pytest.raises(OverlayError):
        read_overlay(cut)
    cut.unlink()
    # overlays written before the oldest shard of the window go; later ones stay
    old = tmp_path / overlay_name(0, when_ns=1_500 * 1_000_000)
    old.write_bytes(path.read_bytes())
    assert prune_overlays(tmp_path, "00000000002000-w000-p0000001-000003.npz") == 1
    assert list_overlays(tmp_path) == [path]


def test_the_replay_buffer_trains_on_the_newest_reanalysed_targets(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    game, _ = _self_play(folder, "go5", games=2)
    plain = ReplayBuffer(folder.shards, game.info, 10_000, augment=False, q_ratio=1.0)
    replay = ReplayBuffer(
        folder.shards, game.info, 10_000, augment=False, q_ratio=1.0, overlays=folder.reanalysis
    )
    plain.refresh()
    replay.refresh()
    shard = replay.shards[0]
    rows = np.arange(len(shard))
    before = plain.gather(rows)
    # reanalyse with a network that calls every position won for the side to move
    player = SelfPlayer(game, _settings(), ValueEvaluator(game.info, 1.0), seed=4, network_step=99)
    done = reanalyse(player, replay.shards, 8, folder.reanalysis, worker=0, rng=np.random.default_rng(1))
    assert done == 8
    (path,) = list_overlays(folder.reanalysis)
    overlay = read_overlay(path)
    assert overlay.meta["network_step"] == 99 and overlay.meta["simulations"] == _settings().simulations
    assert replay.load_overlays() == 8
    after = replay.gather(rows)
    changed = sorted(replay.targets[shard.path.name])
    assert changed and set(changed) == {row for _, row, _ in overlay.positions()}
    for row in range(len(shard)):
        if row in replay.targets[shard.path.name]:
            indices, shares, q = replay.targets[shard.path.name][row]
            expected = np.zeros(game.info.policy_size, np.float32)
            expected[indices] = shares
            np.testing.assert_array_equal(after.pi[row], expected)
            assert after.z[row] == pytest.approx(q)  # q_ratio 1: the new root value
            assert after.result[row] == before.result[row]  # the game's result stays
        else:
            np.testing.assert_array_equal(after.pi[row], before.pi[row])
            assert after.z[row] == before.z[row]
        np.testing.assert_array_equal(after.planes[row], before.planes[row])
    assert not np.array_equal(after.z[changed], before.z[changed])  # a network of other values
    assert replay.load_overlays() == 0  # each file applied once


def test_a_later_reanalysis_of_a_position_wins_and_dropped_shards_forget_theirs(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    game, _ = _self_play(folder, "go5", games=1)
    replay = ReplayBuffer(folder.shards, game.info, 10_000, augment=False, overlays=folder.reanalysis)
    replay.refresh()
    name = replay.shards[0].path.name
    first = TargetOverlay.build([(name, 0, np.array([1]), np.array([1.0]), 0.1)])
    write_overlay(folder.reanalysis, first, worker=0)
    time.sleep(0.001)
    second = TargetOverlay.build([(name, 0, np.array([2]), np.array([1.0]), 0.2)])
    write_overlay(folder.reanalysis, second, worker=1)
    replay.refresh()
    indices, _, q = replay.targets[name][0]
    assert indices.tolist() == [2] and q == pytest.approx(0.2)
    # a shard that falls out of the window takes its targets with it
    replay.window = 1
    _self_play(folder, "go5", games=1, seed=5)
    replay.refresh()
    assert name not in {s.path.name for s in replay.shards} and name not in replay.targets


def test_a_worker_reanalyses_its_share_after_each_shard(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    game, settings = _game("go5")
    _self_play(folder, "go5", games=2)
    config = RunConfig(
        game=settings, selfplay=_settings(), replay=ReplaySettings(window=10_000, reanalyse_share=0.2)
    )
    work = WorkerReanalysis(folder, config, game.info, worker=0, seed=0)
    player = SelfPlayer(game, config.selfplay, UniformEvaluator(game.info), seed=1)
    assert work.after_shard(player, 40) == reanalysis_count(40, 0.2) == 10
    assert work.total == 10 and len(list_overlays(folder.reanalysis)) == 1
    off = WorkerReanalysis(folder, config.replace("replay", reanalyse_share=0.0), game.info, 0, 0)
    assert off.window is None and off.after_shard(player, 40) == 0


def test_reanalysis_settings_are_checked_and_round_trip() -> None:
    assert reanalysis_count(100, 0.0) == 0 and reanalysis_count(100, 0.5) == 100
    with pytest.raises(ValueError, match="reanalyse_share"):
        ReplaySettings(reanalyse_share=1.0)
    with pytest.raises(ValueError, match="reanalyse_simulations"):
        ReplaySettings(reanalyse_simulations=0)
    config = RunConfig().replace("replay", reanalyse_share=0.25, reanalyse_simulations=64)
    back = config_from_toml(config_to_toml(config))
    assert back.replay.reanalyse_share == 0.25 and back.replay.reanalyse_simulations == 64


def test_a_run_with_reanalysis_trains_on_reanalysed_targets(tmp_path: Path) -> None:
    """``tabula-train run`` with a reanalysis share: the inline self-play writes overlays, the shards count
    what was reanalysed, the learner's window holds the new targets and the log says so."""
    import json

    from tests.trainer.conftest import go5_args, set_flags
    from tests.trainer.test_end_to_end import TINY, invoke

    out = tmp_path / "run"
    sets = set_flags(
        [*TINY, "game.max_plies=30", "replay.reanalyse_share=0.3", "replay.reanalyse_simulations=6"]
    )
    invoke([*go5_args("run", out), "--workers", "0", "--steps", "8", "--no-progress", *sets])
    folder = RunFolder(out)
    overlays = [read_overlay(p) for p in list_overlays(folder.reanalysis)]
    assert overlays and all(o.meta["simulations"] == 6 for o in overlays)
    counted = sum(int(read_shard(p).meta.get("reanalysed", 0)) for p in list_shards(folder.shards))
    written = sum(len(o) for o in overlays)
    assert 0 < counted <= written  # the newest round is counted by the next shard
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    train = [e for e in events if e["kind"] == "train"][-1]
    assert train["reanalysed"] > 0 and train["reanalysed_in_window"] > 0
