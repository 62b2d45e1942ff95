"""The compiled gather and scatter of the dense masked softmax give numpy's priors bit for bit."""

from __future__ import annotations

import numpy as np

from engine.evaluator import LegalRows
from engine.inference import masked_softmax, masked_softmax_rows
from engine.softmax_kernel import softmax_rows_into
from engine.uint8_io import Uint8Quantization


def _rows(rng: np.random.Generator, batch: int, policy: int, width: int, most: int) -> list[np.ndarray]:
    """Legal index arrays in no particular order, the first and the last row empty."""
    legal = [rng.choice(policy, rng.integers(1, most + 1), replace=False) for _ in range(batch)]
    legal[0] = legal[-1] = np.zeros(0, np.int64)
    assert max(len(x) for x in legal) <= width
    return legal


def test_go19_sized_batch_equals_the_numpy_softmax() -> None:
    """256 leaves of up to 362 legal points: every row's priors are the numpy path's bytes, the rest 0."""
    rng = np.random.default_rng(5)
    policy = rng.normal(0, 4, (256, 362)).astype(np.float32)
    legal = _rows(rng, 256, 362, 362, 362)
    rows = LegalRows.from_lists(legal, width=362)
    out = np.zeros(rows.indices.shape, np.float32)
    softmax_rows_into(policy, rows.indices, rows.counts, out)
    for row, probs, idx in zip(out, masked_softmax(policy, legal), legal, strict=True):
        assert row[: len(idx)].tobytes() == probs.tobytes()
        assert not row[len(idx) :].any()
    assert np.allclose(out.sum(axis=1)[1:-1], 1.0, atol=1e-5)


def test_other_dtypes_take_the_numpy_path_with_the_same_bits() -> None:
    """float16 logits (converted by numpy) give the float32 logits' priors; huge logits stay finite."""
    rng = np.random.default_rng(6)
    policy16 = (rng.normal(0, 3, (12, 50)) * np.array([1] * 11 + [3000])[:, None]).astype(np.float16)
    legal = _rows(rng, 12, 50, 20, 20)
    rows = LegalRows.from_lists(legal, width=20)
    slow = masked_softmax_rows(policy16, rows)
    fast = masked_softmax_rows(policy16.astype(np.float32), rows)
    assert slow.tobytes() == fast.tobytes()
    assert np.isfinite(fast).all()


def test_a_nan_logit_spoils_its_row_only_as_numpy_does() -> None:
    policy = np.zeros((3, 6), np.float32)
    policy[1, 4] = np.nan
    legal = [np.array([0, 1]), np.array([3, 4, 5]), np.array([2])]
    rows = masked_softmax_rows(policy, LegalRows.from_lists(legal, width=3))
    expected = masked_softmax(policy, legal)
    assert np.isnan(rows[1]).all() and np.isnan(expected[1]).all()
    assert rows[0, :2].tolist() == expected[0].tolist() == [0.5, 0.5]
    assert rows[2].tolist() == [1.0, 0.0, 0.0]


def test_uint8_logits_give_the_dequantized_logits_priors() -> None:
    """uint8 logits with their quantization (an int8 network's policy before its DequantizeLinear): the
    compiled gather dequantizes the legal ones with that node's float32 arithmetic, so the priors are
    the bytes of the float path on the dequantized logits, also through ``masked_softmax_rows`` and its
    numpy path (int32 index rows)."""
    rng = np.random.default_rng(8)
    q = Uint8Quantization(0.11016184836626053, 80)
    policy = rng.integers(0, 256, (40, 500)).astype(np.uint8)
    legal = _rows(rng, 40, 500, 120, 120)
    rows = LegalRows.from_lists(legal, width=120)
    expected = np.zeros(rows.indices.shape, np.float32)
    softmax_rows_into(q.dequantize(policy), rows.indices, rows.counts, expected)
    out = np.zeros(rows.indices.shape, np.float32)
    softmax_rows_into(policy, rows.indices, rows.counts, out, q)
    assert out.tobytes() == expected.tobytes()
    assert masked_softmax_rows(policy, rows, q).tobytes() == expected.tobytes()
    slow = LegalRows(rows.indices.astype(np.int32), rows.counts)
    assert masked_softmax_rows(policy, slow, q).tobytes() == expected.tobytes()


def _reference_softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits.astype(np.float64) - logits.max())
    return e / e.sum()


def test_a_temperature_is_the_softmax_of_the_divided_logits() -> None:
    """``PolicyTemperature``: each path's priors are the softmax of the legal logits divided by the
    temperature (float and uint8 logits, list and dense rows); 1 gives the untempered bytes."""
    rng = np.random.default_rng(11)
    q = Uint8Quantization(0.11016184836626053, 80)
    quantized = rng.integers(0, 256, (30, 400)).astype(np.uint8)
    policy = q.dequantize(quantized)
    legal = _rows(rng, 30, 400, 90, 90)
    rows = LegalRows.from_lists(legal, width=90)
    for t in (0.5, 1.6, 3.0):
        lists = masked_softmax(policy, legal, t)
        dense = masked_softmax_rows(policy, rows, None, t)
        dense_uint8 = masked_softmax_rows(quantized, rows, q, t)
        for i, idx in enumerate(legal):
            if len(idx) == 0:
                assert not dense[i].any()
                continue
            expected = _reference_softmax(policy[i, idx] / t)
            assert np.allclose(lists[i], expected, atol=1e-6)
            assert np.allclose(dense[i, : len(idx)], expected, atol=1e-6)
            assert np.allclose(dense_uint8[i, : len(idx)], expected, atol=1e-6)
            assert lists[i].tobytes() == dense[i, : len(idx)].tobytes()  # the reference's bits
        # the temperature applied in the gather: the bits of dividing the whole policy first
        divided = np.asarray(policy, np.float32) * np.float32(1.0 / t)
        assert dense.tobytes() == masked_softmax_rows(divided, rows).tobytes()
    assert (
        masked_softmax_rows(policy, rows, None, 1.0).tobytes() == masked_softmax_rows(policy, rows).tobytes()
    )
    flatter = masked_softmax_rows(policy, rows, None, 1.6)
    sharp = masked_softmax_rows(policy, rows)
    assert (flatter.max(axis=1)[1:-1] < sharp.max(axis=1)[1:-1]).all()  # the top prior shrinks
