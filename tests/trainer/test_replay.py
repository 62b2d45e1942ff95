"""trainer.learn.replay: the window of newest positions, uniform sampling, Go symmetries."""

from __future__ import annotations

import numpy as np
import pytest

from engine.games import get_game
from engine.games.go_symmetry import symmetry_point
from trainer.learn.replay import ReplayBuffer, augment_go
from trainer.store.shards import GameData, build_shard, pack_position, shard_metadata, shard_name, write_shard


def _write_marked_shards(folder, info, counts, start_time=1_000_000.0):
    """Shards whose positions carry their global number in the first plane's first square."""
    c, h, w = info.input_shape
    number = 0
    for k, count in enumerate(counts):
        packed = []
        for _ in range(count):
            planes = np.zeros((c, h, w), np.float32)
            planes[0, 0, 0] = float(number)  # a non-binary plane: kept whole
            packed.append(
                pack_position(planes, np.array([number % info.policy_size]), np.array([1.0], np.float32), 0)
            )
            number += 1
        arrays = build_shard([GameData(packed, [0] * count, 0)], info)
        write_shard(
            folder / shard_name(0, k, when=start_time + k), arrays, shard_metadata(info, arrays, games=1)
        )


def test_window_keeps_and_samples_only_the_newest(tmp_path) -> None:
    info = get_game("go", board_size=5).info
    _write_marked_shards(tmp_path, info, [100, 100, 100])
    replay = ReplayBuffer(tmp_path, info, window=150, augment=False)
    assert replay.refresh() == 300
    assert replay.total_positions == 300 and replay.available == 150
    assert replay.size <= 250  # the oldest shard was dropped whole
    rng = np.random.default_rng(0)
    batch = replay.sample(4000, rng)
    numbers = batch.planes[:, 0, 0, 0]
    assert numbers.min() >= 150 and numbers.max() <= 299
    counts = np.bincount(numbers.astype(int) - 150, minlength=150)
    assert counts.min() > 5 and counts.max() < 60  # roughly uniform (mean 26.7)
    assert np.all(batch.pi.sum(axis=1) == 1.0) and np.all(batch.z == 1.0)
    # New shards are picked up; the window moves on.
    _write_marked_shards(tmp_path, info, [0, 0, 0, 50], start_time=2_000_000.0)
    assert replay.refresh() == 50
    numbers = replay.sample(2000, rng).planes[:, 0, 0, 0]  # the new shard is numbered 0..49
    assert np.all((numbers >= 200) | (numbers < 50)) and (numbers < 50).any()


def test_resume_reads_only_metadata_of_old_shards(tmp_path) -> None:
    info = get_game("go", board_size=5).info
    _write_marked_shards(tmp_path, info, [100] * 6)
    replay = ReplayBuffer(tmp_path, info, window=150, augment=False)
    replay.refresh()
    assert replay.total_positions == 600 and replay.total_games == 6
    assert len(replay.shards) == 2


def test_symmetry_augmentation_moves_stones_and_policy_together() -> None:
    game = get_game("go", board_size=7)
    state = game.new_state()
    for vertex in ["C3", "E5", "B6", "F2", "D4"]:
        state.push(state.parse_move(vertex))
    planes = state.encode()[None]
    n = 7
    _, legal = state.legal_moves_and_indices()
    pi = np.zeros((1, n * n + 1), np.float32)
    pi[0, legal[:10]] = np.arange(1, 11, dtype=np.float32) / 55
    pi[0, n * n] = 0.0
    ownership = np.zeros((1, n * n), np.float32)
    ownership[0, legal[:5]] = np.linspace(-1.0, 1.0, 5)
    for k in range(8):
        p2, pi2, own2 = augment_go(planes, pi, np.array([k]), ownership)
        assert own2 is not None
        for point in legal[:5]:  # the ownership target moves with the board
            assert own2[0, symmetry_point(int(point), k, n)] == ownership[0, point]
        # every stone of every history plane moves to its image point
        for c in range(16):
            for point in np.flatnonzero(planes[0, c].reshape(-1)):
                image = symmetry_point(int(point), k, n)
                assert p2[0, c].reshape(-1)[image] == 1.0
            assert p2[0, c].sum() == planes[0, c].sum()
        assert np.array_equal(p2[0, 16], planes[0, 16])  # colour plane unchanged
        for index in legal:
            assert pi2[0, symmetry_point(int(index), k, n)] == pi[0, index]
        assert pi2[0, n * n] == pi[0, n * n]  # pass stays pass
        # the image position (built by playing the image moves) encodes to the augmented planes
        img = game.new_state()
        for move in state.move_stack:
            img.push(symmetry_point(move, k, n))
        assert np.array_equal(img.encode(), p2[0])


def test_chess_is_not_augmented(tmp_path) -> None:
    info = get_game("chess").info
    replay = ReplayBuffer(tmp_path, info, window=10, augment=True)
    assert not replay.augment
    with pytest.raises(ValueError, match="empty"):
        replay.sample(1, np.random.default_rng(0))


def test_value_target_mixes_result_and_search_value(tmp_path) -> None:
    info = get_game("go", board_size=5).info
    c, h, w = info.input_shape
    packed = [
        pack_position(
            np.zeros((c, h, w), np.float32),
            np.array([0]),
            np.array([1.0], np.float32),
            i,
            q=-0.5 if i % 2 else 0.25,
        )
        for i in range(10)
    ]
    arrays = build_shard([GameData(packed, [0] * 10, 0)], info)  # player 0 won: z = 1 everywhere
    write_shard(tmp_path / shard_name(0, 0), arrays, shard_metadata(info, arrays, games=1))
    rng = np.random.default_rng(0)
    plain = ReplayBuffer(tmp_path, info, window=10, augment=False)
    plain.refresh()
    assert np.all(plain.gather(np.arange(10)).z == 1.0)  # AlphaZero: the result alone
    mixed = ReplayBuffer(tmp_path, info, window=10, augment=False, q_ratio=0.5)
    mixed.refresh()
    batch = mixed.gather(np.arange(10), rng)
    assert np.allclose(batch.z[0::2], 0.625) and np.allclose(batch.z[1::2], 0.25)
    assert np.all(batch.result == 1.0)  # the WDL head still learns the result itself
    with pytest.raises(ValueError):
        ReplayBuffer(tmp_path, info, window=10, q_ratio=1.5)


def _write_proven_shards(folder, info, counts, every=25, first=0):
    """Marked shards (as above, numbered from ``first``) whose positions numbered a multiple of ``every``
    were proven won (q = 1)."""
    c, h, w = info.input_shape
    number = first
    for k, count in enumerate(counts, start=first):
        packed = []
        for _ in range(count):
            planes = np.zeros((c, h, w), np.float32)
            planes[0, 0, 0] = float(number)
            q = 1.0 if number % every == 0 else 0.5
            packed.append(pack_position(planes, np.array([0]), np.array([1.0], np.float32), 0, q=q))
            number += 1
        arrays = build_shard([GameData(packed, [0] * count, 0)], info)
        write_shard(
            folder / shard_name(0, k, when=1_000_000.0 + k), arrays, shard_metadata(info, arrays, games=1)
        )


def test_proven_positions_are_weighted_up_inside_the_window_only(tmp_path) -> None:
    info = get_game("go", board_size=5).info
    _write_proven_shards(tmp_path, info, [100, 100, 100])
    rng = np.random.default_rng(0)
    uniform = ReplayBuffer(tmp_path, info, window=150, augment=False)
    uniform.refresh()
    # The window is numbers 150..299; the held part of the oldest shard (100..149) is never sampled.
    numbers = uniform.gather(uniform.proven_indices).planes[:, 0, 0, 0]
    assert sorted(numbers.tolist()) == [150.0, 175.0, 200.0, 225.0, 250.0, 275.0]
    drawn = uniform.sample(20_000, rng).planes[:, 0, 0, 0]
    assert 0.03 < np.mean(drawn % 25 == 0) < 0.05  # 6 of 150
    weighted = ReplayBuffer(tmp_path, info, window=150, augment=False, proven_weight=11.0)
    weighted.refresh()
    drawn = weighted.sample(20_000, rng).planes[:, 0, 0, 0]
    assert drawn.min() >= 150
    share = np.mean(drawn % 25 == 0)
    assert 0.29 < share < 0.34  # 6 x 11 of 144 + 6 x 11 = 0.314
    weights = weighted.sample(20_000, rng)
    drawn = weights.planes[:, 0, 0, 0]
    assert np.allclose(weights.value_weight[drawn % 25 == 0], 210 / 150 / 11)
    assert np.allclose(weights.value_weight[drawn % 25 != 0], 210 / 150)
    assert 0.97 < weights.value_weight.mean() < 1.03  # the value loss still estimates the window's
    assert uniform.sample(10, rng).value_weight is None
    proven_counts = np.bincount((drawn[drawn % 25 == 0].astype(int) - 150) // 25, minlength=6)
    assert proven_counts.min() > 0.7 * proven_counts.mean()  # each proven position alike
    other = drawn[drawn % 25 != 0]
    assert 0.6 < np.mean(other < 225) / np.mean(other >= 225) < 1.6  # the rest still uniform
    # The window moves on: the proven set follows.
    _write_proven_shards(tmp_path, info, [100], first=300)
    weighted.refresh()
    numbers = weighted.gather(weighted.proven_indices).planes[:, 0, 0, 0]
    assert sorted(numbers.tolist()) == [250.0, 275.0, 300.0, 325.0, 350.0, 375.0]
    with pytest.raises(ValueError):
        ReplayBuffer(tmp_path, info, window=10, proven_weight=0.5)


def test_shards_without_search_values_have_no_proven_positions(tmp_path) -> None:
    info = get_game("go", board_size=5).info
    c, h, w = info.input_shape
    packed = [
        pack_position(np.zeros((c, h, w), np.float32), np.array([0]), np.array([1.0], np.float32), i, q=1.0)
        for i in range(10)
    ]
    arrays = build_shard([GameData(packed, [0] * 10, 0)], info)
    del arrays["q"]  # written before q was recorded: q reads as z, which is 1 for the winner
    write_shard(tmp_path / shard_name(0, 0), arrays, shard_metadata(info, arrays, games=1))
    replay = ReplayBuffer(tmp_path, info, window=10, augment=False, proven_weight=10.0)
    replay.refresh()
    assert np.all(replay.gather(np.arange(10)).z == 1.0)
    assert len(replay.proven_indices) == 0
