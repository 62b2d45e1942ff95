"""trainer.store.shards: compact, atomic, bit-exact."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from trainer.store.shards import (
    ARRAY_KEYS,
    ShardError,
    build_shard,
    list_shards,
    pack_position,
    read_shard,
    read_shard_meta,
    shard_metadata,
    shard_name,
    write_shard,
)

from .conftest import random_games


@pytest.mark.parametrize("label,plies", [("chess", 30), ("shogi", 30), ("go9", 40)])
def test_round_trip_is_bit_exact(tmp_path, label: str, plies: int) -> None:
    game, games = random_games(label, 3, plies, seed=1)
    info = game.info
    arrays = build_shard([g for g, _ in games], info)
    path = tmp_path / shard_name(0, 0)
    write_shard(path, arrays, shard_metadata(info, arrays, games=3, worker=0))
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind
    shard = read_shard(path, info)
    raw = [r for _, rs in games for r in rs]
    assert len(shard) == len(raw)
    rows = np.arange(len(raw))
    planes = shard.decode_planes(rows, info)
    expected = np.stack([r[0] for r in raw])
    assert planes.dtype == np.float32 and planes.shape == expected.shape
    assert np.array_equal(planes.view(np.uint32), expected.view(np.uint32))  # bit for bit
    dense = shard.decode_policy(rows, info.policy_size)
    for i, (_, idx, pi) in enumerate(raw):
        target = np.zeros(info.policy_size, np.float32)
        target[idx] = pi
        assert np.array_equal(dense[i], target)
        got_idx, got_pi = shard.sparse_policy(i)
        assert np.array_equal(got_idx, idx[pi > 0]) and np.array_equal(got_pi, pi[pi > 0])
    z = np.concatenate([g.z() for g, _ in games])
    assert np.array_equal(shard.arrays["z"], z)
    # z is from the side to move: +1 exactly for the winner's positions
    for g, _ in games:
        if g.winner is not None:
            assert all((zz == 1.0) == (p == g.winner) for zz, p in zip(g.z(), g.players, strict=True))
    assert read_shard_meta(path)["positions"] == len(raw)


def test_compact_layout_and_memory() -> None:
    game, games = random_games("shogi", 2, 20, seed=2)
    arrays = build_shard([g for g, _ in games], game.info)
    n = len(arrays["z"])
    assert arrays["binary_bits"].dtype == np.uint8 and arrays["binary_bits"].shape[2] == 11  # 81 bits
    assert len(arrays["scalar_planes"]) > 100  # prisoner counts, repetitions, colour, move count
    assert len(arrays["dense_planes"]) == 0
    per_position = sum(a.nbytes for a in arrays.values()) / n
    assert per_position < 4000  # 100,000 positions < 0.4 GB in memory
    planes = 362 * 81 * 4
    assert per_position < planes / 30


def test_non_binary_planes_are_kept_whole(tmp_path) -> None:
    from engine.games.base import GameInfo
    from trainer.store.shards import GameData

    info = GameInfo("go", 3, 4, 10, 1)
    rng = np.random.default_rng(0)
    raw = []
    for i in range(5):
        planes = np.zeros((4, 3, 3), np.float32)
        planes[0] = rng.integers(0, 2, (3, 3))
        planes[1] = 0.25 * i  # scalar plane
        planes[2] = rng.random((3, 3))  # neither binary nor constant
        planes[3] = 1.0 if i % 2 else rng.integers(0, 2, (3, 3))  # sometimes constant
        raw.append(planes)
    packed = [pack_position(p, np.array([0]), np.array([1.0], np.float32), i) for i, p in enumerate(raw)]
    arrays = build_shard([GameData(packed, [0, 1, 0, 1, 0], 0)], info)
    assert list(arrays["dense_planes"]) == [2] and list(arrays["scalar_planes"]) == [1]
    write_shard(tmp_path / "a.npz", arrays, shard_metadata(info, arrays))
    shard = read_shard(tmp_path / "a.npz", info)
    assert np.array_equal(shard.decode_planes(np.arange(5), info), np.stack(raw))


def test_unreadable_or_foreign_shards_are_refused(tmp_path) -> None:
    game, games = random_games("go9", 1, 5)
    arrays = build_shard([g for g, _ in games], game.info)
    write_shard(tmp_path / "a.npz", arrays, shard_metadata(game.info, arrays))
    from engine.games import get_game

    with pytest.raises(ShardError, match="for"):
        read_shard(tmp_path / "a.npz", get_game("go", board_size=7).info)
    (tmp_path / "b.npz").write_bytes(b"not a zip")
    with pytest.raises(ShardError):
        read_shard(tmp_path / "b.npz")
    (tmp_path / ".c.npz.x.tmp").write_bytes(b"partial")
    assert [p.name for p in list_shards(tmp_path)] == ["a.npz", "b.npz"]


def test_shard_files_load_without_pickle(tmp_path) -> None:
    game, games = random_games("go9", 1, 5)
    arrays = build_shard([g for g, _ in games], game.info)
    write_shard(tmp_path / "a.npz", arrays, shard_metadata(game.info, arrays))
    with np.load(tmp_path / "a.npz", allow_pickle=False) as data:
        assert all(data[k].dtype != object for k in data.files)
    assert oct(os.stat(tmp_path / "a.npz").st_mode & 0o777) == "0o644"


def test_search_values_round_trip_and_old_shards_read_q_as_z(tmp_path) -> None:
    game, games = random_games("go9", 2, 6, seed=4)
    for g, _ in games:
        for k, p in enumerate(g.positions):
            p.q = (-1) ** k * 0.125 * (k % 5)
    arrays = build_shard([g for g, _ in games], game.info)
    write_shard(tmp_path / "a.npz", arrays, shard_metadata(game.info, arrays))
    expected = np.array([p.q for g, _ in games for p in g.positions], np.float32)
    assert np.array_equal(read_shard(tmp_path / "a.npz", game.info).arrays["q"], expected)
    # a shard written before q existed: q reads as z, so a mixed target is the result alone
    np.savez_compressed(
        tmp_path / "old.npz",
        meta=np.array(json.dumps(shard_metadata(game.info, arrays))),
        **{k: arrays[k] for k in ARRAY_KEYS},
    )
    old = read_shard(tmp_path / "old.npz", game.info)
    assert np.array_equal(old.arrays["q"], old.arrays["z"])


@pytest.mark.parametrize("shape", [(362, 9, 9), (17, 19, 19), (119, 8, 8), (5, 3, 3), (4, 4, 4)])
def test_the_compiled_pass_describes_planes_as_numpy_does(shape: tuple[int, int, int]) -> None:
    """``pack_position``'s one compiled pass (float32 planes) against numpy's five: first values,
    constant and binary planes, and the packed bits with a partial last byte (81, 361, 9 squares) or
    none (64, 16)."""
    rng = np.random.default_rng(sum(shape))
    planes = rng.choice(np.array([0.0, 1.0, 0.0, 0.5, -2.0], np.float32), size=shape)
    planes[0], planes[1], planes[2] = 0.0, 1.0, 0.25  # constant planes: zero, one, other
    planes[3] = 0.0
    planes[3, 0, 1] = 1.0  # binary, mostly zero
    packed = pack_position(planes, np.array([3]), np.array([1.0], np.float32), 0)
    flat = planes.reshape(shape[0], -1)
    np.testing.assert_array_equal(packed.values, flat[:, 0])
    np.testing.assert_array_equal(packed.constant, (flat == flat[:, :1]).all(axis=1))
    np.testing.assert_array_equal(packed.binary, ((flat == 0) | (flat == 1)).all(axis=1))
    np.testing.assert_array_equal(packed.bits, np.packbits(flat != 0, axis=1))
    assert packed.constant[:3].all() and packed.binary[:2].all() and not packed.binary[2]
    assert packed.binary[3] and not packed.constant[3]
