"""A session's network: the option's file or the game's shipped default (:func:`load_evaluator`), on
the CPU its int8 copy (:func:`with_precision`) and that copy's uint8-planes model
(:func:`with_uint8_planes`); the uniform evaluator, with the reason, when no network can be used."""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from engine.evaluator import Evaluator
from engine.games import Game
from engine.inference import CPU, InferenceSettings, OnnxEvaluator, Precision, UniformEvaluator
from engine.network import PRECISION_INT8, int8_sibling, uint8_planes_sibling
from weights import default_network

if TYPE_CHECKING:
    from engine.options import EngineOptions

log = logging.getLogger("tabula.session")


#: The most network calls the search keeps in flight when ``Threads`` is 0 (each batch in flight holds
#: its leaves under virtual loss, so more would widen the search).
MAX_CALLS_IN_FLIGHT = 4


@dataclasses.dataclass(frozen=True)
class InferencePlan:
    """How the network gets the machine: ``calls`` network calls in flight at once (batches the search
    keeps running side by side), each on ``threads`` onnxruntime intra-op threads."""

    threads: int
    calls: int

    def helpers(self, shares_cores: bool) -> int:
        """The helper threads that make the calls: one a call, or one fewer when the network runs on
        the search's own cores (``Evaluator.shares_cores``), where the search thread makes a queued
        call itself rather than wait (docs/benchmarks.md, "The search thread makes calls too")."""
        return max(1, self.calls - 1) if shares_cores else self.calls


def inference_plan(threads_option: int, cores: int | None = None) -> InferencePlan:
    """The plan for the ``Threads`` option: ``N > 0`` is one call at a time on ``N`` threads (what a user
    who sets it asks for); 0, the default, gives the network every core as several one-thread calls in
    flight (up to :data:`MAX_CALLS_IN_FLIGHT`, the cores shared among them): a small network's call does
    not divide well among threads, so two one-thread calls on two cores make more evaluations a second
    than one call on both (docs/benchmarks.md, "Calls in flight: the whole machine for the network")."""
    if threads_option > 0:
        return InferencePlan(threads_option, 1)
    n = max(1, cores if cores is not None else os.cpu_count() or 1)
    calls = min(n, MAX_CALLS_IN_FLIGHT)
    return InferencePlan(max(1, n // calls), calls)


def policy_temperature_for(game: Game, chosen: float | None = None, limit_strength: bool = False) -> float:
    """The policy temperature a search of ``game`` uses: ``chosen`` (an option's value), else 1 while the
    strength is limited (the calibration tables were measured so: docs/strength.md), else the game's
    default (``PlayProfile.policy_temperature``, measured in games against 1 at equal nodes:
    docs/experiments.md, "Policy temperature")."""
    if chosen is not None:
        return chosen
    return 1.0 if limit_strength else game.profile.policy_temperature


#: The start of the report on a network that cannot be used, and what the engine then plays with.
UNUSABLE = "cannot use network"
UNIFORM_PLAY = "playing with uniform priors (untrained search)"


def load_evaluator(game: Game, options: EngineOptions) -> tuple[Evaluator, str]:
    """The network for ``game`` (option or shipped default), or the uniform evaluator with the reason."""
    path = Path(options.weights_file) if options.weights_file else default_network(game.info.label)
    if path is None:
        reason = f"no network for {game.info.label} in weights/: {UNIFORM_PLAY}"
        return UniformEvaluator(game.info), reason
    settings = InferenceSettings(
        backend=options.backend,
        threads=inference_plan(options.threads).threads,
        batch_size=max(1, options.batch_size),
        policy_temperature=policy_temperature_for(game, options.policy_temperature, options.limit_strength),
    )
    try:
        evaluator = OnnxEvaluator(path, game.info, settings)
    except Exception as exc:  # wrong game, missing file, broken file: play on, loudly (the caller logs it)
        fault = " ".join(str(exc).split()) or type(exc).__name__  # one line, whatever onnxruntime says
        return UniformEvaluator(game.info), f"{UNUSABLE} {path}: {fault}; {UNIFORM_PLAY}"
    evaluator, remark = with_precision(evaluator, options.precision)
    remark += with_uint8_planes(evaluator, game, options)
    return evaluator, f"network {path} on {evaluator.description}{remark}"


def with_uint8_planes(evaluator: OnnxEvaluator, game: Game, options: EngineOptions) -> str:
    """Let an int8 copy on the CPU take uint8 planes from the compiled trees that write them (shogi's:
    ``PlayProfile.uint8_planes``) through its uint8-planes model
    (:func:`~engine.network.uint8_planes_sibling`, ``OnnxEvaluator.accept_uint8_planes_file``): the
    network then skips quantizing every plane of a batch, about a fifth of a shogi call
    (``engine/uint8_io.py``), with the same outputs.  Returns a remark for the report (empty when there
    is nothing to use)."""
    if (
        not game.profile.uint8_planes
        or evaluator.metadata.precision != PRECISION_INT8
        or evaluator.provider != CPU
    ):
        return ""
    model = uint8_planes_sibling(evaluator.path)
    if not model.is_file():
        return ""
    try:
        accepted = evaluator.accept_uint8_planes_file(model)
    except Exception as exc:  # a broken file: float planes, loudly
        log.warning("cannot use the uint8-planes model %s: %s", model, exc)
        return f" (uint8-planes model {model.name} unusable)"
    if accepted is None:
        log.warning("%s was made from another int8 file: not used", model)
        return f" ({model.name} is stale: not used)"
    return f" (uint8 planes: {model.name})"


def with_precision(evaluator: OnnxEvaluator, precision: Precision) -> tuple[OnnxEvaluator, str]:
    """``evaluator``, or its network's int8 sibling (:func:`~engine.network.int8_sibling`) on the CPU when
    ``precision`` asks for it (``auto``: when the network runs on the CPU and the sibling exists), and a
    remark for the report when the request could not be met."""
    sibling = int8_sibling(evaluator.path)
    if precision == "fp32" or evaluator.metadata.precision == PRECISION_INT8:
        return evaluator, ""
    if evaluator.provider != CPU and precision == "auto":
        return evaluator, ""  # a GPU keeps float32
    if not sibling.is_file():
        return (
            evaluator,
            f" (no int8 network {sibling.name} beside it: float32)" if precision == "int8" else "",
        )
    try:
        int8 = OnnxEvaluator(sibling, evaluator.info, dataclasses.replace(evaluator.settings, backend="cpu"))
    except Exception as exc:  # a broken sibling: the float32 network plays, loudly
        log.warning("cannot use the int8 network %s: %s; float32", sibling, exc)
        return evaluator, f" (int8 network {sibling.name} unusable: float32)"
    evaluator.close()
    return int8, ""
