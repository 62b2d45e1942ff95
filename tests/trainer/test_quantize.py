"""Int8 copies of networks (trainer/network/quantize.py): metadata, agreement with the float32 network, the CLI, the
engine's choice of copy (``EngineOptions.precision``) and self-play's (``selfplay.precision``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from engine.games import get_game
from engine.inference import InferenceSettings, OnnxEvaluator
from engine.network import KEY_PRECISION, int8_sibling, read_metadata, read_metadata_props
from engine.network_loading import load_evaluator
from engine.options import EngineOptions
from tests.trainer.conftest import random_games
from trainer.cli import main as tabula_train
from trainer.config import SelfPlaySettings
from trainer.network.quantize import calibration_for, calibration_planes_from_play, quantize_network
from trainer.selfplay.worker import load_evaluator as selfplay_evaluator
from trainer.store.shards import build_shard, shard_metadata, write_shard
from weights import default_network

GO9 = default_network("go9")
pytestmark = pytest.mark.skipif(GO9 is None, reason="no shipped Go 9x9 network")


@pytest.fixture(scope="module")
def go9_int8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped Go 9x9 network quantized on 128 positions of its own games."""
    assert GO9 is not None
    planes = calibration_planes_from_play(GO9, get_game("go9"), count=128, seed=0)
    assert planes.shape == (128, 17, 9, 9) and planes.dtype == np.float32
    return quantize_network(
        GO9, tmp_path_factory.mktemp("int8") / "go9.int8.onnx", planes, "test calibration"
    )


def test_the_copy_keeps_the_contract_and_says_it_is_int8(go9_int8: Path) -> None:
    assert GO9 is not None
    before, after = read_metadata_props(GO9), read_metadata_props(go9_int8)
    assert after.pop(KEY_PRECISION) == "int8" and KEY_PRECISION not in before
    made_by = after.pop("tabula.made_by")
    assert made_by == before.pop("tabula.made_by") + "; int8: test calibration"
    assert after == before
    meta = read_metadata(go9_int8)
    assert meta.precision == "int8" and read_metadata(GO9).precision == "fp32"
    assert go9_int8.stat().st_size < GO9.stat().st_size / 2  # 8-bit weights


def test_the_copy_agrees_with_the_float32_network(go9_int8: Path) -> None:
    assert GO9 is not None
    game = get_game("go9")
    planes = calibration_planes_from_play(GO9, game, count=96, seed=5)  # positions it was not calibrated on
    settings = InferenceSettings(backend="cpu", threads=1, batch_size=96)
    fp32, int8 = OnnxEvaluator(GO9, game.info, settings), OnnxEvaluator(go9_int8, game.info, settings)
    a, b = fp32.run(planes), int8.run(planes)
    fp32.close()
    int8.close()
    la = a.policy - np.log(np.exp(a.policy).sum(axis=1, keepdims=True))
    lb = b.policy - np.log(np.exp(b.policy).sum(axis=1, keepdims=True))
    kl = (np.exp(la) * (la - lb)).sum(axis=1)
    assert kl.mean() < 0.05  # measured 0.004 (benchmarks/int8.py)
    assert (la.argmax(axis=1) == lb.argmax(axis=1)).mean() > 0.75  # measured 91%
    assert np.abs(a.value - b.value).mean() < 0.1  # measured 0.02


def test_cli_writes_the_sibling(tmp_path: Path) -> None:
    assert GO9 is not None
    network = tmp_path / "go9.onnx"
    shutil.copyfile(GO9, network)
    args = ["quantize", "--network", str(network), "--positions", "64"]
    result = CliRunner().invoke(tabula_train, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    sibling = int8_sibling(network)
    assert sibling == tmp_path / "go9.int8.onnx" and f"wrote {sibling}: int8" in result.output
    assert f"tabula-train quantize --network {network} --positions 64" in read_metadata(sibling).made_by
    again = CliRunner().invoke(tabula_train, ["quantize", "--network", str(sibling)])
    assert again.exit_code != 0 and "int8 network already" in again.output


def test_the_engine_runs_the_int8_sibling_on_the_cpu(tmp_path: Path, go9_int8: Path) -> None:
    assert GO9 is not None
    game = get_game("go9")
    network = tmp_path / "go9.onnx"
    shutil.copyfile(GO9, network)
    base = EngineOptions(weights_file=str(network), backend="cpu", threads=1)
    # no sibling: float32 whatever is asked, and "int8" says why
    evaluator, note = load_evaluator(game, base)
    assert evaluator.path == network and "no int8" not in note  # type: ignore[attr-defined]
    evaluator.close()
    evaluator, note = load_evaluator(game, EngineOptions(**{**base.__dict__, "precision": "int8"}))
    assert evaluator.path == network and "no int8 network go9.int8.onnx beside it: float32" in note  # type: ignore[attr-defined]
    evaluator.close()
    shutil.copyfile(go9_int8, int8_sibling(network))
    for precision, expected in (
        ("auto", int8_sibling(network)),
        ("int8", int8_sibling(network)),
        ("fp32", network),
    ):
        evaluator, note = load_evaluator(game, EngineOptions(**{**base.__dict__, "precision": precision}))
        assert evaluator.path == expected, precision  # type: ignore[attr-defined]
        assert f"network {network} on {expected.name}" in note  # the file asked for, then the copy running
        evaluator.close()


def test_selfplay_plays_an_int8_copy_when_asked(go9_int8: Path) -> None:
    assert GO9 is not None
    info = get_game("go9").info
    fp32 = selfplay_evaluator(GO9, info, SelfPlaySettings(games_in_parallel=2, leaves_per_tree=2))
    assert fp32.metadata.precision == "fp32"
    fp32.close()
    settings = SelfPlaySettings(games_in_parallel=2, leaves_per_tree=2, precision="int8")
    int8 = selfplay_evaluator(GO9, info, settings)  # no run folder: calibrated on the network's own games
    assert int8.metadata.precision == "int8" and int8.metadata.step == read_metadata(GO9).step
    assert int8.provider == "CPUExecutionProvider"
    int8.close()
    with pytest.raises(ValueError, match=r"selfplay\.precision"):
        SelfPlaySettings(precision="fp16")


def test_calibration_comes_from_the_newest_shards_else_from_play(tmp_path: Path) -> None:
    assert GO9 is not None
    game, games = random_games("go9", games=4, plies=20, seed=3)
    folder = tmp_path / "shards"
    folder.mkdir()
    assert calibration_for(GO9, game, folder, count=32).shape == (32, 17, 9, 9)  # no shard yet: own games
    arrays = build_shard([g for g, _ in games], game.info)
    write_shard(folder / "000.npz", arrays, shard_metadata(game.info, arrays))
    planes = calibration_for(GO9, game, folder, count=32)
    recorded = {raw.tobytes() for _, positions in games for raw, _, _ in positions}
    assert len(planes) == 32 and all(p.tobytes() in recorded for p in planes)
