"""A Go network of one board size started from another's (trainer.network.transfer, ``model.init_from``): the
line map, the resampled dense layers, the copied trunk, and a run that starts from a checkpoint."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from engine.games import get_game
from engine.network import read_metadata
from trainer.config import preset_config
from trainer.learn.train import Learner
from trainer.network.checkpoint import save_checkpoint
from trainer.network.model import build_model
from trainer.network.transfer import (
    init_from,
    line_map,
    point_map,
    resample_points,
    resample_policy_fc,
    transfer_weights,
)
from trainer.run.loop import Driver
from trainer.store.runfolder import RunFolder

GO5, GO9, GO19 = (get_game(label).info for label in ("go5", "go9", "go19"))


def test_line_map_keeps_the_edge_lines_and_folds_the_middle() -> None:
    assert line_map(9, 9).tolist() == list(range(9))
    assert line_map(19, 9).tolist() == [0, 1, 2, 3] + [4] * 11 + [5, 6, 7, 8]
    assert line_map(19, 8).tolist() == [0, 1, 2, 3] + [3] * 6 + [4] * 5 + [4, 5, 6, 7]
    assert line_map(7, 9).tolist() == [0, 1, 2, 4, 6, 7, 8]  # smaller: middle to middle
    assert line_map(9, 19).tolist() == [0, 1, 2, 3, 9, 15, 16, 17, 18]
    # symmetric: line r and line T-1-r map to mirrored source lines (an odd source: it has a middle line)
    for target, source in ((19, 9), (13, 9), (9, 19), (7, 9)):
        m = line_map(target, source)
        assert (m + m[::-1] == source - 1).all()
    assert point_map(19, 9)[3 * 19 + 17].item() == 3 * 9 + 7


def test_resampling_at_the_same_size_is_the_identity() -> None:
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(82, 2 * 81)), rng.normal(size=82)
    w2, b2 = resample_policy_fc(w, b, 9, 9)
    assert np.array_equal(w, w2) and np.array_equal(b, b2)
    v = rng.normal(size=(16, 81))
    assert np.array_equal(resample_points(v, 9, 9), v)


def test_the_policy_layer_reads_each_points_source_neighbourhood() -> None:
    rng = np.random.default_rng(1)
    w, b = rng.normal(size=(82, 2 * 81)), rng.normal(size=82)
    w19, b19 = resample_policy_fc(w, b, 9, 19)
    assert w19.shape == (362, 2 * 361) and b19.shape == (362,)
    src, dst = w.reshape(82, 2, 9, 9), w19.reshape(362, 2, 19, 19)
    # a corner point: the source's own row, the same 9x9 window; nothing beyond it
    assert np.array_equal(dst[0, :, :9, :9], src[0]) and not dst[0, :, 9:, :].any()
    # the far corner: the source's far corner window
    assert np.array_equal(dst[18 * 19 + 18, :, 10:, 10:], src[80])
    # a middle point (9, 9) reads the source's middle point (4, 4) at the same offsets
    assert np.array_equal(dst[9 * 19 + 9, :, 5:14, 5:14], src[40])
    assert not dst[9 * 19 + 9, :, :5, :].any()
    # biases by point; the pass keeps its bias, and its weights keep their total over the board
    assert b19[9 * 19 + 9] == b[40] and b19[361] == b[81] and b19[0] == b[0]
    assert np.allclose(dst[361].sum(axis=(1, 2)), src[81].sum(axis=(1, 2)))


def test_the_value_layer_keeps_its_sum_over_a_uniform_board() -> None:
    v = np.random.default_rng(2).normal(size=(8, 81))
    v19 = resample_points(v, 9, 19)
    assert v19.shape == (8, 361)
    assert np.allclose(v19.sum(axis=1), v.sum(axis=1))
    assert np.allclose(v19[:, 0], v[:, 0]) and np.allclose(v19[:, 9 * 19 + 9], v[:, 40] / 121)


def test_transfer_copies_the_trunk_and_resamples_the_dense_heads() -> None:
    torch.manual_seed(0)
    source = build_model(GO9, "b2c8", ownership=True, global_pooling=True)
    target = build_model(GO19, "b2c8", ownership=True, global_pooling=True)
    report = transfer_weights(source.state_dict(), 9, target)
    resampled = {k for k, v in report.items() if v == "resampled"}
    assert resampled == {"policy_head.fc.weight", "policy_head.fc.bias", "value_head.fc1.weight"}
    assert "fresh" not in report.values()
    state, mine = source.state_dict(), target.state_dict()
    for name in (
        "stem.0.weight",
        "tower.1.pool_fc.weight",
        "ownership_head.out.weight",
        "score_head.fc2.bias",
    ):
        assert torch.equal(state[name], mine[name])
    with torch.no_grad():
        out = target.eval()(torch.rand(3, *GO19.input_shape))
    assert out.policy.shape == (3, 362) and torch.isfinite(out.value).all()


def test_a_pooled_value_head_is_copied_not_resampled() -> None:
    source = build_model(GO9, "b1c8", value_head="pool")
    target = build_model(GO19, "b1c8", value_head="pool")
    report = transfer_weights(source.state_dict(), 9, target)
    assert report["value_head.fc1.weight"] == "copied"
    assert torch.equal(
        source.state_dict()["value_head.fc1.weight"], target.state_dict()["value_head.fc1.weight"]
    )


def test_init_from_refuses_another_trunk_or_game(tmp_path: Path) -> None:
    learner = Learner(GO5, preset_config("tiny", "go5").replace("model", preset="b1c8"))
    ckpt = save_checkpoint(tmp_path / "ckpt-00000007.pt", learner.state())
    with pytest.raises(ValueError, match="cannot grow"):
        init_from(build_model(GO9, "b1c4"), ckpt)  # narrower
    plain = Learner(GO5, preset_config("tiny", "go5").replace("model", preset="b2c8", global_pooling=False))
    plain_ckpt = save_checkpoint(tmp_path / "plain" / "ckpt-00000007.pt", plain.state())
    with pytest.raises(ValueError, match="trunk"):
        init_from(build_model(GO9, "b2c8", global_pooling=True), plain_ckpt)  # pooling layers it lacks
    chess = get_game("chess").info
    with pytest.raises(ValueError, match="go network"):
        init_from(build_model(chess, "b1c8"), ckpt)
    counts = init_from(build_model(GO9, "b1c8", ownership=False), ckpt)
    assert counts["step"] == 0 and counts["resampled"] == 3 and counts["copied"] > 0


def test_a_run_starts_from_another_board_sizes_checkpoint(tmp_path: Path) -> None:
    small = preset_config("tiny", "go5").replace("model", preset="b1c8")
    learner = Learner(GO5, small)
    learner.step = 1234
    save_checkpoint(tmp_path / "src" / "checkpoints" / "ckpt-00001234.pt", learner.state())
    config = preset_config("tiny", "go9").replace(
        "model", preset="b1c8", init_from=str(tmp_path / "src"), ownership=False, global_pooling=False
    )
    folder = RunFolder(tmp_path / "run")
    driver = Driver(folder, config, progress=False)
    started = driver.prepare()
    assert started.step == 0
    (event,) = folder.read_events("init_from")
    assert event["source_step"] == 1234 and event["resampled"] == 3 and event["fresh"] == 0
    assert torch.equal(
        started.model.state_dict()["stem.0.weight"], learner.model.state_dict()["stem.0.weight"]
    )
    assert "trainer.transfer" in read_metadata(folder.first_network).made_by


def test_a_run_stopped_before_its_first_checkpoint_starts_from_the_source_again(tmp_path: Path) -> None:
    learner = Learner(GO5, preset_config("tiny", "go5").replace("model", preset="b1c8"))
    save_checkpoint(tmp_path / "ckpt-00000009.pt", learner.state())
    config = preset_config("tiny", "go9").replace(
        "model",
        preset="b1c8",
        init_from=str(tmp_path / "ckpt-00000009.pt"),
        ownership=False,
        global_pooling=False,
    )
    folder = RunFolder(tmp_path / "run")
    first = Driver(folder, config, progress=False).prepare()
    again = Driver(folder, config, progress=False).prepare()  # no checkpoint was written in between
    for name, tensor in first.model.state_dict().items():
        assert torch.equal(tensor, again.model.state_dict()[name]), name
    assert len(folder.read_events("init_from")) == 2


@pytest.mark.parametrize("label", ["go9", "chess"])
def test_init_from_a_smaller_network_moves_it_then_grows_it(label: str, tmp_path: Path) -> None:
    """Go 5x5 b1c8 -> Go 9x9 b2c16: resampled at its own size, then grown; chess b1c8 -> b2c16 on the same
    board: grown only, and the grown network computes what the source did."""
    source_info = GO5 if label == "go9" else get_game("chess").info
    torch.manual_seed(5)
    small = Learner(source_info, preset_config("tiny", source_info.label).replace("model", preset="b1c8"))
    with torch.no_grad():
        for tensor in small.model.state_dict().values():
            if tensor.is_floating_point():
                tensor.add_(0.1 * torch.randn(tensor.shape))
    small.step = 77
    target_info = get_game(label).info
    config = dataclasses.replace(small.model.config, game=target_info.label, blocks=2, filters=16)
    big = build_model(target_info, config)
    counts = init_from(big, save_checkpoint(tmp_path / "ckpt-00000077.pt", small.state()))
    assert counts["step"] == 77 and counts["grown"] > 0 and counts["added"] > 0
    assert counts["resampled"] == (3 if label == "go9" else 0)
    if label == "chess":
        x = torch.rand(3, *target_info.input_shape)
        small.model.eval(), big.eval()
        with torch.no_grad():
            a, b = small.model(x), big(x)
        assert torch.allclose(a.policy, b.policy, atol=2e-5) and torch.allclose(a.value, b.value, atol=2e-5)
