"""The rules of Go, compiled with numba: the one implementation, behind both the search's trees and
:class:`engine.games.go.GoState` (a Python view over a :class:`KernelState`).

The rules: any board size 2..19, flat points ``row * N + col`` with row 0 the TOP row, pass ``N*N``
(:mod:`engine.games.go_rules` gives every coordinate system); suicide illegal; positional superko on
Zobrist hashes of the stones only (not the side to move), checked against every position of the line
since the root; the game ends after two consecutive passes or after ``GoRules.move_limit`` moves
(``2 * N * N`` by default); Tromp-Taylor area scoring with komi; the 17 input planes of Table S1.

State: a :class:`KernelState`, a named tuple of small numpy arrays (numba passes it to compiled code
as a struct).  It is **mutable in place**: :func:`play` changes it and there is no undo.  A search
copies the root once per simulation with :func:`copy_state` (about 5 KB on 9x9, 20 KB on 19x19, most
of it the superko table) and plays down the tree on the copy; ``GoState`` takes a move back by
replaying the line from a checkpoint (:func:`replay`).  Colour codes inside: 0 empty, 1 black, 2 white
(``board_array()``'s codes); the Python-facing :func:`side_to_move` and :func:`play_as` use 0 black,
1 white.

Groups are kept incrementally: every stone knows the head point of its group and the next stone of the
group (a circular list); a head holds the group's stone count and its exact liberty count.  A move
takes one liberty from each opponent neighbour group, removes the ones left without (giving their
points back as liberties to the groups around them), merges the own neighbour groups into the largest
and recounts that group's liberties.  The hashes of the positions of the line are kept in an
open-addressing table sized for the move limit, so a superko test is one probe.

Every compiled function is ``engine.jit.njit`` (cached, GIL released): the first call in a fresh cache
compiles (seconds), later processes load the machine code from the cache.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engine.games.base import HISTORY_STEPS, Outcome
from engine.games.go_rules import BLACK, EMPTY, NUM_PLANES, WHITE, GoRules, point_to_vertex
from engine.jit import njit as _njit
from engine.jit import njit_no_alloc as _njit_no_alloc
from engine.jit import njit_no_alloc_inline as _njit_no_alloc_inline

__all__ = [
    "NOT_OVER",
    "OVER_MAX_LENGTH",
    "OVER_TWO_PASSES",
    "REASONS",
    "KernelState",
    "area",
    "board_array",
    "board_hash",
    "copy_state",
    "encode",
    "encode_into",
    "hash_after",
    "is_over",
    "legal_mask",
    "legal_mask_into",
    "new_state",
    "outcome",
    "outcome_code",
    "play",
    "play_as",
    "point_owners",
    "random_playout",
    "replay",
    "root_state",
    "rule_masks",
    "score",
    "side_to_move",
    "superko_mask",
]


# ---- the state -----------------------------------------------------------------------------------

# Slots of KernelState.meta (int64 scalars).
_N = 0  # board size
_TO_PLAY = 1  # colour code to move
_PASSES = 2  # consecutive passes up to this position
_PLY = 3  # moves played since the root
_LIMIT = 4  # move limit (GoRules.move_limit)
_CAPS = 5  # _CAPS + colour code - 1: stones of that colour captured since the root (superko guard)
_SEEN_ZERO = 7  # 1 when a position of the line had hash 0 (0 marks a free slot of the seen table)
_META_SIZE = 8

#: outcome_code values.
NOT_OVER = 0
OVER_TWO_PASSES = 1
OVER_MAX_LENGTH = 2
#: outcome_code -> ``Outcome.reason``.
REASONS = {OVER_TWO_PASSES: "two-passes", OVER_MAX_LENGTH: "max-length"}


class KernelState(NamedTuple):
    """One Go game in progress for the compiled rules (``NN = N*N``; ``T`` a power of two).

    Attributes:
        board: int8 ``[NN]``: 0 empty, 1 black, 2 white.
        head: int16 ``[NN]``: the head point of the group of each stone; -1 on empty points.
        nxt: int16 ``[NN]``: the next stone of the same group (a circular list through the group).
        libs: int16 ``[NN]``: at a group's head, its number of liberties (distinct empty neighbours).
        size: int16 ``[NN]``: at a group's head, its number of stones.
        history: int8 ``[8, NN]``: the board of position ``i`` of the line (0 = root) in row ``i % 8``.
        seen: uint64 ``[T]``: the hashes of the positions of the line (open addressing, 0 = free slot).
        zhash: uint64 ``[1]``: the Zobrist hash of the board.
        meta: int64 ``[8]``: size, side to move, passes, ply, move limit, captures, zero-hash flag.
        komi: points added to white.
        zob: uint64 ``[3, NN]``: Zobrist keys per colour code (row 0 zero); read-only, shared.
        nbr: int16 ``[NN, 4]``: the on-board neighbours of each point, -1 after the last; read-only,
            shared.
    """

    board: npt.NDArray[np.int8]
    head: npt.NDArray[np.int16]
    nxt: npt.NDArray[np.int16]
    libs: npt.NDArray[np.int16]
    size: npt.NDArray[np.int16]
    history: npt.NDArray[np.int8]
    seen: npt.NDArray[np.uint64]
    zhash: npt.NDArray[np.uint64]
    meta: npt.NDArray[np.int64]
    komi: float
    zob: npt.NDArray[np.uint64]
    nbr: npt.NDArray[np.int16]


@functools.cache
def _tables(n: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int16]]:
    """The read-only tables of board size ``n``, made once and shared by every state:

    * uint64 ``[3, N*N]``: the Zobrist keys (a fixed generator and seed per size: hashes are stable), row 0
      (empty) all zero;
    * int16 ``[N*N, 4]``: the orthogonal on-board neighbours of each point, padded with -1.
    """
    rng = np.random.default_rng(0x5EED_6000 + n)
    zob = rng.integers(1, np.iinfo(np.uint64).max, size=(3, n * n), dtype=np.uint64, endpoint=True)
    zob[0] = 0
    nbr = np.full((n * n, 4), -1, dtype=np.int16)
    for p in range(n * n):
        r, c = divmod(p, n)
        row = [q for q, ok in ((p - n, r > 0), (p - 1, c > 0), (p + 1, c < n - 1), (p + n, r < n - 1)) if ok]
        nbr[p, : len(row)] = row
    zob.flags.writeable = False
    nbr.flags.writeable = False
    return zob, nbr


def _seen_capacity(limit: int) -> int:
    """A power of two >= twice the most positions a line can have (``limit + 1``)."""
    return 1 << max(4, (2 * (limit + 1) - 1).bit_length())


def root_state(board: npt.NDArray[np.int8], to_play: int, komi: float, limit: int) -> KernelState:
    """The root position ``board`` (int8 ``[N, N]``, colour codes) with colour code ``to_play`` to move,
    ``komi`` and the move limit ``limit``.

    Raises:
        ValueError: a string of stones without liberties.
    """
    n = board.shape[0]
    nn = n * n
    meta = np.zeros(_META_SIZE, dtype=np.int64)
    meta[_N], meta[_TO_PLAY], meta[_LIMIT] = n, to_play, limit
    zob, nbr = _tables(n)
    state = KernelState(
        board=np.ascontiguousarray(board, dtype=np.int8).reshape(nn).copy(),
        head=np.full(nn, -1, dtype=np.int16),
        nxt=np.full(nn, -1, dtype=np.int16),
        libs=np.zeros(nn, dtype=np.int16),
        size=np.zeros(nn, dtype=np.int16),
        history=np.zeros((HISTORY_STEPS, nn), dtype=np.int8),
        seen=np.zeros(_seen_capacity(limit), dtype=np.uint64),
        zhash=np.zeros(1, dtype=np.uint64),
        meta=meta,
        komi=float(komi),
        zob=zob,
        nbr=nbr,
    )
    dead = _init_root(state)
    if dead >= 0:
        raise ValueError(f"the string at {point_to_vertex(dead, n)} has no liberties")
    return state


def new_state(rules: GoRules) -> KernelState:
    """The empty board of ``rules`` (size, komi, move limit), black to move."""
    n = rules.board_size
    return root_state(np.zeros((n, n), dtype=np.int8), BLACK, rules.komi, rules.move_limit)


# ---- root and copies ------------------------------------------------------------------------------


@_njit
def _init_root(s: KernelState) -> int:
    """Build the groups, hash and history of a fresh root; a stone of a group without liberties, or
    -1 when every group has one."""
    board, head, nxt, zob, nbr = s.board, s.head, s.nxt, s.zob, s.nbr
    h = np.uint64(0)
    for p in range(board.shape[0]):
        c = board[p]
        if c == EMPTY or head[p] >= 0:
            continue
        # flood the group from p, linking its stones into a circular list
        stack = [p]
        head[p] = p
        last = p
        count = 0
        while stack:
            q = stack.pop()
            h ^= zob[c, q]
            count += 1
            nxt[last] = q
            last = q
            for k in range(4):
                r = nbr[q, k]
                if r < 0:
                    break
                if board[r] == c and head[r] < 0:
                    head[r] = p
                    stack.append(r)
        nxt[last] = p
        s.size[p] = count
        s.libs[p] = _count_liberties(board, head, nxt, nbr, p)
        if s.libs[p] == 0:
            return p
    s.zhash[0] = h
    _seen_add(s, h)
    s.history[0, :] = board
    return -1


@_njit
def copy_state(s: KernelState) -> KernelState:
    """An independent copy of ``s`` (the Zobrist and neighbour tables are shared: never written)."""
    return KernelState(
        s.board.copy(),
        s.head.copy(),
        s.nxt.copy(),
        s.libs.copy(),
        s.size.copy(),
        s.history.copy(),
        s.seen.copy(),
        s.zhash.copy(),
        s.meta.copy(),
        s.komi,
        s.zob,
        s.nbr,
    )


# ---- superko table --------------------------------------------------------------------------------
#
# The hot helpers below take the arrays they use, not the KernelState: reading an array out of the
# named tuple costs numba a reference-count update, which inside the per-point loops quadrupled the
# time of a legal-move mask.


@_njit_no_alloc
def _seen_slot(seen: npt.NDArray[np.uint64], h: np.uint64) -> int:
    """The slot of ``seen`` (uint64 ``[T]``) holding ``h`` (nonzero), or the free slot where it would
    go; -1 when the table is full."""
    mask = seen.shape[0] - 1
    i = np.intp(h & np.uint64(mask))
    for _ in range(seen.shape[0]):
        if seen[i] == h or seen[i] == 0:
            return int(i)
        i = (i + 1) & mask
    return -1


@_njit_no_alloc
def _seen_add(s: KernelState, h: np.uint64) -> None:
    """Record position hash ``h`` as seen on the line."""
    if h == 0:
        s.meta[_SEEN_ZERO] = 1
        return
    i = _seen_slot(s.seen, h)
    if i >= 0:
        s.seen[i] = h


@_njit_no_alloc
def _seen_has(seen: npt.NDArray[np.uint64], zero_seen: bool, h: np.uint64) -> bool:
    """Whether a position of the line had hash ``h`` (``zero_seen``: whether one had hash 0)."""
    if h == 0:
        return zero_seen
    i = _seen_slot(seen, h)
    return i >= 0 and bool(seen[i] == h)


# ---- groups (arrays as in KernelState) ------------------------------------------------------------


@_njit_no_alloc
def _count_liberties(
    board: npt.NDArray[np.int8],
    head: npt.NDArray[np.int16],
    nxt: npt.NDArray[np.int16],
    nbr: npt.NDArray[np.int16],
    g: int,
) -> int:
    """The number of distinct empty points next to the group with head ``g`` (``head`` up to date for
    its stones).  Each liberty is counted at its first neighbour in the group (no scratch array of
    marks: the kernel allocates nothing, see :mod:`engine.jit`)."""
    count = 0
    q = g
    while True:
        for k in range(4):
            r = nbr[q, k]
            if r < 0:
                break
            if board[r] == EMPTY and _first_stone_of(head, nbr, r, g) == q:
                count += 1
        q = nxt[q]
        if q == g:
            return count


@_njit_no_alloc
def _first_stone_of(head: npt.NDArray[np.int16], nbr: npt.NDArray[np.int16], r: int, g: int) -> int:
    """The first neighbour of point ``r`` that is a stone of the group with head ``g`` (-1: none)."""
    for k in range(4):
        x = nbr[r, k]
        if x < 0:
            break
        if head[x] == g:
            return int(x)
    return -1


@_njit_no_alloc
def _group_hash(
    board: npt.NDArray[np.int8], nxt: npt.NDArray[np.int16], zob: npt.NDArray[np.uint64], g: int
) -> np.uint64:
    """The xor of the Zobrist keys of the stones of the group with head ``g``."""
    c = board[g]
    h = np.uint64(0)
    q = g
    while True:
        h ^= zob[c, q]
        q = nxt[q]
        if q == g:
            return np.uint64(h)


@_njit_no_alloc
def _counted_before(
    board: npt.NDArray[np.int8],
    head: npt.NDArray[np.int16],
    nbr: npt.NDArray[np.int16],
    p: int,
    k: int,
    colour: int,
) -> bool:
    """Whether a neighbour of ``p`` before its ``k``-th is a stone of ``colour`` in the same group as
    the ``k``-th (so that each neighbour group is counted once)."""
    g = head[nbr[p, k]]
    for j in range(k):
        q = nbr[p, j]
        if board[q] == colour and head[q] == g:
            return True
    return False


@_njit_no_alloc
def _merge(
    head: npt.NDArray[np.int16], nxt: npt.NDArray[np.int16], size: npt.NDArray[np.int16], a: int, b: int
) -> int:
    """Merge the groups with heads ``a`` and ``b`` (different) into the larger; return its head."""
    if size[a] < size[b]:
        a, b = b, a
    q = b
    while True:
        head[q] = a
        q = nxt[q]
        if q == b:
            break
    nxt[a], nxt[b] = nxt[b], nxt[a]  # splice the two circular lists
    size[a] += size[b]
    return a


@_njit_no_alloc
def _remove_group(s: KernelState, g: int) -> np.uint64:
    """Take the group with head ``g`` off the board, giving its points as liberties to the groups
    around it (all of the other colour); return the xor of its stones' Zobrist keys."""
    board, head, nxt, libs, nbr = s.board, s.head, s.nxt, s.libs, s.nbr
    o = board[g]
    c = 3 - o
    h = _group_hash(board, nxt, s.zob, g)
    q = g
    while True:  # empty the points first: the liberties are counted on the final board
        board[q] = EMPTY
        q = nxt[q]
        if q == g:
            break
    while True:
        for k in range(4):
            r = nbr[q, k]
            if r < 0:
                break
            if board[r] == c and not _counted_before(board, head, nbr, q, k, c):
                libs[head[r]] += 1
        head[q] = -1
        q = nxt[q]
        if q == g:
            return h


# ---- moves ---------------------------------------------------------------------------------------


@_njit_no_alloc
def _place_stone(s: KernelState, c: int, p: int) -> None:
    """Put a stone of colour code ``c`` on the empty point ``p``, with captures, hash and superko set."""
    board, head, nxt, libs, size, nbr = s.board, s.head, s.nxt, s.libs, s.size, s.nbr
    o = 3 - c
    board[p] = c
    head[p] = p
    nxt[p] = p
    size[p] = 1
    libs[p] = 0
    h = s.zhash[0] ^ s.zob[c, p]
    captured = 0
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if board[q] == o and not _counted_before(board, head, nbr, p, k, o):
            g = head[q]
            libs[g] -= 1
            if libs[g] == 0:
                captured += size[g]
                h ^= _remove_group(s, g)
    g = p
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if board[q] == c and head[q] != g:
            g = _merge(head, nxt, size, head[q], g)
    libs[g] = _count_liberties(board, head, nxt, nbr, g)
    s.meta[_CAPS + o - 1] += captured
    s.zhash[0] = h
    _seen_add(s, h)


@_njit_no_alloc
def _play_colour(s: KernelState, c: int, move: int) -> None:
    """Play ``move`` (point or pass ``N*N``) for colour code ``c``; the other colour moves next."""
    meta = s.meta
    if move == s.board.shape[0]:
        meta[_PASSES] += 1
    else:
        _place_stone(s, c, move)
        meta[_PASSES] = 0
    meta[_PLY] += 1
    meta[_TO_PLAY] = 3 - c
    _copy_row(s.history[meta[_PLY] % s.history.shape[0]], s.board)


@_njit_no_alloc
def _copy_row(dst: npt.NDArray[np.int8], src: npt.NDArray[np.int8]) -> None:
    """``dst[:] = src`` as a plain loop (numba's slice assignment goes through its broadcasting code)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@_njit_no_alloc
def play(s: KernelState, move: int) -> None:
    """Play ``move`` (flat point ``row * N + col``, row 0 the top; pass ``N*N``) for the side to move,
    in place.  Legality is not checked: an illegal move corrupts the state."""
    _play_colour(s, s.meta[_TO_PLAY], move)


@_njit_no_alloc
def play_as(s: KernelState, colour: int, move: int) -> None:
    """Play ``move`` for ``colour`` (0 black, 1 white) whoever is to move (``GoState.play_as``),
    in place and unchecked; the other colour is to move after."""
    _play_colour(s, colour + 1, move)


@_njit_no_alloc
def replay(s: KernelState, colours: npt.NDArray[np.int64], moves: npt.NDArray[np.int64]) -> None:
    """Play ``moves[i]`` for colour code ``colours[i]`` (int64 ``[M]`` each) in order, in place and
    unchecked: a line taken back to a checkpoint and played forward in one call."""
    for i in range(moves.shape[0]):
        _play_colour(s, colours[i], moves[i])


# ---- legal moves ---------------------------------------------------------------------------------


@_njit_no_alloc
def _has_liberty_after(
    board: npt.NDArray[np.int8],
    head: npt.NDArray[np.int16],
    libs: npt.NDArray[np.int16],
    nbr: npt.NDArray[np.int16],
    c: int,
    q: int,
) -> bool:
    """Whether a stone of colour code ``c`` on the empty point ``q`` has a liberty after its captures:
    an empty neighbour, an own neighbour group with another liberty, or an opponent group captured."""
    for k in range(4):
        r = nbr[q, k]
        if r < 0:
            break
        b = board[r]
        if b == EMPTY:
            return True
        n_libs = libs[head[r]]
        if (b == c and n_libs >= 2) or (b != c and n_libs == 1):
            return True
    return False


@_njit_no_alloc
def _hash_after(
    board: npt.NDArray[np.int8],
    head: npt.NDArray[np.int16],
    nxt: npt.NDArray[np.int16],
    libs: npt.NDArray[np.int16],
    nbr: npt.NDArray[np.int16],
    zob: npt.NDArray[np.uint64],
    h: np.uint64,
    c: int,
    q: int,
) -> np.uint64:
    """The hash of the board (now hashing to ``h``) after a stone of colour code ``c`` on ``q`` (legal
    but for superko) and its captures: the opponent neighbour groups whose last liberty ``q`` is."""
    h ^= zob[c, q]
    o = 3 - c
    for k in range(4):
        r = nbr[q, k]
        if r < 0:
            break
        if board[r] == o and libs[head[r]] == 1 and not _counted_before(board, head, nbr, q, k, o):
            h ^= _group_hash(board, nxt, zob, head[r])
    return np.uint64(h)


@_njit_no_alloc_inline
def _masks_for(s: KernelState, c: int, legal: npt.NDArray[np.bool_], banned: npt.NDArray[np.bool_]) -> None:
    """Write into ``legal`` and ``banned`` (bool ``[NN+1]`` each, every entry written) the moves of colour
    code ``c`` that the rules allow now, whoever is to move and whether or not the game is over (pass
    last), and the points legal but for positional superko.  An empty ``banned`` (``legal[:0]``)
    records no superko points.  Inlined into its callers (numba's IR): called, the Go tree's uniform
    search ran 6-10% slower (three builds of the kernel cache each way, docs/design.md)."""
    board, head, nxt, libs, nbr, zob, seen = s.board, s.head, s.nxt, s.libs, s.nbr, s.zob, s.seen
    nn = board.shape[0]
    record = banned.shape[0] > 0
    for q in range(nn + 1):
        legal[q] = False
        if record:
            banned[q] = False
    # A repeated board needs a stone of colour c captured since the root (its point was emptied).
    check_superko = s.meta[_CAPS + c - 1] > 0
    zero_seen = s.meta[_SEEN_ZERO] == 1
    h = s.zhash[0]
    for q in range(nn):
        if board[q] == EMPTY and _has_liberty_after(board, head, libs, nbr, c, q):
            if check_superko and _seen_has(
                seen, zero_seen, _hash_after(board, head, nxt, libs, nbr, zob, h, c, q)
            ):
                if record:
                    banned[q] = True
            else:
                legal[q] = True
    legal[nn] = True


@_njit_no_alloc
def _move_masks_into(s: KernelState, legal: npt.NDArray[np.bool_], banned: npt.NDArray[np.bool_]) -> None:
    """:func:`_masks_for` the side to move, both masks all False once the game is over."""
    if outcome_code(s) == NOT_OVER:
        _masks_for(s, s.meta[_TO_PLAY], legal, banned)
        return
    for q in range(legal.shape[0]):
        legal[q] = False
    for q in range(banned.shape[0]):
        banned[q] = False


@_njit
def rule_masks(s: KernelState, c: int) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """``(legal, superko)``, new bool ``[NN+1]`` arrays: the moves colour code ``c`` may play now
    whoever is to move, over or not (GTP ``play``), and the points barred only by superko."""
    nn = s.board.shape[0]
    legal = np.empty(nn + 1, dtype=np.bool_)
    banned = np.empty(nn + 1, dtype=np.bool_)
    _masks_for(s, c, legal, banned)
    return legal, banned


@_njit
def hash_after(s: KernelState, c: int, q: int) -> np.uint64:
    """The board's hash after a stone of colour code ``c`` on ``q`` (legal but for superko) and its
    captures."""
    return _hash_after(s.board, s.head, s.nxt, s.libs, s.nbr, s.zob, s.zhash[0], c, q)


@_njit
def _move_masks(s: KernelState) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """``(legal, superko)``, new bool ``[NN+1]`` arrays (:func:`_move_masks_into`)."""
    nn = s.board.shape[0]
    legal = np.empty(nn + 1, dtype=np.bool_)
    banned = np.empty(nn + 1, dtype=np.bool_)
    _move_masks_into(s, legal, banned)
    return legal, banned


@_njit
def legal_mask(s: KernelState) -> npt.NDArray[np.bool_]:
    """bool ``[N*N+1]``: the legal moves of the side to move, pass (always legal) last; all False
    once the game is over (``GoState.legal_moves()`` is then empty)."""
    return _move_masks(s)[0]


@_njit_no_alloc
def legal_mask_into(s: KernelState, out: npt.NDArray[np.bool_]) -> None:
    """:func:`legal_mask` written into ``out`` (bool ``[N*N+1]``, e.g. a batch row), allocating nothing
    (the superko points are not recorded)."""
    _move_masks_into(s, out, out[:0])


@_njit
def superko_mask(s: KernelState) -> npt.NDArray[np.bool_]:
    """bool ``[N*N+1]``: the points that would be legal but repeat a position of the line."""
    return _move_masks(s)[1]


# ---- end of game and scoring ----------------------------------------------------------------------


@_njit_no_alloc
def outcome_code(s: KernelState) -> int:
    """:data:`OVER_TWO_PASSES`, :data:`OVER_MAX_LENGTH` (the move limit) or :data:`NOT_OVER`."""
    if s.meta[_PASSES] >= 2:
        return OVER_TWO_PASSES
    if s.meta[_PLY] >= s.meta[_LIMIT]:
        return OVER_MAX_LENGTH
    return NOT_OVER


@_njit_no_alloc
def is_over(s: KernelState) -> bool:
    """Whether the game has ended (two passes in a row, or the move limit)."""
    return outcome_code(s) != NOT_OVER


#: ``head`` of an empty point the flood fill of :func:`_owners_into` has reached (-1 otherwise).
_REACHED = -2


@_njit_no_alloc
def _owners_into(
    board: npt.NDArray[np.int8],
    nbr: npt.NDArray[np.int16],
    head: npt.NDArray[np.int16],
    nxt: npt.NDArray[np.int16],
    owners: npt.NDArray[np.int8],
) -> int:
    """Tromp-Taylor area of black minus white (stones plus empty regions reaching only that colour),
    and each point's owner written into ``owners`` (int8 ``[NN]``: 1 black, -1 white, 0 neither)
    unless it is empty.

    No scratch arrays (the kernel allocates nothing, see :mod:`engine.jit`): the flood fill marks the
    empty points it reaches in ``head`` (:data:`_REACHED`, back to -1 at the end) and stacks them
    through ``nxt``, which empty points do not use; a point taken off the stack is linked into the
    list of the region's points (``nxt`` again), which the owners are written along."""
    nn = board.shape[0]
    record = owners.shape[0] > 0
    area = 0
    for p in range(nn):
        if board[p] == BLACK:
            area += 1
            if record:
                owners[p] = 1
        elif board[p] == WHITE:
            area -= 1
            if record:
                owners[p] = -1
        elif head[p] != _REACHED:
            head[p] = _REACHED
            nxt[p] = -1
            top = p
            done = -1  # the region's points taken off the stack, linked through nxt
            region = 0
            reach = 0
            while top >= 0:
                q = top
                top = nxt[q]
                nxt[q] = done
                done = q
                region += 1
                for k in range(4):
                    r = nbr[q, k]
                    if r < 0:
                        break
                    if board[r] != EMPTY:
                        reach |= board[r]
                    elif head[r] != _REACHED:
                        head[r] = _REACHED
                        nxt[r] = top
                        top = r
            owner = 1 if reach == BLACK else -1 if reach == WHITE else 0
            area += owner * region
            while record and done >= 0:
                owners[done] = owner
                done = nxt[done]
    for p in range(nn):
        if board[p] == EMPTY:
            head[p] = -1
    return area


@_njit_no_alloc
def _area(s: KernelState) -> int:
    """Tromp-Taylor area of black minus white (:func:`_owners_into`, no owners recorded)."""
    return _owners_into(s.board, s.nbr, s.head, s.nxt, s.board[:0])


@_njit_no_alloc
def score(s: KernelState) -> float:
    """Tromp-Taylor score, black minus white, komi included (positive: black leads)."""
    return float(_area(s)) - s.komi


def area(s: KernelState) -> int:
    """Tromp-Taylor area of black minus white, komi not included."""
    return int(_area(s))


def point_owners(s: KernelState, removed: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.int8]:
    """int8 ``[N*N]``: the Tromp-Taylor owner of every point (1 black, -1 white, 0 neither); stones
    on the ``removed`` points (bool ``[N*N]``: dead stones) count as empty, so their region goes to
    whoever surrounds it.  ``s`` is not changed."""
    board, head = s.board.copy(), s.head.copy()
    if removed is not None:
        board[removed] = EMPTY
        head[removed] = -1
    owners = np.zeros(board.shape[0], dtype=np.int8)
    _owners_into(board, s.nbr, head, s.nxt.copy(), owners)
    return owners


# ---- encoding ------------------------------------------------------------------------------------


@_njit_no_alloc
def encode_into(s: KernelState, out: npt.NDArray[np.float32]) -> None:
    """Write ``GoState.encode()``'s planes into ``out``, float32 ``[17, N, N]`` (e.g. a batch row):
    ``out[2k]`` / ``out[2k+1]`` the stones of the side to move / its opponent ``k`` plies ago (zero
    before the root), ``out[16]`` ones when black is to move."""
    n = s.meta[_N]
    nn = n * n
    ply = s.meta[_PLY]
    c = s.meta[_TO_PLAY]
    steps = s.history.shape[0]
    flat = out.reshape(out.shape[0], nn)  # every cell written once: no zeroing pass, no division
    known = min(steps, ply + 1)
    own_code, opp_code = np.int8(c), np.int8(3 - c)  # the points' type: EMPTY, BLACK or WHITE
    for k in range(steps):
        own, opp = flat[2 * k], flat[2 * k + 1]
        if k < known:
            row = s.history[(ply - k) % steps]
            # branch-free, one store a loop: LLVM vectorises each; two stores in one loop with a
            # conditional stayed scalar and paid for every mispredicted branch (docs/benchmarks.md,
            # "Costs behind the code's design")
            for p in range(nn):
                own[p] = np.float32(row[p] == own_code)
            for p in range(nn):
                opp[p] = np.float32(row[p] == opp_code)
        else:
            for p in range(nn):
                own[p] = 0.0
            for p in range(nn):
                opp[p] = 0.0
    colour = flat[2 * steps]
    fill = 1.0 if c == BLACK else 0.0
    for p in range(nn):
        colour[p] = fill


# ---- random play ---------------------------------------------------------------------------------


@_njit
def random_playout(s: KernelState, seed: int) -> int:
    """Play uniformly random legal moves (pass included) on ``s``, in place, to the end of the game;
    return the number of moves played.  ``seed`` seeds numba's generator (-1: leave it)."""
    if seed >= 0:
        np.random.seed(seed)
    moves = 0
    while not is_over(s):
        legal = np.flatnonzero(legal_mask(s))
        play(s, legal[np.random.randint(legal.shape[0])])
        moves += 1
    return moves


# ---- Python-facing views -------------------------------------------------------------------------


def side_to_move(s: KernelState) -> int:
    """0 black, 1 white."""
    return int(s.meta[_TO_PLAY]) - 1


def board_array(s: KernelState) -> npt.NDArray[np.int8]:
    """int8 ``[N, N]`` copy of the board indexed ``[row, col]`` (row 0 top): 0 empty, 1 black, 2 white."""
    n = int(s.meta[_N])
    return s.board.reshape(n, n).copy()


def board_hash(s: KernelState) -> int:
    """Zobrist hash of the stones only (the superko key)."""
    return int(s.zhash[0])


def encode(s: KernelState) -> npt.NDArray[np.float32]:
    """float32 ``[17, N, N]``: a new array holding :func:`encode_into`'s planes."""
    n = int(s.meta[_N])
    out = np.empty((NUM_PLANES, n, n), dtype=np.float32)
    encode_into(s, out)
    return out


def outcome(s: KernelState) -> Outcome | None:
    """The Tromp-Taylor result from the side to move once the game is over, or None while playing."""
    code = outcome_code(s)
    if code == NOT_OVER:
        return None
    value = float(score(s))
    if s.meta[_TO_PLAY] == WHITE:
        value = -value
    value += 0.0  # no -0.0
    return Outcome(1.0 if value > 0 else -1.0 if value < 0 else 0.0, REASONS[code], value)
