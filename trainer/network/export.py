"""torch -> ONNX under the network contract of :mod:`engine.network`.

:func:`export_onnx` traces the model with the TorchScript-based exporter (``dynamo=False``): with
torch 2.13 it is the one that works with only ``onnx`` installed (the dynamo exporter needs the
``onnxscript`` package), it is fast (well under a second for the presets used in tests) and it gives
one in-memory ``ModelProto``.  If a later torch drops it, the dynamo exporter is used instead.  The
Tabula metadata is then added, the model checked with ``onnx.checker``, written as ONE file (no external
data) atomically (temporary file, fsync, rename), and onnxruntime's outputs are compared with torch's on
random batches of 1 and 7 positions; a disagreement raises :class:`ExportMismatchError` and the file is
removed.
"""

from __future__ import annotations

import io
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from engine.games import get_game
from engine.games.base import GameInfo
from engine.network import (
    CONTRACT_VERSION,
    INPUT_NAME,
    MIN_OPSET,
    OWNERSHIP_NAME,
    POLICY_NAME,
    SCORE_NAME,
    VALUE_NAME,
    WDL_NAME,
    NetworkMetadata,
)
from trainer.config import config_from_toml
from trainer.network.checkpoint import checkpoint_at, model_from_checkpoint
from trainer.network.model import AlphaZeroNet

#: ONNX opset the exporter writes.
OPSET = 17
#: Tolerances of the torch / onnxruntime comparison.
RTOL = 1e-3
ATOL = 1e-4


class ExportMismatchError(RuntimeError):
    """onnxruntime's outputs of the exported file differ from torch's."""


class _ContractWrapper(nn.Module):
    """Adapts :class:`AlphaZeroNet` to the contract: outputs ``policy``, ``value`` and, if present,
    ``wdl`` as probabilities, ``ownership`` and ``score`` (in :func:`_output_names`' order)."""

    def __init__(self, model: AlphaZeroNet):
        super().__init__()
        self.model = model

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(planes)
        outputs = [out.policy, out.value]
        if out.wdl is not None:
            outputs.append(torch.softmax(out.wdl, dim=1))
        if out.ownership is not None and out.score is not None:
            outputs += [out.ownership, out.score]
        return tuple(outputs)


def _output_names(model: AlphaZeroNet) -> list[str]:
    return (
        [POLICY_NAME, VALUE_NAME]
        + ([WDL_NAME] if model.config.wdl else [])
        + ([OWNERSHIP_NAME, SCORE_NAME] if model.config.ownership else [])
    )


def _to_model_proto(model: AlphaZeroNet, example: torch.Tensor) -> onnx.ModelProto:
    wrapper = _ContractWrapper(model).eval()
    names = _output_names(model)
    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
            torch.onnx.export(
                wrapper,
                (example,),
                buffer,  # type: ignore[arg-type]  # the TorchScript exporter writes to a file object too
                input_names=[INPUT_NAME],
                output_names=names,
                dynamic_axes={name: {0: "batch"} for name in [INPUT_NAME, *names]},
                opset_version=OPSET,
                do_constant_folding=True,
                dynamo=False,
            )
        return onnx.load_model_from_string(buffer.getvalue())
    except (TypeError, AttributeError, NotImplementedError, RuntimeError) as legacy_error:
        try:
            batch = torch.export.Dim("batch", min=1, max=4096)
            program = torch.onnx.export(
                wrapper,
                (example,),
                input_names=[INPUT_NAME],
                output_names=names,
                dynamic_shapes=({0: batch},),
                opset_version=OPSET,
                dynamo=True,
                external_data=False,
                verbose=False,
            )
            if program is None:
                raise RuntimeError("the dynamo exporter returned no program")
            return program.model_proto
        except Exception as dynamo_error:
            raise RuntimeError(
                f"ONNX export failed: TorchScript exporter: {legacy_error}; dynamo exporter: {dynamo_error}"
            ) from dynamo_error


def save_onnx_atomically(model_proto: onnx.ModelProto, out: Path) -> None:
    """Write ``model_proto`` to ``out`` whole or not at all (a temporary file in the same folder,
    fsynced, then renamed over ``out``): a reader or a killed run never sees a torn network.  Also
    the writer of the int8 copies (:mod:`trainer.network.quantize`)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; networks are meant to be shared
        onnx.save_model(model_proto, tmp, save_as_external_data=False)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        dir_fd = os.open(out.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def verify_onnx(
    model: AlphaZeroNet, path: str | os.PathLike[str], batches: tuple[int, ...] = (1, 7), seed: int = 0
) -> float:
    """Compare onnxruntime (CPU) with torch on random binary planes.

    Returns:
        The largest absolute difference seen.

    Raises:
        ExportMismatchError: an output differs by more than ``ATOL + RTOL * max(1, its largest magnitude)``,
            or has the wrong shape.
    """
    info = model.info
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    session = ort.InferenceSession(os.fspath(path), sess_options=so, providers=["CPUExecutionProvider"])
    names = _output_names(model)
    wrapper = _ContractWrapper(model).eval()
    rng = np.random.default_rng(seed)
    worst = 0.0
    for b in batches:
        planes = (rng.random((b, *info.input_shape)) < 0.3).astype(np.float32)
        with torch.no_grad():
            expected = [t.numpy() for t in wrapper(torch.from_numpy(planes))]
        got = session.run(names, {INPUT_NAME: planes})
        for name, e, g in zip(names, expected, got, strict=True):
            if g.shape != e.shape or g.dtype != np.float32:
                raise ExportMismatchError(f"{name}: onnxruntime gives {g.dtype} {g.shape}, torch {e.shape}")
            worst = max(worst, float(np.max(np.abs(g - e))) if g.size else 0.0)
            # relative to the output's scale, not to each element: a logit near 0 that sums terms of
            # size 10 carries float32 rounding of 1e-4 (the shogi flagship's export at step 285000
            # stopped the run on 0.000298 in a policy row of random planes)
            scale = float(np.max(np.abs(e))) if e.size else 0.0
            if not np.all(np.abs(g - e) <= ATOL + RTOL * max(scale, 1.0)):
                raise ExportMismatchError(
                    f"{name} (batch {b}): onnxruntime and torch differ by up to {np.max(np.abs(g - e)):.3g}"
                )
    return worst


def export_onnx(
    model: AlphaZeroNet,
    out: str | os.PathLike[str],
    *,
    step: int = 0,
    komi: float | None = None,
    made_by: str = "",
    verify: bool = True,
) -> NetworkMetadata:
    """Export ``model`` to one ONNX file under the network contract.

    Args:
        model: the network (its ``info`` and ``config`` give the metadata); put in eval mode.
        out: the ``.onnx`` file to write (replaced atomically).
        step: training steps behind the weights.
        komi: Go komi of the training games (``None`` for chess and shogi).
        made_by: how it was made (the command line, "random init, untrained").
        verify: compare onnxruntime with torch on batches of 1 and 7 (removes the file and raises
            :class:`ExportMismatchError` on disagreement).

    Returns:
        The metadata written.
    """
    out = Path(out)
    info: GameInfo = model.info
    model.eval()
    meta = NetworkMetadata.for_game(info, preset=model.config.preset, step=step, komi=komi, made_by=made_by)
    assert meta.contract_version == CONTRACT_VERSION
    example = torch.zeros((2, *info.input_shape), dtype=torch.float32)
    proto = _to_model_proto(model, example)
    if max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), default=0) < MIN_OPSET:
        raise RuntimeError(f"exported opset is below {MIN_OPSET}")
    proto.producer_name = "tabula-train"
    proto.doc_string = f"Tabula network for {info.label} ({meta.preset}); contract v{CONTRACT_VERSION}"
    del proto.metadata_props[:]
    onnx.helper.set_model_props(proto, meta.to_props())
    onnx.checker.check_model(proto)
    save_onnx_atomically(proto, out)
    if verify:
        try:
            verify_onnx(model, out)
        except BaseException:
            out.unlink(missing_ok=True)
            raise
    return meta


def export_checkpoint(
    checkpoint: str | os.PathLike[str], out: Path, komi: float | None, raw: bool = False
) -> tuple[NetworkMetadata, Path]:
    """Export the network of ``checkpoint`` (a checkpoint file, or a run folder: its newest checkpoint,
    :func:`~trainer.network.checkpoint.checkpoint_at`) to ``out``, with ``komi`` or else the run's
    (recorded in the checkpoint) or the rules'.  A checkpoint that keeps a weight average
    (``train.swa_every``, :mod:`trainer.learn.swa`) gives the averaged network unless ``raw``.  Returns
    the metadata written and the checkpoint file used.  Raises ``ValueError`` when ``checkpoint`` holds
    no checkpoint that loads."""
    state = checkpoint_at(checkpoint)
    path = Path(state["path"])
    game = get_game(state["game"])
    if komi is None and state.get("config"):
        komi = config_from_toml(state["config"]).game.effective_komi()
    if komi is None and game.info.name == "go":
        komi = getattr(getattr(game, "rules", None), "komi", None)
    model = model_from_checkpoint(state, game.info)
    made_by = f"tabula-train export --checkpoint {path} (step {state['step']})"
    swa = state.get("swa")
    if swa and not raw:
        model.load_state_dict(swa["average"])
        made_by += f"; weights averaged over {swa['count']} samples (swa_max_n {swa['max_n']})"
    meta = export_onnx(model, out, step=int(state["step"]), komi=komi, made_by=made_by)
    return meta, path
