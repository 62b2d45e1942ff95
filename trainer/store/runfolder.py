"""The layout of a run folder: the file contracts between the stages.

::

    runs/go9/
      config.toml            every setting of the run (written at the start, updated on resume)
      shards/*.npz           self-play data (trainer.store.shards), names sort by time
      games/*.sgf|pgn|csa    the same games as records a person can open, one file per shard
      checkpoints/*.pt       training state (trainer.network.checkpoint), newest kept
      networks/
        net-00000000.onnx    the first (random) network
        net-<step>.onnx      one per training interval (export)
        latest.onnx          the newest network: self-play always plays with it
        best.onnx            with gating: the network self-play uses, promoted by evaluation
      log.jsonl              one JSON event per line (train, selfplay, evaluate, ...)
      log.txt                the same, for people
      tb/                    TensorBoard scalars
      plot.png               ``tabula-train plot``

Every file is written atomically (temporary file, fsync, rename), so ``kill -9`` never leaves a torn
file behind; leftover temporaries are removed when a stage starts.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from trainer.config import RunConfig, config_from_toml, config_to_toml, without_invocation_limits
from trainer.store.atomic import atomic_write_text

NETWORK_RE = re.compile(r"net-(\d{8})\.onnx$")
CHECKPOINT_RE = re.compile(r"ckpt-(\d{8})\.pt$")


def checkpoint_path(folder: str | os.PathLike[str], step: int) -> Path:
    """``ckpt-<step>.pt`` in ``folder`` (written by :mod:`trainer.network.checkpoint`)."""
    return Path(folder) / f"ckpt-{step:08d}.pt"


def list_checkpoints(folder: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(step, path)`` of the checkpoints in ``folder``, oldest first (no torch needed)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for p in folder.iterdir():
        m = CHECKPOINT_RE.match(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return sorted(found)


class RunFolder:
    """Paths of one run folder (nothing is created until asked)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.config_path = self.root / "config.toml"
        self.shards = self.root / "shards"
        self.games = self.root / "games"
        self.reanalysis = self.root / "reanalysis"  # new targets for stored positions (overlays.py)
        self.checkpoints = self.root / "checkpoints"
        self.networks = self.root / "networks"
        self.latest = self.networks / "latest.onnx"
        self.best = self.networks / "best.onnx"
        self.log_jsonl = self.root / "log.jsonl"
        self.log_txt = self.root / "log.txt"
        self.tensorboard = self.root / "tb"
        self.plot = self.root / "plot.png"

    def create(self) -> None:
        for folder in (self.shards, self.games, self.checkpoints, self.networks):
            folder.mkdir(parents=True, exist_ok=True)

    def exists(self) -> bool:
        return self.config_path.is_file()

    def network(self, step: int) -> Path:
        return self.networks / f"net-{step:08d}.onnx"

    @property
    def first_network(self) -> Path:
        return self.network(0)

    def network_steps(self) -> list[int]:
        """Steps of the numbered networks, ascending."""
        if not self.networks.is_dir():
            return []
        steps = []
        for p in self.networks.iterdir():
            m = NETWORK_RE.match(p.name)
            if m:
                steps.append(int(m.group(1)))
        return sorted(steps)

    def selfplay_network(self, gating: bool) -> Path:
        """The network self-play must use: ``best.onnx`` with gating, else ``latest.onnx``."""
        return self.best if gating and self.best.is_file() else self.latest

    # ---- config ---------------------------------------------------------------------------------------
    def read_config(self) -> RunConfig:
        return config_from_toml(self.config_path.read_text())

    def write_config(self, config: RunConfig, command: str = "") -> None:
        header = "Tabula training run settings (tabula-train).  Edit and re-run to change them."
        if command:
            header += f"\nlast started with: {command}"
        atomic_write_text(self.config_path, config_to_toml(without_invocation_limits(config), header))

    # ---- log --------------------------------------------------------------------------------------------
    def log_event(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one event to ``log.jsonl`` and a readable line to ``log.txt``.

        Appends of one short line are atomic enough: a ``kill -9`` can at worst cut the last line,
        which :meth:`read_events` skips.
        """
        event = {"time": time.time(), "kind": kind, **fields}
        self.root.mkdir(parents=True, exist_ok=True)
        _append_line(self.log_jsonl, json.dumps(event, sort_keys=True))
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        text = " ".join(f"{k}={_short(v)}" for k, v in fields.items())
        _append_line(self.log_txt, f"{stamp} {kind:9s} {text}")
        return event

    def read_events(self, kind: str | None = None) -> list[dict[str, Any]]:
        if not self.log_jsonl.is_file():
            return []
        events = []
        with open(self.log_jsonl, encoding="utf-8") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill
                if kind is None or event.get("kind") == kind:
                    events.append(event)
        return events


def _append_line(path: Path, line: str) -> None:
    """Append ``line``; first end a line that a killed writer left unfinished."""
    with open(path, "ab") as f:
        if f.tell() > 0:
            with open(path, "rb") as r:
                r.seek(-1, os.SEEK_END)
                if r.read(1) != b"\n":
                    f.write(b"\n")
        f.write(line.encode("utf-8") + b"\n")


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
