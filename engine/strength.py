"""Strength limiting (UCI ``UCI_LimitStrength`` / ``UCI_Elo``): a weakening of the search and the
calibration table that maps an Elo to one.

A network engine weakens itself naturally (docs/strength.md): it searches fewer positions (a node cap per
move) and picks its move at a temperature over the root's visit counts instead of always the most visited
one.  Two guards keep weakened play looking like play: only moves the search visited are candidates, never
one whose visits proved it lost (the leaf mate check proves a move into a mate in one lost the moment it
is visited), and never one whose mean value Q is more than ``q_margin`` below the most visited move's.
A proven win is always played.

The calibration table (``weights/strength-GAME.json``, written by ``benchmarks/strength_calibration.py``)
lists measured points: a weakening and the Elo it scored against Stockfish's own ``UCI_Elo`` scale, with
its 95% interval.  Sorted by node cap the Elos must rise (the runner fits them monotone); an Elo between
two points interpolates the node cap in ``log(nodes)`` and the temperature and margin linearly.  The top
point is the engine at full strength (searched without any cap; its ``nodes`` only anchors the
interpolation): an Elo at or above it means no limit.  Below the lowest point the lowest setting plays
(clamped, and the protocols say so).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: ``slot_stats`` proof values (``engine.search.proof.Proof``'s WIN / LOSS, not imported: rules only).
_WIN, _LOSS = 1, -1


@dataclasses.dataclass(frozen=True)
class Weakening:
    """How a limited engine searches and chooses.

    Attributes:
        nodes: the most playouts a move searches (the clock may stop it sooner); at least 2, the root's
            evaluation and one move's (the network's policy move), since unvisited moves are no candidates.
        temperature: the move is drawn with probability proportional to ``visits ** (1 / temperature)``
            among the candidates; 0 plays the most visited move (the engine's usual choice).
        q_margin: candidates have a Q at least the most visited move's Q less this (Q in [-1, 1]).
    """

    nodes: int
    temperature: float = 0.0
    q_margin: float = 0.0

    def __post_init__(self) -> None:
        if self.nodes < 2 or self.temperature < 0 or self.q_margin < 0:
            raise ValueError(f"a weakening needs nodes >= 2, temperature >= 0 and q_margin >= 0: {self}")

    @classmethod
    def parse(cls, text: str) -> Weakening:
        """``NODES[,TEMPERATURE[,MARGIN]]`` (the ``--weakening`` flag).  Raises ``ValueError``."""
        fields = [f.strip() for f in text.split(",")]
        if not 1 <= len(fields) <= 3 or not fields[0]:
            raise ValueError(f"expected NODES[,TEMPERATURE[,MARGIN]], not {text!r}")
        try:
            nodes = int(fields[0])
            numbers = [float(f) for f in fields[1:]]
        except ValueError:
            raise ValueError(f"expected NODES[,TEMPERATURE[,MARGIN]] as numbers, not {text!r}") from None
        if any(not math.isfinite(x) for x in numbers):
            raise ValueError(f"expected finite numbers, not {text!r}")
        return cls(nodes, *numbers)

    def text(self) -> str:
        """The ``--weakening`` form: ``64,0.7,0.2``."""
        return f"{self.nodes},{self.temperature:g},{self.q_margin:g}"


def choose_root_slot(
    visits: np.ndarray,
    q: np.ndarray,
    proofs: np.ndarray,
    allowed: np.ndarray,
    best: int,
    weakening: Weakening,
    rng: np.random.Generator,
) -> int:
    """The root move a weakened engine plays (a slot), given the search's root statistics.

    ``best`` is the engine's usual choice (the tree's first-ranked slot); it is returned when it is a
    proven win, when the temperature is 0, or when no other move is a candidate.  Candidates: allowed,
    visited, not proven lost, and Q within ``q_margin`` of ``best``'s Q.

    Args:
        visits: float64 ``[L]`` root visits.
        q: float64 ``[L]`` mean values from the root player's view (anything where unvisited).
        proofs: int ``[L]`` 1 a proven win, -1 a proven loss, 0 unproven (root player's view).
        allowed: bool ``[L]`` moves ``searchmoves`` allows.
        best: the slot the engine would play at full strength.
        weakening: the temperature and margin.
        rng: the draw's random source.
    """
    if weakening.temperature <= 0 or proofs[best] == _WIN or visits[best] <= 0:
        return best
    floor = q[best] - weakening.q_margin
    candidate = allowed & (visits > 0) & (proofs != _LOSS) & (q >= floor)
    candidate[best] = True
    slots = np.flatnonzero(candidate)
    if len(slots) == 1:
        return best
    logits = np.log(visits[slots]) / weakening.temperature
    weights = np.exp(logits - logits.max())
    return int(rng.choice(slots, p=weights / weights.sum()))


@dataclasses.dataclass(frozen=True)
class CalibrationPoint:
    """One measured setting of the table.

    Attributes:
        weakening: the setting (for the full-strength point, ``nodes`` only anchors the interpolation).
        elo: the Elo the mapping uses (the measurement fitted monotone by the runner).
        low, high: the measurement's 95% interval (``None``: unbounded, a perfect or nil score).
        measured_elo: the Elo the games gave before the monotone fit.
        games: games played.
        opponent: what the setting played against (``Stockfish 15.1 UCI_Elo 1350``).
        command: the exact match command line.
        date: when it was measured.
        full: the engine at full strength (no limit at or above this Elo).
    """

    weakening: Weakening
    elo: float
    low: float | None
    high: float | None
    measured_elo: float
    games: int
    opponent: str = ""
    command: str = ""
    date: str = ""
    full: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.weakening.nodes,
            "temperature": self.weakening.temperature,
            "q_margin": self.weakening.q_margin,
            "full": self.full,
            "elo": round(self.elo, 1),
            "low": None if self.low is None else round(self.low, 1),
            "high": None if self.high is None else round(self.high, 1),
            "measured_elo": round(self.measured_elo, 1),
            "games": self.games,
            "opponent": self.opponent,
            "command": self.command,
            "date": self.date,
        }

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> CalibrationPoint:
        weakening = Weakening(int(item["nodes"]), float(item["temperature"]), float(item["q_margin"]))
        low, high = item.get("low"), item.get("high")
        return cls(
            weakening,
            float(item["elo"]),
            None if low is None else float(low),
            None if high is None else float(high),
            float(item.get("measured_elo", item["elo"])),
            int(item.get("games", 0)),
            str(item.get("opponent", "")),
            str(item.get("command", "")),
            str(item.get("date", "")),
            bool(item.get("full", False)),
        )


class CalibrationError(ValueError):
    """A calibration table that cannot be used (not monotone, no full-strength point, bad JSON)."""


@dataclasses.dataclass(frozen=True)
class Resolved:
    """What an asked Elo comes to: the weakening (``None``: full strength) and a note when clamped."""

    weakening: Weakening | None
    elo: int
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class StrengthTable:
    """A game's calibration: points by rising node cap and Elo, the full-strength point last.

    Attributes:
        game: the game label (``chess``).
        points: the measured points, sorted (validated monotone).
        status: ``measured``, or ``placeholder`` for figures not yet measured (said in every note).
        time_control: the clock the calibration holds for (``5+0.05``).
        scale: whose Elo scale (``Stockfish 15.1 UCI_Elo``).
        note: free text (how it was made).
    """

    game: str
    points: tuple[CalibrationPoint, ...]
    status: str = "measured"
    time_control: str = ""
    scale: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        points = self.points
        if len(points) < 2:
            raise CalibrationError("a calibration table needs at least two points")
        if not points[-1].full or any(p.full for p in points[:-1]):
            raise CalibrationError("the last point (and only it) must be the full-strength one")
        for a, b in itertools.pairwise(points):
            if not (a.weakening.nodes < b.weakening.nodes and a.elo < b.elo):
                raise CalibrationError(
                    f"not monotone: {a.weakening.text()} at {a.elo:.0f} then {b.weakening.text()} "
                    f"at {b.elo:.0f} (node caps and Elos must both rise)"
                )

    # ---- the scale ---------------------------------------------------------------------------------
    @property
    def min_elo(self) -> int:
        """The lowest Elo the table can play (its weakest point), rounded up."""
        return math.ceil(self.points[0].elo)

    @property
    def max_elo(self) -> int:
        """The full-strength Elo, rounded down: at or above it there is no limit."""
        return math.floor(self.points[-1].elo)

    def resolve(self, elo: int) -> Resolved:
        """The weakening that plays at ``elo`` (clamped into ``min_elo .. max_elo``, with a note)."""
        note = None
        status = "" if self.status == "measured" else f"; the table is a {self.status}, not measured"
        if elo < self.min_elo:
            note = (
                f"UCI_Elo {elo} is below the calibrated range {self.min_elo}..{self.max_elo} "
                f"({self.game}, {self.time_control}): playing at {self.min_elo}{status}"
            )
            elo = self.min_elo
        elif elo >= self.max_elo:
            if elo > self.max_elo:
                note = (
                    f"UCI_Elo {elo} is above the calibrated range {self.min_elo}..{self.max_elo} "
                    f"({self.game}, {self.time_control}): full strength{status}"
                )
            return Resolved(None, self.max_elo, note)
        return Resolved(self.weakening_at(elo), elo, note)

    def weakening_at(self, elo: float) -> Weakening:
        """The interpolated setting at ``elo`` (within the table; the top point's ``nodes`` anchors the
        last segment)."""
        lower, upper, t = self._segment(elo)
        log_nodes = (1 - t) * math.log(lower.weakening.nodes) + t * math.log(upper.weakening.nodes)
        temperature = (1 - t) * lower.weakening.temperature + t * upper.weakening.temperature
        margin = (1 - t) * lower.weakening.q_margin + t * upper.weakening.q_margin
        return Weakening(max(2, round(math.exp(log_nodes))), temperature, margin)

    def interval_at(self, elo: float) -> tuple[float, float]:
        """The calibration's 95% interval at ``elo``: the bracketing points' interval offsets,
        interpolated (an unbounded side stays unbounded)."""
        lower, upper, t = self._segment(elo)
        lows = [p.low - p.elo if p.low is not None else -math.inf for p in (lower, upper)]
        highs = [p.high - p.elo if p.high is not None else math.inf for p in (lower, upper)]
        return elo + _mix(lows[0], lows[1], t), elo + _mix(highs[0], highs[1], t)

    def _segment(self, elo: float) -> tuple[CalibrationPoint, CalibrationPoint, float]:
        """The two points around ``elo`` and its fraction of the way between them (clamped to 0..1)."""
        points = self.points
        k = 0
        while k < len(points) - 2 and elo > points[k + 1].elo:
            k += 1
        lower, upper = points[k], points[k + 1]
        t = (elo - lower.elo) / (upper.elo - lower.elo)
        return lower, upper, min(1.0, max(0.0, t))

    # ---- files -------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "game": self.game,
            "status": self.status,
            "time_control": self.time_control,
            "scale": self.scale,
            "note": self.note,
            "points": [p.to_json() for p in self.points],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StrengthTable:
        try:
            points = tuple(CalibrationPoint.from_json(item) for item in data["points"])
            return cls(
                str(data["game"]),
                points,
                str(data.get("status", "measured")),
                str(data.get("time_control", "")),
                str(data.get("scale", "")),
                str(data.get("note", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CalibrationError):
                raise
            raise CalibrationError(f"malformed calibration table: {exc!r}") from None

    @classmethod
    def load(cls, path: Path | str) -> StrengthTable:
        """Read a table file.  Raises :class:`CalibrationError` (also for an unreadable file)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CalibrationError(f"cannot read calibration table {path}: {exc}") from None
        return cls.from_json(data)

    def write(self, path: Path | str) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")


def _mix(a: float, b: float, t: float) -> float:
    """``a`` to ``b`` at ``t``; infinite when either is (an unbounded side)."""
    if math.isinf(a) or math.isinf(b):
        return a if math.isinf(a) else b
    return (1 - t) * a + t * b


def monotone_fit(elos: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The weighted least-squares non-decreasing fit of ``elos`` (pool adjacent violators): the
    calibration's measured Elos, in node-cap order, made monotone without favouring any one point."""
    blocks: list[tuple[float, float, int]] = []  # (mean, weight, count)
    for value, weight in zip(elos, weights, strict=True):
        blocks.append((float(value), max(float(weight), 1e-9), 1))
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m1, w1, c1), (m2, w2, c2) = blocks[-2], blocks[-1]
            blocks[-2:] = [((m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2)]
    return [mean for mean, _, count in blocks for _ in range(count)]
