"""OnnxEvaluator, UniformEvaluator, masked softmax, provider probing (no torch: the test
network is a linear model built with onnx.helper, so every output has a numpy reference)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator, LegalRows
from engine.games.base import GameInfo
from engine.inference import (
    CUDA,
    TENSORRT,
    InferenceSettings,
    OnnxEvaluator,
    UniformEvaluator,
    batch_buckets,
    masked_softmax,
    masked_softmax_rows,
    raw_throughput,
    warm_up_network_thread,
)
from engine.network import NetworkMetadata, NetworkMismatchError

onnx = pytest.importorskip("onnx")

REPO = Path(__file__).resolve().parents[2]
INFO = GameInfo("go", 3, 2, 10, 1)  # a toy "game": 2 planes of 3x3, 10 policy entries


def make_linear_network(
    path: Path, info: GameInfo, *, wdl: bool = False, seed: int = 0
) -> dict[str, np.ndarray]:
    """Write a contract-conforming linear network; returns its weights for numpy references.

    policy = flat(planes) @ wp + bp;  value = tanh(flat(planes) @ wv);  wdl = softmax(flat(planes) @ ww).
    """
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    d = info.planes * info.board_size**2
    w = {
        "wp": rng.normal(size=(d, info.policy_size)).astype(np.float32),
        "bp": rng.normal(size=(info.policy_size,)).astype(np.float32),
        "wv": (0.1 * rng.normal(size=(d, 1))).astype(np.float32),
        "bv": np.zeros(1, np.float32),
        "ww": rng.normal(size=(d, 3)).astype(np.float32),
        "bw": np.zeros(3, np.float32),
    }
    nodes = [
        helper.make_node("Flatten", ["planes"], ["x"], axis=1),
        helper.make_node("Gemm", ["x", "wp", "bp"], ["policy"]),
        helper.make_node("Gemm", ["x", "wv", "bv"], ["v"]),
        helper.make_node("Tanh", ["v"], ["value"]),
    ]
    outputs = [
        helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", info.policy_size]),
        helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch", 1]),
    ]
    if wdl:
        nodes += [
            helper.make_node("Gemm", ["x", "ww", "bw"], ["w"]),
            helper.make_node("Softmax", ["w"], ["wdl"], axis=1),
        ]
        outputs.append(helper.make_tensor_value_info("wdl", TensorProto.FLOAT, ["batch", 3]))
    used = {"wp", "bp", "wv", "bv"} | ({"ww", "bw"} if wdl else set())
    graph = helper.make_graph(
        nodes,
        "linear",
        [helper.make_tensor_value_info("planes", TensorProto.FLOAT, ["batch", *info.input_shape])],
        outputs,
        initializer=[numpy_helper.from_array(v, k) for k, v in w.items() if k in used],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    helper.set_model_props(model, NetworkMetadata.for_game(info, preset="linear", made_by="test").to_props())
    onnx.save_model(model, path)
    return w


def reference(w: dict[str, np.ndarray], planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = planes.reshape(len(planes), -1).astype(np.float64)
    return x @ w["wp"] + w["bp"], np.tanh(x @ w["wv"] + w["bv"])[:, 0]


def random_batch(n: int, seed: int = 1) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    planes = (rng.random((n, *INFO.input_shape)) < 0.4).astype(np.float32)
    legal = [np.sort(rng.choice(INFO.policy_size, rng.integers(0, 6), replace=False)) for _ in range(n)]
    return planes, legal


@pytest.fixture(scope="module")
def linear(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    path = tmp_path_factory.mktemp("nets") / "linear.onnx"
    return path, make_linear_network(path, INFO)


@pytest.fixture(scope="module")
def linear_wdl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    path = tmp_path_factory.mktemp("nets") / "linear_wdl.onnx"
    return path, make_linear_network(path, INFO, wdl=True, seed=3)


# ---- masked softmax ---------------------------------------------------------------------------------


def test_masked_softmax_sums_to_one_over_legal_and_ignores_illegal() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 20)).astype(np.float32)
    logits[:, 0] = 1e4  # a huge illegal logit must get no mass
    legal = [np.array([3, 5, 7]), np.array([], np.int64), np.array([19]), np.arange(1, 20)]
    priors = masked_softmax(logits, legal)
    assert [p.shape for p in priors] == [(3,), (0,), (1,), (19,)]
    for row, idx, p in zip(logits, legal, priors, strict=True):
        assert p.dtype == np.float32
        if len(idx):
            full = np.zeros(20)
            full[idx] = p
            assert full.sum() == pytest.approx(1.0, abs=1e-6)
            assert full[0] == 0.0
            e = np.exp(row[idx] - row[idx].max())
            np.testing.assert_allclose(p, e / e.sum(), rtol=1e-5)


def test_masked_softmax_is_numerically_stable() -> None:
    logits = np.array([[1000.0, 1001.0, -1000.0], [-5000.0, -5001.0, 0.0]], np.float32)
    priors = masked_softmax(logits, [np.array([0, 1]), np.array([0, 1])])
    for p in priors:
        assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(priors[0], [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-5)


def test_masked_softmax_all_empty() -> None:
    assert [p.size for p in masked_softmax(np.zeros((2, 5), np.float32), [np.zeros(0, np.int64)] * 2)] == [
        0,
        0,
    ]


# ---- OnnxEvaluator ----------------------------------------------------------------------------------


def test_evaluator_matches_numpy_reference(linear: tuple[Path, dict]) -> None:
    path, w = linear
    ev = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", threads=1, batch_size=8))
    assert ev.provider == "CPUExecutionProvider" and "CPU" in ev.description
    assert not ev.has_wdl and ev.metadata.preset == "linear"
    planes, legal = random_batch(6)
    logits, values = reference(w, planes)
    evals = ev.evaluate(planes, legal)
    assert len(evals) == 6
    for e, row, v, idx in zip(evals, logits, values, legal, strict=True):
        assert isinstance(e, Evaluation) and e.wdl is None
        assert isinstance(e.value, float) and -1.0 <= e.value <= 1.0
        assert e.value == pytest.approx(v, abs=1e-4)
        assert e.priors.shape == idx.shape
        if len(idx):
            ex = np.exp(row[idx] - row[idx].max())
            np.testing.assert_allclose(e.priors, ex / ex.sum(), rtol=1e-3, atol=1e-6)
            assert e.priors.sum() == pytest.approx(1.0, abs=1e-5)
    assert ev.evaluate(np.zeros((0, *INFO.input_shape), np.float32), []) == []


def test_batches_larger_than_batch_size_are_split(linear: tuple[Path, dict]) -> None:
    path, w = linear
    ev = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", batch_size=4))
    planes, legal = random_batch(11, seed=5)
    raw = ev.run(planes)
    logits, values = reference(w, planes)
    assert raw.policy.shape == (11, INFO.policy_size) and raw.value.shape == (11,)
    np.testing.assert_allclose(raw.policy, logits, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(raw.value, values, atol=1e-4)
    # non-contiguous float64 input goes through the preallocated buffer, same results
    raw2 = ev.run(np.asfortranarray(planes.astype(np.float64)))
    np.testing.assert_allclose(raw2.policy, raw.policy, rtol=1e-6)
    one_by_one = [ev.evaluate(planes[i : i + 1], legal[i : i + 1])[0] for i in range(11)]
    for a, b in zip(ev.evaluate(planes, legal), one_by_one, strict=True):
        np.testing.assert_allclose(a.priors, b.priors, rtol=1e-5)
        assert a.value == pytest.approx(b.value, abs=1e-6)


def test_batch_buckets() -> None:
    assert batch_buckets(1) == (1,)
    assert batch_buckets(16) == (1, 2, 4, 8, 16)
    assert batch_buckets(24) == (1, 2, 4, 8, 16, 24)
    assert batch_buckets(24, TENSORRT) == (1, 2, 4, 8, 16, 24)
    # onnxruntime's CUDA convolutions rebuild their plans at every change of input shape: one size
    assert batch_buckets(24, CUDA) == (24,) and batch_buckets(1, CUDA) == (1,)


def test_padded_batches_give_the_same_outputs_and_only_bucket_sizes(linear: tuple[Path, dict]) -> None:
    """``pad_batches`` (on by default on GPU providers): the session sees only the bucket sizes, each
    run once at load, and every row's outputs are the unpadded ones, the padding's dropped."""
    path, w = linear
    plain = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", batch_size=12))
    assert plain.buckets == () and plain.warmup_s < 1.0  # off on the CPU by default
    padded = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", batch_size=12, pad_batches=True))
    assert padded.buckets == (1, 2, 4, 8, 12)
    seen: list[int] = []
    session_run = padded._session.run

    def recording_run(outputs: list[str], feeds: dict[str, np.ndarray], options: object = None) -> list:
        seen.append(next(iter(feeds.values())).shape[0])
        return session_run(outputs, feeds, options)

    padded._session.run = recording_run
    for n in (1, 3, 5, 8, 9, 12, 13, 30):
        planes, _ = random_batch(n, seed=n)
        logits, values = reference(w, planes)
        raw = padded.run(planes)
        assert raw.policy.shape == (n, INFO.policy_size) and raw.value.shape == (n,)
        np.testing.assert_allclose(raw.policy, logits, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(raw.value, values, atol=1e-4)
        np.testing.assert_allclose(plain.run(planes).policy, raw.policy, rtol=1e-6)
    assert set(seen) <= set(padded.buckets) and seen[:3] == [1, 4, 8]


def test_padded_batch_sizes_are_run_once_on_each_thread_that_calls_the_network(
    linear: tuple[Path, dict],
) -> None:
    """``warm_up_network_thread``: the search's helper thread runs every bucket once before its first
    search (the loading thread did at load); again on that thread, or with no buckets, nothing."""
    path, _ = linear
    padded = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", batch_size=12, pad_batches=True))
    seen: list[tuple[str, int]] = []
    session_run = padded._session.run

    def recording_run(outputs: list[str], feeds: dict[str, np.ndarray], options: object = None) -> list:
        seen.append((threading.current_thread().name, next(iter(feeds.values())).shape[0]))
        return session_run(outputs, feeds, options)

    padded._session.run = recording_run
    assert padded.warm_up_here() == 0.0 and seen == []  # the loading thread ran them at load
    with ThreadPoolExecutor(1, thread_name_prefix="helper") as pool:
        warm_up_network_thread(padded, pool)
        warm_up_network_thread(padded, pool)  # once a thread
        assert [size for _, size in seen] == list(padded.buckets)
        assert all(name.startswith("helper") for name, _ in seen)
    plain = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", batch_size=12))
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(plain.warm_up_here).result() == 0.0  # the CPU pads nothing: nothing to run
    with ThreadPoolExecutor(1) as pool:
        warm_up_network_thread(UniformEvaluator(INFO), pool)  # no network: nothing to run


def test_evaluate_gives_one_evaluation_a_position_with_the_wdl_head_when_there_is_one(
    linear: tuple[Path, dict], linear_wdl: tuple[Path, dict]
) -> None:
    """The list form (a single position, the tests' reference tree): the same priors and values as the
    searches' dense form, the WDL rows when the network has that head; a count mismatch is refused."""
    planes, legal = random_batch(5, seed=3)
    for path, _ in (linear, linear_wdl):
        ev = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", batch_size=8))
        whole = ev.evaluate(planes, legal)
        assert len(whole) == 5
        assert all((e.wdl is None) == (path == linear[0]) for e in whole)
        _assert_rows_equal(ev.evaluate_dense(planes, LegalRows.from_lists(legal)), whole, legal)
        with pytest.raises(ValueError, match="5 positions but 4"):
            ev.evaluate(planes, legal[:4])


def _assert_rows_equal(rows: tuple[np.ndarray, np.ndarray], evaluations: list[Evaluation], legal) -> None:
    """Priors rows and values hold exactly the evaluations' (zero beyond each row's legal moves)."""
    priors, values = rows
    assert priors.shape[0] == len(legal) and values.shape == (len(legal),)
    for row, ev, idx in zip(priors, evaluations, legal, strict=True):
        np.testing.assert_array_equal(row[: len(idx)], ev.priors)
        assert not row[len(idx) :].any()
    assert values.tolist() == [ev.value for ev in evaluations]


def test_dense_evaluation_is_evaluate(linear: tuple[Path, dict]) -> None:
    """``evaluate_dense`` (and its split ``infer_dense`` on a helper thread, ``finish_dense`` here) on
    legal index rows gives bit for bit ``evaluate``'s priors and values, for the network, the uniform
    evaluator and the default implementation (through ``evaluate``)."""
    planes, legal = random_batch(9, seed=5)
    rows = LegalRows.from_lists(legal, width=40)
    ev = OnnxEvaluator(linear[0], INFO, InferenceSettings(backend="cpu", batch_size=4))
    whole = ev.evaluate(planes, legal)
    _assert_rows_equal(ev.evaluate_dense(planes, rows), whole, legal)
    with ThreadPoolExecutor(1) as pool:
        inferred = pool.submit(ev.infer_dense, planes, rows).result()
    _assert_rows_equal(ev.finish_dense(inferred, rows), whole, legal)
    with pytest.raises(ValueError):
        ev.finish_dense(inferred, LegalRows(rows.indices[:5], rows.counts[:5]))
    uniform = UniformEvaluator(INFO)
    _assert_rows_equal(uniform.evaluate_dense(planes, rows), uniform.evaluate(planes, legal), legal)
    assert uniform.evaluate_dense(planes, rows)[0].shape == (9, 40)

    class Plain(UniformEvaluator):  # the default dense path, through evaluate
        evaluate_dense = Evaluator.evaluate_dense

    plain = Plain(INFO)
    dense = plain.finish_dense(plain.infer_dense(planes, rows), rows)
    _assert_rows_equal(dense, uniform.evaluate(planes, legal), legal)


def test_masked_softmax_rows_is_masked_softmax_bit_for_bit() -> None:
    """Legal indices in any order (a game's move order, not increasing), empty rows among them."""
    rng = np.random.default_rng(2)
    policy = rng.normal(0, 3, (40, INFO.policy_size)).astype(np.float32)
    legal = [rng.choice(INFO.policy_size, rng.integers(0, 11), replace=False) for _ in range(40)]
    rows = masked_softmax_rows(policy, LegalRows.from_lists(legal, width=16))
    assert rows.shape == (40, 16) and rows.dtype == np.float32
    for row, probs, idx in zip(rows, masked_softmax(policy, legal), legal, strict=True):
        assert row[: len(idx)].tobytes() == probs.tobytes()
        assert not row[len(idx) :].any()
    empty = LegalRows(np.zeros((2, 3), np.int64), np.zeros(2, np.int64))
    assert masked_softmax_rows(policy[:2], empty).tolist() == [[0.0] * 3] * 2


def test_wdl_output(linear_wdl: tuple[Path, dict]) -> None:
    path, _ = linear_wdl
    ev = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu"))
    assert ev.has_wdl
    planes, legal = random_batch(3)
    for e in ev.evaluate(planes, legal):
        assert e.wdl is not None and e.wdl.shape == (3,) and e.wdl.sum() == pytest.approx(1.0, abs=1e-5)


def test_wrong_game_is_refused_at_load(linear: tuple[Path, dict]) -> None:
    path, _ = linear
    with pytest.raises(NetworkMismatchError, match="board size 3 != 4"):
        OnnxEvaluator(path, GameInfo("go", 4, 2, 17, 1), InferenceSettings(backend="cpu"))
    with pytest.raises(NetworkMismatchError, match="encoding version 1 != 2"):
        OnnxEvaluator(path, GameInfo("go", 3, 2, 10, 2), InferenceSettings(backend="cpu"))
    with pytest.raises(FileNotFoundError):
        OnnxEvaluator(path.with_name("missing.onnx"), INFO)


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="backend"):
        InferenceSettings(backend="gpu")
    with pytest.raises(ValueError):
        InferenceSettings(batch_size=0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="policy_temperature"):
            InferenceSettings(policy_temperature=bad)
    assert InferenceSettings().allow_spinning is False


def test_the_evaluator_applies_its_policy_temperature(linear: tuple[Path, dict]) -> None:
    """The settings' ``policy_temperature`` divides the logits before the softmax, in ``evaluate`` and
    in ``finish_dense``; the values are untouched."""
    path, w = linear
    planes, legal = random_batch(6, seed=3)
    logits, values = reference(w, planes)
    rows = LegalRows.from_lists(legal, width=40)
    ev = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", batch_size=8, policy_temperature=2.0))
    evals = ev.evaluate(planes, legal)
    priors, dense_values = ev.evaluate_dense(planes, rows)
    for i, (e, row, v, idx) in enumerate(zip(evals, logits, values, legal, strict=True)):
        assert e.value == pytest.approx(v, abs=1e-4) and dense_values[i] == pytest.approx(v, abs=1e-4)
        if len(idx):
            ex = np.exp((row[idx] - row[idx].max()) / 2.0)
            np.testing.assert_allclose(e.priors, ex / ex.sum(), rtol=1e-3, atol=1e-6)
            np.testing.assert_allclose(priors[i, : len(idx)], ex / ex.sum(), rtol=1e-3, atol=1e-6)


def test_auto_backend_prints_nothing_on_stdout(linear: tuple[Path, dict]) -> None:
    """onnxruntime-gpu prints its provider fallback banner on stdout: it must never get there."""
    path, _ = linear
    code = textwrap.dedent(
        f"""
        import sys, numpy as np
        from engine.games.base import GameInfo
        from engine.inference import InferenceSettings, OnnxEvaluator
        info = GameInfo("go", 3, 2, 10, 1)
        for backend in ("auto", "tensorrt", "cuda"):
            ev = OnnxEvaluator({str(path)!r}, info, InferenceSettings(backend=backend))
            out = ev.evaluate(np.zeros((2, 2, 3, 3), np.float32), [np.arange(3), np.arange(10)])
            print("provider", backend, ev.provider, round(float(out[1].priors.sum()), 3), file=sys.stderr)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=REPO, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b"", proc.stdout.decode()
    assert proc.stderr.decode().count("provider ") == 3


def test_auto_backend_keeps_python_stdout_clean_too(linear: tuple[Path, dict]) -> None:
    """The banner is a Python ``print``: a replaced ``sys.stdout`` must not receive it either; what
    onnxruntime said is kept in ``probe_log``."""
    import contextlib
    import io

    import onnxruntime as ort

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        ev = OnnxEvaluator(linear[0], INFO, InferenceSettings(backend="auto"))
    assert buffer.getvalue() == ""
    assert ev.provider in ort.get_available_providers()
    if ev.provider == "CPUExecutionProvider" and "CUDAExecutionProvider" in ort.get_available_providers():
        assert ev.probe_log  # GPU providers were listed, tried, and failed: the reason is kept


# ---- UniformEvaluator -------------------------------------------------------------------------------


def test_uniform_evaluator() -> None:
    ev = UniformEvaluator(INFO)
    planes, _ = random_batch(3)
    evals = ev.evaluate(planes, [np.arange(4), np.zeros(0, np.int64), np.array([7])])
    np.testing.assert_allclose(evals[0].priors, [0.25] * 4)
    assert evals[1].priors.size == 0 and evals[2].priors.tolist() == [1.0]
    assert all(e.value == 0.0 and e.wdl is None for e in evals)
    assert raw_throughput(ev, 4, seconds=0.01) > 0


def test_raw_throughput(linear: tuple[Path, dict]) -> None:
    ev = OnnxEvaluator(linear[0], INFO, InferenceSettings(backend="cpu", batch_size=8))
    assert raw_throughput(ev, 8, seconds=0.05) > 0


def test_cancel_ends_a_running_network_call_early() -> None:
    import threading
    import time as _time

    from engine.games import get_game
    from engine.inference import InferenceSettings, OnnxEvaluator
    from weights import default_network

    info = get_game("go19").info
    evaluator = OnnxEvaluator(
        default_network("go19"), info, InferenceSettings(backend="cpu", threads=1, batch_size=512)
    )
    planes = np.zeros((512, *info.input_shape), np.float32)
    t = _time.perf_counter()
    evaluator.run(planes)
    full = _time.perf_counter() - t
    outcome: list[object] = []

    def work() -> None:
        try:
            evaluator.run(planes)
            outcome.append("finished")
        except Exception as exc:  # onnxruntime raises when the terminate flag is set
            outcome.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    _time.sleep(full * 0.05)
    while thread.is_alive():  # cancel until the call ends (a loaded machine may start it late)
        evaluator.cancel()
        thread.join(full * 0.02)
    # onnxruntime raises only for a call it terminated: the call did not run to its end
    assert isinstance(outcome[0], Exception), outcome
    evaluator.run(planes[:2])  # the session still works
