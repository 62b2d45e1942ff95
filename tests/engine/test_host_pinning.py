"""HostPinning: which buffers get page-locked, when, and that each is given back when freed (a fake
CUDA runtime records the calls; the real one needs a GPU: ``benchmarks/gpu.py --pin both``)."""

from __future__ import annotations

import ctypes
import gc
from pathlib import Path

import numpy as np
import pytest

from engine.host_pinning import HOST_REGISTER_PORTABLE, HostPinning, load_cuda_runtime, owning_array
from engine.inference import InferenceSettings, OnnxEvaluator

MB = 1 << 20


class FakeRuntime:
    """Records ``cudaHostRegister`` / ``cudaHostUnregister`` calls; ``fail`` makes registration fail."""

    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.registered: dict[int, int] = {}  # address -> bytes
        self.calls: list[tuple[str, int]] = []
        self.errors_cleared = 0

    def cudaHostRegister(self, ptr: ctypes.c_void_p, size: ctypes.c_size_t, flags: ctypes.c_uint) -> int:
        assert flags.value == HOST_REGISTER_PORTABLE
        address = ptr.value or 0
        self.calls.append(("register", address))
        if self.fail:
            return self.fail
        assert address not in self.registered
        self.registered[address] = size.value
        return 0

    def cudaHostUnregister(self, ptr: ctypes.c_void_p) -> int:
        address = ptr.value or 0
        self.calls.append(("unregister", address))
        return 0 if self.registered.pop(address, None) is not None else 1

    def cudaGetLastError(self) -> int:
        self.errors_cleared += 1
        return 0


def test_a_buffer_is_pinned_the_second_time_it_is_seen_whichever_view_comes() -> None:
    runtime = FakeRuntime()
    pinning = HostPinning(runtime)
    buffer = np.zeros((256, 362, 9, 9), np.float32)  # a shogi batch buffer: 30 MB
    assert not pinning.pin(buffer[:100])  # first sight
    assert runtime.calls == []
    assert pinning.pin(buffer[:231])  # the same buffer through another view
    assert runtime.registered == {buffer.ctypes.data: buffer.nbytes}
    assert pinning.pinned_bytes == buffer.nbytes
    assert pinning.pin(buffer) and pinning.pin(buffer[5:9])  # registered once only
    assert len(runtime.calls) == 1


def test_a_freed_buffer_is_unregistered_and_its_address_may_be_pinned_again() -> None:
    runtime = FakeRuntime()
    pinning = HostPinning(runtime)
    buffer = np.zeros(4 * MB, np.uint8)
    address = buffer.ctypes.data
    pinning.pin(buffer)
    assert pinning.pin(buffer)
    view = buffer[10:]
    del buffer
    gc.collect()
    assert runtime.registered  # a view keeps the buffer alive
    del view
    gc.collect()
    assert runtime.calls == [("register", address), ("unregister", address)]
    assert runtime.registered == {} and pinning.pinned_bytes == 0
    again = np.zeros(4 * MB, np.uint8)  # may land at the same address and id: a new buffer
    assert not pinning.pin(again)
    assert pinning.pin(again)
    assert runtime.registered == {again.ctypes.data: again.nbytes}


def test_buffers_made_for_one_call_and_small_ones_are_never_pinned() -> None:
    runtime = FakeRuntime()
    pinning = HostPinning(runtime, min_bytes=MB)
    for _ in range(20):  # a fresh array each call (ids and addresses get reused as they are freed)
        assert not pinning.pin(np.ones(2 * MB, np.uint8))
    small = np.zeros(MB - 1, np.uint8)
    for _ in range(3):
        assert not pinning.pin(small)
    assert runtime.calls == []


def test_memory_that_no_array_owns_is_left_alone() -> None:
    runtime = FakeRuntime()
    pinning = HostPinning(runtime, min_bytes=1)
    foreign = np.frombuffer(bytearray(2 * MB), np.uint8)
    assert owning_array(foreign) is None
    strided = np.zeros((2 * MB, 2), np.uint8)[:, 0]
    assert owning_array(strided) is not None  # a strided view of a contiguous owner: the owner
    transposed_owner = np.zeros((MB, 4), np.uint8).T.copy(order="F")
    assert owning_array(transposed_owner) is None  # not one C-ordered block
    for _ in range(2):
        assert not pinning.pin(foreign)
    assert runtime.calls == []


def test_a_refused_registration_clears_the_error_and_turns_pinning_off() -> None:
    runtime = FakeRuntime(fail=1)  # cudaErrorInvalidValue
    pinning = HostPinning(runtime)
    buffer = np.zeros(2 * MB, np.uint8)
    pinning.pin(buffer)
    assert not pinning.pin(buffer)
    assert runtime.errors_cleared == 1 and not pinning.enabled
    other = np.zeros(2 * MB, np.uint8)
    assert not pinning.pin(other) and not pinning.pin(other)
    assert [c for c, _ in runtime.calls] == ["register"]  # nothing more is tried
    assert pinning.pinned_bytes == 0


def test_no_cuda_runtime_means_no_pinning() -> None:
    assert load_cuda_runtime(("libtabula-no-such-cudart.so",)) is None


def test_the_evaluator_pins_the_buffers_its_calls_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On by default for GPU providers only; when on, the padding buffer and a caller's long-lived
    batch buffer get pinned, a batch made for one call does not; the outputs are unchanged."""
    pytest.importorskip("onnx")
    from tests.engine.test_inference import INFO, make_linear_network, random_batch

    path = tmp_path / "linear.onnx"
    make_linear_network(path, INFO)
    assert OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu")).pinning is None
    runtime = FakeRuntime()
    monkeypatch.setattr(HostPinning, "load", classmethod(lambda cls, min_bytes=0: cls(runtime, 1)))
    settings = InferenceSettings(backend="cpu", batch_size=8, pad_batches=True, pin_host_memory=True)
    evaluator = OnnxEvaluator(path, INFO, settings)
    plain = OnnxEvaluator(path, INFO, InferenceSettings(backend="cpu", batch_size=8))
    assert evaluator.pinning is not None and "pinned inputs" in evaluator.description
    padding = evaluator._buffer
    assert runtime.registered == {padding.ctypes.data: padding.nbytes}  # the load's bucket runs
    batch_buffer, _ = random_batch(8, seed=1)
    for rows in (8, 8, 3):  # full batches go as they lie, the partial one through the padding
        np.testing.assert_array_equal(
            evaluator.run(batch_buffer[:rows]).policy, plain.run(batch_buffer[:rows]).policy
        )
    assert batch_buffer.ctypes.data in runtime.registered
    once, _ = random_batch(8, seed=2)
    evaluator.run(once)
    assert once.ctypes.data not in runtime.registered
