"""KataGo's auxiliary soft policy target: a second policy head trained on ``pi^(1/T)`` renormalised, read
by the learner only (not computed in eval mode, not exported); a run resumes into it from a checkpoint
without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch")

from engine.games import get_game
from tests.trainer.conftest import random_batch
from trainer.config import TrainSettings, preset_config
from trainer.learn.train import Learner, soft_policy_loss
from trainer.network.export import export_onnx
from trainer.network.grow import grows_into
from trainer.network.model import build_model

CHESS = get_game("chess").info


def test_soft_target_is_the_search_policy_to_the_power_one_over_t() -> None:
    pi = torch.tensor([[0.81, 0.16, 0.01, 0.02, 0.0]])
    logits = torch.randn(1, 5)
    log_p = torch.log_softmax(logits, dim=1)
    # T = 1 is the plain policy cross-entropy
    assert float(soft_policy_loss(logits, pi, 1.0)) == pytest.approx(float(-(pi * log_p).sum()), rel=1e-6)
    # T = 4: the target is pi^0.25 normalised, 0 stays 0
    soft = pi**0.25
    soft = soft / soft.sum()
    assert float(soft_policy_loss(logits, pi, 4.0)) == pytest.approx(float(-(soft * log_p).sum()), rel=1e-6)
    assert soft[0, 4] == 0 and soft[0, 0] / soft[0, 2] == pytest.approx(3.0, rel=1e-5)  # (81)^0.25 = 3


def test_the_head_trains_only_in_training_mode_and_is_not_exported(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = build_model(CHESS, "b1c8", soft_policy=True)
    x = torch.rand(2, *CHESS.input_shape)
    model.train()
    out = model(x)
    assert out.soft_policy is not None and out.soft_policy.shape == out.policy.shape
    model.eval()
    assert model(x).soft_policy is None
    export_onnx(model, tmp_path / "net.onnx", verify=True)
    names = [o.name for o in onnx.load(str(tmp_path / "net.onnx")).graph.output]
    plain = build_model(CHESS, "b1c8")
    export_onnx(plain.eval(), tmp_path / "plain.onnx", verify=True)
    assert names == [o.name for o in onnx.load(str(tmp_path / "plain.onnx")).graph.output]


def test_the_learner_adds_the_weighted_term_and_logs_it() -> None:
    config = preset_config("tiny", "chess").replace("model", preset="b1c8", soft_policy=True)
    learner = Learner(CHESS, config)
    assert learner.model.soft_policy_head is not None
    batch = random_batch(CHESS, n=8, seed=1)
    torch.manual_seed(3)
    logs = learner.train_step(batch)
    assert logs["soft_policy_loss"] > 0.0 and np.isfinite(logs["soft_policy_loss"])
    off = preset_config("tiny", "chess").replace("model", preset="b1c8", soft_policy=True)
    off = off.replace("train", soft_policy_weight=0.0)
    assert "soft_policy_loss" not in Learner(CHESS, off).train_step(batch)
    with pytest.raises(ValueError, match="soft_policy"):
        TrainSettings(soft_policy_temperature=0.0)


def test_a_run_resumes_with_the_soft_head_turned_on_computing_what_it_did() -> None:
    old = Learner(CHESS, preset_config("tiny", "chess").replace("model", preset="b1c8"))
    new = Learner(CHESS, preset_config("tiny", "chess").replace("model", preset="b1c8", soft_policy=True))
    new.load_state(old.state())
    assert new.model.config.soft_policy and new.step == old.step
    assert grows_into(old.model.config, new.model.config)
    assert not grows_into(new.model.config, old.model.config)  # never off again
    x = torch.rand(3, *CHESS.input_shape)
    old.model.eval()
    new.model.eval()
    with torch.no_grad():
        a, b = old.model(x), new.model(x)
    assert torch.allclose(a.policy, b.policy) and torch.allclose(a.value, b.value)
    new.model.train()
    with torch.no_grad():  # the new head starts as the policy head
        grown = new.model(x)
    assert grown.soft_policy is not None and torch.allclose(grown.soft_policy, grown.policy)
