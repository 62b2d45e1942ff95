"""Tabula in-process: analyse or play positions of chess, shogi and Go from Python (docs/analysis.md,
"Python API").

    import tabula
    with tabula.Engine("chess") as engine:
        print(engine.analyse(moves=["e2e4", "e7e5"], visits=200).best_move)

:class:`Engine` is the engine's own :class:`~engine.session.Session` (the network the protocols load,
the same search, the same options): :meth:`Engine.analyse` searches a position and returns an
:class:`Analysis` of frozen values, :meth:`Engine.play` returns the move the engine would play, and
:meth:`Engine.analyse_game` analyses every turn of a game.  Moves are written in each game's protocol
notation: UCI for chess (``e2e4``), USI for shogi (``7g7f``), GTP vertices for Go (``D4``, ``pass``;
the colours alternate from black).  :func:`analyse` is the one-call form.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from engine.games import GameState
from engine.options import EngineOptions
from engine.search.limits import SearchLimits
from engine.search.score import q_to_wdl
from engine.search.searcher import PVLine, SearchResult
from engine.session import Session

__all__ = ["Analysis", "Engine", "MoveInfo", "analyse"]


@dataclasses.dataclass(frozen=True)
class MoveInfo:
    """One root move of an analysis, from the side to move's point of view.

    Attributes:
        move: the move in the game's protocol notation.
        visits: the search's visits to it.
        winrate: its expected score in [0, 1] (a draw counts a half).
        prior: the network's prior for it, in [0, 1].
        pv: the principal variation starting with ``move``.
        score_cp: centipawns from its value, as UCI and USI report them (``cp = 90 tan(1.5637541897
            q)``; in Go a number on the same scale, not points).
        mate: moves to a proven mate (negative: being mated), else ``None``.
        wdl: win, draw, loss per mille (from its value; certain for a proven mate).
    """

    move: str
    visits: int
    winrate: float
    prior: float
    pv: tuple[str, ...]
    score_cp: int
    mate: int | None
    wdl: tuple[int, int, int]


@dataclasses.dataclass(frozen=True)
class Analysis:
    """The search of one position.

    Attributes:
        game: the game label (``chess``, ``shogi``, ``go9``, ``go19``).
        position: the position searched, as the game writes it (FEN, SFEN, Go's text form).
        visits: the playouts of the search.
        moves: the searched root moves, best first (at most the ``lines`` asked for).
        stop_reason: why the search ended (``nodes``, ``time``, ``proven``, ``terminal`` ...).
    """

    game: str
    position: str
    visits: int
    moves: tuple[MoveInfo, ...]
    stop_reason: str

    @property
    def best_move(self) -> str | None:
        """The move the engine plays (``None``: no legal move)."""
        return self.moves[0].move if self.moves else None

    @property
    def winrate(self) -> float | None:
        """The best move's winrate for the side to move (``None``: no legal move)."""
        return self.moves[0].winrate if self.moves else None


class Engine:
    """One game's engine in this process (the protocols' :class:`~engine.session.Session`).

    Args:
        game: ``chess``, ``shogi``, ``go`` (19x19), or ``go9`` / ``go<N>``.
        options: the engine options (``Hash``, ``Threads``, the network file ...); default: the
            protocols' defaults.
        komi: Go's komi (default 7.5).

    The network loads at the first search.  Close the engine (or use it as a context manager) to free
    the network and its threads.
    """

    def __init__(self, game: str, options: EngineOptions | None = None, komi: float | None = None) -> None:
        game_options: dict[str, Any] = {} if komi is None else {"komi": komi}
        self.session = Session(game, options or EngineOptions(), game_options)
        self.game = self.session.game.info.label

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop any search and free the network."""
        self.session.close()

    def analyse(
        self,
        position: str | None = None,
        moves: Sequence[str] = (),
        visits: int = 800,
        seconds: float | None = None,
        lines: int = 5,
    ) -> Analysis:
        """Search a position and return what the search found.

        Args:
            position: the start position (FEN, SFEN, Go's text form); ``None``: the initial position.
            moves: moves played from it, in the game's protocol notation.
            visits: playouts of the search.
            seconds: a time limit as well (``None``: none).
            lines: the most root moves reported.

        Raises:
            ValueError: a bad position, an illegal move (``engine.games.IllegalMoveError``), or
                ``visits`` / ``lines`` below 1.
        """
        if visits < 1 or lines < 1:
            raise ValueError("visits and lines must be at least 1")
        self.session.set_position(position, list(moves))
        if self.session.options.multipv != lines:
            self.session.set_options(multipv=lines)
        self.session.ensure_ready()
        limits = SearchLimits(nodes=visits, movetime_ms=None if seconds is None else seconds * 1000.0)
        result = self.session.search(limits)
        return _analysis(self.game, self.session.state, result)

    def play(self, position: str | None = None, moves: Sequence[str] = (), visits: int = 800) -> str | None:
        """The move the engine plays in the position (``None``: no legal move)."""
        return self.analyse(position, moves, visits, lines=1).best_move

    def analyse_game(
        self, moves: Sequence[str], position: str | None = None, visits: int = 800, lines: int = 5
    ) -> list[Analysis]:
        """Every turn of a game: the start position, then the position after each move (``len(moves)
        + 1`` analyses, each on a fresh tree)."""
        out = []
        for turn in range(len(moves) + 1):
            self.session.new_game()
            out.append(self.analyse(position, moves[:turn], visits, lines=lines))
        return out


def analyse(
    game: str, position: str | None = None, moves: Sequence[str] = (), visits: int = 800, lines: int = 5
) -> Analysis:
    """:meth:`Engine.analyse` with an engine made and closed for the call."""
    with Engine(game) as engine:
        return engine.analyse(position, moves, visits, lines=lines)


def _analysis(game: str, state: GameState[Any], result: SearchResult) -> Analysis:
    infos = tuple(_move_info(state, line) for line in result.info.lines)
    return Analysis(game, state.to_text(), int(result.info.nodes), infos, str(result.stop_reason.value))


def _move_info(state: GameState[Any], line: PVLine) -> MoveInfo:
    mate = line.score.mate
    if mate is not None:
        wdl = (1000, 0, 0) if mate > 0 else (0, 0, 1000)
    else:
        wdl = q_to_wdl(line.q)
    pv = []
    board = state.copy()
    for move in line.pv:
        pv.append(board.move_to_text(move))
        board.push(move)
    return MoveInfo(
        move=state.move_to_text(line.move),
        visits=int(line.visits),
        winrate=min(1.0, max(0.0, (line.q + 1.0) / 2.0)),
        prior=float(line.prior),
        pv=tuple(pv),
        score_cp=int(line.score.cp),
        mate=mate,
        wdl=wdl,
    )
