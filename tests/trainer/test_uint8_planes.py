"""uint8 planes in and uint8 logits out of an int8 network (``trainer/network/uint8_planes.py``,
``engine/uint8_io.py``): the same outputs as the float input, the same self-play games."""

from __future__ import annotations

import dataclasses
import hashlib
import random
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from engine.evaluator import LegalRows
from engine.games import get_game
from engine.games.shogi import ShogiState
from engine.inference import InferenceSettings, OnnxEvaluator
from engine.network import NetworkFormatError
from engine.search.compiled_shogi import CompiledShogiTree
from engine.search.config import SearchConfig
from engine.search.many_trees import SharedRows
from engine.uint8_io import Uint8Quantization
from trainer.config import SelfPlaySettings
from trainer.network.uint8_planes import attach_uint8_planes, uint8_input_model
from trainer.selfplay.player import SelfPlayer

WEIGHTS = Path(__file__).resolve().parents[2] / "weights"
SHOGI_INT8 = WEIGHTS / "shogi.int8.onnx"


def _positions(count: int, seed: int) -> list[ShogiState]:
    """Positions of random shogi games (hands, checks, long histories)."""
    rng = random.Random(seed)
    out: list[ShogiState] = []
    state = ShogiState()
    while len(out) < count:
        moves = state.legal_moves()
        if not moves or state.outcome() is not None or state.ply > 150:
            state = ShogiState()
            continue
        state.push(rng.choice(moves))
        out.append(state.copy())
    return out


def _evaluator(path: Path = SHOGI_INT8) -> OnnxEvaluator:
    game = get_game("shogi")
    return OnnxEvaluator(path, game.info, InferenceSettings(backend="cpu", threads=1, batch_size=32))


def test_the_uint8_model_gives_the_float_models_outputs_bit_for_bit() -> None:
    """The shipped int8 copy without its input QuantizeLinear (uint8 planes, channels last) and its
    policy DequantizeLinear: on 48 real positions the values are the same floats, the uint8 logits
    dequantized are the same floats, and the dense priors over random legal rows are the same bytes."""
    made = uint8_input_model(SHOGI_INT8)
    assert made is not None
    model, planes_q, policy_q = made
    assert policy_q is not None and planes_q.zero_point == 0
    evaluator = _evaluator()
    floats = np.stack([s.encode() for s in _positions(48, seed=1)])
    expected = evaluator.run(floats)
    assert expected.policy.dtype == np.float32 and expected.policy_quantization is None
    assert evaluator.accept_uint8_planes(planes_q, model, policy_q)
    uint8 = np.ascontiguousarray(planes_q.quantize(floats).transpose(0, 2, 3, 1))
    got = evaluator.run(uint8)
    assert got.policy.dtype == np.uint8 and got.policy_quantization == policy_q
    assert got.value.tobytes() == expected.value.tobytes()
    assert got.float_policy.tobytes() == expected.policy.tobytes()
    assert float(np.abs(expected.value).max()) > 0.0  # a trained network, not constant outputs
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 120, 48)
    indices = np.stack([rng.permutation(evaluator.info.policy_size)[:120] for _ in range(48)])
    legal = LegalRows(indices.astype(np.int64), counts.astype(np.int64))
    priors_u8, values_u8 = evaluator.finish_dense(got, legal)
    priors_f, values_f = evaluator.finish_dense(expected, legal)
    assert priors_u8.tobytes() == priors_f.tobytes() and values_u8.tobytes() == values_f.tobytes()


def test_uint8_planes_without_a_uint8_model_are_dequantized_for_the_float_input() -> None:
    """An evaluator told only the quantization runs uint8 planes through its float input: the same
    outputs (the network quantizes the dequantized planes back to the same integers); uint8 planes
    before any quantization, or of the wrong shape, are refused."""
    evaluator = _evaluator()
    floats = np.stack([s.encode() for s in _positions(16, seed=3)])
    q = Uint8Quantization(0.0049803923, 0)
    uint8 = np.ascontiguousarray(q.quantize(floats).transpose(0, 2, 3, 1))
    with pytest.raises(ValueError, match="quantization"):
        evaluator.run(uint8)
    assert not evaluator.accept_uint8_planes(q)
    got = evaluator.run(uint8)
    expected = evaluator.run(floats)
    assert got.policy_quantization is None
    assert got.policy.tobytes() == expected.policy.tobytes()
    assert got.value.tobytes() == expected.value.tobytes()
    with pytest.raises(ValueError, match="uint8 planes shape"):
        evaluator.run(np.ascontiguousarray(uint8.transpose(0, 3, 1, 2)))


def test_a_float_network_has_no_uint8_model_and_another_quantization_is_read_by_the_model(
    tmp_path: Path,
) -> None:
    """The float network starts with a convolution: no uint8 model, and attach leaves it on float
    planes.  Asked for another quantization than its own, the uint8 model's input DequantizeLinear reads
    the planes with it: planes quantized so give about the float network's outputs."""
    assert uint8_input_model(WEIGHTS / "shogi.onnx") is None
    float_evaluator = _evaluator(WEIGHTS / "shogi.onnx")
    assert attach_uint8_planes(float_evaluator) is None and float_evaluator.planes_quantization is None
    other = Uint8Quantization(1 / 128, 3)
    made = uint8_input_model(SHOGI_INT8, other)
    assert made is not None and made[1] == other
    evaluator = _evaluator()
    floats = np.stack([s.encode() for s in _positions(16, seed=4)])
    expected = evaluator.run(floats)
    evaluator.accept_uint8_planes(other, made[0], made[2])
    got = evaluator.run(np.ascontiguousarray(other.quantize(floats).transpose(0, 2, 3, 1)))
    np.testing.assert_allclose(got.value, expected.value, atol=0.05)
    # The move each position's policy ranks first is, by the float planes' policy, the best or within
    # two steps of the int8 policy's own quantization (about 0.13 logits) of it: top-1 agreement alone
    # depends on the network (the step-167000 shogi network has exact ties in 2 of these 16 positions).
    logits = expected.float_policy
    chosen = np.argmax(got.float_policy, axis=1)
    gaps = logits.max(axis=1) - logits[np.arange(len(chosen)), chosen]
    assert gaps.max() <= 0.3 and (gaps == 0).mean() >= 0.75


def test_the_compiled_shogi_tree_writes_the_quantized_rows_of_its_float_twin() -> None:
    """Two trees, float and uint8, searched in lockstep with the same priors and values: every batch's
    uint8 rows are the float rows quantized, channels last, and the trees choose the same leaves;
    shared rows of the other kind are left alone (the tree uses its own buffers)."""
    q = Uint8Quantization(0.0049803923, 0)
    state = _positions(30, seed=5)[-1]
    config = SearchConfig(seed=2)
    plain, quantized = CompiledShogiTree(state, config), CompiledShogiTree(state, config, quantization=q)
    quantized.shared_rows = SharedRows(8, (362, 9, 9))  # float rows: not the uint8 tree's
    rng = np.random.default_rng(6)
    for _ in range(25):
        a, b = plain.select_batch(4), quantized.select_batch(4)
        assert len(a) == len(b)
        if not len(a):
            continue
        assert b.planes.dtype == np.uint8 and b.planes.shape[1:] == (9, 9, 362)
        assert (
            b.planes.tobytes() == np.ascontiguousarray(q.quantize(a.planes).transpose(0, 2, 3, 1)).tobytes()
        )
        assert np.array_equal(a.buffers.leaves[: len(a)], b.buffers.leaves[: len(b)])
        priors = rng.random((len(a), a.legal.indices.shape[1])).astype(np.float32)
        values = rng.uniform(-0.5, 0.5, len(a)).astype(np.float32)
        plain.backup_batch_arrays(a, priors, values)
        quantized.backup_batch_arrays(b, priors.copy(), values.copy())
    assert plain.best_move() == quantized.best_move()
    assert quantized.shared_rows.used == 0


def test_self_play_on_uint8_planes_plays_the_float_planes_games() -> None:
    """Shogi self-play with the shipped int8 copy: on uint8 planes (the default) its calls go to the
    uint8 model, and the games, targets and values are the float planes' ones; a new network given
    with set_evaluator takes the run's quantization."""
    game = get_game("shogi", max_plies=30)
    settings = SelfPlaySettings(
        games_in_parallel=3,
        leaves_per_tree=2,
        simulations=10,
        sample_plies=6,
        resign_threshold=None,
    )
    played = {}
    for uint8 in (True, False):
        evaluator = _evaluator()
        player = SelfPlayer(game, dataclasses.replace(settings, uint8_planes=uint8), evaluator, seed=4)
        assert (player.planes_quantization is not None) == uint8
        calls = []
        if uint8:
            session = evaluator._uint8_session
            run = session.run
            session.run = lambda *a, calls=calls, run=run: calls.append(1) or run(*a)
        played[uint8] = player.play_games(2)
        assert bool(calls) == uint8
        if uint8:
            fresh = _evaluator()
            player.set_evaluator(fresh, 1)
            assert fresh.planes_quantization == player.planes_quantization
    for a, b in zip(played[True], played[False], strict=True):
        assert a.moves == b.moves and a.reason == b.reason
        for x, y in zip(a.data.positions, b.data.positions, strict=True):
            assert (
                x.pi_index.tobytes() == y.pi_index.tobytes() and x.pi_value.tobytes() == y.pi_value.tobytes()
            )
            assert x.q == y.q


def test_a_workers_int8_copy_lives_as_long_as_its_evaluator() -> None:
    """The self-play worker quantizes a new network into a temporary folder: the copy is still there
    when self-play makes its uint8-input model (after load_evaluator returned), and goes with the
    evaluator."""
    import gc

    from trainer.selfplay.worker import load_evaluator

    info = get_game("shogi").info
    settings = SelfPlaySettings(games_in_parallel=2, leaves_per_tree=1, precision="int8")
    evaluator = load_evaluator(WEIGHTS / "shogi.onnx", info, settings)
    copy = evaluator.path
    assert copy.is_file() and copy.parent.name.startswith("tabula-int8-")
    quantization = attach_uint8_planes(evaluator)
    assert quantization is not None and evaluator._uint8_session is not None
    del evaluator
    gc.collect()
    assert not copy.parent.exists()


def test_pipelined_self_play_runs_uint8_planes_on_its_helper_thread() -> None:
    """With ``pipeline`` the network calls run on a helper thread: the uint8 planes go there too, and
    the games end."""
    game = get_game("shogi", max_plies=16)
    settings = SelfPlaySettings(
        games_in_parallel=4,
        leaves_per_tree=2,
        simulations=8,
        resign_threshold=None,
        pipeline=True,
    )
    evaluator = _evaluator()
    player = SelfPlayer(game, settings, evaluator, seed=5)
    assert player.planes_quantization is not None
    calls = []
    run = evaluator._uint8_session.run
    evaluator._uint8_session.run = lambda *a: calls.append(1) or run(*a)
    try:
        games = player.play_games(2)
    finally:
        player.close()
    assert len(games) == 2 and all(g.moves for g in games) and calls


# ---- the uint8-planes model as a file (the engine's, beside the shipped int8 copy) --------------------


def test_the_written_model_carries_its_quantizations_and_source(tmp_path: Path) -> None:
    """``write_uint8_planes_model``: the same graph as ``uint8_input_model``, the int8 copy's metadata plus
    both quantizations and the copy's sha256; the evaluator reads them back and runs it."""
    from engine.network import (
        KEY_PLANES_QUANTIZATION,
        KEY_POLICY_QUANTIZATION,
        KEY_UINT8_PLANES_OF,
        read_metadata_props,
        uint8_planes_sibling,
    )
    from trainer.network.uint8_planes import write_uint8_planes_model

    copy = tmp_path / "shogi.int8.onnx"
    copy.write_bytes(SHOGI_INT8.read_bytes())
    written = write_uint8_planes_model(copy)
    assert written == uint8_planes_sibling(copy) == tmp_path / "shogi.int8.uint8-planes.onnx"
    made = uint8_input_model(copy)
    assert made is not None
    _, planes_q, policy_q = made
    assert policy_q is not None
    props, original = read_metadata_props(written), read_metadata_props(copy)
    assert Uint8Quantization.from_text(props.pop(KEY_PLANES_QUANTIZATION)) == planes_q
    assert Uint8Quantization.from_text(props.pop(KEY_POLICY_QUANTIZATION)) == policy_q
    assert props.pop(KEY_UINT8_PLANES_OF) == hashlib.sha256(copy.read_bytes()).hexdigest()
    assert props == original
    evaluator = _evaluator(copy)
    assert evaluator.accept_uint8_planes_file(written) == planes_q
    states = _positions(8, seed=5)
    floats = np.stack([s.encode() for s in states])
    out_float = _evaluator(copy).run(floats)
    out_uint8 = evaluator.run(planes_q.quantize(floats).transpose(0, 2, 3, 1))
    assert out_uint8.policy.dtype == np.uint8 and out_uint8.policy_quantization == policy_q
    assert np.array_equal(out_uint8.float_policy, out_float.policy)
    assert np.array_equal(out_uint8.value, out_float.value)


def test_a_model_made_from_another_copy_is_not_used(tmp_path: Path) -> None:
    """A uint8-planes model whose source sha256 is not the evaluator's file (the copy re-quantized since)
    changes nothing, nor does one without that metadata; a model that does not take uint8 planes is
    refused."""
    import onnx

    from trainer.network.uint8_planes import write_uint8_planes_model

    model = onnx.load(str(SHOGI_INT8))
    onnx.helper.set_model_props(model, {**{p.key: p.value for p in model.metadata_props}, "note": "redone"})
    other = tmp_path / "shogi.int8.onnx"
    onnx.save(model, str(other))  # the same network, another file
    written = write_uint8_planes_model(other)
    assert written is not None
    stale = _evaluator(SHOGI_INT8)
    assert stale.accept_uint8_planes_file(written) is None
    assert stale.planes_quantization is None
    made = uint8_input_model(SHOGI_INT8)
    assert made is not None
    bare = tmp_path / "bare.onnx"
    bare.write_bytes(made[0])  # the graph without the metadata
    assert _evaluator(SHOGI_INT8).accept_uint8_planes_file(bare) is None
    with pytest.raises(NetworkFormatError):  # not a uint8-planes model at all
        _evaluator(SHOGI_INT8).accept_uint8_planes_file(SHOGI_INT8)


def test_quantize_writes_the_uint8_planes_model_for_shogi(tmp_path: Path) -> None:
    """``tabula-train uint8-planes`` writes the sibling of an int8 copy (``quantize`` does it for shogi)."""
    from click.testing import CliRunner

    from trainer.cli import main

    copy = tmp_path / "shogi.int8.onnx"
    copy.write_bytes(SHOGI_INT8.read_bytes())
    result = CliRunner().invoke(main, ["uint8-planes", "--network", str(copy)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "shogi.int8.uint8-planes.onnx").is_file()
    float_net = tmp_path / "float.onnx"
    float_net.write_bytes((WEIGHTS / "shogi.onnx").read_bytes())
    result = CliRunner().invoke(main, ["uint8-planes", "--network", str(float_net)])
    assert result.exit_code != 0 and "QuantizeLinear" in result.output
