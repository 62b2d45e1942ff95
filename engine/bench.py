"""Benchmarks that print figures (``tabula bench ...``).  Figures, never assertions.

``rules``: per game, random-play plies/s (each ply generates the full legal-move list, plays a
uniformly random move and checks for the end of the game) and ``encode()`` calls/s along such games
(history maintained by push as the search does), beside the bare rules library in the same run.
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from engine.evaluator import Evaluator
from engine.games import Game, GameState, get_game
from engine.inference import (
    CPU,
    Backend,
    InferenceSettings,
    OnnxEvaluator,
    Precision,
    UniformEvaluator,
    warm_up_network_thread,
)
from engine.inference.throughput import default_session_throughput, parallel_sessions_throughput
from engine.kernel_loading import reserve_search_memory, warm_up_rules, warm_up_search
from engine.network import uint8_planes_sibling
from engine.network_loading import inference_plan, with_precision, with_uint8_planes
from engine.options import EngineOptions
from engine.search.limits import SearchLimits
from engine.search.searcher import Searcher
from engine.search.time_manager import TimeBudget
from engine.search.tree_factory import new_tree
from weights import default_network


@dataclasses.dataclass(frozen=True)
class RulesFigures:
    """Figures of one game's rules benchmark."""

    label: str
    plies_per_s: float
    encodes_per_s: float
    games: int
    baseline_plies_per_s: float | None  # the bare library (python-chess / cshogi), same run


def random_play_plies_per_s(game: Game, seconds: float, seed: int = 0) -> tuple[float, int]:
    """Random games for ``seconds``: returns ``(plies per second, games started)``.

    The bare-library baselines below do the same with the library alone: python-chess with its own
    ``is_game_over()`` (fivefold repetition, 75-move rule, no claims), cshogi with ``is_draw()``.
    """
    rng = random.Random(seed)
    plies = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        state = game.new_state()
        games += 1
        while True:
            moves = state.legal_moves()
            if not moves:
                break
            state.push(rng.choice(moves))
            plies += 1
            if state.outcome() is not None:
                break
    return plies / (time.perf_counter() - start), games


def encodes_per_s(game: Game, seconds: float, seed: int = 1) -> float:
    """``encode()`` calls per second at every ply of random games (move generation not timed)."""
    rng = random.Random(seed)
    calls = 0
    spent = 0.0
    while spent < seconds:
        state = game.new_state()
        while True:
            moves = state.legal_moves()
            if not moves or state.outcome() is not None:
                break
            state.push(rng.choice(moves))
            t = time.perf_counter()
            state.encode()
            spent += time.perf_counter() - t
            calls += 1
    return calls / spent


def bench_rules(label: str, seconds: float = 3.0) -> RulesFigures:
    """Run the rules benchmark of one game label (``chess``, ``shogi``, ``go9``, ``go19``)."""
    game = get_game(label)
    rate, games = random_play_plies_per_s(game, seconds)
    enc = encodes_per_s(game, seconds)
    return RulesFigures(game.info.label, rate, enc, games, game.library_playout_rate(seconds))


# ---- search benchmark (`tabula bench`) -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NetworkAlone:
    """What the machine gives a network alone, evaluations a second, the same batch and precision.

    Attributes:
        default_session: onnxruntime's default session called back to back
            (:func:`~engine.inference.throughput.default_session_throughput`).
        side_by_side: one one-thread call a core side by side
            (:func:`~engine.inference.throughput.parallel_sessions_throughput`: what ``Threads 0`` runs; a
            small network's call does not divide well among threads); ``None`` off the CPU or on one core.
    """

    default_session: float
    side_by_side: float | None

    @property
    def best(self) -> float:
        return max(self.default_session, self.side_by_side or 0.0)

    def better(self, other: NetworkAlone) -> NetworkAlone:
        """Each figure's higher of two measurements."""
        side = [x for x in (self.side_by_side, other.side_by_side) if x is not None]
        return NetworkAlone(max(self.default_session, other.default_session), max(side) if side else None)


@dataclasses.dataclass(frozen=True)
class SearchFigures:
    """Figures of one game's search benchmark (sums over its fixed positions)."""

    label: str
    evaluator: str
    nodes: int
    seconds: float
    evaluations: int
    alone: NetworkAlone | None

    @property
    def nodes_per_s(self) -> float:
        return self.nodes / self.seconds

    @property
    def evals_per_s(self) -> float:
        return self.evaluations / self.seconds

    @property
    def of_default_session(self) -> float | None:
        """Network evaluations/s during the search over the same network's in onnxruntime's default
        session, same batch and precision."""
        return self.evals_per_s / self.alone.default_session if self.alone else None

    @property
    def share(self) -> float | None:
        """Network evaluations/s during the search over the best the machine gives the same network alone
        (:attr:`NetworkAlone.best`): the share of the hardware that the engine uses."""
        return self.evals_per_s / self.alone.best if self.alone else None


def bench_search(
    label: str,
    nodes: int,
    evaluator_kind: str = "onnx",
    net: str | None = None,
    batch_size: int = 16,
    threads: int = 0,
    raw_seconds: float = 3.0,
    precision: Precision = "auto",
    backend: Backend = "auto",
    repeat: int = 1,
    pin_host_memory: bool | None = None,
) -> SearchFigures:
    """Search each fixed position of ``label`` for ``nodes`` playouts (fresh tree, no cache) and time it.

    ``repeat``: searches of each position (each on a fresh tree, the same work: a fixed node count);
    its fastest is the position's time, as ``timeit`` takes the fastest of its repeats: on a shared
    machine the other tenants only ever add time (a search can vary by half between runs there).  The
    machine's figures (the network alone, :func:`machine_throughput`) are likewise the best of ``2 * repeat`` windows of
    ``raw_seconds / (2 * repeat)``, half before the searches and half after.

    ``evaluator_kind``: ``onnx`` (``net`` or the shipped default) or ``uniform`` (the search alone).
    ``precision``: which copy of the network runs, as the engine chooses it (``auto``: the int8
    sibling on the CPU, :func:`engine.network_loading.with_precision`).
    ``backend``: the execution provider to ask for, as the engine's ``Backend`` option (``auto``:
    TensorRT, then CUDA, then the CPU, whichever really works).
    ``pin_host_memory``: ``InferenceSettings.pin_host_memory`` (``None``: on for GPU providers).
    The compiled tree's kernels are loaded before the clock starts, as the engine loads them before its first search, and so is what
    a ruleset loads on first use (shogi's kernels, loaded before ``readyok``).
    """
    game = get_game(label)
    warm_up_rules(game)
    options = EngineOptions()
    warm_up_search(game)
    # The engine claims its tree memory at isready (default Hash), before the first search.
    reserve_search_memory(game, _bench_state(game, *game.bench_positions[0]), options)
    evaluator = _bench_evaluator(game, evaluator_kind, net, batch_size, threads, backend, pin_host_memory)
    if isinstance(evaluator, OnnxEvaluator):
        evaluator, _ = with_precision(evaluator, precision)
        with_uint8_planes(evaluator, game, options)  # as the engine: shogi's int8 copy takes uint8 planes
    # The machine's figure is measured before and after the searches, in ``repeat`` windows each
    # (together ``raw_seconds``), and the highest kept, as the searches keep their fastest: a busy
    # moment on the machine flatters neither side of the share.
    uniform = isinstance(evaluator, UniformEvaluator)
    windows = max(1, repeat)
    window = raw_seconds / (2 * windows)
    reference = None if uniform else _reference_model(evaluator)
    alone = None if reference is None else _network_alone(reference, batch_size, window, windows)
    total_nodes, total_time, total_evals, kind = _search_bench_positions(
        game, evaluator, nodes, dataclasses.replace(options, batch_size=batch_size, threads=threads), repeat
    )
    if reference is not None and alone is not None:
        alone = alone.better(_network_alone(reference, batch_size, window, windows))
    name = f"{'uniform' if uniform else evaluator.description}, {kind}"
    evaluator.close()
    return SearchFigures(game.info.label, name, total_nodes, total_time, total_evals, alone)


def machine_throughput(path: Path, provider: str, batch_size: int, seconds: float) -> NetworkAlone:
    """What the machine gives the network at ``path`` alone (:class:`NetworkAlone`), ``seconds`` split
    between the two ways of running it (only the default session off the CPU or on one core)."""
    cores = os.cpu_count() or 1
    if provider != CPU or cores < 2:
        return NetworkAlone(default_session_throughput(path, provider, batch_size, seconds), None)
    half = seconds / 2
    return NetworkAlone(
        default_session_throughput(path, provider, batch_size, half),
        parallel_sessions_throughput(path, provider, batch_size, cores, half),
    )


def _network_alone(reference: tuple[Path, str], batch_size: int, window: float, windows: int) -> NetworkAlone:
    """The best of ``windows`` measurements of :func:`machine_throughput`, each figure's own best."""
    best = machine_throughput(*reference, batch_size, window)
    for _ in range(windows - 1):
        best = best.better(machine_throughput(*reference, batch_size, window))
    return best


def _reference_model(evaluator: Evaluator) -> tuple[Path, str] | None:
    """The model file that runs ``evaluator``'s calls and its provider (shogi's uint8-planes model where
    the compiled tree hands it uint8 planes); ``None`` for an evaluator without an ONNX model."""
    if not isinstance(evaluator, OnnxEvaluator):
        return None
    path = uint8_planes_sibling(evaluator.path) if evaluator.runs_uint8_planes else evaluator.path
    return path, evaluator.provider


def _bench_evaluator(
    game: Game,
    evaluator_kind: str,
    net: str | None,
    batch_size: int,
    threads: int,
    backend: Backend = "auto",
    pin_host_memory: bool | None = None,
) -> OnnxEvaluator | UniformEvaluator:
    """The evaluator of a search benchmark: uniform priors, or ``net`` (default: the shipped network)."""
    if evaluator_kind == "uniform":
        return UniformEvaluator(game.info)
    path = net or default_network(game.info.label)
    if path is None:
        raise FileNotFoundError(f"no network for {game.info.label}: pass --net")
    settings = InferenceSettings(
        threads=inference_plan(threads).threads,
        batch_size=batch_size,
        backend=backend,
        pin_host_memory=pin_host_memory,
    )
    return OnnxEvaluator(path, game.info, settings)


def _bench_state(game: Game, text: str | None, moves: Sequence[str]) -> GameState[Any]:
    """A bench position: the start text (``None``/empty: the initial position) and moves played."""
    state = game.state_from_text(text) if text else game.new_state()
    for token in moves:
        state.push(state.parse_move(token))
    return state


def _search_bench_positions(
    game: Game, evaluator: Evaluator, nodes: int, options: EngineOptions, repeat: int = 1
) -> tuple[int, float, int, str]:
    """Search every bench position of ``game`` for ``nodes`` playouts with the engine's settings
    ``options`` (its search config: the node budget of its ``Hash``, for which the tree's memory was
    reserved), ``repeat`` times each: ``(nodes, seconds, evaluations, the tree's class name)`` summed
    over the positions, each position's figures from its fastest search."""
    config = options.search_config(game)
    total_nodes = total_evals = 0
    total_time = 0.0
    kind = ""
    plan = inference_plan(options.threads)
    calls = plan.calls
    with ThreadPoolExecutor(max_workers=plan.helpers(evaluator.shares_cores)) as executor:
        warm_up_network_thread(evaluator, executor)  # as the engine does at load (on a GPU)
        for text, moves in game.bench_positions:
            state = _bench_state(game, text, moves)
            fastest: tuple[float, int, int] | None = None
            for _ in range(max(1, repeat)):
                budget = TimeBudget(None, None, False)
                quantization = getattr(evaluator, "planes_quantization", None)
                tree = new_tree(state, config, quantization=quantization)
                kind = type(tree).__name__
                searcher = Searcher(
                    tree,
                    evaluator,
                    SearchLimits(nodes=nodes),
                    budget,
                    executor=executor,
                    calls_in_flight=calls,
                )
                start = time.perf_counter()
                result = searcher.run()
                seconds = time.perf_counter() - start
                if fastest is None or seconds < fastest[0]:
                    fastest = (seconds, result.info.nodes, result.info.evaluations)
                del searcher, tree  # as the engine does: its arrays go to the next position's tree
            assert fastest is not None
            total_time += fastest[0]
            total_nodes += fastest[1]
            total_evals += fastest[2]
    return total_nodes, total_time, total_evals, kind
