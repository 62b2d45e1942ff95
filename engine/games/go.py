"""Go positions for the engine, the protocols and the trainer (no Go library): any board size
2..19, suicide illegal, positional superko, game end after two consecutive passes or at the move
limit, Tromp-Taylor area scoring with komi.

Coordinates: flat points ``row * N + col`` (row 0 the TOP row), pass ``N*N``, the policy index equal to
the point; every system (GTP vertices, planes, board arrays) is tabled in :mod:`engine.games.go_rules`.

Go planes are never flipped for the side to move (the board has no direction); only the stone
colours are made relative: "own" = the side to move, "opponent" = the other side.

Input planes (Table S1, AlphaGo Zero), float32 ``[17, N, N]``::

    planes[2*k]     stones of the side to move        k plies ago (k = 0 is the current position)
    planes[2*k + 1] stones of the opponent of the side to move, k plies ago        (k = 0..7)
    planes[16]      colour: all ones when black is to move, all zeros when white is

History steps before the first position of the game (or of the loaded position) are all zero.

Position text (``GoState.to_text()`` / ``GoGame.state_from_text()``), one line, four fields::

    "<N> <komi> <b|w> <row>/<row>/.../<row>"      e.g. "5 7.5 w ...../..X../..O../...../....."

rows top first, ``.`` empty, ``X`` black, ``O`` white (read case-insensitively; written upper-case);
``<b|w>`` is the side to move.  A loaded position is the root: no move history, no passes.

Implementation: the rules are :mod:`engine.games.go_kernel`'s, written once and compiled; a
``GoState`` is a view over one :class:`~engine.games.go_kernel.KernelState` played in place, with the
line of moves (colours included) and a copy of the kernel state every :data:`CHECKPOINT_PLIES` plies:
``pop`` goes back to the last checkpoint and replays the rest in one compiled call.  The legal moves
and the outcome are cached for the current position.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np

from engine.games import go_kernel as gk
from engine.games.base import (
    HISTORY_STEPS,
    NOT_COMPUTED,
    BenchPosition,
    Game,
    GameInfo,
    GameState,
    IllegalMoveError,
    InvalidPositionError,
    NotComputed,
    Outcome,
    PlayProfile,
)
from engine.games.go_rules import (
    BLACK,
    EDGE,
    EMPTY,
    ENCODING_VERSION,
    GTP_COLUMNS,
    MAX_BOARD_SIZE,
    NUM_PLANES,
    SYMBOL_CODES,
    SYMBOLS,
    WHITE,
    GoRules,
    Point,
    check_komi,
    fixed_handicap_points,
    format_score,
    parse_colour,
    point_to_vertex,
    vertex_to_point,
)
from engine.games.go_symmetry import (
    NUM_SYMMETRIES,
    inverse_symmetry,
    symmetry_indices,
    symmetry_permutations,
    symmetry_planes,
    symmetry_point,
    symmetry_policy,
)

__all__ = [
    "BLACK",
    "CHECKPOINT_PLIES",
    "EMPTY",
    "ENCODING_VERSION",
    "GTP_COLUMNS",
    "MAX_BOARD_SIZE",
    "NUM_PLANES",
    "NUM_SYMMETRIES",
    "WHITE",
    "GoGame",
    "GoRules",
    "GoState",
    "Point",
    "fixed_handicap_points",
    "inverse_symmetry",
    "parse_colour",
    "point_to_vertex",
    "symmetry_indices",
    "symmetry_permutations",
    "symmetry_planes",
    "symmetry_point",
    "symmetry_policy",
    "vertex_to_point",
]

#: A copy of the kernel state is kept every this many plies, so ``pop`` replays fewer moves than this.
CHECKPOINT_PLIES = 16


class _Legal:
    """The legal moves of the current position for its side to move (ignoring whether it is over).

    Attributes:
        moves: the moves ascending, pass (``N*N``) last.
        indices: int64 ``[L]`` (read-only), the same as policy indices.
        move_set: the moves as a set.
    """

    __slots__ = ("indices", "move_set", "moves")

    def __init__(self, mask: np.ndarray) -> None:
        self.indices = np.flatnonzero(mask).astype(np.int64)
        self.indices.setflags(write=False)
        self.moves: list[int] = self.indices.tolist()
        self.move_set = set(self.moves)


class GoState(GameState[int]):
    """A Go game in progress (see the module docstring for coordinates, planes and text).

    Moves are ints: the flat point, pass = ``N*N``.  ``push`` does not check legality (use
    ``legal_moves``, ``parse_move`` or ``play_as``); pushing an illegal move corrupts the state.

    Attributes:
        rules: the :class:`GoRules`.
        info: the :class:`GameInfo` (``planes == 17``, ``policy_size == N*N + 1``).
        komi: points added to white; settable at any time (it only affects scoring).
    """

    def __init__(self, rules: GoRules | None = None, komi: float | None = None) -> None:
        self.rules = rules if rules is not None else GoRules()
        n = self.rules.board_size
        self.info = GameInfo("go", n, NUM_PLANES, n * n + 1, ENCODING_VERSION)
        self._komi = self.rules.komi if komi is None else check_komi(komi)
        self._n = n
        self._nn = n * n
        self._set_root(gk.new_state(self.rules))

    # ---- construction helpers ------------------------------------------------------------------
    def _set_root(self, root: gk.KernelState) -> None:
        """Make the kernel state ``root`` (never played on afterwards) the root position."""
        self._marks: list[gk.KernelState] = [root]  # the position at ply i * CHECKPOINT_PLIES
        self._now = gk.copy_state(root)  # the current position, played in place
        self._moves: list[int] = []
        self._colours: list[int] = []  # the colour code of each move's player
        self._hashes: list[int] = [gk.board_hash(root)]  # per position of the line
        self._root_to_play = int(root.meta[1])  # colour code to move at the root
        self._forget()

    def _code_to_move(self) -> int:
        """The colour code to move (1 black, 2 white), from the kernel state."""
        return int(self._now.meta[1])

    def _forget(self) -> None:
        """Drop the current position's cached legal moves and outcome."""
        self._legal: _Legal | None = None
        self._outcome: Outcome | NotComputed | None = NOT_COMPUTED

    def _new_root(self, codes: np.ndarray, to_play: int) -> None:
        """Make the board ``codes`` (int8 ``[N, N]`` colour codes) with colour code ``to_play`` to move
        the root.

        Raises:
            InvalidPositionError: a string without liberties.
        """
        try:
            root = gk.root_state(codes, to_play, self._komi, self.rules.move_limit)
        except ValueError as exc:
            raise InvalidPositionError(str(exc)) from None
        self._set_root(root)

    @classmethod
    def from_text(cls, text: str, rules: GoRules | None = None) -> GoState:
        """Read a position written by :meth:`to_text` (format in the module docstring).

        Args:
            text: the position string.
            rules: the game's rules; the board size must match (default: the size in the text).

        Raises:
            InvalidPositionError: malformed text, wrong size, a string without liberties.
        """
        if not isinstance(text, str):
            raise InvalidPositionError("a Go position must be a string")
        fields = text.split()
        if len(fields) != 4:
            raise InvalidPositionError(f"expected '<N> <komi> <b|w> <rows>', got {text!r}")
        size_s, komi_s, side_s, rows_s = fields
        try:
            n = int(size_s)
            komi = check_komi(float(komi_s))
        except ValueError as exc:
            raise InvalidPositionError(f"bad size or komi in {text!r}: {exc}") from None
        if not 2 <= n <= MAX_BOARD_SIZE:
            raise InvalidPositionError(f"board size {n} not in 2..{MAX_BOARD_SIZE}")
        if rules is None:
            rules = GoRules(board_size=n, komi=komi)
        elif rules.board_size != n:
            size = rules.board_size
            raise InvalidPositionError(f"position is {n}x{n} but the game is {size}x{size}")
        side = side_s.lower()
        if side not in ("b", "w"):
            raise InvalidPositionError(f"side to move must be b or w, got {side_s!r}")
        rows = rows_s.split("/")
        if len(rows) != n or any(len(r) != n for r in rows):
            raise InvalidPositionError(f"expected {n} rows of {n} points, got {rows_s!r}")
        try:
            codes = [SYMBOL_CODES[ch] for ch in rows_s.lower().replace("/", "")]
        except KeyError as exc:
            raise InvalidPositionError(f"bad point symbol {exc.args[0]!r} (use . X O)") from None
        state = cls(rules, komi=komi)
        state._new_root(np.array(codes, dtype=np.int8).reshape(n, n), BLACK if side == "b" else WHITE)
        return state

    def copy(self) -> GoState:
        """An independent copy with the same history (the checkpoints are shared: never played on)."""
        new = GoState.__new__(GoState)
        new.rules = self.rules
        new.info = self.info
        new._komi = self._komi
        new._n = self._n
        new._nn = self._nn
        new._marks = list(self._marks)
        new._now = gk.copy_state(self._now)
        new._moves = list(self._moves)
        new._colours = list(self._colours)
        new._hashes = list(self._hashes)
        new._root_to_play = self._root_to_play
        new._legal = self._legal  # never changed once made
        new._outcome = self._outcome
        return new

    def kernel_state(self) -> gk.KernelState:
        """A copy of the position as a compiled kernel state (with its line since the root), for a
        compiled search to play on."""
        return gk.copy_state(self._now)._replace(komi=self._komi)

    # ---- simple properties -----------------------------------------------------------------------
    @property
    def board_size(self) -> int:
        return self._n

    @property
    def komi(self) -> float:
        return self._komi

    @komi.setter
    def komi(self, value: float) -> None:
        self._komi = check_komi(value)
        self._outcome = NOT_COMPUTED

    @property
    def side_to_move(self) -> int:
        """0 black, 1 white."""
        return self._code_to_move() - 1

    @property
    def ply(self) -> int:
        return len(self._moves)

    @property
    def move_stack(self) -> Sequence[int]:
        return list(self._moves)

    @property
    def consecutive_passes(self) -> int:
        """Passes played in a row up to this position (2 ends the game)."""
        return int(self._now.meta[2])

    def key(self) -> Hashable:
        """``(board Zobrist hash, side to move)``."""
        return (self._hashes[-1], self._code_to_move() - 1)

    def history_keys(self) -> tuple[Hashable, ...]:
        hs, movers = self._hashes, self._colours
        last = len(hs) - 1
        return tuple(
            (hs[i], 2 - movers[i - 1] if i else self._root_to_play - 1)
            for i in range(last - 1, max(last - HISTORY_STEPS, -1), -1)
        )

    def board_hash(self) -> int:
        """Zobrist hash of the stones only (the superko key)."""
        return self._hashes[-1]

    def board_array(self) -> np.ndarray:
        """int8 ``[N, N]`` copy of the board indexed ``[row, col]`` (row 0 top): 0 empty, 1 black, 2 white."""
        return gk.board_array(self._now)

    # ---- playing -----------------------------------------------------------------------------------
    def push(self, move: int) -> None:
        """Play ``move`` (flat point or pass ``N*N``) for the side to move; legality is not checked."""
        c = self._code_to_move()
        gk.play(self._now, move)
        self._record(c, int(move))

    def play_as(self, colour: int, move: int, superko: bool = True) -> None:
        """GTP ``play``: play ``move`` for ``colour`` (0 black, 1 white) whoever is to move.

        The other colour is to move afterwards; ``pop`` takes it back like any move.  ``superko=False``
        accepts a move that repeats an earlier position (an opponent under other rules, a referee's
        board that allows it: GNU Go, GoGui); the game goes on from it.

        Raises:
            IllegalMoveError: bad colour, off-board, occupied, suicide, or (``superko``) superko.
        """
        if not self.is_legal_for(colour, move, superko):
            who = "black" if colour == 0 else "white"
            raise IllegalMoveError(f"illegal move {self._move_name(move)} for {who}")
        gk.play_as(self._now, colour, int(move))
        self._record(colour + 1, int(move))

    def _record(self, c: int, move: int) -> None:
        """Note ``move``, just played for colour code ``c``, and keep a checkpoint when one is due."""
        self._moves.append(move)
        self._colours.append(c)
        self._hashes.append(gk.board_hash(self._now))
        if len(self._moves) % CHECKPOINT_PLIES == 0:
            self._marks.append(gk.copy_state(self._now))
        self._forget()

    def _move_name(self, move: object) -> str:
        if isinstance(move, (int, np.integer)) and 0 <= move <= self._nn:
            return point_to_vertex(int(move), self._n)
        return repr(move)

    def pop(self) -> int:
        """Take back the last move (the last checkpoint's state, the moves after it replayed)."""
        move = self._moves.pop()
        self._colours.pop()
        self._hashes.pop()
        ply = len(self._moves)
        del self._marks[ply // CHECKPOINT_PLIES + 1 :]
        start = ply - ply % CHECKPOINT_PLIES
        self._now = gk.copy_state(self._marks[-1])
        if start < ply:
            colours = np.array(self._colours[start:], dtype=np.int64)
            gk.replay(self._now, colours, np.array(self._moves[start:], dtype=np.int64))
        self._forget()
        return move

    # ---- legal moves -------------------------------------------------------------------------------
    def _legal_entry(self) -> _Legal:
        entry = self._legal
        if entry is None:
            entry = self._legal = _Legal(gk.rule_masks(self._now, self._code_to_move())[0])
        return entry

    def legal_moves(self) -> list[int]:
        """Legal moves of the side to move, ascending points then pass; empty once the game is over."""
        if self.outcome() is not None:
            return []
        return list(self._legal_entry().moves)

    def legal_moves_and_indices(self) -> tuple[list[int], np.ndarray]:
        """``(moves, indices)``; indices int64 ``[L]`` (read-only) equal the moves.  Empty when over."""
        if self.outcome() is not None:
            return [], np.zeros(0, dtype=np.int64)
        entry = self._legal_entry()
        return list(entry.moves), entry.indices

    def is_legal(self, move: int) -> bool:
        """Whether ``move`` is legal for the side to move by the rules (ignores whether the game is over)."""
        return move in self._legal_entry().move_set

    def is_legal_for(self, colour: int, move: int, superko: bool = True) -> bool:
        """Whether ``colour`` (0 black, 1 white) may play ``move`` now, whoever is to move; with
        ``superko=False``, also a move whose only fault is repeating an earlier position, unless it
        retakes a ko at once (the basic rules GNU Go and GoGui's board keep)."""
        if colour not in (0, 1) or isinstance(move, bool) or not isinstance(move, (int, np.integer)):
            return False
        if not 0 <= move <= self._nn:
            return False
        if move == self._nn:
            return True
        c, p = colour + 1, int(move)
        if superko and c == self._code_to_move():
            return p in self._legal_entry().move_set
        legal, banned = gk.rule_masks(self._now, c)
        if legal[p] or superko or not banned[p]:
            return bool(legal[p])
        hashes = self._hashes
        return len(hashes) < 2 or int(gk.hash_after(self._now, c, p)) != hashes[-2]

    # ---- end of game -------------------------------------------------------------------------------
    def outcome(self) -> Outcome | None:
        """Two passes in a row or the move limit: Tromp-Taylor result from the side to move."""
        out = self._outcome
        if out is NOT_COMPUTED:
            code = gk.outcome_code(self._now)
            out = self._outcome = None if code == gk.NOT_OVER else self._scored(gk.REASONS[code])
        return out

    def _scored(self, reason: str) -> Outcome:
        s = self.score()
        if self._code_to_move() == WHITE:
            s = -s
        s += 0.0  # no -0.0
        return Outcome(1.0 if s > 0 else -1.0 if s < 0 else 0.0, reason, s)

    def area(self) -> tuple[int, int]:
        """Tromp-Taylor areas ``(black, white)``: stones plus empty regions reaching only that colour."""
        owners = self.point_owners()
        return int((owners == 1).sum()), int((owners == -1).sum())

    def point_owners(self, removed: Iterable[int] = ()) -> np.ndarray:
        """int8 ``[N*N]``: the Tromp-Taylor owner of every point, 1 black (its stone, or an empty region
        reaching only black stones), -1 white, 0 neither.  Stones at the ``removed`` points (dead stones)
        count as empty, so their region goes to whoever surrounds it."""
        dead = np.zeros(self._nn, dtype=bool)
        dead[list(removed)] = True
        return gk.point_owners(self._now, dead)

    def is_own_eye(self, point: int, colour: int) -> bool:
        """True when ``point`` is empty and every neighbour on the board is a stone of ``colour`` (0
        black, 1 white): the one-point eye shape that random play must not fill."""
        board = self._now.board
        if board[point] != EMPTY:
            return False
        code = colour + 1
        return all(board[r] == code for r in self._now.nbr[point] if r >= 0)

    def true_eyes(self, colour: int) -> np.ndarray:
        """bool ``[N*N]``: the points that are true single-point eyes of ``colour`` (0 black, 1 white).

        A true eye is an empty point whose on-board neighbours are all stones of ``colour`` and that
        is not a false eye: of its diagonal points the opponent holds none when the point is on the
        edge or in a corner, at most one in the middle of the board (the rule Monte-Carlo Go programs'
        playouts use: filling such a point only takes a liberty, usually an eye, from one's own
        stones).
        """
        padded = np.pad(self.board_array(), 1, constant_values=EDGE)
        own = colour + 1
        other = 3 - own
        inner = padded[1:-1, 1:-1]
        up, down = padded[:-2, 1:-1], padded[2:, 1:-1]
        left, right = padded[1:-1, :-2], padded[1:-1, 2:]
        surrounded = inner == EMPTY
        for side in (up, down, left, right):
            surrounded &= (side == own) | (side == EDGE)
        corners = (padded[:-2, :-2], padded[:-2, 2:], padded[2:, :-2], padded[2:, 2:])
        hostile = sum((c == other).astype(np.int8) for c in corners)
        on_edge = sum((c == EDGE).astype(np.int8) for c in corners) > 0
        allowed = np.where(on_edge, 0, 1)
        eyes: np.ndarray = (surrounded & (hostile <= allowed)).reshape(-1)
        return eyes

    def without_eye_fills(self, moves: Iterable[int]) -> list[int]:
        """``moves`` (of the side to move) less those into its own true eyes (:meth:`true_eyes`); pass
        and every other move kept, in order."""
        eyes = self.true_eyes(self.side_to_move)
        nn = self._nn
        return [m for m in moves if m == nn or not eyes[m]]

    def chains(self) -> list[tuple[int, list[int]]]:
        """Every chain of stones on the board: ``(colour, sorted points)`` with colour 0 black, 1 white,
        in the order of their lowest points."""
        board, head = self._now.board, self._now.head
        found: dict[int, list[int]] = {}
        for p in np.flatnonzero(board).tolist():
            found.setdefault(int(head[p]), []).append(p)
        return [(int(board[h]) - 1, stones) for h, stones in found.items()]

    def liberties(self, point: int) -> int:
        """The number of liberties of the chain on ``point`` (0 on an empty point)."""
        head = int(self._now.head[point])
        return 0 if head < 0 else int(self._now.libs[head])

    def score(self) -> float:
        """Tromp-Taylor score, black minus white, komi included (positive: black leads)."""
        return float(gk.area(self._now)) - self._komi

    def result_string(self) -> str:
        """GTP ``final_score`` form of :meth:`score`: ``B+3.5``, ``W+0.5`` or ``0``."""
        s = self.score()
        if s > 0:
            return f"B+{format_score(s)}"
        if s < 0:
            return f"W+{format_score(s)}"
        return "0"

    # ---- encodings ---------------------------------------------------------------------------------
    def encode(self) -> np.ndarray:
        """float32 ``[17, N, N]``: (own, opponent) stones for the current and 7 previous positions, then
        the colour plane (ones when black is to move).  See the module docstring."""
        return gk.encode(self._now)

    def move_to_index(self, move: int) -> int:
        """Policy index of ``move`` (the flat point; pass = ``N*N``)."""
        if isinstance(move, bool) or not isinstance(move, (int, np.integer)) or not 0 <= move <= self._nn:
            raise IllegalMoveError(f"not a Go move: {move!r}")
        return int(move)

    def index_to_move(self, index: int) -> int:
        """The legal move at policy ``index``.  Raises ``IllegalMoveError`` if it is not legal."""
        if (
            isinstance(index, (int, np.integer))
            and not isinstance(index, bool)
            and int(index) in self._legal_entry().move_set
        ):
            return int(index)
        raise IllegalMoveError(f"policy index {index!r} is not a legal move")

    # ---- notation ----------------------------------------------------------------------------------
    def vertex_to_point(self, text: str) -> int:
        """GTP vertex -> flat point (``pass`` -> ``N*N``).  ``IllegalMoveError`` on bad or off-board ones."""
        return vertex_to_point(text, self._n)

    def point_to_vertex(self, point: int) -> str:
        """Flat point -> GTP vertex (``D4``) or ``pass``."""
        return point_to_vertex(point, self._n)

    def move_to_text(self, move: int) -> str:
        """GTP vertex of a move (``D4``, ``pass``)."""
        return point_to_vertex(move, self._n)

    def parse_move(self, text: str) -> int:
        """The legal move (side to move) written as a GTP vertex.  Raises ``IllegalMoveError``."""
        p = vertex_to_point(text, self._n)
        if p not in self._legal_entry().move_set:
            raise IllegalMoveError(f"illegal move {text!r}")
        return p

    def to_text(self) -> str:
        """``"<N> <komi> <b|w> <rows>"`` (see the module docstring); read back by ``from_text``."""
        side = "b" if self._code_to_move() == BLACK else "w"
        return f"{self._n} {self._komi!r} {side} {'/'.join(self._rows())}"

    def _rows(self) -> list[str]:
        """The board's rows, top first, as ``.`` ``X`` ``O`` strings."""
        return ["".join(SYMBOLS[int(x)] for x in row) for row in self.board_array()]

    def __str__(self) -> str:
        """A board diagram with GTP coordinates (for logs and ``showboard``)."""
        n = self._n
        letters = "   " + " ".join(GTP_COLUMNS[:n])
        lines = [letters]
        for r, row in enumerate(self._rows()):
            lines.append(f"{n - r:2d} {' '.join(row)} {n - r:2d}")
        lines.append(letters)
        return "\n".join(lines)

    # ---- GTP setup ---------------------------------------------------------------------------------
    def fixed_handicap_points(self, count: int) -> list[int]:
        """GTP fixed handicap points for this board (see :func:`fixed_handicap_points`)."""
        return fixed_handicap_points(count, self._n)

    def place_handicap(self, points: Iterable[int]) -> None:
        """Put black stones on ``points`` of the empty initial board; white is to move after.

        The handicap position becomes the root (GTP: handicap stones are not moves, so ``pop``
        cannot take them back).

        Raises:
            IllegalMoveError: moves already played, stones on the board, repeated, pass or off-board
                points, or fewer than 1 / more than ``N*N - 1`` stones.
        """
        pts = [int(p) for p in points]
        if self._moves or self._now.board.any():
            raise IllegalMoveError("handicap stones need an empty board")
        if not 1 <= len(pts) <= self._nn - 1 or len(set(pts)) != len(pts):
            raise IllegalMoveError(f"bad handicap point list {pts}")
        if any(not 0 <= p < self._nn for p in pts):
            raise IllegalMoveError(f"handicap points must be on the board: {pts}")
        codes = np.zeros(self._nn, dtype=np.int8)
        codes[pts] = BLACK
        self._new_root(codes.reshape(self._n, self._n), WHITE)


#: ``tabula bench``'s Go positions by board size (other sizes: the empty board).
_BENCH_POSITIONS: dict[int, tuple[BenchPosition, ...]] = {
    9: ((None, ()), (None, ("E5", "C3", "G7", "C6", "G3"))),
    19: ((None, ()), (None, ("Q16", "D4", "Q4", "D16", "R10"))),
}


class GoGame(Game):
    """Go with the given :class:`GoRules`; makes :class:`GoState` positions."""

    def __init__(self, rules: GoRules | None = None) -> None:
        self.rules = rules if rules is not None else GoRules()
        n = self.rules.board_size
        self.info = GameInfo("go", n, NUM_PLANES, n * n + 1, ENCODING_VERSION)
        self.bench_positions = _BENCH_POSITIONS.get(n, ((None, ()),))

    @property
    def profile(self) -> PlayProfile:
        """Go by its board: root noise 0.03 scaled by 361 / N^2 (0.134 at 9x9); a horizon of 30..60 moves
        at 19x19 and 20..40 at 9x9 and 13x13 (a shorter one ran out of time in long 9x9 games with their
        clean-up)."""
        n = self.info.board_size
        high = max(40, n * n // 6)
        return PlayProfile(noise_alpha=0.03 * 361 / (n * n), expected_moves=(high // 2, high))

    def new_state(self) -> GoState:
        """The empty board, black to move."""
        return GoState(self.rules)

    def state_from_text(self, text: str) -> GoState:
        """A position written by ``GoState.to_text()``.  Raises ``InvalidPositionError``."""
        return GoState.from_text(text, self.rules)

    def warm_up(self) -> None:
        """Call every kernel a ``GoState`` uses once (the compiled rules serve every board size): on a
        5x5 ko, a capture, the retake barred by superko and allowed without it, take-backs across a
        checkpoint, the end by two passes and its count."""
        state = GoState.from_text("5 7.5 b .XO../XO.O./.XO../...../.....")
        state.legal_moves_and_indices()
        state.encode()
        state.push(state.vertex_to_point("C4"))  # takes the ko
        state.is_legal_for(1, state.vertex_to_point("B4"), superko=False)
        state.play_as(1, 24)
        for _ in range(CHECKPOINT_PLIES):
            state.push(25)
        state.pop()
        state.copy().kernel_state()
        state.outcome()
        state.point_owners([1])
        state.result_string()
