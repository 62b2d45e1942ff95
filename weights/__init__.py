"""The default networks shipped with Tabula (``chess.onnx``, ``shogi.onnx``, ``go9.onnx``, ``go19.onnx``)
and ``MANIFEST`` saying how each was made.  Found the same way in a source checkout, an installed
package and a PyInstaller bundle (the spec copies this folder as ``weights/``)."""

from __future__ import annotations

import sys
from pathlib import Path


def weights_dir() -> Path:
    """The folder holding the default networks."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None and (Path(bundle) / "weights").is_dir():
        return Path(bundle) / "weights"
    return Path(__file__).resolve().parent


def default_network(label: str) -> Path | None:
    """The shipped network for a game label (``chess``, ``shogi``, ``go9``, ...), or None if absent."""
    path = weights_dir() / f"{label}.onnx"
    return path if path.is_file() else None


def strength_table_path(label: str) -> Path | None:
    """The shipped strength calibration table of a game label (``strength-chess.json``, read by
    ``engine.strength``), or None if absent."""
    path = weights_dir() / f"strength-{label}.json"
    return path if path.is_file() else None
