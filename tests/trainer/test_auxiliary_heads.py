"""Go's auxiliary targets (KataGo): the final ownership and score margin recorded by self-play, carried
by shards and the replay window, learned by the ownership and score heads, exported as optional ONNX
outputs that the engine runs past; global pooling in the trunk; checkpoints grown to the new heads."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from engine.games import get_game
from engine.games.go_ownership import final_ownership
from engine.inference import InferenceSettings, OnnxEvaluator, UniformEvaluator
from engine.network import OWNERSHIP_NAME, SCORE_NAME
from trainer.config import SelfPlaySettings, preset_config
from trainer.learn.replay import Batch, ReplayBuffer
from trainer.learn.train import Learner, auxiliary_losses
from trainer.network.export import export_onnx, verify_onnx
from trainer.network.grow import grows_into
from trainer.network.model import ModelConfig, build_model
from trainer.selfplay.player import SelfPlayer
from trainer.store.shards import GameData, build_shard, pack_position, read_shard, shard_metadata, write_shard

GO5 = get_game("go", board_size=5)


def _played(moves: list[str]):
    state = GO5.new_state()
    for text in moves:
        state.push(state.parse_move(text))
    return state


# ---- targets ----------------------------------------------------------------------------------------------


def test_a_counted_game_gives_exact_owners_and_its_tromp_taylor_margin() -> None:
    # black walls column C, white column D: black owns A-C (15 points), white D-E (10)
    state = _played(["C1", "D1", "C2", "D2", "C3", "D3", "C4", "D4", "C5", "D5", "pass", "pass"])
    owners, margin = final_ownership(state, scored=True, playouts=0, rng=np.random.default_rng(0))
    assert owners.dtype == np.float32 and owners.shape == (25,)
    grid = owners.reshape(5, 5)
    assert (grid[:, :3] == 1).all() and (grid[:, 3:] == -1).all()
    assert margin == state.score() == 15 - 10 - state.komi


def test_a_resigned_game_gives_a_play_out_estimate() -> None:
    state = _played(["C3"])  # one black stone in the middle, nothing settled
    owners, margin = final_ownership(state, scored=False, playouts=16, rng=np.random.default_rng(1))
    assert owners.shape == (25,) and np.all(np.abs(owners) <= 1)
    assert owners[12] > 0.5  # the lone stone survives most random play-outs
    assert margin == pytest.approx(float(owners.sum()) - state.komi, abs=1e-4)


def test_game_targets_are_from_each_positions_side_to_move() -> None:
    planes = GO5.new_state().encode()
    positions = [pack_position(planes, np.array([0]), np.array([1.0]), ply) for ply in range(3)]
    own = np.linspace(-1.0, 1.0, 25).astype(np.float32)
    data = GameData(positions, [0, 1, 0], winner=0, ownership=own, score=3.5)
    targets = data.ownership_targets()
    assert targets.dtype == np.int8 and targets.shape == (3, 25)
    np.testing.assert_array_equal(targets[0], np.rint(own * 127).astype(np.int8))
    np.testing.assert_array_equal(targets[1], -targets[0])
    np.testing.assert_array_equal(data.score_targets(), [3.5, -3.5, 3.5])


def test_shards_carry_the_targets_only_when_every_game_has_them(tmp_path) -> None:
    info = GO5.info
    planes = GO5.new_state().encode()
    pos = [pack_position(planes, np.array([0]), np.array([1.0]), 0)]
    with_aux = GameData(pos, [0], 0, ownership=np.ones(25, np.float32), score=2.0)
    without = GameData(pos, [1], 0)
    for games, expected in (([with_aux, with_aux], True), ([with_aux, without], False)):
        arrays = build_shard(games, info)
        path = tmp_path / f"{expected}.npz"
        write_shard(path, arrays, shard_metadata(info, arrays))
        shard = read_shard(path, info)
        assert shard.has_auxiliary == expected
        if expected:
            np.testing.assert_allclose(shard.decode_ownership(np.array([0, 1])), 1.0)
            np.testing.assert_array_equal(shard.arrays["score"], [2.0, 2.0])


def test_replay_masks_positions_from_shards_without_targets(tmp_path) -> None:
    info = GO5.info
    planes = GO5.new_state().encode()
    pos = [pack_position(planes, np.array([0]), np.array([1.0]), 0)] * 4
    own = np.where(np.arange(25) < 10, 1.0, -1.0).astype(np.float32)
    shards = [[GameData(pos, [0, 1, 0, 1], 0)], [GameData(pos, [0, 1, 0, 1], 0, ownership=own, score=5.0)]]
    for i, games in enumerate(shards):  # an older shard without the targets, then a newer one with them
        arrays = build_shard(games, info)
        write_shard(tmp_path / f"{i:03d}.npz", arrays, shard_metadata(info, arrays, games=1))
    buffer = ReplayBuffer(tmp_path, info, window=100, augment=True)
    buffer.refresh()
    batch = buffer.gather(np.arange(8), np.random.default_rng(0))
    assert batch.has_auxiliary is not None and batch.ownership is not None and batch.score is not None
    np.testing.assert_array_equal(batch.aux_mask(), [0, 0, 0, 0, 1, 1, 1, 1])
    np.testing.assert_array_equal(batch.score, [0, 0, 0, 0, 5, -5, 5, -5])
    # whatever symmetry each sample got, ten points stay black's and fifteen white's, seen from the mover
    for row, sign in zip(range(4, 8), (1, -1, 1, -1), strict=True):
        assert (sign * batch.ownership[row] > 0).sum() == 10
    assert (batch.ownership[:4] == 0).all()
    old_only = ReplayBuffer(tmp_path, info, window=4, augment=False)
    old_only.shards = [read_shard(tmp_path / "000.npz", info)]
    assert old_only.gather(np.arange(4)).ownership is None


def test_go_self_play_records_the_targets_and_chess_does_not() -> None:
    settings = SelfPlaySettings(
        games_in_parallel=2,
        leaves_per_tree=2,
        simulations=4,
        sample_plies=4,
        resign_threshold=None,
    )
    games = SelfPlayer(GO5, settings, UniformEvaluator(GO5.info), seed=2).play_games(2)
    for g in games:
        assert g.data.ownership is not None and g.data.ownership.shape == (25,)
        assert g.data.score is not None
        if g.score is not None:  # counted: the margin is the recorded result and decides the winner
            assert g.data.score == pytest.approx(g.score)
            assert (g.data.score > 0) == (g.winner == 0)
    chess = get_game("chess", max_plies=6)
    for g in SelfPlayer(chess, settings, UniformEvaluator(chess.info), seed=0).play_games(1):
        assert g.data.ownership is None and g.data.score is None


# ---- the network ------------------------------------------------------------------------------------------


def test_heads_shapes_export_and_the_engine_runs_past_them(tmp_path) -> None:
    info = get_game("go9").info
    torch.manual_seed(0)
    model = build_model(info, "b2c8", ownership=True, global_pooling=True).eval()
    out = model(torch.rand(3, *info.input_shape))
    assert out.ownership is not None and out.ownership.shape == (3, 81)
    assert bool((out.ownership.abs() <= 1).all())
    assert out.score is not None and out.score.shape == (3, 1)
    path = tmp_path / "aux.onnx"
    export_onnx(model, path, step=1, komi=7.5, made_by="pytest")
    assert verify_onnx(model, path, batches=(1, 4)) < 1e-3  # every output, the new ones included
    import onnx

    names = {o.name for o in onnx.load(str(path)).graph.output}
    assert {OWNERSHIP_NAME, SCORE_NAME} <= names
    planes = GO9_START[None]
    ev = OnnxEvaluator(path, info, InferenceSettings(backend="cpu", batch_size=2))
    (e,) = ev.evaluate(planes, [np.arange(82)])
    with torch.no_grad():
        expected = model(torch.from_numpy(planes))
    assert e.value == pytest.approx(float(expected.value[0, 0]), abs=1e-4)
    with pytest.raises(ValueError, match="for Go"):
        build_model(get_game("chess").info, "b1c8", ownership=True)


GO9_START = get_game("go9").new_state().encode()


def test_global_pooling_starts_as_the_plain_block_so_a_checkpoint_grows_exactly() -> None:
    info = get_game("go9").info
    torch.manual_seed(0)
    plain = build_model(info, "b2c8").eval()
    grown = build_model(info, "b2c8", ownership=True, global_pooling=True).eval()
    missing, unexpected = grown.load_state_dict(plain.state_dict(), strict=False)
    assert not unexpected and missing
    x = torch.rand(2, *info.input_shape)
    with torch.no_grad():
        a, b = plain(x), grown(x)
    assert torch.allclose(a.policy, b.policy, atol=1e-6) and torch.allclose(a.value, b.value, atol=1e-6)
    stored, wanted = plain.config, grown.config
    assert grows_into(stored, wanted) and not grows_into(wanted, stored)
    assert not grows_into(dataclasses.replace(stored, filters=16), wanted)  # never narrower


def test_a_run_resumes_with_the_heads_turned_on() -> None:
    info = GO5.info
    old = Learner(info, preset_config("tiny", "go5").replace("model", ownership=False))
    grown = Learner(info, preset_config("tiny", "go5").replace("model", ownership=True, global_pooling=True))
    grown.load_state(old.state())
    assert grown.model.config.ownership and grown.step == old.step
    with pytest.raises(ValueError, match="differs"):
        old.load_state(grown.state())  # never off again


@pytest.mark.parametrize("preset", ["tiny", "small", "paper"])
def test_go_presets_train_the_auxiliary_heads_and_chess_and_shogi_have_none(preset: str) -> None:
    assert preset_config(preset, "go9").model.ownership and preset_config(preset, "go19").model.ownership
    assert not preset_config(preset, "chess").model.ownership
    assert not preset_config(preset, "shogi").model.ownership


def test_auxiliary_loss_arithmetic() -> None:
    own = torch.tensor([[0.0, 0.6], [0.9, -0.9]])
    target = torch.tensor([[1.0, -1.0], [1.0, -1.0]])
    score = torch.tensor([2.0, -1.0])
    target_score = torch.tensor([0.0, -1.0])
    mask = torch.tensor([1.0, 0.0])
    losses = auxiliary_losses(own, score, target, target_score, mask)
    # row 0 only: mean of -log 0.5 and -log 0.2 over the 2 points; (2 - 0) / sqrt(2) squared
    assert float(losses["ownership"]) == pytest.approx((np.log(2) + np.log(5)) / 2, rel=1e-5)
    assert float(losses["score"]) == pytest.approx(2.0, rel=1e-5)


def test_training_learns_ownership_and_reports_the_terms() -> None:
    info = GO5.info
    config = preset_config("tiny", "go5").replace("model", ownership=True)
    learner = Learner(info, config)
    rng = np.random.default_rng(0)
    n = 16
    planes = (rng.random((n, *info.input_shape)) < 0.3).astype(np.float32)
    pi = np.full((n, info.policy_size), 1.0 / info.policy_size, np.float32)
    z = rng.choice([-1.0, 1.0], n).astype(np.float32)
    ownership = np.sign(planes[:, 0].reshape(n, -1) - planes[:, 8].reshape(n, -1) + 0.5).astype(np.float32)
    score = ownership.sum(axis=1)
    batch = Batch(planes, pi, z, ownership=ownership, score=score, has_auxiliary=np.ones(n, bool))
    first = learner.train_step(batch)
    for _ in range(40):
        last = learner.train_step(batch)
    assert last["ownership_loss"] < 0.8 * first["ownership_loss"]
    assert last["score_loss"] < first["score_loss"]
    w = config.train
    assert last["loss"] == pytest.approx(
        last["value_loss"]
        + last["policy_loss"]
        + last["l2_loss"]
        + w.ownership_weight * last["ownership_loss"]
        + w.score_weight * last["score_loss"],
        rel=1e-4,
    )
    plain = learner.train_step(Batch(planes, pi, z))  # a batch without targets: no auxiliary terms
    assert "ownership_loss" not in plain


def test_model_config_without_the_new_fields_loads() -> None:
    d = ModelConfig.from_preset("small", "go9").to_dict()
    del d["ownership"], d["global_pooling"]
    assert ModelConfig.from_dict(d) == ModelConfig.from_preset("small", "go9")
