"""An explicit game tree for search tests (mctx's tests are the model): every position is the path of
moves from the start, every position has ``branching`` moves, and a crafted evaluator gives chosen
priors and values per path, so visit counts can be worked out by hand or by a reference search."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from engine.evaluator import Evaluation, Evaluator
from engine.games.base import GameInfo, GameState, Outcome

#: Paths longer than this cannot be encoded (the planes hold the path).
MAX_DEPTH = 32

Path = tuple[int, ...]


class ToyState(GameState[int]):
    """A position of the toy game: the moves played so far.  Terminal at ``terminal`` paths (value from
    the side to move there), never otherwise."""

    def __init__(self, branching: int, terminal: dict[Path, float] | None = None, path: Path = ()) -> None:
        self.branching = branching
        self.terminal = terminal or {}
        self.path = path
        self.info = GameInfo("toy", 1, 1, branching, 1)

    def legal_moves(self) -> list[int]:
        return [] if self.path in self.terminal else list(range(self.branching))

    def push(self, move: int) -> None:
        self.path = (*self.path, move)

    def pop(self) -> int:
        move = self.path[-1]
        self.path = self.path[:-1]
        return move

    def outcome(self) -> Outcome | None:
        value = self.terminal.get(self.path)
        return None if value is None else Outcome(value, "toy-end")

    @property
    def side_to_move(self) -> int:
        return len(self.path) % 2

    @property
    def ply(self) -> int:
        return len(self.path)

    def key(self) -> Hashable:
        return self.path

    def copy(self) -> ToyState:
        return ToyState(self.branching, self.terminal, self.path)

    def encode(self) -> np.ndarray:
        """float32 ``[1, 1, MAX_DEPTH + 1]``: the path's length, then its moves."""
        planes = np.zeros((1, 1, MAX_DEPTH + 1), np.float32)
        planes[0, 0, 0] = len(self.path)
        planes[0, 0, 1 : 1 + len(self.path)] = self.path
        return planes

    def move_to_index(self, move: int) -> int:
        return move

    def index_to_move(self, index: int) -> int:
        return index

    def move_to_text(self, move: int) -> str:
        return str(move)

    def parse_move(self, text: str) -> int:
        return int(text)

    def to_text(self) -> str:
        return " ".join(map(str, self.path))


def decode_path(planes: np.ndarray) -> Path:
    """The path a :meth:`ToyState.encode` plane holds."""
    length = int(planes[0, 0, 0])
    return tuple(int(m) for m in planes[0, 0, 1 : 1 + length])


class ToyEvaluator(Evaluator):
    """Priors and value by path (the value from the side to move at the path); logs the paths."""

    def __init__(
        self, prior_of: Callable[[Path], Sequence[float]], value_of: Callable[[Path], float]
    ) -> None:
        self.prior_of = prior_of
        self.value_of = value_of
        self.paths: list[Path] = []

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        out = []
        for p, idx in zip(planes, legal, strict=True):
            path = decode_path(p)
            self.paths.append(path)
            prior = np.asarray(self.prior_of(path), np.float32)[np.asarray(idx)] if len(idx) else np.zeros(0)
            out.append(Evaluation(prior.astype(np.float32), float(self.value_of(path))))
        return out


def wavy_value(path: Path) -> float:
    """A fixed, irregular value in (-0.9, 0.9) for every path (no two paths alike)."""
    code = sum((m + 1) * 7**i for i, m in enumerate(path)) + 3 * len(path)
    return 0.9 * math.sin(1.7 * code + 0.4)
