"""Benchmarks that print figures (``tabula bench ...``).  Figures, never assertions.

``rules``: per game, random-play plies/s (each ply generates the full legal-move list, plays a
uniformly random move and checks for the end of the game) and ``encode()`` calls/s along such games
(history maintained by push as the search does), beside the bare rules library in the same run.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable

from engine.games import Game, get_game


@dataclasses.dataclass(frozen=True)
class RulesFigures:
    """Figures of one game's rules benchmark."""

    label: str
    plies_per_s: float
    encodes_per_s: float
    games: int
    baseline_plies_per_s: float | None  # the bare library (python-chess / cshogi), same run


def random_play_plies_per_s(game: Game, seconds: float, seed: int = 0) -> tuple[float, int]:
    """Random games for ``seconds``: returns ``(plies per second, games started)``."""
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


def _bare_chess(seconds: float, seed: int = 0) -> float:
    import chess

    rng = random.Random(seed)
    plies = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        board = chess.Board()
        while True:
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            plies += 1
            if board.is_game_over(claim_draw=True) or board.ply() >= 512:
                break
    return plies / (time.perf_counter() - start)


def _bare_shogi(seconds: float, seed: int = 0) -> float:
    import cshogi

    rng = random.Random(seed)
    plies = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        board = cshogi.Board()
        while True:
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            plies += 1
            if board.is_draw() != cshogi.NOT_REPETITION or board.move_number > 512:
                break
    return plies / (time.perf_counter() - start)


BASELINES: dict[str, Callable[[float], float]] = {"chess": _bare_chess, "shogi": _bare_shogi}


def bench_rules(label: str, seconds: float = 3.0) -> RulesFigures:
    """Run the rules benchmark of one game label (``chess``, ``shogi``, ``go9``, ``go19``)."""
    game = get_game(label)
    rate, games = random_play_plies_per_s(game, seconds)
    enc = encodes_per_s(game, seconds)
    baseline = BASELINES.get(game.info.name)
    return RulesFigures(game.info.label, rate, enc, games, baseline(seconds) if baseline else None)
