"""Probes of what a network has learned, without search: losses on a fixed held-out set of positions,
and how often the raw policy finds a mate in one.

* Held-out set: ``RUN/heldout/*.npz``, shards of self-play games that the learner never trained on (made
  once by ``tabula-train probe`` with the newest network and a seed of its own, then kept fixed, so every
  network is measured on the same positions).  Losses as in training: ``(z - v)^2`` and
  ``-pi . log softmax(logits)`` over all policy entries.
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

from engine.games.base import Game, GameState


@dataclasses.dataclass(frozen=True)
class MateProbe:
    """A position (as moves from the start) and the policy indices of its mating moves."""

    moves: tuple[str, ...]
    mates: frozenset[int]


def mate_in_one_positions(game: Game, count: int, seed: int = 0, max_plies: int = 200,
                          max_games: int = 20000) -> list[MateProbe]:
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
    if state.info.name == "chess":  # only checking moves can mate: python-chess tells cheaply
        board = state.board.copy(stack=False)  # type: ignore[attr-defined]
        for move, index in zip(moves, indices):
            if board.gives_check(move):
                board.push(move)
                if board.is_checkmate():
                    mates.append(int(index))
                board.pop()
        return mates
    for move, index in zip(moves, indices):
        state.push(move)
        outcome = state.outcome()
        state.pop()
        if outcome is not None and outcome.value < 0 and outcome.reason == "checkmate":
            mates.append(int(index))
    return mates


def policy_mate_rate(evaluator, game: Game, probes: Sequence[MateProbe]) -> float:
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
    solved = sum(int(legal[i][int(np.argmax(ev.priors))]) in probe.mates
                 for i, (ev, probe) in enumerate(zip(evaluations, probes)))
    return solved / len(probes)


def heldout_losses(evaluator, shards: Sequence[Any], info) -> dict[str, float]:
    """Mean value loss and policy loss of a network (raw outputs) on the positions of ``shards``, with
    two yardsticks for the value: ``zero_value_loss`` (the loss of a value that always says 0, the mean
    of ``z^2``) and ``value_corr`` (Pearson correlation of ``v`` with ``z``; 0 when either is constant)."""
    policy_sum = 0.0
    n = 0
    values: list[np.ndarray] = []
    results: list[np.ndarray] = []
    for shard in shards:
        rows = np.arange(len(shard))
        for start in range(0, len(rows), 256):
            part = rows[start : start + 256]
            planes = shard.decode_planes(part, info)
            pi = shard.decode_policy(part, info.policy_size)
            z = shard.arrays["z"][part]
            raw = evaluator.run(planes)
            logits = raw.policy.astype(np.float64)
            logits -= logits.max(axis=1, keepdims=True)
            log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
            policy_sum += float(-(pi * log_p).sum())
            values.append(np.asarray(raw.value, np.float64).reshape(-1))
            results.append(np.asarray(z, np.float64).reshape(-1))
            n += len(part)
    v = np.concatenate(values) if values else np.zeros(0)
    z_all = np.concatenate(results) if results else np.zeros(0)
    corr = 0.0
    if n > 1 and v.std() > 0 and z_all.std() > 0:
        corr = float(np.corrcoef(v, z_all)[0, 1])
    return {"value_loss": float(((v - z_all) ** 2).mean()) if n else 0.0, "policy_loss": policy_sum / max(1, n),
            "positions": n, "zero_value_loss": float((z_all ** 2).mean()) if n else 0.0, "value_corr": corr}


def ensure_heldout(root: str | os.PathLike[str], games: int, seed: int = 424242) -> list[Path]:
    """The run's held-out shards, made once with its newest network (self-play, resignation off)."""
    import dataclasses as dc

    from trainer.config import make_game
    from trainer.runfolder import RunFolder
    from trainer.selfplay import SelfPlayer
    from trainer.shards import list_shards, write_shard
    from trainer.worker import load_evaluator, shard_payload

    folder = RunFolder(root)
    heldout = folder.root / "heldout"
    existing = list_shards(heldout)
    if existing:
        return existing
    config = folder.read_config()
    game = make_game(config.game)
    settings = dc.replace(config.selfplay, resign_threshold=None, games_in_parallel=min(games, 32),
                          playout_cap=False)
    evaluator = load_evaluator(folder.latest, game.info, settings)
    player = SelfPlayer(game, settings, evaluator, seed=seed, network_step=evaluator.metadata.step)
    finished = player.play_games(games)
    player.close()
    arrays, meta, _ = shard_payload(finished, game.info, config.game, worker=0, heldout=True)
    path = heldout / "heldout.npz"
    write_shard(path, arrays, meta)
    return [path]
