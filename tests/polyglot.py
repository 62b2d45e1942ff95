"""Writing small Polyglot opening books for tests (python-chess reads books but writes none).

A Polyglot book is a file of 16-byte big-endian entries ``(key u64, move u16, weight u16, learn u32)``
sorted by key, the key being the position's Polyglot Zobrist hash (``chess.polyglot.zobrist_hash``) and
the move ``to | from << 6 | promotion << 12`` (promotion 1 knight .. 4 queen; castling as the king
taking its rook, ``e1h1``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

import chess
import chess.polyglot

_ENTRY = struct.Struct(">QHHI")


def book_move_code(board: chess.Board, move: chess.Move) -> int:
    """The Polyglot code of ``move`` in ``board`` (castling written as the king taking its rook)."""
    to_square = move.to_square
    if board.is_castling(move) and not board.chess960:
        rank = chess.square_rank(move.from_square)
        to_square = chess.square(7 if chess.square_file(move.to_square) > 4 else 0, rank)
    promotion = move.promotion - 1 if move.promotion else 0
    return to_square | move.from_square << 6 | promotion << 12


def write_book(path: Path, lines: Iterable[tuple[Iterable[str], str, int]]) -> Path:
    """Write a book at ``path`` from ``(moves from the start position, book move, weight)`` lines, all in
    UCI notation; returns ``path``."""
    entries = []
    for history, move_text, weight in lines:
        board = chess.Board()
        for text in history:
            board.push_uci(text)
        move = chess.Move.from_uci(move_text)
        entries.append((chess.polyglot.zobrist_hash(board), book_move_code(board, move), weight, 0))
    path.write_bytes(b"".join(_ENTRY.pack(*entry) for entry in sorted(entries)))
    return path
