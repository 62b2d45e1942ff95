"""Probes of what a network has learned, without search: losses on a fixed held-out set of positions,
and how often the raw policy finds a mate in one.

* Held-out set: ``RUN/heldout/*.npz``, shards of self-play games that the learner never trained on (made
  once by ``tabula-train probe`` with the newest network and a seed of its own, then kept fixed, so every
  network is measured on the same positions).  Losses as in training: ``(z - v)^2`` and
  ``-pi . log softmax(logits)`` over all policy entries.  Two networks are compared position by position,
  with a 95% interval bootstrapped over the games (a game's positions share one result).
* Mate-in-one set: positions reached by seeded random play in which the side to move has a move that
  ends the game with a win (``checkmate``; in shogi also a legal pawn-drop-free mate), found by trying
  every legal move.  The raw policy "solves" a position when its most probable legal move mates.

Only numpy and onnxruntime (through the engine's ``OnnxEvaluator``): no torch.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.evaluator import Evaluator
from engine.games.base import Game, GameInfo, GameState
from engine.games.chess import ChessState
from engine.inference import OnnxEvaluator
from trainer.config import make_game
from trainer.selfplay.player import SelfPlayer
from trainer.selfplay.worker import load_evaluator, shard_payload
from trainer.store.runfolder import RunFolder
from trainer.store.shards import Shard, list_shards, write_shard


@dataclasses.dataclass(frozen=True)
class MateProbe:
    """A position (as moves from the start) and the policy indices of its mating moves."""

    moves: tuple[str, ...]
    mates: frozenset[int]


def mate_in_one_positions(
    game: Game, count: int, seed: int = 0, max_plies: int = 200, max_games: int = 20000
) -> list[MateProbe]:
    """``count`` distinct positions with a mate in one, from seeded random games."""
    rng = np.random.default_rng(seed)
    found: list[MateProbe] = []
    seen: set[Any] = set()
    for _ in range(max_games):
        if len(found) >= count:
            break
        state = game.new_state()
        texts: list[str] = []
        for _ply in range(max_plies):
            if state.outcome() is not None:
                break
            moves, indices = state.legal_moves_and_indices()
            mates = _mating_indices(state, moves, indices)
            if mates and state.key() not in seen:
                seen.add(state.key())
                found.append(MateProbe(tuple(texts), frozenset(mates)))
                break  # one position per game: more variety
            move = moves[int(rng.integers(len(moves)))]
            texts.append(state.move_to_text(move))
            state.push(move)
    return found


def _mating_indices(state: GameState[Any], moves: Sequence[Any], indices: np.ndarray) -> list[int]:
    mates = []
    if isinstance(state, ChessState):  # only checking moves can mate: python-chess tells cheaply
        board = state.board.copy(stack=False)
        for move, index in zip(moves, indices, strict=True):
            if board.gives_check(move):
                board.push(move)
                if board.is_checkmate():
                    mates.append(int(index))
                board.pop()
        return mates
    for move, index in zip(moves, indices, strict=True):
        state.push(move)
        outcome = state.outcome()
        state.pop()
        if outcome is not None and outcome.value < 0 and outcome.reason == "checkmate":
            mates.append(int(index))
    return mates


def policy_mate_rate(evaluator: Evaluator, game: Game, probes: Sequence[MateProbe]) -> float:
    """Fraction of ``probes`` whose most probable legal move (raw policy) is a mate."""
    if not probes:
        return float("nan")
    planes, legal = [], []
    for probe in probes:
        state = game.new_state()
        for text in probe.moves:
            state.push(state.parse_move(text))
        planes.append(state.encode())
        legal.append(state.legal_moves_and_indices()[1])
    evaluations = evaluator.evaluate(np.stack(planes), legal)
    solved = sum(
        int(legal[i][int(np.argmax(ev.priors))]) in probe.mates
        for i, (ev, probe) in enumerate(zip(evaluations, probes, strict=True))
    )
    return solved / len(probes)


@dataclasses.dataclass(frozen=True)
class HeldoutErrors:
    """Per-position results of a network on the held-out set, all ``[N]``: its value ``v``, the result
    ``z``, the policy cross-entropy, and the game each position is from."""

    values: np.ndarray
    results: np.ndarray
    policy_errors: np.ndarray
    games: np.ndarray

    @property
    def value_errors(self) -> np.ndarray:
        """``[N]``: the squared value errors ``(v - z)^2``."""
        errors: np.ndarray = (self.values - self.results) ** 2
        return errors

    def summary(self) -> dict[str, float]:
        """Mean value and policy losses (and the positions and games counted), with two yardsticks for the value: ``zero_value_loss`` (the loss
        of a value that always says 0, the mean of ``z^2``) and ``value_corr`` (Pearson correlation of
        ``v`` with ``z``; 0 when either is constant)."""
        n = len(self.values)
        v, z = self.values, self.results
        corr = float(np.corrcoef(v, z)[0, 1]) if n > 1 and v.std() > 0 and z.std() > 0 else 0.0
        return {
            "value_loss": float(self.value_errors.mean()) if n else 0.0,
            "policy_loss": float(self.policy_errors.mean()) if n else 0.0,
            "positions": n,
            "games": len(np.unique(self.games)),
            "zero_value_loss": float((z**2).mean()) if n else 0.0,
            "value_corr": corr,
        }


def heldout_errors(evaluator: OnnxEvaluator, shards: Sequence[Shard], info: GameInfo) -> HeldoutErrors:
    """Run a network (raw outputs, no search) over every position of ``shards``."""
    values: list[np.ndarray] = []
    results: list[np.ndarray] = []
    policy: list[np.ndarray] = []
    games: list[np.ndarray] = []
    for number, shard in enumerate(shards):
        rows = np.arange(len(shard))
        games.append(number * 2**32 + shard.arrays["game"].astype(np.int64))
        for start in range(0, len(rows), 256):
            part = rows[start : start + 256]
            planes = shard.decode_planes(part, info)
            pi = shard.decode_policy(part, info.policy_size)
            raw = evaluator.run(planes)
            logits = raw.policy.astype(np.float64)
            logits -= logits.max(axis=1, keepdims=True)
            log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
            policy.append(-(pi * log_p).sum(axis=1))
            values.append(np.asarray(raw.value, np.float64).reshape(-1))
            results.append(np.asarray(shard.arrays["z"][part], np.float64).reshape(-1))

    def join(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    return HeldoutErrors(
        join(values, np.float64), join(results, np.float64), join(policy, np.float64), join(games, np.int64)
    )


def paired_difference(
    a: np.ndarray, b: np.ndarray, groups: np.ndarray, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of ``a - b`` (``[N]`` each, per position) and its 95% interval, bootstrapped over ``groups``
    (``[N]``, the games: positions of one game are not independent)."""
    _, group = np.unique(groups, return_inverse=True)
    sums = np.bincount(group, weights=a - b)
    counts = np.bincount(group).astype(np.float64)
    picks = np.random.default_rng(seed).integers(0, len(sums), size=(resamples, len(sums)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(sums.sum() / counts.sum()), float(low), float(high)


def compare_with_first(errors: HeldoutErrors, first: HeldoutErrors) -> dict[str, float]:
    """A network's held-out losses minus the first network's, position by position, with their 95%
    intervals bootstrapped over the games (:func:`paired_difference`): ``value_diff``,
    ``value_diff_low``, ``value_diff_high`` and the same for ``policy_diff``."""
    value = paired_difference(errors.value_errors, first.value_errors, errors.games)
    policy = paired_difference(errors.policy_errors, first.policy_errors, errors.games)
    return {
        "value_diff": value[0],
        "value_diff_low": value[1],
        "value_diff_high": value[2],
        "policy_diff": policy[0],
        "policy_diff_low": policy[1],
        "policy_diff_high": policy[2],
    }


def ensure_heldout(root: str | os.PathLike[str], games: int, seed: int = 424242) -> list[Path]:
    """The run's held-out shards, made once with its newest network (self-play, resignation off)."""
    folder = RunFolder(root)
    heldout = folder.root / "heldout"
    existing = list_shards(heldout)
    if existing:
        return existing
    config = folder.read_config()
    game = make_game(config.game)
    settings = dataclasses.replace(
        config.selfplay, resign_threshold=None, games_in_parallel=min(games, 32), playout_cap=False
    )
    evaluator = load_evaluator(folder.latest, game.info, settings)
    player = SelfPlayer(game, settings, evaluator, seed=seed, network_step=evaluator.metadata.step)
    finished = player.play_games(games)
    player.close()
    arrays, meta, _ = shard_payload(finished, game.info, config.game, worker=0, heldout=True)
    path = heldout / "heldout.npz"
    write_shard(path, arrays, meta)
    return [path]
