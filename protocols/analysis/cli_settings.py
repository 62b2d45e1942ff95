"""``tabula analysis``'s flags into :class:`~protocols.analysis.server.AnalysisSettings`, KataGo's
included, so a client that starts KataGo (``katago analysis -model M -config C -override-config K=V``)
can start Tabula with the same words: an ``.onnx`` ``-model`` is the network, the config file's and the
overrides' ``maxVisits``, ``reportAnalysisWinratesAs``, ``numAnalysisThreads`` and ``nnMaxBatchSize`` are
read, every other key is ignored (docs/analysis.md)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocols.analysis.query import PERSPECTIVES
from protocols.analysis.server import AnalysisSettings
from protocols.settings import ProtocolSettings

log = logging.getLogger("tabula.analysis")


def read_katago_config(text: str) -> dict[str, str]:
    """``key = value`` lines of a KataGo config (``#`` comments, blank lines skipped)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def read_overrides(text: str) -> dict[str, str]:
    """``key=value,key=value`` of KataGo's ``-override-config``."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if "=" in part:
            key, value = part.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def analysis_settings(
    protocol_settings: Callable[[dict[str, Any]], ProtocolSettings], flags: dict[str, Any]
) -> AnalysisSettings:
    """The settings of ``tabula analysis``'s flags (``protocol_settings``: the engine flags' reader).

    Raises:
        ValueError: a ``-config`` file that cannot be read, or a bad value in it.
    """
    flags = dict(flags)
    model = flags.get("katago_model")
    if model and str(model).endswith(".onnx") and not flags.get("weights"):
        if not os.path.isfile(model):
            raise ValueError(f"-model {model}: no such file")
        flags["weights"] = model
    elif model:
        log.warning("-model %s is not an ONNX network: the shipped network is used", model)
    keys: dict[str, str] = {}
    config = flags.get("katago_config")
    if config:
        try:
            keys.update(read_katago_config(Path(config).read_text(encoding="utf-8", errors="replace")))
        except OSError as exc:
            raise ValueError(f"-config {config}: {exc}") from None
    if flags.get("katago_override"):
        keys.update(read_overrides(str(flags["katago_override"])))
    engine = protocol_settings(flags).engine
    settings = AnalysisSettings(engine=engine, default_game=str(flags.get("analysis_game") or "go"))
    changes: dict[str, Any] = {}
    try:
        if "maxVisits" in keys:
            changes["default_visits"] = max(1, int(keys["maxVisits"]))
        if "numAnalysisThreads" in keys:
            changes["analysis_threads"] = max(1, int(keys["numAnalysisThreads"]))
        if "nnMaxBatchSize" in keys:
            changes["max_rows"] = max(1, int(keys["nnMaxBatchSize"]))
    except ValueError as exc:
        raise ValueError(f"-config: {exc}") from None
    if "reportAnalysisWinratesAs" in keys:
        perspective = keys["reportAnalysisWinratesAs"].upper()
        if perspective not in PERSPECTIVES:
            raise ValueError(f"reportAnalysisWinratesAs must be one of {', '.join(PERSPECTIVES)}")
        changes["perspective"] = perspective
    if flags.get("visits") is not None:
        changes["default_visits"] = int(flags["visits"])
    if flags.get("analysis_threads") is not None:
        changes["analysis_threads"] = int(flags["analysis_threads"])
    changes["quit_without_waiting"] = bool(flags.get("quit_without_waiting"))
    from protocols.gtp import network_sizes

    sizes = network_sizes(engine.weights_file)
    changes["go_sizes"] = tuple(sizes) if sizes else None
    return dataclasses.replace(settings, **changes)
