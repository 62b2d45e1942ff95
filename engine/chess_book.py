"""Polyglot opening books for chess (UCI ``OwnBook`` / ``BookFile``), read with python-chess
(``chess.polyglot``).

A Polyglot book is a file of 16-byte entries sorted by the position's Zobrist key: key, move, weight,
learn.  :meth:`PolyglotBook.pick` chooses among a position's legal book moves at random in proportion to
their weights (entries of weight 0 are deleted ones and never chosen), as Polyglot and Stockfish's old
``OwnBook`` did: a book is a repertoire, and variety between games is what it is for.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
from collections.abc import Collection

import chess
import chess.polyglot

log = logging.getLogger("tabula.book")

#: The choices of books opened without a generator of their own (seeded by the system).
_RANDOM = random.Random()


@dataclasses.dataclass(frozen=True)
class BookMove:
    """A move chosen from the book, with its weight and the weights of all the position's book moves."""

    move: chess.Move
    weight: int
    total: int


class PolyglotBook:
    """One Polyglot book file, opened (memory-mapped) once.

    Raises:
        ValueError: the file does not exist or is not a Polyglot book (its size is not a multiple of 16
            bytes).
    """

    def __init__(self, path: str) -> None:
        if not os.path.isfile(path):
            raise ValueError(f"no such file {path!r}")
        try:
            self._reader = chess.polyglot.open_reader(path)
        except OSError as exc:
            raise ValueError(f"{path!r} is not a Polyglot book ({exc})") from None
        self.path = path
        self.entries = len(self._reader)

    def describe(self) -> str:
        """What was opened, for the GUI (``info string``)."""
        return f"book {self.path}: {self.entries} entries"

    def pick(
        self, board: chess.Board, allowed: Collection[chess.Move] = (), rng: random.Random | None = None
    ) -> BookMove | None:
        """A book move for ``board`` (standard castling as ``e1g1`` unless ``board.chess960``), chosen by
        weight among the legal ones (and among ``allowed`` when given), or ``None``: out of book, or an
        unreadable entry (logged: the search plays instead)."""
        try:
            entries = [e for e in self._reader.find_all(board) if not allowed or e.move in allowed]
        except Exception:  # a damaged book must never cost a move
            log.exception("cannot read the book %s", self.path)
            return None
        weights = [e.weight for e in entries]  # find_all leaves out entries of weight 0
        if not entries:
            return None
        entry = (rng if rng is not None else _RANDOM).choices(entries, weights)[0]
        return BookMove(entry.move, entry.weight, sum(weights))

    def close(self) -> None:
        self._reader.close()
