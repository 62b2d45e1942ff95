"""Int8 networks for the CPU: a network's weights and activations quantized to 8 bits (onnxruntime's static
QDQ quantization), calibrated on positions the network actually meets.

On a CPU with AVX-512 VNNI (this project's machines) onnxruntime runs the int8 convolutions about three
times as fast as float32 (`python benchmarks/int8.py`), and a search that waits for its network most of
the time (self-play; the engine on a small machine) gets nearly that much more done per CPU-hour.  The
price is a small, measured loss of accuracy: ``benchmarks/int8.py`` prints the policy's KL divergence and
top-move agreement and the value's difference on held-out positions, and a match at equal visits tells
whether play suffers.

The int8 file sits beside its float32 network as ``NAME.int8.onnx`` (:func:`engine.network.int8_sibling`),
with the same metadata plus ``tabula.precision = int8`` and the quantization named in ``made_by``; the
engine loads it on the CPU (``Precision`` option, ``auto``), GPUs keep float32.

Calibration: :func:`calibration_planes` samples positions from a run's self-play shards (the positions
the network plays); activations are calibrated by their min/max, weights per output channel (int8,
symmetric), activations as uint8.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx

from engine.games.base import Game, GameInfo
from engine.inference import InferenceSettings, OnnxEvaluator
from engine.network import KEY_MADE_BY, KEY_PRECISION, PRECISION_INT8, read_metadata_props
from trainer.network.export import save_onnx_atomically
from trainer.store.shards import list_shards, read_shard

#: Positions used to calibrate the activations' ranges (beyond a few hundred nothing changes).
CALIBRATION_POSITIONS = 512
#: Positions per calibration batch.
CALIBRATION_BATCH = 32
#: Newest self-play shards calibrated on (16 x 2,000 positions: the recent play).
CALIBRATION_SHARDS = 16


def calibration_planes(
    shards: Sequence[str | os.PathLike[str]],
    info: GameInfo,
    count: int = CALIBRATION_POSITIONS,
    seed: int = 0,
) -> np.ndarray:
    """float32 ``[count, C, H, W]`` (fewer when the shards hold fewer): positions drawn evenly from
    ``shards`` (random rows of each, ``seed``)."""
    if not shards:
        raise ValueError("no shards to calibrate on")
    rng = np.random.default_rng(seed)
    per_shard = max(1, -(-count // len(shards)))
    parts = []
    for path in shards:
        shard = read_shard(path, info)
        rows = rng.choice(len(shard), min(per_shard, len(shard)), replace=False)
        parts.append(shard.decode_planes(np.sort(rows), info))
    return np.concatenate(parts)[:count]


def calibration_planes_from_play(
    network: str | os.PathLike[str], game: Game, count: int = CALIBRATION_POSITIONS, seed: int = 0
) -> np.ndarray:
    """float32 ``[count, C, H, W]``: positions of games the float32 ``network`` plays against itself
    from the start, each move sampled from its raw policy (no search): the positions it meets, for a
    network without a run's shards (the shipped ones).  A game ends at its end or after ``4 * count /
    16`` plies, so about 16 games are sampled."""
    rng = np.random.default_rng(seed)
    evaluator = OnnxEvaluator(network, game.info, InferenceSettings(backend="cpu", threads=1, batch_size=1))
    max_plies = max(8, count // 4)
    planes: list[np.ndarray] = []
    try:
        while len(planes) < count:
            state = game.new_state()
            for _ in range(max_plies):
                if state.outcome() is not None or len(planes) >= count:
                    break
                moves, legal = state.legal_moves_and_indices()
                encoded = state.encode()
                (evaluation,) = evaluator.evaluate(encoded[None], [legal])
                planes.append(encoded)
                state.push(moves[int(rng.choice(len(moves), p=evaluation.priors))])
    finally:
        evaluator.close()
    return np.stack(planes).astype(np.float32)


def calibration_for(
    network: str | os.PathLike[str],
    game: Game,
    shard_folder: str | os.PathLike[str] | None,
    count: int = CALIBRATION_POSITIONS,
    seed: int = 0,
) -> np.ndarray:
    """float32 ``[count, C, H, W]`` calibration positions for ``network``: from the newest
    :data:`CALIBRATION_SHARDS` shards in ``shard_folder`` (a run's ``shards/``), or from the network's
    own games (:func:`calibration_planes_from_play`) when there is no folder or no shard in it yet."""
    shards = list_shards(shard_folder)[-CALIBRATION_SHARDS:] if shard_folder is not None else []
    if shards:
        return calibration_planes(shards, game.info, count, seed)
    return calibration_planes_from_play(network, game, count, seed)


@contextlib.contextmanager
def _temporaries_in(folder: str | None) -> Iterator[None]:
    """The process's temporary files (onnxruntime's ``ort.quant.*`` folders) go to ``folder`` inside the
    block (``None``: where they go)."""
    if folder is None:
        yield
        return
    saved, tempfile.tempdir = tempfile.tempdir, folder
    try:
        yield
    finally:
        tempfile.tempdir = saved


def quantize_network(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    planes: np.ndarray,
    note: str,
    scratch: str | os.PathLike[str] | None = None,
) -> Path:
    """Write ``src``'s int8 network to ``dst`` (atomically), calibrated on ``planes`` (float32
    ``[B, C, H, W]``); its metadata is ``src``'s with ``tabula.precision = int8`` and ``note`` (the
    command, say) added to ``made_by``.  The intermediate files (onnxruntime's too) go to a temporary
    folder in ``scratch`` (default: the system's), which a self-play worker sets to its own folder, removed
    after a kill by the next worker (:func:`trainer.selfplay.worker.load_evaluator`).  Returns ``dst``."""
    from onnxruntime.quantization import (  # heavy: only when quantizing
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    props = read_metadata_props(src)
    batches = [planes[i : i + CALIBRATION_BATCH] for i in range(0, len(planes), CALIBRATION_BATCH)]

    class _Reader(CalibrationDataReader):  # type: ignore[misc]  # untyped base class
        def __init__(self) -> None:
            self._batches = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            batch = next(self._batches, None)
            return None if batch is None else {"planes": np.ascontiguousarray(batch, np.float32)}

    with (
        tempfile.TemporaryDirectory(prefix="tabula-quantize-", dir=scratch) as tmp,
        _temporaries_in(tmp if scratch is not None else None),
    ):
        prepared, quantized = Path(tmp) / "prepared.onnx", Path(tmp) / "int8.onnx"
        quant_pre_process(os.fspath(src), os.fspath(prepared), skip_symbolic_shape=True)
        quantize_static(
            os.fspath(prepared),
            os.fspath(quantized),
            _Reader(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            weight_type=QuantType.QInt8,
            activation_type=QuantType.QUInt8,
            calibrate_method=CalibrationMethod.MinMax,
        )
        model = onnx.load_model(os.fspath(quantized))
    props[KEY_PRECISION] = PRECISION_INT8
    props[KEY_MADE_BY] = f"{props.get(KEY_MADE_BY, '')}; int8: {note}".lstrip("; ")
    del model.metadata_props[:]
    for key, value in sorted(props.items()):
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    out = Path(dst)
    save_onnx_atomically(model, out)
    return out
