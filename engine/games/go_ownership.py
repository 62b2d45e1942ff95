"""Which stones are dead at the end of a Go game: a Monte-Carlo ownership estimate, the dead-stone list
and the score that GUIs, gogui-twogtp's referee, KGS and people count.

Tromp-Taylor scoring (``GoState.score``, what self-play learns from) counts every stone on the board as
alive.  Human counting removes dead stones first: a stone is dead when its opponent could capture it
whatever its owner does.  Without an ownership head in the network this module estimates it the way
Monte-Carlo Go programs do: play the position out many times with random moves that never fill a
one-point eye of the player's own, score each final board point by point (Tromp-Taylor owners), and
average.  A chain whose points end up owned by the opponent in most play-outs is dead.

    own = ownership(state, playouts=64, rng=np.random.default_rng(0))   # float [N*N], black's view
    judgement = judge(state, own)      # dead / alive / seki chains, area score with dead stones removed

Rules only: no search, no network.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from engine.games.go import GoState
from engine.games.go_life import dead_in_atari_points, pass_alive_points

BLACK_CODE, WHITE_CODE = 1, 2  # GoState.board_array's stone codes

#: A chain is dead when its mean ownership from its owner's view is below ``-DEAD_THRESHOLD``.
DEAD_THRESHOLD = 0.2
#: An alive chain is in seki when its mean ownership from its owner's view is below this.
SEKI_THRESHOLD = 0.2
#: An empty point is settled when the estimate gives it to one player at least this clearly.
SETTLED_THRESHOLD = 0.6


def ownership(
    state: GoState, playouts: int, rng: np.random.Generator, max_moves: int | None = None
) -> np.ndarray:
    """Mean Tromp-Taylor owner of every point over ``playouts`` random play-outs from ``state``.

    Each play-out plays uniformly random legal moves that do not fill a one-point eye of the mover's
    own colour (passing when none is left) until two passes or ``max_moves`` (default ``3 N^2``).

    Returns:
        float64 ``[N*N]`` in ``[-1, 1]``: +1 always black's, -1 always white's.
    """
    nn = state.board_size**2
    limit = max_moves if max_moves is not None else 3 * nn
    total = np.zeros(nn, dtype=np.float64)
    for _ in range(playouts):
        board = state.copy()
        _play_out(board, rng, limit)
        total += board.point_owners()
    return total / max(1, playouts)


def _play_out(board: GoState, rng: np.random.Generator, limit: int) -> int:
    """Random moves on ``board`` until two passes in a row or ``limit`` moves; returns how many."""
    pass_move = board.board_size**2
    pushed = 0
    passes = 0
    while passes < 2 and pushed < limit:
        moves = [m for m in board.legal_moves() if m != pass_move]
        colour = board.side_to_move
        move = pass_move
        while moves:
            i = int(rng.integers(len(moves)))
            if not board.is_own_eye(moves[i], colour):
                move = moves[i]
                break
            moves[i] = moves[-1]
            moves.pop()
        board.push(move)
        pushed += 1
        passes = passes + 1 if move == pass_move else 0
    return pushed


def final_ownership(
    state: GoState, scored: bool, playouts: int, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """What a finished game says each point ended as, for training an ownership head (KataGo's target).

    Args:
        state: the game's final position.
        scored: the game was counted on the board as it stands (two passes, Tromp-Taylor): the owners
            are exact.  Otherwise (a resignation, a length cap) they are a :func:`ownership` estimate.
        playouts: play-outs of that estimate.

    Returns:
        ``(owners, margin)``: float32 ``[N*N]`` in [-1, 1] from black's view, and the area-score margin
        from black's view with komi (exact, or the estimate's expectation).
    """
    if scored:
        return state.point_owners().astype(np.float32), state.score()
    own = ownership(state, playouts, rng)
    return own.astype(np.float32), float(own.sum()) - state.komi


@dataclasses.dataclass(frozen=True)
class Judgement:
    """The end-of-game judgement of a position.

    Attributes:
        dead, alive, seki: points of the stones in each state (seki stones are alive too).
        score: black minus white by area with the dead stones removed, komi included.
        settled: no dead stone is left on the board and every empty point is clearly owned (or a
            seki liberty): playing on would change nothing, so passing is safe.
        owners: int8 ``[N*N]``, each point's owner by area with the dead stones removed (1 black,
            -1 white, 0 neither): what a referee counts.
        neutral: the empty points that count for neither player (dame), seki liberties left out.
    """

    dead: list[int]
    alive: list[int]
    seki: list[int]
    score: float
    settled: bool
    owners: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int8), compare=False)
    neutral: list[int] = dataclasses.field(default_factory=list)

    def work_left(self, state: GoState, colour: int) -> bool:
        """Whether ``colour`` (0 black, 1 white) has something to gain before passing in ``state``: an
        opponent stone the count calls dead is still on the board (capture it, so no referee can
        count it alive), or a neutral point is left (filling it is a point by area).  Its own dead
        stones are no reason: the count already gives them away, and throwing more stones into
        the opponent's area only makes more."""
        board = state.board_array().reshape(-1)
        opponent = WHITE_CODE if colour == 0 else BLACK_CODE
        return bool(self.neutral) or any(board[p] == opponent for p in self.dead)


def judge(state: GoState, own: np.ndarray) -> Judgement:
    """Dead, alive and seki stones and the area score with the dead removed, from an ownership estimate
    ``own`` (float ``[N*N]``, black's view, as :func:`ownership` returns), overruled where life and death
    is exact (:mod:`engine.games.go_life`): pass-alive chains are alive, chains in atari that cannot
    escape are dead, whatever the estimate says."""
    certain_alive = pass_alive_points(state, 0) | pass_alive_points(state, 1)
    certain_dead = dead_in_atari_points(state) - certain_alive
    dead: list[int] = []
    alive: list[int] = []
    seki: list[int] = []
    for colour, points in state.chains():
        sign = 1.0 if colour == 0 else -1.0
        mine = sign * float(own[points].mean())
        if points[0] in certain_dead or (mine < -DEAD_THRESHOLD and points[0] not in certain_alive):
            dead.extend(points)
        else:
            alive.extend(points)
            if mine < SEKI_THRESHOLD:
                seki.extend(points)
    owners = state.point_owners(removed=dead)
    score = float(owners.sum()) - state.komi
    board = state.board_array().reshape(-1)
    empty = board == 0
    clear = np.abs(own) >= SETTLED_THRESHOLD
    seki_liberties = _neighbours_of(state, seki)
    settled = not dead and bool(np.all(clear | ~empty | seki_liberties))
    neutral = np.flatnonzero(empty & (owners == 0) & ~seki_liberties).tolist()
    return Judgement(sorted(dead), sorted(alive), sorted(seki), score + 0.0, settled, owners, neutral)


def _neighbours_of(state: GoState, points: list[int]) -> np.ndarray:
    """bool ``[N*N]``: the points next to any of ``points``."""
    n = state.board_size
    mask = np.zeros((n, n), dtype=bool)
    marked = np.zeros((n, n), dtype=bool)
    for p in points:
        marked[divmod(p, n)] = True
    mask[1:, :] |= marked[:-1, :]
    mask[:-1, :] |= marked[1:, :]
    mask[:, 1:] |= marked[:, :-1]
    mask[:, :-1] |= marked[:, 1:]
    return mask.reshape(-1)
