"""trainer.learn.swa: the running weight average, its place in the checkpoint and in ``export``."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from engine.games import get_game
from engine.network import read_metadata
from tests.trainer.conftest import random_batch
from trainer.config import preset_config
from trainer.learn.replay import Batch
from trainer.learn.swa import WeightAverage
from trainer.learn.train import Learner
from trainer.network.checkpoint import checkpoint_path, load_checkpoint, save_checkpoint
from trainer.network.export import export_checkpoint


def _batch(info, n=8, seed=0) -> Batch:
    return random_batch(info, n, seed)


def test_the_average_is_the_mean_then_exponential() -> None:
    layer = torch.nn.Linear(2, 1)
    average = WeightAverage(max_n=2)
    seen = []
    for value in (1.0, 2.0, 3.0, 7.0):
        with torch.no_grad():
            layer.weight.fill_(value)
        average.add(layer)
        seen.append(float(average.average["weight"][0, 0]))
    # the mean of the first max_n + 1 samples, then each new one weighs 1 / (max_n + 1)
    assert seen == pytest.approx([1.0, 1.5, 2.0, 2.0 * 2 / 3 + 7.0 / 3])
    assert average.count == 4


def test_learner_keeps_the_average_through_its_checkpoint_and_export_writes_it(tmp_path: Path) -> None:
    info = get_game("go", board_size=5).info
    config = preset_config("tiny", "go5").replace("train", swa_every=2, swa_max_n=3)
    learner = Learner(info, config)
    batch = _batch(info)
    snapshots = []
    for _ in range(8):
        learner.train_step(batch)
        if learner.step % 2 == 0:
            snapshots.append({k: v.clone() for k, v in learner.model.state_dict().items()})
    assert learner.swa is not None and learner.swa.count == 4
    # by hand: mean of the first three samples (1/3 each), then the fourth weighs 1/4
    name = next(k for k, v in snapshots[0].items() if v.is_floating_point() and v.dim() == 2)
    expected = (snapshots[0][name] + snapshots[1][name] + snapshots[2][name]) / 3 * 0.75 + snapshots[3][
        name
    ] / 4
    assert torch.allclose(learner.swa.average[name], expected, atol=1e-6)
    assert not torch.allclose(learner.swa.average[name], learner.model.state_dict()[name])

    path = save_checkpoint(checkpoint_path(tmp_path, learner.step), {**learner.state(), "config": ""})
    resumed = Learner(info, config)
    resumed.load_state(load_checkpoint(path))
    assert resumed.swa is not None and resumed.swa.count == 4
    assert torch.equal(resumed.swa.average[name], learner.swa.average[name])

    averaged, raw = tmp_path / "swa.onnx", tmp_path / "raw.onnx"
    export_checkpoint(path, averaged, None)
    export_checkpoint(path, raw, None, raw=True)
    assert "averaged over 4 samples" in read_metadata(averaged).made_by
    assert "averaged" not in read_metadata(raw).made_by
    assert averaged.read_bytes() != raw.read_bytes()


def test_no_average_unless_asked_and_bad_settings_are_refused() -> None:
    info = get_game("go", board_size=5).info
    learner = Learner(info, preset_config("tiny", "go5"))
    learner.train_step(_batch(info))
    assert learner.swa is None and "swa" not in learner.state()
    with pytest.raises(ValueError, match="swa_every"):
        preset_config("tiny", "go5").replace("train", swa_every=-1)
    with pytest.raises(ValueError, match="swa_max_n"):
        preset_config("tiny", "go5").replace("train", swa_max_n=0)
