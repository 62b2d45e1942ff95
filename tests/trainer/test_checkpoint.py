"""trainer.network.checkpoint and trainer.learn.train: atomic checkpoints, weights_only loading, one training step."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from engine.games import get_game
from tests.trainer.conftest import random_batch
from trainer.config import preset_config
from trainer.learn.replay import Batch
from trainer.learn.train import Learner, allowed_steps
from trainer.network.checkpoint import (
    checkpoint_path,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    model_from_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)


def _batch(info, n=8, seed=0) -> Batch:
    return random_batch(info, n, seed)


def test_training_lowers_the_loss_on_a_fixed_batch() -> None:
    info = get_game("go", board_size=5).info
    learner = Learner(info, preset_config("tiny", "go5"))
    batch = _batch(info)
    before = learner.losses(batch)
    for _ in range(30):
        metrics = learner.train_step(batch)
    after = learner.losses(batch)
    assert learner.step == 30
    assert after["policy_loss"] < before["policy_loss"] and after["value_loss"] < before["value_loss"]
    assert set(metrics) >= {"loss", "value_loss", "policy_loss", "l2_loss", "policy_entropy", "lr"}
    assert metrics["loss"] == pytest.approx(
        metrics["value_loss"] + metrics["policy_loss"] + metrics["l2_loss"], rel=1e-4
    )


def test_value_weight_scales_the_value_term() -> None:
    info = get_game("go", board_size=5).info
    batch = _batch(info)
    metrics = Learner(info, preset_config("tiny", "go5").replace("train", value_weight=0.25)).train_step(
        batch
    )
    assert metrics["loss"] == pytest.approx(
        0.25 * metrics["value_loss"] + metrics["policy_loss"] + metrics["l2_loss"], rel=1e-4
    )
    for weight, moves in ((0.0, False), (1.0, True)):  # without L2 only the value term reaches the value head
        learner = Learner(info, preset_config("tiny", "go5").replace("train", value_weight=weight, l2=0.0))
        before = learner.model.value_head.fc2.weight.detach().clone()
        learner.train_step(batch)
        assert bool((learner.model.value_head.fc2.weight != before).any()) == moves


def test_checkpoint_round_trip_and_resume(tmp_path) -> None:
    info = get_game("go", board_size=5).info
    config = preset_config("tiny", "go5")
    learner = Learner(info, config)
    batch = _batch(info)
    for _ in range(3):
        learner.train_step(batch)
    save_checkpoint(
        checkpoint_path(tmp_path, learner.step), {**learner.state(), "positions": 7, "config": "x"}
    )
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt-00000003.pt"]
    state = load_checkpoint(tmp_path / "ckpt-00000003.pt")
    resumed = Learner(info, config.replace("run", seed=99))
    resumed.load_state(state)
    assert resumed.step == 3
    a = learner.train_step(batch)
    b = resumed.train_step(batch)
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)  # same weights and momentum
    model = model_from_checkpoint(state, info)
    assert model.config.preset == "b2c16"


def test_latest_skips_unreadable_and_prune_keeps_newest(tmp_path) -> None:
    info = get_game("go", board_size=5).info
    learner = Learner(info, preset_config("tiny", "go5"))
    for step in (10, 20, 30):
        learner.step = step
        save_checkpoint(checkpoint_path(tmp_path, step), learner.state())
    checkpoint_path(tmp_path, 40).write_bytes(b"garbage")
    state = latest_checkpoint(tmp_path)
    assert state is not None and state["step"] == 30
    prune_checkpoints(tmp_path, 2)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [30, 40]


def test_checkpoints_refuse_pickled_code(tmp_path) -> None:
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    torch.save({"format": 1, "evil": Evil()}, tmp_path / "ckpt-00000001.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_checkpoint(tmp_path / "ckpt-00000001.pt")


def test_steps_per_sample_ratio() -> None:
    assert allowed_steps(999, 1000, 0.1) == 0
    assert allowed_steps(1000, 1000, 0.1) == 1
    assert allowed_steps(2000, 1000, 0.1) == 101


def test_value_weights_weight_the_value_term_only() -> None:
    info = get_game("go", board_size=5).info
    batch = _batch(info)
    config = preset_config("tiny", "go5").replace("train", l2=0.0)
    learners = [Learner(info, config) for _ in range(3)]
    for learner in learners[1:]:
        learner.model.load_state_dict(learners[0].model.state_dict())
    n = len(batch.z)
    plain = learners[0].train_step(batch)
    doubled = learners[1].train_step(
        Batch(batch.planes, batch.pi, batch.z, value_weight=np.full(n, 2.0, np.float32))
    )
    assert doubled["value_loss"] == pytest.approx(2 * plain["value_loss"], rel=1e-5)
    assert doubled["policy_loss"] == pytest.approx(plain["policy_loss"], rel=1e-5)
    before = learners[2].model.value_head.fc2.weight.detach().clone()
    none = learners[2].train_step(
        Batch(batch.planes, batch.pi, batch.z, value_weight=np.zeros(n, np.float32))
    )
    assert none["value_loss"] == 0.0
    assert torch.equal(learners[2].model.value_head.fc2.weight, before)  # only the value term reaches it
