"""trainer.network.model and trainer.network.export: shapes, presets, policy layout against the games' encodings, and
ONNX files that honour the network contract (checked with onnx and onnxruntime)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

from click.testing import CliRunner

from engine.games.base import GameInfo
from engine.inference import InferenceSettings, OnnxEvaluator
from engine.network import NetworkMismatchError, read_metadata
from trainer.network.export import ExportMismatchError, export_onnx, verify_onnx
from trainer.network.model import PRESETS, ModelConfig, build_model

INFOS = {
    "chess": GameInfo("chess", 8, 119, 4672, 1),
    "shogi": GameInfo("shogi", 9, 362, 11259, 1),
    "go9": GameInfo("go", 9, 17, 82, 1),
    "go19": GameInfo("go", 19, 17, 362, 1),
}


def _tiny(label: str, wdl: bool = False, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(INFOS[label], "tiny", wdl=wdl).eval()


# ---- model ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["chess", "shogi", "go9"])
def test_forward_shapes(label: str) -> None:
    info = INFOS[label]
    model = _tiny(label, wdl=True)
    policy, value, wdl, *_ = model(torch.rand(3, *info.input_shape))
    assert policy.shape == (3, info.policy_size)
    assert value.shape == (3, 1) and bool((value.abs() <= 1).all())
    assert wdl is not None and wdl.shape == (3, 3)
    assert _tiny(label)(torch.rand(1, *info.input_shape))[2] is None


def test_presets() -> None:
    assert PRESETS["small"] == (6, 64) and PRESETS["paper"] == (20, 256)
    assert ModelConfig.from_preset("small", "chess").preset == "b6c64"
    assert ModelConfig.from_preset("b3c8", "go9").blocks == 3
    assert ModelConfig.from_preset("tiny", "go9").value_hidden < 256
    assert ModelConfig.from_preset("paper", "go19").value_hidden == 256
    with pytest.raises(ValueError, match="unknown preset"):
        ModelConfig.from_preset("huge", "chess")
    with pytest.raises(ValueError, match="model config is for"):
        build_model(INFOS["chess"], ModelConfig.from_preset("tiny", "go9"))
    config = ModelConfig.from_preset("medium", "shogi", wdl=True)
    assert ModelConfig.from_dict(config.to_dict()) == config


def test_pooled_value_head_sees_counts_not_places(tmp_path: Path) -> None:
    info = INFOS["go9"]
    torch.manual_seed(0)
    model = build_model(info, "b0c8", value_head="pool", wdl=True).eval()
    assert model.config.value_head == "pool"
    # no tower: the pooled head of the stem sees a mean over the board, so moving a lone stone within
    # the interior (the 3x3 stem sees no edge) leaves value and WDL unchanged; the paper's head does not
    a, b = torch.zeros(1, *info.input_shape), torch.zeros(1, *info.input_shape)
    a[0, 0, 2, 2] = b[0, 0, 5, 6] = 1.0
    with torch.no_grad():
        (_, va, wa, *_), (_, vb, wb, *_) = model(a), model(b)
        assert torch.allclose(va, vb, atol=1e-6) and torch.allclose(wa, wb, atol=1e-6)
        fc = build_model(info, "b0c8").eval()
        assert not torch.allclose(fc(a)[1], fc(b)[1], atol=1e-6)
    export_onnx(model, tmp_path / "pool.onnx", step=1, komi=7.5, made_by="pytest")
    assert verify_onnx(model, tmp_path / "pool.onnx", batches=(1, 4)) < 1e-4
    # checkpoints from before the option load as the paper's head
    old = ModelConfig.from_preset("tiny", "go9").to_dict()
    del old["value_head"]
    assert ModelConfig.from_dict(old) == ModelConfig.from_preset("tiny", "go9")
    with pytest.raises(ValueError, match="value head"):
        ModelConfig.from_preset("tiny", "go9", value_head="max")


def test_conv_policy_is_plane_major() -> None:
    """Logit ``plane * H * W + row * W + col`` comes from output plane ``plane`` at ``(row, col)``."""
    model = _tiny("chess")
    head = model.policy_head
    x = torch.rand(1, 16, 8, 8)
    with torch.no_grad():
        planes = head.out(head.body(x))[0]  # [73, 8, 8]
        flat = head(x)[0]
    for plane, row, col in [(0, 0, 0), (5, 2, 7), (72, 7, 3)]:
        assert flat[plane * 64 + row * 8 + col] == planes[plane, row, col]


def _random_states(game, n: int, seed: int = 0):
    rng = random.Random(seed)
    state = game.new_state()
    out = []
    for _ in range(n):
        if state.outcome() is not None or not state.legal_moves():
            state = game.new_state()
        out.append(state.copy())
        state.push(rng.choice(state.legal_moves()))
    return out


@pytest.mark.parametrize("label, own_piece_planes", [("chess", range(6)), ("shogi", range(14))])
def test_policy_squares_agree_with_input_planes(label: str, own_piece_planes: range) -> None:
    """The convolutional policy head needs the policy's square and the encoding's cell to be the same
    place: for every board move, ``index % (H*W)`` is the (oriented) from-square, where the side to
    move has a piece in the current-position planes."""
    from engine.games import get_game

    try:
        game = get_game(label)
    except ImportError as exc:
        pytest.skip(f"no rules for {label}: {exc}")
    n = game.info.board_size
    for state in _random_states(game, 40):
        planes = state.encode()
        own = planes[list(own_piece_planes)].sum(axis=0)  # [H, W]
        moves, indices = state.legal_moves_and_indices()
        for move, index in zip(moves, indices, strict=True):
            if label == "shogi":
                import cshogi

                if cshogi.move_is_drop(move):
                    continue
            square = int(index) % (n * n)
            assert own[square // n, square % n] > 0, (state.to_text(), state.move_to_text(move), int(index))


# ---- export -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory):
    out = {}
    folder = tmp_path_factory.mktemp("export")
    for label, wdl in [("chess", True), ("go9", False)]:
        model = _tiny(label, wdl=wdl)
        path = folder / f"{label}.onnx"
        meta = export_onnx(model, path, step=7, komi=7.5 if label == "go9" else None, made_by="pytest")
        out[label] = (model, path, meta)
    return out


def test_exported_file_follows_the_contract(exported) -> None:
    import onnxruntime as ort

    for label, (model, path, meta) in exported.items():
        info = INFOS[label]
        proto = onnx.load(path, load_external_data=False)
        onnx.checker.check_model(proto)
        assert max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")) >= 17
        assert all(t.data_location != onnx.TensorProto.EXTERNAL for t in proto.graph.initializer)
        assert sorted(p.name for p in path.parent.iterdir()) == sorted(
            ["chess.onnx", "go9.onnx"]
        )  # one file each
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        (inp,) = session.get_inputs()
        assert inp.name == "planes" and inp.type == "tensor(float)"
        assert isinstance(inp.shape[0], str) and tuple(inp.shape[1:]) == info.input_shape
        names = [o.name for o in session.get_outputs()]
        assert names == (["policy", "value", "wdl"] if model.config.wdl else ["policy", "value"])
        for batch in (1, 5):
            outs = dict(
                zip(
                    names,
                    session.run(None, {"planes": np.zeros((batch, *info.input_shape), np.float32)}),
                    strict=True,
                )
            )
            assert outs["policy"].shape == (batch, info.policy_size) and outs["policy"].dtype == np.float32
            assert outs["value"].shape == (batch, 1) and outs["value"].dtype == np.float32
            if "wdl" in outs:
                assert outs["wdl"].shape == (batch, 3)
                np.testing.assert_allclose(outs["wdl"].sum(axis=1), 1.0, rtol=1e-5)
        assert read_metadata(path) == meta
        assert (meta.label, meta.preset, meta.step, meta.made_by) == (label, "b2c16", 7, "pytest")
        assert meta.komi == (7.5 if label == "go9" else None)


def test_torch_and_onnxruntime_agree(exported) -> None:
    for model, path, _ in exported.values():
        assert verify_onnx(model, path, batches=(1, 7), seed=3) < 1e-4


def test_disagreement_is_detected(exported) -> None:
    _, path, _ = exported["go9"]
    other = _tiny("go9", seed=1)
    with pytest.raises(ExportMismatchError, match="differ"):
        verify_onnx(other, path)


def test_evaluator_on_exported_network_matches_torch(exported) -> None:
    model, path, _ = exported["chess"]
    info = INFOS["chess"]
    ev = OnnxEvaluator(path, info, InferenceSettings(backend="cpu", batch_size=2))
    rng = np.random.default_rng(0)
    planes = (rng.random((3, *info.input_shape)) < 0.2).astype(np.float32)
    legal = [np.array([1, 76, 4000]), np.arange(20), np.array([4671])]
    evals = ev.evaluate(planes, legal)
    with torch.no_grad():
        policy, value, wdl, *_ = model(torch.from_numpy(planes))
    for i, e in enumerate(evals):
        expected = torch.softmax(policy[i, torch.from_numpy(legal[i])], 0).numpy()
        np.testing.assert_allclose(e.priors, expected, rtol=1e-3, atol=1e-6)
        assert e.value == pytest.approx(float(value[i, 0]), abs=1e-4)
        np.testing.assert_allclose(e.wdl, torch.softmax(wdl[i], 0).numpy(), atol=1e-4)
    with pytest.raises(NetworkMismatchError):
        OnnxEvaluator(path, INFOS["go9"])


def test_dynamo_exporter_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If a later torch drops the TorchScript exporter, the dynamo exporter (needs onnxscript) is used."""
    pytest.importorskip("onnxscript")
    real_export = torch.onnx.export

    def without_legacy(*args, **kwargs):
        if kwargs.get("dynamo") is False:
            raise RuntimeError("legacy exporter removed (simulated)")
        return real_export(*args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", without_legacy)
    model = _tiny("go9", wdl=True)
    path = tmp_path / "d.onnx"
    export_onnx(model, path, made_by="dynamo")
    assert [p.name for p in tmp_path.iterdir()] == ["d.onnx"]
    ev = OnnxEvaluator(path, INFOS["go9"], InferenceSettings(backend="cpu"))
    assert ev.has_wdl and ev.run(np.zeros((5, *INFOS["go9"].input_shape), np.float32)).policy.shape == (5, 82)


def test_export_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "n.onnx"
    path.write_bytes(b"old")
    export_onnx(_tiny("go9"), path, made_by="again")
    assert read_metadata(path).made_by == "again"
    assert [p.name for p in tmp_path.iterdir()] == ["n.onnx"]


# ---- CLI --------------------------------------------------------------------------------------------


def test_cli_export_and_info(tmp_path: Path) -> None:
    from protocols.cli import main as tabula
    from trainer.cli import main as tabula_train

    try:
        from engine.games import get_game

        get_game("chess")
    except ImportError as exc:
        pytest.skip(f"no chess rules: {exc}")
    out = tmp_path / "c.onnx"
    runner = CliRunner()
    result = runner.invoke(
        tabula_train,
        ["export", "--game", "chess", "--preset", "tiny", "--random", "--seed", "3", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    meta = read_metadata(out)
    assert meta.preset == "b2c16" and "--preset tiny --random --seed 3" in meta.made_by
    assert "untrained" in meta.made_by
    refused = runner.invoke(tabula_train, ["export", "--game", "chess", "--out", str(tmp_path / "x.onnx")])
    assert refused.exit_code != 0 and "--random" in refused.output
    shown = runner.invoke(tabula, ["info", str(out), "--backend", "cpu"])
    assert shown.exit_code == 0, shown.output
    for text in (
        "tabula.game",
        "chess",
        "b2c16",
        "input planes",
        "[",
        "output policy",
        "4672",
        "compatible",
        "yes",
        "CPUExecutionProvider",
    ):
        assert text in shown.output
