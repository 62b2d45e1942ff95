"""Reanalysed targets on disk: new policy and value targets for positions of some shards.

A reanalysis (:mod:`trainer.selfplay.reanalysis`) searches stored positions again with a newer network;
what it finds is written beside the shards, never into them (a shard stays as self-play wrote it), as one
``.npz`` file per round of reanalysis, written atomically, in the run's ``reanalysis/`` folder::

    <unix ns>-w<worker>.npz

    key          dtype    shape        what
    -----------  -------  -----------  -------------------------------------------------------------
    shard        int32    [K]          each position's shard, as an index into meta["shards"]
    rows         int32    [K]          the position's row in that shard
    pi_offset    int64    [K + 1]      position k's policy target is entries pi_offset[k]:pi_offset[k+1]
    pi_index     uint16   [E]          policy indices of the moves given a share
    pi_value     float32  [E]          their shares (summing to 1 per position)
    q            float32  [K]          the new search's root value from the side to move
    meta         str      []           JSON: shards (file names), network step, simulations, worker

Names sort by time: the replay buffer applies overlays in name order, so the newest target of a
position wins.  A file cut short by a kill is a temporary (:mod:`trainer.store.atomic`) and never
listed.  Files older than the oldest shard of the window name no position the window holds:
:func:`prune_overlays` removes them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from trainer.store.atomic import atomic_write_with

OVERLAY_SUFFIX = ".npz"


class OverlayError(ValueError):
    """An overlay file that cannot be read."""


@dataclasses.dataclass(frozen=True)
class TargetOverlay:
    """New targets for positions of ``shards`` (arrays as in the module docstring)."""

    shards: tuple[str, ...]
    shard: np.ndarray
    rows: np.ndarray
    pi_offset: np.ndarray
    pi_index: np.ndarray
    pi_value: np.ndarray
    q: np.ndarray
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def target(self, k: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Position ``k``'s ``(policy indices int64 [E_k], shares float32 [E_k], q)``."""
        lo, hi = int(self.pi_offset[k]), int(self.pi_offset[k + 1])
        return self.pi_index[lo:hi].astype(np.int64), self.pi_value[lo:hi], float(self.q[k])

    def positions(self) -> list[tuple[str, int, int]]:
        """``(shard name, row, k)`` of every position, ``k`` its number here (for :meth:`target`)."""
        pairs = zip(self.shard.tolist(), self.rows.tolist(), strict=True)
        return [(self.shards[s], r, k) for k, (s, r) in enumerate(pairs)]

    @classmethod
    def build(
        cls, targets: list[tuple[str, int, np.ndarray, np.ndarray, float]], **meta: Any
    ) -> TargetOverlay:
        """From ``(shard name, row, policy indices [E], shares [E], q)`` per position."""
        names = tuple(sorted({t[0] for t in targets}))
        number = {name: i for i, name in enumerate(names)}
        sizes = np.array([len(t[2]) for t in targets], np.int64)
        return cls(
            shards=names,
            shard=np.array([number[t[0]] for t in targets], np.int32),
            rows=np.array([t[1] for t in targets], np.int32),
            pi_offset=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            pi_index=np.concatenate([np.asarray(t[2]) for t in targets] or [np.empty(0)]).astype(np.uint16),
            pi_value=np.concatenate([np.asarray(t[3]) for t in targets] or [np.empty(0)]).astype(np.float32),
            q=np.clip(np.array([t[4] for t in targets], np.float32), -1.0, 1.0),
            meta=dict(meta),
        )


def overlay_name(worker: int, when_ns: int | None = None) -> str:
    """``<unix ns>-w<worker>.npz``: overlays sort by the time they were written."""
    ns = time.time_ns() if when_ns is None else when_ns
    return f"{ns:020d}-w{worker:03d}{OVERLAY_SUFFIX}"


def write_overlay(folder: str | os.PathLike[str], overlay: TargetOverlay, worker: int) -> Path:
    """Write ``overlay`` atomically into ``folder`` (created when missing); returns its path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / overlay_name(worker)
    payload: dict[str, Any] = {
        "shard": overlay.shard,
        "rows": overlay.rows,
        "pi_offset": overlay.pi_offset,
        "pi_index": overlay.pi_index,
        "pi_value": overlay.pi_value,
        "q": overlay.q,
        "meta": np.array(json.dumps({**overlay.meta, "shards": list(overlay.shards)}, sort_keys=True)),
    }
    atomic_write_with(path, lambda f: np.savez_compressed(f, **payload))
    return path


def read_overlay(path: str | os.PathLike[str]) -> TargetOverlay:
    """Load an overlay file.

    Raises:
        OverlayError: unreadable (or gone), or its arrays disagree.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            overlay = TargetOverlay(
                shards=tuple(str(name) for name in meta["shards"]),
                shard=data["shard"],
                rows=data["rows"],
                pi_offset=data["pi_offset"],
                pi_index=data["pi_index"],
                pi_value=data["pi_value"],
                q=data["q"],
                meta=meta,
            )
    except Exception as e:
        raise OverlayError(f"{path}: not a readable overlay ({type(e).__name__}: {e})") from None
    k = len(overlay.rows)
    agree = (
        overlay.shard.shape == (k,)
        and overlay.pi_offset.shape == (k + 1,)
        and overlay.q.shape == (k,)
        and int(overlay.pi_offset[-1]) == len(overlay.pi_index) == len(overlay.pi_value)
        and (k == 0 or 0 <= int(overlay.shard.min()) <= int(overlay.shard.max()) < len(overlay.shards))
    )
    if not agree:
        raise OverlayError(f"{path}: arrays that disagree")
    return overlay


def list_overlays(folder: str | os.PathLike[str]) -> list[Path]:
    """Overlay files of ``folder``, oldest first (temporaries excluded)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix == OVERLAY_SUFFIX and not p.name.startswith("."))


def overlay_ns(path: Path) -> int:
    """When an overlay was written (unix ns), from its name."""
    return int(path.name.split("-", 1)[0])


def prune_overlays(folder: str | os.PathLike[str], oldest_shard: str) -> int:
    """Remove the overlays written before the shard named ``oldest_shard`` (its name starts with its
    creation time in unix ms): they name only older shards.  Returns how many were removed."""
    born_ns = int(oldest_shard.split("-", 1)[0]) * 1_000_000
    removed = 0
    for path in list_overlays(folder):
        if overlay_ns(path) >= born_ns:
            break
        path.unlink(missing_ok=True)
        removed += 1
    return removed
