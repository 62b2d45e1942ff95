"""Shared helpers of the trainer tests: real positions from random games, ``tabula-train`` arguments."""

from __future__ import annotations

import numpy as np

from engine.games import get_game
from trainer.store.shards import GameData, pack_position


def random_batch(info, n: int = 8, seed: int = 0):
    """A training ``Batch`` of ``n`` random positions of the game ``info``: binary planes, one-hot
    policies, results in {-1, 0, 1}."""
    from trainer.learn.replay import Batch

    rng = np.random.default_rng(seed)
    planes = (rng.random((n, *info.input_shape)) < 0.3).astype(np.float32)
    pi = np.zeros((n, info.policy_size), np.float32)
    pi[np.arange(n), rng.integers(0, info.policy_size, n)] = 1.0
    return Batch(planes, pi, rng.choice([-1.0, 0.0, 1.0], n).astype(np.float32))


def random_games(label: str, games: int, plies: int, seed: int = 0):
    """``(game, list of (GameData, raw list of (planes, indices, pi)))`` from random play."""
    game = get_game(label)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(games):
        state = game.new_state()
        packed, raw, players = [], [], []
        for _ply in range(plies):
            if state.outcome() is not None:
                break
            moves, indices = state.legal_moves_and_indices()
            k = min(len(moves), int(rng.integers(1, 6)))
            chosen = rng.choice(len(moves), k, replace=False)
            pi = rng.random(k).astype(np.float32)
            pi /= pi.sum()
            planes = state.encode()
            raw.append((planes.copy(), indices[chosen], pi))
            packed.append(pack_position(planes, indices[chosen], pi, state.ply))
            players.append(state.side_to_move)
            state.push(moves[int(rng.integers(len(moves)))])
        winner = int(rng.integers(0, 3))
        out.append((GameData(packed, players, None if winner == 2 else winner), raw))
    return game, out


def go5_args(command: str, out: object, *more: str) -> list[str]:
    """``tabula-train`` arguments of a tiny 5x5 Go run in ``out``: ``command --game go --size 5 --preset
    tiny --out OUT`` and ``more``."""
    return [command, "--game", "go", "--size", "5", "--preset", "tiny", "--out", str(out), *more]


def set_flags(items: list[str]) -> list[str]:
    """``--set`` before each ``section.key=value`` of ``items``."""
    return [x for item in items for x in ("--set", item)]
