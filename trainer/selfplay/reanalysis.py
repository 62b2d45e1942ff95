"""Reanalysis: positions of the replay window searched again with the newest network.

Every position self-play stores is searched once, with the network of that moment, and its targets
never improve.  MuZero's Reanalyze (Schrittwieser et al. 2020, Appendix H) and dlshogi's re-evaluation
of stored games refresh old targets with a newer network instead.  Here a self-play worker spends a
share of its searches on that (``replay.reanalyse_share``): after each shard it writes, it picks
positions of the newest ``replay.window`` positions at random, rebuilds each from its game's moves (every
shard's metadata lists them), checks the rebuilt position encodes to the stored planes, searches it
with the same full-search settings self-play uses (:meth:`SelfPlayer.search_positions`), and writes the
new policy target and root value beside the shard (:mod:`trainer.store.overlays`).  The replay buffer
applies them (:class:`trainer.learn.replay.ReplayBuffer`): the policy target is replaced, and the value
target ``(1 - q_ratio) z + q_ratio q`` takes the new ``q``.

Design notes and the A/B: docs/experiments.md, "Reanalysis of the replay window".
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.games.base import Game, GameInfo, GameState
from trainer.config import RunConfig
from trainer.learn.replay import ReplayBuffer
from trainer.selfplay.player import SelfPlayer
from trainer.store.overlays import TargetOverlay, prune_overlays, write_overlay
from trainer.store.runfolder import RunFolder
from trainer.store.shards import Shard

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class StoredPosition:
    """A position of a shard: the shard, its row there, and the moves from the game's start to it."""

    shard: Shard
    row: int
    moves: tuple[str, ...]


def reanalysis_count(new_positions: int, share: float) -> int:
    """Positions to reanalyse for ``new_positions`` new ones, so that reanalyses are ``share`` of all
    positions searched: ``new * share / (1 - share)``, rounded."""
    if share <= 0.0 or new_positions <= 0:
        return 0
    return round(new_positions * share / (1.0 - share))


def pick_positions(shards: Sequence[Shard], count: int, rng: np.random.Generator) -> list[StoredPosition]:
    """``count`` positions drawn uniformly (with replacement) from those of ``shards`` that list their
    games' moves (shards written before the moves were kept are passed over)."""
    shards = [s for s in shards if isinstance(s.meta.get("moves"), list)]
    sizes = np.array([len(s) for s in shards], np.int64)
    if count <= 0 or sizes.sum() == 0:
        return []
    drawn = rng.integers(0, int(sizes.sum()), size=count)
    ends = np.cumsum(sizes)
    picked: list[StoredPosition] = []
    for index in drawn:
        k = int(np.searchsorted(ends, index, side="right"))
        shard = shards[k]
        row = int(index - (ends[k] - sizes[k]))
        game_moves = shard.meta["moves"][int(shard.arrays["game"][row])]
        ply = int(shard.arrays["ply"][row])
        picked.append(StoredPosition(shard, row, tuple(game_moves[:ply])))
    return picked


def rebuild(game: Game, stored: StoredPosition) -> GameState[Any] | None:
    """The position ``stored`` names, played from the start; ``None`` when the moves do not lead to a
    position with the stored planes and a move to make (a record that does not match its shard)."""
    state = game.new_state()
    try:
        for text in stored.moves:
            state.push(state.parse_move(text))
    except ValueError as e:
        log.warning("reanalysis: %s row %d: %s", stored.shard.path.name, stored.row, e)
        return None
    planes = stored.shard.decode_planes(np.array([stored.row]), game.info)[0]
    if state.outcome() is not None or not np.array_equal(state.encode(), planes):
        log.warning(
            "reanalysis: %s row %d: the moves do not give the stored position",
            stored.shard.path.name,
            stored.row,
        )
        return None
    return state


def reanalyse(
    player: SelfPlayer,
    shards: Sequence[Shard],
    count: int,
    out: Path,
    worker: int,
    rng: np.random.Generator,
    simulations: int | None = None,
    chunk: int | None = None,
) -> int:
    """Search ``count`` positions of ``shards`` again with ``player``'s network and write their new
    targets into ``out`` (one overlay file); returns the positions reanalysed.

    ``chunk`` positions are searched at once (``None``: the player's ``games_in_parallel``)."""
    game = player.game
    stored = pick_positions(shards, count, rng)
    rebuilt = [(s, state) for s in stored if (state := rebuild(game, s)) is not None]
    size = chunk or player.settings.games_in_parallel
    found: list[tuple[str, int, np.ndarray, np.ndarray, float]] = []
    for start in range(0, len(rebuilt), size):
        part = rebuilt[start : start + size]
        targets = player.search_positions([state for _, state in part], simulations)
        for (s, _), target in zip(part, targets, strict=True):
            found.append((s.shard.path.name, s.row, target.indices, target.pi, target.q))
    if found:
        overlay = TargetOverlay.build(
            found,
            network_step=player.network_step,
            simulations=simulations or player.settings.simulations,
            worker=worker,
        )
        write_overlay(out, overlay, worker)
    return len(rebuilt)


class WorkerReanalysis:
    """A self-play worker's reanalysis: after each shard of ``n`` new positions, reanalyse
    :func:`reanalysis_count` ``(n, share)`` positions of the run's replay window (kept loaded here, as
    the learner's replay buffer keeps it, and refreshed before each round)."""

    def __init__(self, folder: RunFolder, config: RunConfig, info: GameInfo, worker: int, seed: int) -> None:
        self.folder = folder
        self.share = config.replay.reanalyse_share
        self.simulations = config.replay.reanalyse_simulations
        self.worker = worker
        self.rng = np.random.default_rng(seed)
        self.window: ReplayBuffer | None = None
        if self.share > 0:
            self.window = ReplayBuffer(folder.shards, info, config.replay.window, augment=False)
        self.total = 0

    def after_shard(self, player: SelfPlayer, new_positions: int) -> int:
        """Reanalyse for a shard of ``new_positions``; returns how many positions were reanalysed."""
        count = reanalysis_count(new_positions, self.share)
        if count == 0 or self.window is None:
            return 0
        self.window.refresh()
        done = reanalyse(
            player, self.window.shards, count, self.folder.reanalysis, self.worker, self.rng, self.simulations
        )
        if self.window.shards:
            prune_overlays(self.folder.reanalysis, self.window.shards[0].path.name)
        self.total += done
        return done
