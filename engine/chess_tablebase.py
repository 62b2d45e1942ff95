"""Syzygy endgame tablebases for chess (UCI ``SyzygyPath``, ``SyzygyProbeLimit``), probed with
python-chess's prober (``chess.syzygy``): Tabula has no prober of its own.

What the engine does with them (:meth:`SyzygyTables.probe_root`): before a search, every root move whose
position after the move is in the tables gets a verdict (:class:`~engine.search.root_verdicts.RootVerdict`)
under the fifty-move rule, as Stockfish's root probe rates them:

* a capture or pawn move (the clock starts again): the WDL table of the position after it;
* any other move: its DTZ table (plies to the next capture or pawn move), with the root's halfmove
  clock: a win whose next zeroing move would come after the clock reaches 100 is a draw;
* a move that checkmates is a mate in one; one that ends the game otherwise (stalemate, repetition,
  fifty moves) a draw.

Won moves are ranked by their distance to zeroing (DTZ: the move that keeps the win and makes progress
soonest is played, which a won ending needs: a search alone may shuffle among winning moves until the
fifty-move rule draws), lost moves by the longest distance.  The search then proves the root's children
with them (:mod:`engine.search.root_verdicts`): a won root is answered at once with its DTZ-best move; in
a drawn root the losing moves are excluded and the search picks among the drawing ones.

Only the root's children are probed.  The compiled search's walks run in numba on the chess kernel and
cannot call python-chess, and a probe in Python costs about a millisecond and a half (a batch's
selection takes less): probing inside the tree would slow every search near the tables.  A position
with more pieces than the tables hold is one capture away at best, so the root's captures cover the
step into the tables that matters for play.

Positions with castling rights are not in the tables; positions with more than ``SyzygyProbeLimit``
pieces, or whose tables are missing, are not probed: the search is then exactly what it is without
tables.
"""

from __future__ import annotations

import logging
import os
import re

import chess
import chess.syzygy

from engine.games.chess import ChessState
from engine.search.proof import Proof
from engine.search.root_verdicts import TABLEBASE_PLIES, RootVerdict, RootVerdicts, tablebase_score
from engine.search.score import Score, mate_score

log = logging.getLogger("tabula.syzygy")

#: The most pieces Syzygy tables hold (and ``SyzygyProbeLimit``'s maximum).
MAX_PIECES = 7

#: The halfmove clock at which the fifty-move rule draws (plies without a capture or pawn move).
FIFTY_MOVES = 100

_TABLE_NAME = re.compile(r"^([KQRBNP]+)v([KQRBNP]+)\.rtbw$")


class SyzygyTables:
    """The Syzygy tables in the folders of one ``SyzygyPath`` (folders separated by ``os.pathsep``, as
    Stockfish reads it: ``:`` on Unix, ``;`` on Windows).

    Raises:
        ValueError: a folder does not exist.
    """

    def __init__(self, path: str) -> None:
        folders = [folder.strip() for folder in path.split(os.pathsep) if folder.strip()]
        for folder in folders:
            if not os.path.isdir(folder):
                raise ValueError(f"no such folder {folder!r}")
        self.path = path
        self._tables = chess.syzygy.Tablebase()
        self.files = 0
        self.max_pieces = 0
        for folder in folders:
            self.files += self._tables.add_directory(folder)
            for name in os.listdir(folder):
                m = _TABLE_NAME.match(name)
                if m is not None:
                    self.max_pieces = max(self.max_pieces, len(m[1]) + len(m[2]))

    def describe(self) -> str:
        """What was found, for the GUI (``info string``)."""
        return f"Syzygy: {self.files} table files (up to {self.max_pieces} pieces) in {self.path}"

    def close(self) -> None:
        self._tables.close()

    def probe_root(self, state: ChessState, probe_limit: int = MAX_PIECES) -> RootVerdicts | None:
        """The verdicts of the root moves whose positions are in the tables (module docstring), or
        ``None`` when none is (too many pieces, missing tables, castling rights everywhere): the search
        is then unchanged.  ``probe_limit``: the most pieces a probed position may have."""
        limit = min(probe_limit, self.max_pieces)
        board = state.board
        pieces = chess.popcount(board.occupied)
        if pieces - 1 > limit:  # no move leaves a position the tables hold
            return None
        hits = 0
        depth = 1  # where the tables were reached: 0 when the root itself is in them
        if pieces <= limit and not board.castling_rights and self._wdl(board) is not None:
            hits += 1
            depth = 0
        # A move that is not a capture or pawn move keeps the root's material: when the root has no
        # castling rights and is not in the tables, neither is the position after it.
        quiet_ones_known = depth == 0 or bool(board.castling_rights)
        verdicts: dict[chess.Move, RootVerdict] = {}
        after = state.copy()
        for move in state.legal_moves():
            zeroing = board.is_zeroing(move)
            if not zeroing and not quiet_ones_known:
                continue
            after.push(move)
            try:
                verdict, probed = self._verdict(after, zeroing, limit, depth)
            finally:
                after.pop()
            hits += probed
            if verdict is not None:
                verdicts[move] = verdict
        if not hits:
            return None
        return RootVerdicts(verdicts, hits)

    def _verdict(
        self, after: ChessState, zeroing: bool, limit: int, depth: int
    ) -> tuple[RootVerdict | None, int]:
        """The verdict of the move that led to ``after`` (``None`` when the tables do not know it) and
        the probes it took."""
        outcome = after.outcome()
        board = after.board
        if outcome is not None:  # the rules decide: a mate, or a draw
            if outcome.value < 0:
                return RootVerdict(Proof.WIN, 1, mate_score(1, True)), 0
            return RootVerdict(Proof.DRAW, 0, Score(cp=0)), 0
        if chess.popcount(board.occupied) > limit or board.castling_rights:
            return None, 0
        if zeroing:
            wdl = self._wdl(board)
            if wdl is None:
                return None, 0
            if wdl == -2:  # the opponent loses: we win, and the move zeroed the clock already
                return RootVerdict(Proof.WIN, TABLEBASE_PLIES + 1, tablebase_score(Proof.WIN, depth)), 1
            if wdl == 2:
                dtz = self._dtz(board)
                plies = TABLEBASE_PLIES + 1 + (dtz if dtz is not None and dtz > 0 else 0)
                return RootVerdict(Proof.LOSS, plies, tablebase_score(Proof.LOSS, depth)), 1
            return RootVerdict(Proof.DRAW, 0, tablebase_score(Proof.DRAW, depth)), 1
        dtz = self._dtz(board)
        if dtz is None:
            return None, 0
        # ``dtz``: plies from ``after`` to its next zeroing move (negative: the opponent, to move there,
        # loses); a win or loss holds when that move comes before the clock reaches 100 (Stockfish's
        # margin of one ply for the tables' rounding).
        within = board.halfmove_clock + abs(dtz) <= FIFTY_MOVES - 1
        if dtz < 0 and within:
            return RootVerdict(Proof.WIN, TABLEBASE_PLIES + 1 - dtz, tablebase_score(Proof.WIN, depth)), 1
        if dtz > 0 and within:
            return RootVerdict(Proof.LOSS, TABLEBASE_PLIES + 1 + dtz, tablebase_score(Proof.LOSS, depth)), 1
        return RootVerdict(Proof.DRAW, 0, tablebase_score(Proof.DRAW, depth)), 1

    def _wdl(self, board: chess.Board) -> int | None:
        """WDL of ``board`` from its side to move (-2..2), ``None`` when the tables do not have it."""
        try:
            return self._tables.probe_wdl(board)
        except KeyError:  # MissingTableError, too many pieces, castling rights
            return None
        except Exception:  # a broken file must not end the search: the move is unknown
            log.exception("Syzygy WDL probe failed for %s", board.fen())
            return None

    def _dtz(self, board: chess.Board) -> int | None:
        """DTZ of ``board`` (python-chess's ``probe_dtz``), ``None`` when the tables do not have it."""
        try:
            return self._tables.probe_dtz(board)
        except KeyError:
            return None
        except Exception:
            log.exception("Syzygy DTZ probe failed for %s", board.fen())
            return None
