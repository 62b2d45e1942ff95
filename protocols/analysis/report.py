"""Analysis responses: a search's report as KataGo's response object (docs/analysis.md).  Pure: the
caller hands in the search's :class:`~engine.search.searcher.SearchInfo` and what the network said of
the position.

Every game: ``moveInfos`` (``move``, ``visits``, ``winrate``, ``prior``, ``pv``, ``order``, ``utility``,
``pvVisits`` when asked), ``rootInfo`` (``visits``, ``winrate``, ``utility``, ``currentPlayer``).  Go adds
``scoreLead`` / ``scoreMean`` (the network's score head), ``ownership`` and ``policy``; chess and shogi
add ``scoreCp`` (centipawns), ``mate`` (moves, a proven mate only) and ``wdl`` (per mille), and
``policy`` as ``{move: prior}``.  Winrates, utilities and scores are from ``perspective``'s side.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.games import GameState
from engine.games.go import GoState
from engine.search.score import q_to_cp, q_to_wdl
from engine.search.searcher import PVLine, SearchInfo


@dataclasses.dataclass(frozen=True)
class NetworkView:
    """What the network says of a position beside the search (Go; ``None`` where not asked or the
    network has no such head).

    Attributes:
        ownership: float64 ``[N*N]`` in [-1, 1], +1 black's, row-major from the top-left (A19).
        policy: float64 ``[N*N + 1]``: the prior of every point, -1 where illegal, the pass last.
        move_scores: each reported move's score lead for the side to move at the root (points), by move.
        move_ownership: each reported move's ownership after it (float64 ``[N*N]``, +1 black's), by move.
        root_score: the root's score lead for its side to move (points).
        policy_moves: chess / shogi: ``{move text: prior}`` of every legal move.
    """

    ownership: np.ndarray | None = None
    policy: np.ndarray | None = None
    move_scores: dict[Any, float] | None = None
    move_ownership: dict[Any, np.ndarray] | None = None
    root_score: float | None = None
    policy_moves: dict[str, float] | None = None


def flips(state: GameState[Any], perspective: str) -> bool:
    """Whether values from the side to move of ``state`` change sign for ``perspective`` (``BLACK``:
    Go's black, shogi's sente, chess's black; ``WHITE``; ``SIDETOMOVE``)."""
    if perspective == "SIDETOMOVE":
        return False
    mover = state.side_to_move
    if not isinstance(state, GoState):
        # chess: 0 white, 1 black; shogi: 0 sente (black), 1 gote (white)
        black = 1 if state.info.name == "chess" else 0
        return (mover == black) != (perspective == "BLACK")
    return (mover == 0) != (perspective == "BLACK")


def response(
    query_id: str,
    turn: int,
    state: GameState[Any],
    info: SearchInfo,
    root_q: float,
    during_search: bool,
    perspective: str,
    view: NetworkView,
    include_pv_visits: bool = False,
    pv_visits: Sequence[Sequence[int]] | None = None,
) -> dict[str, Any]:
    """The response object of one analysed position.

    Args:
        query_id, turn: echoed as ``id`` and ``turnNumber``.
        state: the analysed position (its lines are played on it and taken back).
        info: the search's report (its lines best first, every visited root move).
        root_q: the root's mean value for its side to move.
        during_search: ``isDuringSearch``.
        perspective: ``BLACK``, ``WHITE`` or ``SIDETOMOVE``.
        view: the network's extras (ownership, policy, scores).
        include_pv_visits: add ``pvVisits`` (``pv_visits[i]``: the visits along line ``i``'s pv).
    """
    sign = -1.0 if flips(state, perspective) else 1.0
    go = isinstance(state, GoState)
    infos = []
    for order, line in enumerate(info.lines):
        entry = _move_info(state, line, order, sign, go, view, perspective)
        if include_pv_visits and pv_visits is not None and order < len(pv_visits):
            entry["pvVisits"] = list(pv_visits[order])
        infos.append(entry)
    root: dict[str, Any] = {
        "visits": int(info.nodes),
        "winrate": _winrate(sign * root_q),
        "utility": sign * root_q,
        "currentPlayer": _player(state),
    }
    if go:
        lead = _root_lead(info.lines, view)
        if lead is not None:
            root["scoreLead"] = root["scoreMean"] = sign * lead
    else:
        root["scoreCp"] = q_to_cp(sign * root_q)
        root["wdl"] = list(q_to_wdl(sign * root_q))
    out: dict[str, Any] = {
        "id": query_id,
        "isDuringSearch": during_search,
        "turnNumber": turn,
        "moveInfos": infos,
        "rootInfo": root,
    }
    if view.ownership is not None:
        out["ownership"] = _ownership(view.ownership, state, perspective)
    if view.policy is not None:
        out["policy"] = [round(float(v), 7) for v in view.policy]
    elif view.policy_moves is not None:
        out["policy"] = {k: round(v, 7) for k, v in view.policy_moves.items()}
    return out


def no_results(query_id: str, turn: int) -> dict[str, Any]:
    """KataGo's answer for a position terminated before any analysis."""
    return {"id": query_id, "isDuringSearch": False, "noResults": True, "turnNumber": turn}


def _move_info(
    state: GameState[Any],
    line: PVLine,
    order: int,
    sign: float,
    go: bool,
    view: NetworkView,
    perspective: str,
) -> dict[str, Any]:
    q = sign * line.q
    entry: dict[str, Any] = {
        "move": state.move_to_text(line.move),
        "visits": int(line.visits),
        "winrate": _winrate(q),
        "utility": q,
        "prior": float(line.prior),
        "order": order,
        "pv": _pv_texts(state, line.pv),
    }
    if line.score.mate is not None:  # proven: the winrate is certain, so is its bound
        entry["lcb"] = entry["winrate"]
    if go:
        scores = view.move_scores or {}
        if line.move in scores:
            entry["scoreLead"] = entry["scoreMean"] = sign * scores[line.move]
        owned = (view.move_ownership or {}).get(line.move)
        if owned is not None:
            entry["ownership"] = _ownership(owned, state, perspective)
    else:
        mate = line.score.mate
        if mate is not None:
            entry["mate"] = int(mate) if sign > 0 else -int(mate)
            entry["wdl"] = [1000, 0, 0] if entry["mate"] > 0 else [0, 0, 1000]
            entry["scoreCp"] = 12800 if entry["mate"] > 0 else -12800
        else:
            entry["scoreCp"] = q_to_cp(q)
            entry["wdl"] = list(q_to_wdl(q))
    return entry


def _ownership(own: np.ndarray, state: GameState[Any], perspective: str) -> list[float]:
    """Black's ownership ``[N*N]`` from ``perspective``'s side (``SIDETOMOVE``: the root's mover)."""
    flip = perspective == "WHITE" or (perspective == "SIDETOMOVE" and state.side_to_move == 1)
    return [round(float(-v if flip else v), 6) for v in own]


def _pv_texts(state: GameState[Any], pv: Sequence[Any]) -> list[str]:
    """The line written in the protocol's notation, each move on the position it is played in (played
    on ``state`` and taken back: ``state`` is as it was after the call)."""
    out = []
    played = 0
    try:
        for move in pv:
            out.append(state.move_to_text(move))
            state.push(move)
            played += 1
    except Exception:  # a line that cannot be replayed ends there (never crash a report)
        pass
    finally:
        for _ in range(played):
            state.pop()
    return out


def _root_lead(lines: Sequence[PVLine], view: NetworkView) -> float | None:
    """The root's score lead for its side to move: the visit-weighted mean of the reported moves' leads
    (what a search average gives at depth one), else the network's at the root."""
    scores = view.move_scores or {}
    pairs = [(line.visits, scores[line.move]) for line in lines if line.move in scores and line.visits > 0]
    total = sum(n for n, _ in pairs)
    if total > 0:
        return sum(n * s for n, s in pairs) / total
    return view.root_score


def _winrate(q: float) -> float:
    return min(1.0, max(0.0, (q + 1.0) / 2.0))


def _player(state: GameState[Any]) -> str:
    """``B`` or ``W``: Go's black / white, shogi's sente / gote, chess's black / white."""
    mover = state.side_to_move
    if state.info.name == "chess":
        return "W" if mover == 0 else "B"
    return "B" if mover == 0 else "W"
