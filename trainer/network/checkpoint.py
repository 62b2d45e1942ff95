"""Training checkpoints: written atomically, read with ``torch.load(..., weights_only=True)``.

A checkpoint ``checkpoints/ckpt-<step>.pt`` holds only tensors and plain Python values::

    format       int     CHECKPOINT_FORMAT
    step         int     training steps done
    game         str     game label (go9, chess, ...)
    model        dict    ModelConfig.to_dict() (preset, blocks, filters, wdl, value_hidden)
    model_state  dict    model.state_dict()
    optimizer    dict    optimizer.state_dict()
    scaler       dict    GradScaler state (AMP) or {}
    positions    int     self-play positions seen by the learner when it was written
    config       str     the run's config.toml text
    rng          tensor  torch CPU random state

The newest ``keep`` checkpoints are kept.  :func:`latest_checkpoint` returns the newest one that loads
(a checkpoint can never be torn, but a disk can fail; an unreadable one is skipped with a warning);
a run resumes only from the newest (:func:`resume_checkpoint`: an unreadable one refuses the resume).
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
from typing import Any

import torch

from engine.games.base import GameInfo
from trainer.network.model import AlphaZeroNet, ModelConfig, build_model
from trainer.store.atomic import atomic_write_bytes
from trainer.store.runfolder import CHECKPOINT_RE as CHECKPOINT_RE
from trainer.store.runfolder import checkpoint_path as checkpoint_path
from trainer.store.runfolder import list_checkpoints as list_checkpoints

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = 1


def save_checkpoint(path: str | os.PathLike[str], state: dict[str, Any]) -> Path:
    """Write ``state`` atomically (serialised in memory, then temporary file, fsync, rename)."""
    buffer = io.BytesIO()
    torch.save({"format": CHECKPOINT_FORMAT, **state}, buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read (cut short, corrupt, not a checkpoint)."""


def load_checkpoint(path: str | os.PathLike[str], device: str = "cpu") -> dict[str, Any]:
    """Read a checkpoint with ``weights_only=True`` (no arbitrary code runs)."""
    state = torch.load(path, map_location=device, weights_only=True)
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(
            f"{path}: not a Tabula checkpoint (format {state.get('format') if isinstance(state, dict) else '?'})"
        )
    return state


def latest_checkpoint(folder: str | os.PathLike[str], device: str = "cpu") -> dict[str, Any] | None:
    """The newest checkpoint that loads, or ``None``."""
    for _step, path in reversed(list_checkpoints(folder)):
        try:
            state = load_checkpoint(path, device)
        except Exception as e:
            log.warning("cannot read checkpoint %s (%s); trying an older one", path, e)
            continue
        state["path"] = str(path)
        return state
    return None


def resume_checkpoint(folder: str | os.PathLike[str], device: str = "cpu") -> dict[str, Any] | None:
    """The newest checkpoint of a run's ``checkpoints`` folder to resume from, or ``None`` (none yet).

    Unlike :func:`latest_checkpoint`, an unreadable newest checkpoint is not passed over: resuming from
    an older one would write over the steps after it (and prune the files a person could still rescue),
    so the run refuses to start.

    Raises:
        CheckpointError: the newest checkpoint does not load (its path and the fault in the message).
    """
    found = list_checkpoints(folder)
    if not found:
        return None
    path = found[-1][1]
    try:
        state = load_checkpoint(path, device)
    except Exception as exc:  # torch's zip reader raises RuntimeError, pickle errors, EOFError ...
        fault = " ".join(str(exc).split()).removeprefix(f"{path}: ") or type(exc).__name__
        raise CheckpointError(
            f"{path}: cannot read the checkpoint ({fault}); nothing was changed (move the file away to "
            "resume from the one before it)"
        ) from None
    state["path"] = str(path)
    return state


def checkpoint_at(path: str | os.PathLike[str], device: str = "cpu") -> dict[str, Any]:
    """The checkpoint ``path`` names: a checkpoint file, or a run folder (or its ``checkpoints`` folder),
    whose newest checkpoint that loads is taken; its ``path`` key says which file it was.

    Raises:
        ValueError: a folder without a checkpoint that loads, or a file that is not a checkpoint.
    """
    path = Path(path)
    if not path.is_dir():
        return {**load_checkpoint(path, device), "path": str(path)}
    folder = path / "checkpoints" if (path / "checkpoints").is_dir() else path
    state = latest_checkpoint(folder, device)
    if state is None:
        raise ValueError(f"no checkpoint in {folder}")
    return state


def prune_checkpoints(folder: str | os.PathLike[str], keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints."""
    found = list_checkpoints(folder)
    for _, path in found[: max(0, len(found) - max(1, keep))]:
        path.unlink(missing_ok=True)


def model_from_checkpoint(state: dict[str, Any], info: GameInfo) -> AlphaZeroNet:
    """Rebuild the network of a checkpoint (its architecture comes from the stored ModelConfig)."""
    config = ModelConfig.from_dict(dict(state["model"]))
    model = build_model(info, config)
    model.load_state_dict(state["model_state"])
    return model
