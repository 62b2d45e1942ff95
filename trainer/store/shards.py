"""Self-play data on disk: compact shards of ``(planes, pi, z)`` with metadata.

One shard is one ``.npz`` file (``numpy.savez_compressed``) written atomically (temporary file, fsync,
rename) and read with ``np.load(..., allow_pickle=False)``.  ``N`` positions, ``C`` input planes on an
``H x W`` board (``HW = H * W``), ``P`` policy entries::

    key              dtype    shape                 what
    ---------------  -------  --------------------  ----------------------------------------------------
    scalar_planes    int16    [Cs]                  planes that are constant over the board in every
                                                    position of the shard (colour, move count, castling,
                                                    repetitions, prisoner counts ...): stored once per
                                                    position, not per square
    scalar_values    float32  [N, Cs]               their values
    binary_planes    int16    [Cb]                  the other planes whose every square is 0 or 1
    binary_bits      uint8    [N, Cb, ceil(HW/8)]   np.packbits over the squares (row-major, big bit order)
    dense_planes     int16    [Cd]                  any remaining plane (none with Table S1 encodings),
    dense_values     float32  [N, Cd, H, W]         stored as they are
    pi_offset        int64    [N + 1]               position i's search policy is entries
    pi_index         uint16   [pi_offset[N]]        pi_offset[i]:pi_offset[i+1]: the policy indices of the
    pi_value         float32  [pi_offset[N]]        moves the search visited and their visit fractions
                                                    (sparse over the legal moves, summing to 1)
    z                float32  [N]                   the game result from the side to move of the position
    q                float32  [N]                   the search's root value from the side to move (its mean
                                                    backed-up value, or +-1 when the root is proven); shards
                                                    written before it existed read as q = z
    ownership        int8     [N, HW]               Go (optional): each point's final owner from the side to
                                                    move, times 127 (+127 its own, -127 the opponent's; a
                                                    game scored by passes gives exact owners, a resigned
                                                    game a play-out estimate)
    score            float32  [N]                   Go (optional): the final area-score margin from the side
                                                    to move, komi included
    ply              int16    [N]                   ply of the position in its game
    game             int32    [N]                   game number inside the shard
    meta             str      []                    JSON: game label, sizes, encoding version, network
                                                    step, worker, games, results, resignation stats ...

Planes are bit-exact after a round trip: binary planes are exactly 0/1, scalar planes keep their float32
value, anything else is kept whole.  Memory of a 100,000-position window (kept in this compact form by
the replay buffer): chess ~0.09 GB, shogi ~0.3 GB, Go 19x19 ~0.08 GB.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.games.base import GameInfo
from trainer.store.atomic import atomic_write_with
from trainer.store.shards_kernel import pack_planes

SHARD_FORMAT = 1
SHARD_SUFFIX = ".npz"

ARRAY_KEYS: tuple[str, ...] = (
    "scalar_planes",
    "scalar_values",
    "binary_planes",
    "binary_bits",
    "dense_planes",
    "dense_values",
    "pi_offset",
    "pi_index",
    "pi_value",
    "z",
    "ply",
    "game",
)
#: Arrays added after the first shards were written: read when present, else derived (``q = z``).
OPTIONAL_KEYS: tuple[str, ...] = ("q",)
#: Go's auxiliary targets: written when every game of the shard has them, absent otherwise.
AUXILIARY_KEYS: tuple[str, ...] = ("ownership", "score")
#: Scale of the int8 ``ownership`` array.
OWNERSHIP_SCALE = 127.0


class ShardError(ValueError):
    """A shard that cannot be read or does not match the game."""


@dataclasses.dataclass
class PackedPosition:
    """One position compressed as soon as it is recorded (a worker keeps thousands of these).

    Attributes:
        values: float32 ``[C]``: each plane's value at square 0.
        constant: bool ``[C]``: the plane has the same value on every square.
        binary: bool ``[C]``: every square of the plane is 0 or 1.
        bits: uint8 ``[C, ceil(HW/8)]``: packed ``plane != 0``.
        dense: planes neither constant nor binary, ``{plane: float32 [H, W]}`` (normally empty).
        pi_index: policy indices of the visited moves.
        pi_value: visit fractions, float32, summing to 1.
        ply: ply of the position.
        q: the search's root value from the side to move, in [-1, 1].
    """

    values: np.ndarray
    constant: np.ndarray
    binary: np.ndarray
    bits: np.ndarray
    dense: dict[int, np.ndarray]
    pi_index: np.ndarray
    pi_value: np.ndarray
    ply: int
    q: float = 0.0


def pack_position(
    planes: np.ndarray, pi_index: np.ndarray, pi_value: np.ndarray, ply: int, q: float = 0.0
) -> PackedPosition:
    """Compress one ``[C, H, W]`` float32 position, its search policy and the search's root value ``q``."""
    c = planes.shape[0]
    # float32 like the values kept (every game's encoding is already): one compiled pass describes it
    flat = np.ascontiguousarray(planes.reshape(c, -1), np.float32)
    values = np.empty(c, np.float32)
    constant = np.empty(c, np.bool_)
    binary = np.empty(c, np.bool_)
    bits = np.empty((c, (flat.shape[1] + 7) // 8), np.uint8)
    pack_planes(flat, values, constant, binary, bits)
    dense = {int(i): planes[i].astype(np.float32, copy=True) for i in np.flatnonzero(~constant & ~binary)}
    keep = pi_value > 0
    return PackedPosition(
        values,
        constant,
        binary,
        bits,
        dense,
        np.asarray(pi_index, np.int64)[keep],
        np.asarray(pi_value, np.float32)[keep],
        int(ply),
        min(max(float(q), -1.0), 1.0),
    )


@dataclasses.dataclass
class GameData:
    """The recorded positions of one finished game and its result.

    Attributes:
        positions: packed positions in order.
        players: side to move (0/1) of each position.
        winner: 0 or 1, or ``None`` for a draw.
        ownership: Go: float ``[N*N]`` final owner of each point from player 0's (black's) view, in
            [-1, 1]; ``None`` elsewhere.
        score: Go: the final area-score margin from player 0's view, komi included; ``None`` elsewhere.
    """

    positions: list[PackedPosition]
    players: list[int]
    winner: int | None
    ownership: np.ndarray | None = None
    score: float | None = None

    def _signs(self) -> np.ndarray:
        """float32 ``[n]``: +1 where player 0 is to move, -1 where player 1 is."""
        return np.where(np.asarray(self.players, np.int64) == 0, 1.0, -1.0).astype(np.float32)

    def ownership_targets(self) -> np.ndarray:
        """int8 ``[n, N*N]``: the final ownership from each position's side to move, times 127."""
        assert self.ownership is not None
        own = np.clip(np.asarray(self.ownership, np.float32), -1.0, 1.0)
        targets: np.ndarray = np.rint(self._signs()[:, None] * own[None, :] * OWNERSHIP_SCALE).astype(np.int8)
        return targets

    def score_targets(self) -> np.ndarray:
        """float32 ``[n]``: the final score margin from each position's side to move."""
        assert self.score is not None
        return (self._signs() * np.float32(self.score)).astype(np.float32)

    def z(self) -> np.ndarray:
        """The result from each position's side to move: +1 won, -1 lost, 0 draw."""
        players = np.asarray(self.players, np.int64)
        if self.winner is None:
            return np.zeros(len(players), np.float32)
        return np.where(players == self.winner, 1.0, -1.0).astype(np.float32)


def build_shard(games: Sequence[GameData], info: GameInfo) -> dict[str, np.ndarray]:
    """The arrays of one shard (see the module docstring) from finished games."""
    positions = [p for g in games for p in g.positions]
    n = len(positions)
    c, h, w = info.input_shape
    hw = h * w
    nb = (hw + 7) // 8
    if n == 0:
        constant = np.zeros(c, bool)
        binary = np.ones(c, bool)
    else:
        constant = np.logical_and.reduce([p.constant for p in positions])
        binary = np.logical_and.reduce([p.binary for p in positions])
    scalar_planes = np.flatnonzero(constant).astype(np.int16)
    binary_planes = np.flatnonzero(~constant & binary).astype(np.int16)
    dense_planes = np.flatnonzero(~constant & ~binary).astype(np.int16)
    scalar_values = np.zeros((n, len(scalar_planes)), np.float32)
    binary_bits = np.zeros((n, len(binary_planes), nb), np.uint8)
    dense_values = np.zeros((n, len(dense_planes), h, w), np.float32)
    for i, p in enumerate(positions):
        scalar_values[i] = p.values[scalar_planes]
        binary_bits[i] = p.bits[binary_planes]
        for j, plane in enumerate(dense_planes.tolist()):
            dense_values[i, j] = _dense_plane(p, plane, h, w)
    lengths = np.array([len(p.pi_index) for p in positions], np.int64)
    pi_offset = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    pi_index = (np.concatenate([p.pi_index for p in positions]) if n else np.zeros(0)).astype(
        np.uint16 if info.policy_size <= 65535 else np.int32
    )
    pi_value = (np.concatenate([p.pi_value for p in positions]) if n else np.zeros(0)).astype(np.float32)
    z = np.concatenate([g.z() for g in games]).astype(np.float32) if n else np.zeros(0, np.float32)
    ply = np.array([p.ply for p in positions], np.int16)
    q = np.array([p.q for p in positions], np.float32)
    game = (
        np.concatenate([np.full(len(g.positions), k, np.int32) for k, g in enumerate(games)])
        if n
        else np.zeros(0, np.int32)
    )
    return {
        **_auxiliary_arrays(games, hw),
        "scalar_planes": scalar_planes,
        "scalar_values": scalar_values,
        "binary_planes": binary_planes,
        "binary_bits": binary_bits,
        "dense_planes": dense_planes,
        "dense_values": dense_values,
        "pi_offset": pi_offset,
        "pi_index": pi_index,
        "pi_value": pi_value,
        "z": z,
        "q": q,
        "ply": ply,
        "game": game,
    }


def _dense_plane(p: PackedPosition, plane: int, h: int, w: int) -> np.ndarray:
    """float32 ``[H, W]``: one plane of ``p`` exactly (kept whole, or rebuilt when it was constant or
    binary in this position)."""
    if plane in p.dense:
        return p.dense[plane]
    if p.binary[plane] and not p.constant[plane]:
        return np.unpackbits(p.bits[plane], count=h * w).reshape(h, w).astype(np.float32)
    return np.full((h, w), p.values[plane], np.float32)


def _auxiliary_arrays(games: Sequence[GameData], points: int) -> dict[str, np.ndarray]:
    """Go's ``ownership`` int8 ``[N, points]`` and ``score`` float32 ``[N]`` when every game has them, else
    nothing."""
    if not games or not all(g.ownership is not None and g.score is not None for g in games):
        return {}
    if not any(g.positions for g in games):
        return {"ownership": np.zeros((0, points), np.int8), "score": np.zeros(0, np.float32)}
    return {
        "ownership": np.concatenate([g.ownership_targets() for g in games]),
        "score": np.concatenate([g.score_targets() for g in games]),
    }


def shard_metadata(info: GameInfo, arrays: Mapping[str, np.ndarray], **extra: Any) -> dict[str, Any]:
    meta = {
        "format": SHARD_FORMAT,
        "game": info.name,
        "label": info.label,
        "board_size": info.board_size,
        "planes": info.planes,
        "policy_size": info.policy_size,
        "encoding_version": info.encoding_version,
        "positions": len(arrays["z"]),
        "created": time.time(),
    }
    meta.update(extra)
    return meta


def write_shard(
    path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]
) -> None:
    """Write a shard atomically (temporary file in the same folder, fsync, rename)."""
    payload: dict[str, Any] = {k: arrays[k] for k in ARRAY_KEYS}
    payload.update({k: arrays[k] for k in OPTIONAL_KEYS + AUXILIARY_KEYS if k in arrays})
    payload["meta"] = np.array(json.dumps(dict(meta), sort_keys=True))
    atomic_write_with(path, lambda f: np.savez_compressed(f, **payload))


@dataclasses.dataclass
class Shard:
    """A shard in memory (the compact arrays, never expanded as a whole)."""

    path: Path
    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]
    derived: frozenset[str] = frozenset()  # OPTIONAL_KEYS the file lacked (derived when read)

    def __len__(self) -> int:
        return int(self.arrays["z"].shape[0])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())

    def decode_planes(self, rows: np.ndarray, info: GameInfo) -> np.ndarray:
        """float32 ``[len(rows), C, H, W]`` planes of the given positions (bit-exact)."""
        a = self.arrays
        c, h, w = info.input_shape
        rows = np.asarray(rows, np.int64)
        out = np.empty((len(rows), c, h * w), np.float32)
        if len(a["scalar_planes"]):
            out[:, a["scalar_planes"].astype(np.int64), :] = a["scalar_values"][rows][:, :, None]
        if len(a["binary_planes"]):
            bits = np.unpackbits(a["binary_bits"][rows], axis=-1, count=h * w)
            out[:, a["binary_planes"].astype(np.int64), :] = bits
        if len(a["dense_planes"]):
            out[:, a["dense_planes"].astype(np.int64), :] = a["dense_values"][rows].reshape(
                len(rows), -1, h * w
            )
        return out.reshape(len(rows), c, h, w)

    def decode_policy(self, rows: np.ndarray, policy_size: int) -> np.ndarray:
        """float32 ``[len(rows), P]`` dense search policies."""
        a = self.arrays
        offset = a["pi_offset"]
        out = np.zeros((len(rows), policy_size), np.float32)
        for i, r in enumerate(np.asarray(rows, np.int64)):
            lo, hi = offset[r], offset[r + 1]
            out[i, a["pi_index"][lo:hi].astype(np.int64)] = a["pi_value"][lo:hi]
        return out

    @functools.cached_property
    def proven_rows(self) -> np.ndarray:
        """int64 ``[K]``: the rows whose search proved the root won (``q`` exactly 1; their ``pi`` is the
        winning move alone).  None in shards written before ``q`` was recorded."""
        if "q" in self.derived:
            return np.empty(0, np.int64)
        return np.flatnonzero(self.arrays["q"] >= 1.0).astype(np.int64)

    @property
    def has_auxiliary(self) -> bool:
        """Whether the shard carries Go's ownership and score targets."""
        return all(k in self.arrays for k in AUXILIARY_KEYS)

    def decode_ownership(self, rows: np.ndarray) -> np.ndarray:
        """float32 ``[len(rows), N*N]`` ownership targets in [-1, 1] (the shard must have them)."""
        return self.arrays["ownership"][np.asarray(rows, np.int64)].astype(np.float32) / OWNERSHIP_SCALE

    def sparse_policy(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        a = self.arrays
        lo, hi = a["pi_offset"][row], a["pi_offset"][row + 1]
        return a["pi_index"][lo:hi].astype(np.int64), a["pi_value"][lo:hi]


def read_shard(path: str | os.PathLike[str], info: GameInfo | None = None) -> Shard:
    """Load a shard (``allow_pickle=False``).

    Raises:
        ShardError: unreadable, or made for another game / encoding than ``info``.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in ARRAY_KEYS}
            derived = frozenset(k for k in OPTIONAL_KEYS if k not in data.files)
            arrays["q"] = data["q"] if "q" in data.files else arrays["z"].copy()
            arrays.update({k: data[k] for k in AUXILIARY_KEYS if k in data.files})
            meta = json.loads(str(data["meta"]))
    except (OSError, KeyError, ValueError, EOFError) as e:
        raise ShardError(f"{path}: not a readable shard ({e})") from None
    except Exception as e:
        raise ShardError(f"{path}: not a readable shard ({type(e).__name__}: {e})") from None
    if info is not None:
        expected = (info.name, info.board_size, info.planes, info.policy_size, info.encoding_version)
        got = (
            meta.get("game"),
            meta.get("board_size"),
            meta.get("planes"),
            meta.get("policy_size"),
            meta.get("encoding_version"),
        )
        if got != expected:
            raise ShardError(f"{path}: shard is for {got}, the run is for {expected}")
    return Shard(path, meta, arrays, derived)


def read_shard_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Only the metadata of a shard (the arrays are not read)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta: dict[str, Any] = json.loads(str(data["meta"]))
            return meta
    except Exception as e:
        raise ShardError(f"{path}: not a readable shard ({type(e).__name__}: {e})") from None


def shard_name(worker: int, sequence: int, when: float | None = None) -> str:
    """``<unix ms>-w<worker>-p<pid>-<sequence>.npz``: names sort by creation time and never collide
    between processes (a ``selfplay`` stage may write beside a running ``run``)."""
    ms = int((time.time() if when is None else when) * 1000)
    return f"{ms:014d}-w{worker:03d}-p{os.getpid():07d}-{sequence:06d}{SHARD_SUFFIX}"


def list_shards(folder: str | os.PathLike[str]) -> list[Path]:
    """Shard files of a folder, oldest first (temporaries excluded)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix == SHARD_SUFFIX and not p.name.startswith("."))
