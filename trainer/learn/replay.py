"""The replay window: the newest ``window`` positions of the run's shards, sampled uniformly (or with
positions whose root the search proved won weighted up, ``proven_weight``).

Shards stay in their compact form in memory (:class:`~trainer.store.shards.Shard`); a batch is decoded on
demand.  Go samples are transformed by one of the 8 board symmetries at random (planes and policy with
the same permutation, :mod:`engine.games.go_symmetry`); chess and shogi are not symmetric.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import numpy as np

from engine.games.base import GameInfo
from engine.games.go_symmetry import symmetry_planes, symmetry_policy
from trainer.config import RunConfig
from trainer.store.overlays import OverlayError, list_overlays, read_overlay
from trainer.store.shards import Shard, ShardError, list_shards, read_shard, read_shard_meta

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Batch:
    """One training batch: ``planes [B, C, H, W]``, ``pi [B, P]``, ``z [B]`` (float32; the value target,
    the game result or its mix with the search value, see :class:`ReplayBuffer`), ``result [B]``
    (the game result itself, for the WDL head; ``None``: the same as ``z``) and ``value_weight [B]``
    (importance weights of the value terms, mean 1 over the window, undoing ``proven_weight``'s
    sampling so that only the policy sees proven positions more often; ``None``: all 1).

    Go's auxiliary targets, ``None`` when no sampled position has them: ``ownership [B, N*N]`` (each
    point's final owner from the side to move, in [-1, 1]), ``score [B]`` (the final margin in points
    from the side to move) and ``has_auxiliary [B]`` (bool: the position's shard recorded them; the
    other rows are zeros and left out of those losses)."""

    planes: np.ndarray
    pi: np.ndarray
    z: np.ndarray
    result: np.ndarray | None = None
    value_weight: np.ndarray | None = None
    ownership: np.ndarray | None = None
    score: np.ndarray | None = None
    has_auxiliary: np.ndarray | None = None

    def aux_mask(self) -> np.ndarray:
        """float32 ``[B]``: 1 for the positions with auxiliary targets, 0 for the others."""
        if self.has_auxiliary is None:
            return np.zeros(len(self.z), np.float32)
        return self.has_auxiliary.astype(np.float32)


class ReplayBuffer:
    """The newest ``window`` positions of a folder of shards.

    Args:
        folder: the shard folder (read-only here).
        info: the game's :class:`GameInfo` (shards for anything else are refused).
        window: positions kept.
        augment: apply random Go symmetries to samples.
        q_ratio: value target ``(1 - q_ratio) z + q_ratio q``: the game result mixed with the search's root
            value (Leela's q-ratio; 0 is AlphaZero's target).
        proven_weight: sampling weight of the positions whose root the search proved won (a mate found:
            their policy target is the mating move alone) against 1 for every other position; 1 samples
            uniformly, as the paper does.  The value terms are importance-weighted back to uniform
            (``Batch.value_weight``): the policy sees the mates more often, the value learns from the
            window as it is.
        overlays: the run's ``reanalysis/`` folder (:mod:`trainer.store.overlays`): a reanalysed
            position's policy target and ``q`` are its newest reanalysis's, not self-play's (``None``:
            the shards' own targets only).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        info: GameInfo,
        window: int,
        augment: bool = True,
        q_ratio: float = 0.0,
        proven_weight: float = 1.0,
        overlays: str | os.PathLike[str] | None = None,
    ):
        if not 0.0 <= q_ratio <= 1.0:
            raise ValueError(f"q_ratio must be in [0, 1], got {q_ratio}")
        if not proven_weight >= 1.0:
            raise ValueError(f"proven_weight must be at least 1, got {proven_weight}")
        self.q_ratio = float(q_ratio)
        self.proven_weight = float(proven_weight)
        self._proven: np.ndarray | None = None  # global indices of the proven positions in the window
        self.folder = Path(folder)
        self.info = info
        self.window = int(window)
        self.augment = augment and info.name == "go"
        self.shards: list[Shard] = []
        self._seen: set[str] = set()
        self.total_positions = 0  # every position ever loaded (the window only keeps the newest)
        self.total_games = 0
        self.total_cpu_seconds = 0.0  # self-play CPU time the loaded shards record (worker processes)
        self.total_reanalysed = 0  # positions reanalysed, as the loaded shards' metadata counts them
        self.overlays = None if overlays is None else Path(overlays)
        #: shard name -> row -> (policy indices [E], shares [E], q): the newest reanalysed targets
        self.targets: dict[str, dict[int, tuple[np.ndarray, np.ndarray, float]]] = {}
        self._overlays_seen: set[str] = set()

    @classmethod
    def for_run(
        cls,
        folder: str | os.PathLike[str],
        info: GameInfo,
        config: RunConfig,
        overlays: str | os.PathLike[str] | None = None,
    ) -> ReplayBuffer:
        """The replay window of a run's shard folder, as its settings (``replay``, ``train.q_ratio``) say,
        with the reanalysed targets of ``overlays``."""
        return cls(
            folder,
            info,
            config.replay.window,
            config.replay.augment,
            config.train.q_ratio,
            config.replay.proven_weight,
            overlays,
        )

    def carry(self, positions: int, games: int) -> None:
        """Count positions and games the run produced before but whose shards are not here (a run
        resumed from a pack on another machine): they still count for the sample ratio, never for
        sampling."""
        self.total_positions += max(0, int(positions))
        self.total_games += max(0, int(games))

    # ---- loading ---------------------------------------------------------------------------------------
    def refresh(self) -> int:
        """Load shards that appeared since the last call; returns how many positions were added."""
        new = [p for p in list_shards(self.folder) if p.name not in self._seen]
        loaded: list[Shard] = []
        counted = 0  # positions of shards too old for the window: only their metadata is read
        games = 0
        have = 0
        for path in reversed(new):  # newest first: load until the window is covered
            self._seen.add(path.name)
            try:
                if have < self.window:
                    shard = read_shard(path, self.info)
                    loaded.append(shard)
                    have += len(shard)
                else:
                    meta = read_shard_meta(path)
                    counted += int(meta.get("positions", 0))
                    games += int(meta.get("games", 0))
                    self.total_cpu_seconds += float(meta.get("cpu_seconds", 0.0))
                    self.total_reanalysed += int(meta.get("reanalysed", 0))
            except ShardError as e:
                log.warning("skipping shard: %s", e)
        self.total_positions += counted
        self.total_games += games
        for shard in reversed(loaded):
            self.add(shard)
        self.load_overlays()
        return have + counted

    def load_overlays(self) -> int:
        """Apply the overlay files that appeared since the last call to the shards held (in name order:
        a later reanalysis of a position replaces an earlier one); returns the positions applied.
        Positions of shards no longer held are passed over; unreadable files with a warning."""
        if self.overlays is None:
            return 0
        held = {s.path.name: len(s) for s in self.shards}
        applied = 0
        for path in list_overlays(self.overlays):
            if path.name in self._overlays_seen:
                continue
            self._overlays_seen.add(path.name)
            try:
                overlay = read_overlay(path)
            except OverlayError as e:
                if path.exists():  # else a worker pruned it (older than the window) while it was listed
                    log.warning("skipping overlay: %s", e)
                continue
            for name, row, k in overlay.positions():
                if 0 <= row < held.get(name, 0):
                    self.targets.setdefault(name, {})[row] = overlay.target(k)
                    applied += 1
        return applied

    def add(self, shard: Shard) -> None:
        """Append a shard (newest last) and drop shards that fell wholly out of the window."""
        self.shards.append(shard)
        self._proven = None
        self.total_positions += len(shard)
        self.total_games += int(shard.meta.get("games", 0))
        self.total_cpu_seconds += float(shard.meta.get("cpu_seconds", 0.0))
        self.total_reanalysed += int(shard.meta.get("reanalysed", 0))
        while len(self.shards) > 1 and self.size - len(self.shards[0]) >= self.window:
            dropped = self.shards.pop(0)
            self.targets.pop(dropped.path.name, None)

    @property
    def size(self) -> int:
        """Positions held (may exceed ``window`` by part of the oldest shard, which is not sampled)."""
        return sum(len(s) for s in self.shards)

    @property
    def available(self) -> int:
        """Positions that can be sampled: ``min(size, window)``."""
        return min(self.size, self.window)

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.shards)

    @property
    def proven_indices(self) -> np.ndarray:
        """int64 ``[K]``: global indices of the sampled positions whose root the search proved won."""
        if self._proven is None:
            starts = np.cumsum([0] + [len(s) for s in self.shards])[:-1]
            rows = [shard.proven_rows + start for shard, start in zip(self.shards, starts, strict=True)]
            found = np.concatenate(rows) if rows else np.empty(0, np.int64)
            self._proven = found[found >= self.size - self.available]
        return self._proven

    @property
    def weighs_proven(self) -> bool:
        """Whether sampling departs from uniform: a weight above 1 and proven positions to weigh."""
        return self.proven_weight != 1.0 and len(self.proven_indices) > 0

    # ---- sampling --------------------------------------------------------------------------------------
    def sample_indices(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` indices drawn with replacement from the newest ``window`` positions, as positions
        counted from the oldest held position: uniformly, or each proven position ``proven_weight``
        times as likely as any other (a uniform draw, replaced by a proven position with probability
        ``(w - 1) K / (A + (w - 1) K)`` for ``K`` proven positions among ``A``)."""
        if self.available == 0:
            raise ValueError("the replay buffer is empty")
        start = self.size - self.available
        indices = rng.integers(start, self.size, size=count)
        if not self.weighs_proven:
            return indices
        proven = self.proven_indices
        extra = (self.proven_weight - 1.0) * len(proven)
        replace = rng.random(count) < extra / (self.available + extra)
        indices[replace] = proven[rng.integers(0, len(proven), size=int(replace.sum()))]
        return indices

    def locate(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Map global indices to ``(shard number, row)``."""
        ends = np.cumsum([len(s) for s in self.shards])
        shard_ids = np.searchsorted(ends, indices, side="right")
        starts = ends - np.array([len(s) for s in self.shards])
        return shard_ids, indices - starts[shard_ids]

    def sample(self, count: int, rng: np.random.Generator) -> Batch:
        """A batch of ``count`` sampled positions (augmented for Go; with value weights when proven
        positions are weighted up)."""
        indices = self.sample_indices(count, rng)
        batch = self.gather(indices, rng)
        if self.weighs_proven:
            batch.value_weight = self.value_weights(indices)
        return batch

    def value_weights(self, indices: np.ndarray) -> np.ndarray:
        """float32 ``[len(indices)]``: importance weights ``p_uniform / p_sampled`` of the positions at
        ``indices``: ``(A + (w - 1) K) / A`` for a position sampled at weight 1, that divided by ``w`` for a
        proven one.  Weighted so, the value loss of a batch estimates the uniform window's."""
        proven = self.proven_indices
        scale = (self.available + (self.proven_weight - 1.0) * len(proven)) / self.available
        is_proven = np.isin(np.asarray(indices, np.int64), proven)
        return np.where(is_proven, scale / self.proven_weight, scale).astype(np.float32)

    def gather(self, indices: np.ndarray, rng: np.random.Generator | None = None) -> Batch:
        """The positions at global ``indices`` (augmented for Go when ``rng`` is given)."""
        info = self.info
        shard_ids, rows = self.locate(np.asarray(indices, np.int64))
        planes = np.empty((len(indices), *info.input_shape), np.float32)
        pi = np.empty((len(indices), info.policy_size), np.float32)
        z = np.empty(len(indices), np.float32)
        result = np.empty(len(indices), np.float32)
        points = info.board_size * info.board_size
        ownership: np.ndarray | None = np.zeros((len(indices), points), np.float32)
        score = np.zeros(len(indices), np.float32)
        has_auxiliary = np.zeros(len(indices), bool)
        for s in np.unique(shard_ids):
            where = np.flatnonzero(shard_ids == s)
            shard = self.shards[int(s)]
            planes[where] = shard.decode_planes(rows[where], info)
            pi[where] = shard.decode_policy(rows[where], info.policy_size)
            result[where] = shard.arrays["z"][rows[where]]
            q = shard.arrays["q"][rows[where]]
            newer = self.targets.get(shard.path.name)
            if newer:
                q = q.copy()
                for k, row in enumerate(rows[where].tolist()):
                    target = newer.get(row)
                    if target is not None:
                        indices, shares, q[k] = target
                        pi[where[k]] = 0.0
                        pi[where[k], indices] = shares
            z[where] = (1.0 - self.q_ratio) * result[where] + self.q_ratio * q
            if shard.has_auxiliary and ownership is not None:
                ownership[where] = shard.decode_ownership(rows[where])
                score[where] = shard.arrays["score"][rows[where]]
                has_auxiliary[where] = True
        if self.augment and rng is not None:
            planes, pi, ownership = augment_go(planes, pi, rng.integers(0, 8, size=len(indices)), ownership)
        if not has_auxiliary.any():
            return Batch(planes, pi, z, result)
        return Batch(planes, pi, z, result, ownership=ownership, score=score, has_auxiliary=has_auxiliary)


def augment_go(
    planes: np.ndarray, pi: np.ndarray, symmetries: np.ndarray, ownership: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Apply symmetry ``symmetries[i]`` to sample ``i``: planes ``[B, C, N, N]``, policy ``[B, N*N+1]`` and
    ownership ``[B, N*N]`` (when given) transformed together."""
    planes = planes.copy()
    pi = pi.copy()
    n = planes.shape[-1]
    if ownership is not None:
        ownership = ownership.copy()
    for k in np.unique(symmetries):
        if k == 0:
            continue
        where = np.flatnonzero(symmetries == k)
        planes[where] = symmetry_planes(planes[where], int(k))
        pi[where] = symmetry_policy(pi[where], int(k))
        if ownership is not None:
            ownership[where] = symmetry_planes(ownership[where].reshape(-1, n, n), int(k)).reshape(-1, n * n)
    return planes, pi, ownership
