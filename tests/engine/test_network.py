"""The network contract: metadata round trip through the file, compatibility checks with clear
messages, the dependency rule (no torch / onnx in the engine), and the shipped weights."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.games.base import GameInfo
from engine.network import (
    CONTRACT_VERSION,
    REQUIRED_KEYS,
    NetworkFormatError,
    NetworkMetadata,
    NetworkMismatchError,
    check_compatible,
    read_metadata,
    read_metadata_props,
)

REPO = Path(__file__).resolve().parents[2]
GO9 = GameInfo("go", 9, 17, 82, 1)
SHIPPED = ("chess", "shogi", "go9", "go19")


def _write_onnx(path: Path, props: dict[str, str]) -> None:
    """A one-node ONNX file with the given metadata_props."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["planes"], ["policy"])],
        "g",
        [helper.make_tensor_value_info("planes", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", 4])],
        initializer=[helper.make_tensor("big", TensorProto.FLOAT, [300], np.ones(300, np.float32))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], doc_string="x" * 500)
    helper.set_model_props(model, props)
    onnx.save_model(model, path)


def test_metadata_round_trip_through_the_file(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    meta = NetworkMetadata.for_game(
        GO9,
        preset="b6c64",
        step=12345,
        komi=7.5,
        made_by="tabula-train export --game go9 --preset small --random --out go9.onnx; random init, untrained "
        + "é" * 100,  # long (multi-byte length varint) and non-ASCII
    )
    meta = dataclasses.replace(meta, extra=(("other.key", "v"),))
    path = tmp_path / "net.onnx"
    _write_onnx(path, meta.to_props())
    assert read_metadata(path) == meta
    # the hand-written protobuf reader agrees with the onnx package
    loaded = onnx.load(path)
    assert read_metadata_props(path) == {p.key: p.value for p in loaded.metadata_props}
    assert meta.label == "go9" and read_metadata(path).komi == 7.5


def test_every_metadata_key_is_written() -> None:
    props = NetworkMetadata.for_game(GO9, preset="b2c16", komi=6.5, made_by="m").to_props()
    for key in (*REQUIRED_KEYS, "tabula.preset", "tabula.step", "tabula.komi", "tabula.made_by"):
        assert key in props and all(isinstance(v, str) for v in props.values())
    assert props["tabula.contract_version"] == str(CONTRACT_VERSION)
    assert "tabula.komi" not in NetworkMetadata.for_game(GameInfo("chess", 8, 119, 4672, 1)).to_props()


def test_not_a_tabula_network(tmp_path: Path) -> None:
    path = tmp_path / "plain.onnx"
    _write_onnx(path, {"author": "someone"})
    with pytest.raises(NetworkFormatError, match=r"not a Tabula network.*tabula\.game"):
        read_metadata(path)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff" * 64)
    with pytest.raises(NetworkFormatError, match="not a valid ONNX file"):
        read_metadata(junk)
    with pytest.raises(FileNotFoundError):
        read_metadata(tmp_path / "none.onnx")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"game": "chess"}, "game 'chess' != 'go'"),
        ({"board_size": 19}, "board size 19 != 9"),
        ({"planes": 18}, "input planes 18 != 17"),
        ({"policy_size": 362}, "policy size 362 != 82"),
        ({"encoding_version": 2}, "encoding version 2 != 1"),
        ({"contract_version": CONTRACT_VERSION + 1}, "contract version"),
    ],
)
def test_mismatch_is_refused_with_a_clear_message(change: dict, message: str) -> None:
    meta = dataclasses.replace(NetworkMetadata.for_game(GO9), **change)
    with pytest.raises(NetworkMismatchError) as err:
        check_compatible(meta, GO9, source="the network x.onnx")
    assert message in str(err.value)
    assert "the network x.onnx is for" in str(err.value) and "but the game is go 9x9" in str(err.value)


def test_compatible_passes() -> None:
    check_compatible(NetworkMetadata.for_game(GO9, preset="b6c64"), GO9)


def test_engine_imports_neither_torch_nor_onnx() -> None:
    code = (
        "import sys, engine.network, engine.inference, engine.evaluator, protocols.cli, weights\n"
        "bad = sorted(m for m in ('torch', 'onnx') if m in sys.modules)\n"
        "assert not bad, bad\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=REPO, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()


# ---- the shipped networks ---------------------------------------------------------------------------


def _manifest_entries() -> dict[str, dict[str, str]]:
    """``weights/MANIFEST``: ``[file]`` headers followed by ``key: value`` lines."""
    from weights import weights_dir

    entries: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in (weights_dir() / "MANIFEST").read_text().splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = entries.setdefault(line[1:-1], {})
        elif ":" in line and not line.startswith("#"):
            key, value = line.split(":", 1)
            current[key.strip()] = value.strip()
    return entries


def _game_or_skip(label: str):
    from engine.games import get_game

    try:
        return get_game(label)
    except ImportError as exc:  # a rules adapter not written yet
        pytest.skip(f"no rules for {label}: {exc}")


@pytest.mark.parametrize("label", SHIPPED)
def test_shipped_network_validates_and_runs(label: str) -> None:
    from engine.inference import InferenceSettings, OnnxEvaluator
    from weights import default_network, weights_dir

    path = default_network(label)
    assert path is not None, f"weights/{label}.onnx is missing"
    assert path.stat().st_size < 10_000_000
    assert not any(p.suffix == ".data" for p in weights_dir().iterdir()), "external data next to the weights"
    meta = read_metadata(path)
    entry = _manifest_entries()[f"{label}.onnx"]
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), "MANIFEST is stale"
    assert int(entry["bytes"]) == path.stat().st_size and entry["date"] and meta.preset in entry["preset"]
    if "untrained" in entry["training"]:
        assert meta.step == 0 and "random init" in meta.made_by and entry["command"] in meta.made_by
    elif "trainer.transfer" in meta.made_by:  # another board size's network, not trained on this one yet
        assert meta.step == 0 and entry["export"] in meta.made_by and "model.init_from" in entry["command"]
        assert "transfer" in entry["training"] and entry["vs_uniform"] and entry["vs_random_start"]
    else:  # trained: the MANIFEST gives the run's command, its size, and the measured results
        assert meta.step > 0 and f"step {meta.step}" in entry["training"]
        assert entry["command"].startswith("tabula-train run") and entry["export"] in meta.made_by
        assert "games" in entry["training"] and "hours" in entry["training"] and entry["vs_uniform"]
    game = _game_or_skip(label)
    check_compatible(meta, game.info)
    ev = OnnxEvaluator(path, game.info, InferenceSettings(backend="cpu", threads=1))
    state = game.new_state()
    _, legal = state.legal_moves_and_indices()
    (e,) = ev.evaluate(state.encode()[None], [legal])
    assert e.priors.shape == legal.shape and e.priors.sum() == pytest.approx(1.0, abs=1e-5)
    assert -1.0 <= e.value <= 1.0


@pytest.mark.parametrize("label", SHIPPED)
def test_shipped_int8_copy_is_the_same_network_and_in_the_manifest(label: str) -> None:
    """``weights/LABEL.int8.onnx`` (what the engine runs on the CPU): the float32 network's metadata plus
    ``tabula.precision``, made by the quantize command its MANIFEST entry gives, and it runs."""
    from engine.inference import InferenceSettings, OnnxEvaluator
    from engine.network import KEY_MADE_BY, KEY_PRECISION, int8_sibling
    from weights import default_network

    path = default_network(label)
    assert path is not None
    copy = int8_sibling(path)
    if not copy.is_file():
        pytest.skip(f"no int8 copy of {label}")
    props, original = read_metadata_props(copy), read_metadata_props(path)
    assert props.pop(KEY_PRECISION) == "int8"
    made_by = props.pop(KEY_MADE_BY)
    assert made_by.startswith(original.pop(KEY_MADE_BY) + "; int8: tabula-train quantize --network")
    assert props == original  # the same step, game, preset, komi...
    entry = _manifest_entries()[copy.name]
    assert entry["sha256"] == hashlib.sha256(copy.read_bytes()).hexdigest(), "MANIFEST is stale"
    assert int(entry["bytes"]) == copy.stat().st_size and entry["date"]
    assert entry["int8_of"].startswith(path.name) and entry["command"] in made_by
    assert entry["accuracy"] and entry["speed"] and entry["match"]
    game = _game_or_skip(label)
    ev = OnnxEvaluator(copy, game.info, InferenceSettings(backend="cpu", threads=1))
    state = game.new_state()
    _, legal = state.legal_moves_and_indices()
    (e,) = ev.evaluate(state.encode()[None], [legal])
    assert e.priors.sum() == pytest.approx(1.0, abs=1e-5) and -1.0 <= e.value <= 1.0


def test_shipped_uint8_planes_model_is_the_int8_copys_and_in_the_manifest() -> None:
    """``weights/shogi.int8.uint8-planes.onnx``: made from the shipped int8 copy as its metadata says
    (that file's sha256), in the MANIFEST with the command that makes it, and taken by the engine's
    evaluator of that copy."""
    from engine.inference import InferenceSettings, OnnxEvaluator
    from engine.network import (
        KEY_PLANES_QUANTIZATION,
        KEY_POLICY_QUANTIZATION,
        KEY_UINT8_PLANES_OF,
        int8_sibling,
        uint8_planes_sibling,
    )
    from weights import default_network

    path = default_network("shogi")
    assert path is not None
    int8 = int8_sibling(path)
    model = uint8_planes_sibling(int8)
    assert model.name == "shogi.int8.uint8-planes.onnx" and model.is_file()
    props, original = read_metadata_props(model), read_metadata_props(int8)
    assert props.pop(KEY_UINT8_PLANES_OF) == hashlib.sha256(int8.read_bytes()).hexdigest()
    assert props.pop(KEY_PLANES_QUANTIZATION) and props.pop(KEY_POLICY_QUANTIZATION)
    assert props == original
    entry = _manifest_entries()[model.name]
    assert entry["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest(), "MANIFEST is stale"
    assert int(entry["bytes"]) == model.stat().st_size and entry["date"]
    assert entry["uint8_planes_of"].startswith(int8.name)
    assert entry["command"] == f"tabula-train uint8-planes --network weights/{int8.name}"
    assert entry["accuracy"] and entry["speed"]
    game = _game_or_skip("shogi")
    ev = OnnxEvaluator(int8, game.info, InferenceSettings(backend="cpu", threads=1))
    assert ev.accept_uint8_planes_file(model) is not None and ev.runs_uint8_planes


def test_every_shipped_file_has_a_manifest_entry() -> None:
    from weights import weights_dir

    names = {p.name for p in weights_dir().glob("*.onnx")}
    assert names <= set(_manifest_entries())
