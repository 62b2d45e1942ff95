"""Exact life and death at the end of a Go game, where it can be told without reading: Benson's
unconditionally alive (pass-alive) chains, and chains in atari that cannot escape.

A referee that counts by area removes dead stones first, by its own judgement (GNU Go's dragon status
under gogui-twogtp).  An ownership estimate (the network's head, or random play-outs) decides the
unclear chains; these two rules overrule it where the answer is certain, so that Tabula's count names
the referee's winner in the positions where an estimate went wrong (the case that showed it:
docs/ladder.md, "2026-11-28: the shipped networks on the real clients"):

* :func:`pass_alive_points`: Benson's algorithm.  A chain is alive whatever the opponent plays, even if
  its owner always passes, when it touches at least two healthy regions (regions all of whose empty
  points are its liberties) of a set of chains that keep that property together.
* :func:`dead_in_atari_points`: a chain with one liberty that the opponent can fill at once, whose owner
  cannot get a second liberty by playing there and cannot capture anything next to it: the opponent
  takes it on the next move, so it is dead.  (A chain with an escape may still be dead; that is left to
  the estimate.)

Rules only: no search, no network.  Points are flat (``row * N + col``, row 0 the top).
"""

from __future__ import annotations

import numpy as np

from engine.games.go import GoState

EMPTY, BLACK, WHITE = 0, 1, 2


def _neighbours(n: int) -> list[list[int]]:
    """The on-board neighbours of every point of an ``n`` x ``n`` board."""
    out: list[list[int]] = []
    for p in range(n * n):
        r, c = divmod(p, n)
        out.append(
            [q for q, ok in ((p - n, r > 0), (p + n, r < n - 1), (p - 1, c > 0), (p + 1, c < n - 1)) if ok]
        )
    return out


def _components(cells: list[int], member: np.ndarray, nbrs: list[list[int]]) -> list[list[int]]:
    """Connected components (4-neighbour) of the points where ``member`` is true, seeded from ``cells``."""
    seen = np.zeros(len(member), dtype=bool)
    out: list[list[int]] = []
    for start in cells:
        if seen[start] or not member[start]:
            continue
        seen[start] = True
        stack, comp = [start], []
        while stack:
            p = stack.pop()
            comp.append(p)
            for q in nbrs[p]:
                if member[q] and not seen[q]:
                    seen[q] = True
                    stack.append(q)
        out.append(sorted(comp))
    return out


def _chains_of(board: np.ndarray, code: int, nbrs: list[list[int]]) -> list[list[int]]:
    return _components(list(np.flatnonzero(board == code)), board == code, nbrs)


def _liberties(chain: list[int], board: np.ndarray, nbrs: list[list[int]]) -> set[int]:
    return {q for p in chain for q in nbrs[p] if board[q] == EMPTY}


def pass_alive_points(state: GoState, colour: int) -> set[int]:
    """The points of ``colour``'s (0 black, 1 white) unconditionally alive chains (Benson, 1976)."""
    n = state.board_size
    nbrs = _neighbours(n)
    board = state.board_array().reshape(-1)
    code = BLACK if colour == 0 else WHITE
    chains = _chains_of(board, code, nbrs)
    chain_of = {p: i for i, chain in enumerate(chains) for p in chain}
    libs = [_liberties(chain, board, nbrs) for chain in chains]
    # the regions enclosed by this colour: components of the points that are not its stones
    regions = _components(list(np.flatnonzero(board != code)), board != code, nbrs)
    bordering = [{chain_of[q] for p in region for q in nbrs[p] if board[q] == code} for region in regions]
    empties = [[p for p in region if board[p] == EMPTY] for region in regions]
    alive = set(range(len(chains)))
    live_regions = set(range(len(regions)))
    while True:
        # a region is vital to a chain when all its empty points are that chain's liberties
        vital_count = dict.fromkeys(alive, 0)
        for r in live_regions:
            for i in bordering[r]:
                if i in alive and empties[r] and all(p in libs[i] for p in empties[r]):
                    vital_count[i] += 1
        dropped = {i for i in alive if vital_count[i] < 2}
        if not dropped:
            break
        alive -= dropped
        live_regions = {r for r in live_regions if bordering[r] <= alive}
    return {p for i in alive for p in chains[i]}


def dead_in_atari_points(state: GoState) -> set[int]:
    """The points of chains (either colour) in atari that the opponent captures next move whatever
    their owner does (module docstring): the owner's stone on the last liberty leaves the chain with at
    most one liberty and captures nothing, and no opponent chain next to it is in atari."""
    n = state.board_size
    nbrs = _neighbours(n)
    board = state.board_array().reshape(-1)
    dead: set[int] = set()
    for code in (BLACK, WHITE):
        other = 3 - code
        opponents = _chains_of(board, other, nbrs)
        opponent_libs = [_liberties(chain, board, nbrs) for chain in opponents]
        in_atari_points = {
            p for chain, lib in zip(opponents, opponent_libs, strict=True) if len(lib) == 1 for p in chain
        }
        for chain in _chains_of(board, code, nbrs):
            libs = _liberties(chain, board, nbrs)
            if len(libs) != 1:
                continue
            (last,) = libs
            if not state.is_legal_for(2 - code, last):
                continue  # a ko the opponent may not take back at once
            touching = {q for p in chain for q in nbrs[p] if board[q] == other}
            if touching & in_atari_points:
                continue  # its owner may capture and escape
            if any(board[q] == other for q in nbrs[last]) and _captures_at(board, last, code, nbrs):
                continue
            if len(_liberties_after(board, last, code, nbrs)) >= 2:
                continue  # extending at the liberty gets out of atari (for now)
            dead.update(chain)
    return dead


def _captures_at(board: np.ndarray, p: int, code: int, nbrs: list[list[int]]) -> bool:
    """Whether a stone of ``code`` at ``p`` captures an opponent chain (one whose last liberty is ``p``)."""
    other = 3 - code
    for q in nbrs[p]:
        if board[q] == other:
            chain = _components([q], board == other, nbrs)[0]
            if _liberties(chain, board, nbrs) == {p}:
                return True
    return False


def _liberties_after(board: np.ndarray, p: int, code: int, nbrs: list[list[int]]) -> set[int]:
    """The liberties of the chain a stone of ``code`` at empty ``p`` would join (no capture assumed)."""
    after = board.copy()
    after[p] = code
    chain = _components([p], after == code, nbrs)[0]
    return _liberties(chain, after, nbrs)
