"""The one ruleset interface that search, inference and training use for every game.

Design choice: **mutable states with push/pop**.
A :class:`GameState` is one game in progress.  ``push(move)`` plays a move and ``pop()`` takes it
back, like python-chess and cshogi.  The search keeps one state per tree, walks it down with ``push``
while selecting a leaf, encodes the leaf and walks back up with ``pop``; self-play keeps one state per
game.  ``copy()`` gives an independent state when one is needed (a new search root, a worker thread).

History is cheap because each ``push`` computes the **per-position feature planes** of the new
position once (the M planes of Table S1 for one time step, stored in an absolute orientation) and
keeps them on a stack beside the move stack; ``pop`` drops the top entry.  ``encode()`` only gathers
the last T=8 entries, orients them to the side to move and appends the L constant planes, so it
never recomputes a history position.

Moves stay in the native form of the rules library inside the engine (python-chess ``chess.Move``,
cshogi's ``int`` moves, a flat point index ``int`` for Go, pass = N*N); notation strings are made
only at the protocol edge with :meth:`GameState.move_to_text` / :meth:`GameState.parse_move`.

Values and outcomes are always from the point of view of the side to move: +1 a win for the player
to move, -1 a loss, 0 a draw.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import random
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final, Generic, TypeVar

import numpy as np

#: A move in the rules library's native form (``chess.Move``, cshogi ``int``, Go point ``int``).
Move = TypeVar("Move")
K = TypeVar("K", bound=Hashable)

#: Number of history steps in the input planes (Table S1: T = 8).
HISTORY_STEPS = 8


class NotComputed(enum.Enum):
    """The type of :data:`NOT_COMPUTED`: a cache slot not filled yet (where ``None`` is a value)."""

    NOT_COMPUTED = enum.auto()


#: The mark of an empty cache slot (e.g. a position's outcome, whose computed value may be ``None``).
NOT_COMPUTED: Final = NotComputed.NOT_COMPUTED


def uncount(counts: dict[K, int], key: K) -> None:
    """Take one occurrence of ``key`` off a repetition count (``pop``); the entry goes at zero."""
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]


class IllegalMoveError(ValueError):
    """A move (or notation string) that is malformed or not legal in the position."""


class InvalidPositionError(ValueError):
    """A position text (FEN, SFEN, ...) that cannot be parsed or describes an impossible position."""


def game_label(name: str, board_size: int) -> str:
    """The label of a game on a board: ``chess``, ``shogi``, or Go with its size (``go9``, ``go19``)."""
    return f"go{board_size}" if name == "go" else name


@dataclasses.dataclass(frozen=True)
class GameInfo:
    """Static facts about a ruleset that a network must agree with.

    Attributes:
        name: registry name: ``"chess"``, ``"shogi"`` or ``"go"``.
        board_size: N for the N x N board (8, 9, or the Go board size).
        planes: C, the number of input planes of ``encode()`` (119, 362, 17).
        policy_size: P, the length of the policy vector (4672, 11259, N*N+1).
        encoding_version: bumped whenever the input planes or the policy order change.
        num_players: always 2.
    """

    name: str
    board_size: int
    planes: int
    policy_size: int
    encoding_version: int
    num_players: int = 2

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of one encoded position."""
        return (self.planes, self.board_size, self.board_size)

    @property
    def label(self) -> str:
        """A short label such as ``chess`` or ``go9`` (:func:`game_label`)."""
        return game_label(self.name, self.board_size)


@dataclasses.dataclass(frozen=True)
class PlayProfile:
    """What the engine's search, clock and network loading take from the game, so that they ask the game
    instead of switching on its name.

    Attributes:
        noise_alpha: the paper's root Dirichlet alpha (0.3 chess, 0.15 shogi, 0.03 Go 19x19, scaled
            inversely with the number of points for smaller Go boards).
        expected_moves: ``(min, max)`` moves a side is expected still to play, by the length of a typical
            game: the time manager's horizon (docs/benchmarks.md, "Costs behind the code's design").
        policy_temperature: the engine's default policy temperature (the network's logits divided by
            it), measured in games against 1 (docs/experiments.md, "Policy temperature").
        uint8_planes: the game's leaves can be written as uint8 planes for an int8 network's
            uint8-planes model (:class:`~engine.uint8_io.Uint8Quantization`).
        mate_threats: the rules' own mate search (``GameState.find_mate``) is worth asking before a
            search for every root move's reply (shogi's df-pn: :mod:`engine.search.mate_threats`).
        book_and_tablebases: the engine's opening book (Polyglot, :mod:`engine.chess_book`) and endgame
            tablebases (Syzygy, :mod:`engine.chess_tablebase`) apply to the game's states.
        lcb_visit_share: the engine's default ``LCBVisitShare`` (the move played by its value's lower
            confidence bound: :mod:`engine.search.lcb`; 0: the most visited move), on where an SPRT on
            the real client said so (docs/tuning.md, "LCB root selection").
    """

    noise_alpha: float
    expected_moves: tuple[int, int]
    policy_temperature: float = 1.0
    uint8_planes: bool = False
    mate_threats: bool = False
    book_and_tablebases: bool = False
    lcb_visit_share: float = 0.0


@dataclasses.dataclass(frozen=True)
class Outcome:
    """The end of a game seen from the side to move.

    Attributes:
        value: +1.0 the side to move has won, -1.0 it has lost, 0.0 a draw (Go: the sign of the score).
        reason: a short word for logs and protocols: ``checkmate``, ``stalemate``, ``repetition``,
            ``fifty-move``, ``insufficient-material``, ``max-length``, ``perpetual-check``,
            ``entering-king``, ``two-passes``, ...
        score: for Go, the Tromp-Taylor score from the side to move (komi included); else ``None``.
    """

    value: float
    reason: str
    score: float | None = None


class GameState(abc.ABC, Generic[Move]):
    """One game in progress.  Mutable: ``push``/``pop``.  Subclasses wrap one ruleset."""

    #: Static facts of the ruleset; set by each subclass or instance.
    info: GameInfo

    # ---- rules -------------------------------------------------------------------------------
    @abc.abstractmethod
    def legal_moves(self) -> list[Move]:
        """All legal moves of the position, in a deterministic order (empty when none)."""

    def legal_moves_and_indices(self) -> tuple[list[Move], np.ndarray]:
        """Legal moves and their policy indices, aligned.

        Returns:
            ``(moves, indices)`` where ``indices`` is int64 ``[L]`` with ``indices[i] ==
            move_to_index(moves[i])``; all distinct and in ``[0, policy_size)``.
        """
        moves = self.legal_moves()
        return moves, np.fromiter((self.move_to_index(m) for m in moves), np.int64, len(moves))

    @abc.abstractmethod
    def push(self, move: Move) -> None:
        """Play a legal move (not checked here: use ``parse_move`` or ``legal_moves`` first)."""

    @abc.abstractmethod
    def pop(self) -> Move:
        """Take back the last move and return it.  Raises ``IndexError`` at the first position."""

    @abc.abstractmethod
    def outcome(self) -> Outcome | None:
        """The result if the game is over in this position, from the side to move, else ``None``."""

    def mate_in_one(self) -> Move | None:
        """A legal move that checkmates at once, when the rules library finds one cheaply; ``None``
        when there is none or the game does not look (the default).  The search uses it to prove a
        node won in one ply without a network call (chess and shogi: the first checkmating move in the
        order of :meth:`legal_moves`)."""
        return None

    def find_mate(self, max_nodes: int) -> tuple[Move, int] | None:
        """A forced mate for the side to move found by the rules' own mate search, of at most
        ``max_nodes`` nodes: ``(first move, plies to mate)``, or ``None`` when none is found or the game
        has no such search (the default).  The search asks it once per root (shogi: cshogi's df-pn
        solver; chess: mates in one)."""
        return None

    @property
    @abc.abstractmethod
    def side_to_move(self) -> int:
        """0 for the first player (white in chess, sente/black in shogi, black in Go), 1 otherwise."""

    @property
    @abc.abstractmethod
    def ply(self) -> int:
        """Number of moves played since the game's initial position (``len(move_stack)``)."""

    def plies_left(self) -> int | None:
        """Plies until the rules end the game by its length (what the clock need not be shared over;
        0 or less: ended), or ``None`` where no such limit is kept for a game under a GUI."""
        return None

    @abc.abstractmethod
    def key(self) -> Hashable:
        """A hashable key of the current position (pieces, side to move, rule state), equal for
        transpositions; used for repetition and as a transposition key."""

    def eval_key(self) -> Hashable:
        """A key of everything ``encode()`` depends on (history included); used by the network cache."""
        return (self.key(), self.history_keys(), self.ply)

    def history_keys(self) -> tuple[Hashable, ...]:
        """Keys of up to ``HISTORY_STEPS - 1`` previous positions, newest first (default: none)."""
        return ()

    def repetition_count(self) -> int:
        """How many times the current position occurred earlier in this state's history (default 0: the
        rules never repeat a position, as Go's positional superko)."""
        return 0

    @abc.abstractmethod
    def copy(self) -> GameState[Move]:
        """An independent copy with the same history (push/pop on one does not affect the other)."""

    # ---- encodings ---------------------------------------------------------------------------
    @abc.abstractmethod
    def encode(self) -> np.ndarray:
        """Input planes of the current position, oriented to the side to move.

        Returns:
            float32 ``[C, H, W]`` with ``(C, H, W) == info.input_shape``.
        """

    def encode_into(self, out: np.ndarray) -> None:
        """Write :meth:`encode`'s planes into ``out`` (float32 ``[C, H, W]``, e.g. a row of a batch
        buffer), every value.  The default copies :meth:`encode`; games with a compiled encoder write
        in place (shogi)."""
        out[...] = self.encode()

    @abc.abstractmethod
    def move_to_index(self, move: Move) -> int:
        """Policy index in ``[0, policy_size)`` of a move in this position (side-to-move oriented)."""

    @abc.abstractmethod
    def index_to_move(self, index: int) -> Move:
        """The legal move with this policy index.  Raises ``IllegalMoveError`` if none is legal."""

    # ---- notation (protocol edge only) -------------------------------------------------------
    @abc.abstractmethod
    def move_to_text(self, move: Move) -> str:
        """Protocol notation: UCI ``e2e4``, USI ``7g7f`` / ``P*5e``, GTP vertex ``D4`` / ``pass``."""

    @abc.abstractmethod
    def parse_move(self, text: str) -> Move:
        """The legal move written ``text`` in protocol notation.  Raises ``IllegalMoveError``."""

    @abc.abstractmethod
    def to_text(self) -> str:
        """The current position as text (FEN, SFEN, or a Go position string the game can read)."""

    @property
    def move_stack(self) -> Sequence[Move]:
        """Moves played since the initial position, oldest first."""
        raise NotImplementedError


#: A benchmark position: its start (``None``: the initial position; else as ``Game.state_from_text``
#: reads it) and the moves played from it, in protocol notation.
BenchPosition = tuple[str | None, tuple[str, ...]]


class Game(abc.ABC):
    """A ruleset with its settings (frozen): makes states.  Obtained from ``engine.games.get_game``.

    Attributes:
        info: the game's sizes and labels.
        bench_positions: the fixed positions ``tabula bench`` searches.
    """

    info: GameInfo
    bench_positions: tuple[BenchPosition, ...] = ((None, ()),)

    @abc.abstractmethod
    def new_state(self) -> GameState[Any]:
        """The initial position."""

    @abc.abstractmethod
    def state_from_text(self, text: str) -> GameState[Any]:
        """A position from text (FEN / SFEN / Go position string).  Raises ``InvalidPositionError``."""

    def warm_up(self) -> None:
        """Load what the rules load on first use (numba kernels, from their cache or compiled), so that
        it happens before ``readyok`` and in the package build's precompile step, not in a game:
        here one move list and one encoding; a game whose positions call more kernels does more."""
        state = self.new_state()
        state.legal_moves_and_indices()
        state.encode()

    @property
    @abc.abstractmethod
    def profile(self) -> PlayProfile:
        """What the engine's search, clock and loaders take from this game (:class:`PlayProfile`)."""

    def library_playout_rate(self, seconds: float) -> float | None:
        """Plies a second of random games played by the rules library the game wraps, alone (python-chess,
        cshogi), for ``tabula bench --rules``; ``None`` where the rules are the project's own."""
        return None

    @property
    def name(self) -> str:
        return self.info.name


def random_play_rate(
    new_board: Callable[[], Any], game_over: Callable[[Any], bool], seconds: float, seed: int = 0
) -> float:
    """Plies a second of random games played for ``seconds`` with a rules library alone (``new_board()``
    makes a board with ``legal_moves`` and ``push``; ``game_over(board)`` ends a game)."""
    rng = random.Random(seed)
    plies = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        board = new_board()
        while True:
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            plies += 1
            if game_over(board):
                break
    return plies / (time.perf_counter() - start)
