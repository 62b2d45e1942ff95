"""Game records a person can open: PGN for chess, CSA for shogi, SGF for Go.

Each function takes the moves in protocol notation (UCI, USI, GTP vertices) and returns the text of
one game; :func:`format_games` joins many games into one file (PGN and SGF collections hold many games;
a CSA file separates games with a line ``/``, CSA 2.2).

python-chess and cshogi are imported in the function that writes their game, as
:mod:`engine.games.registry` does: writing one game's records never loads the other game's library.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

GTP_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # no I
SGF_LETTERS = "abcdefghijklmnopqrstuvwxyz"

EXTENSIONS = {"chess": ".pgn", "shogi": ".csa", "go": ".sgf"}


@dataclass(frozen=True)
class GameRecord:
    """What a record needs.

    Attributes:
        game: ``chess``, ``shogi`` or ``go``.
        moves: protocol notation, first move first.
        winner: 0 (white in chess, sente in shogi, black in Go), 1, or ``None`` for a draw.
        reason: how it ended (``resign``, ``checkmate``, ``two-passes``, ``max-length`` ...).
        players: names of player 0 and player 1.
        board_size: Go board size.
        komi: Go komi.
        score: Go score from black's point of view, when scored.
        event: the event header.
        position: the start (chess FEN, shogi SFEN) when it is not the initial position.
    """

    game: str
    moves: Sequence[str]
    winner: int | None
    reason: str
    players: tuple[str, str] = ("tabula", "tabula")
    board_size: int = 19
    komi: float | None = None
    score: float | None = None
    event: str = "Tabula self-play"
    position: str | None = None


def _today() -> str:
    return datetime.date.today().strftime("%Y.%m.%d")


def to_pgn(record: GameRecord, round_number: int = 1) -> str:
    """One PGN game (python-chess checks every move)."""
    import chess
    import chess.pgn

    game = chess.pgn.Game()
    if record.position is not None:
        game.setup(record.position)
    game.headers["Event"] = record.event
    game.headers["Site"] = "tabula-train"
    game.headers["Date"] = _today()
    game.headers["Round"] = str(round_number)
    game.headers["White"], game.headers["Black"] = record.players
    result = "1/2-1/2" if record.winner is None else ("1-0" if record.winner == 0 else "0-1")
    game.headers["Result"] = result
    game.headers["Termination"] = record.reason
    node: chess.pgn.GameNode = game
    for text in record.moves:
        node = node.add_variation(chess.Move.from_uci(text))
    return str(game) + "\n"


_CSA_ENDINGS = {
    "resign": "%TORYO",
    "checkmate": "%TORYO",
    "repetition": "%SENNICHITE",
    "perpetual-check": "%SENNICHITE",
    "entering-king": "%KACHI",
    "max-length": "%HIKIWAKE",
}


def to_csa(record: GameRecord) -> str:
    """One CSA (V2.2) game from the initial position (or ``record.position``)."""
    import cshogi

    board = cshogi.Board() if record.position is None else cshogi.Board(record.position)
    start = ["PI", "+"] if record.position is None else board.csa_pos().splitlines()
    lines = ["V2.2", f"N+{record.players[0]}", f"N-{record.players[1]}", f"$EVENT:{record.event}", *start]
    for text in record.moves:
        move = board.move_from_usi(text)
        lines.append(("+" if board.turn == cshogi.BLACK else "-") + cshogi.move_to_csa(move))
        board.push(move)
    lines.append(_CSA_ENDINGS.get(record.reason, "%CHUDAN"))
    return "\n".join(lines) + "\n"


def gtp_to_sgf(vertex: str, board_size: int) -> str:
    """``D4`` on 9x9 -> ``df``; ``pass`` -> ``""``."""
    v = vertex.strip().upper()
    if v == "PASS":
        return ""
    col = GTP_COLUMNS.index(v[0])
    row_from_top = board_size - int(v[1:])
    return SGF_LETTERS[col] + SGF_LETTERS[row_from_top]


def _format_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def to_sgf(record: GameRecord) -> str:
    """One SGF (FF[4]) Go game."""
    n = record.board_size
    if record.winner is None:
        result = "0"
    else:
        who = "B" if record.winner == 0 else "W"
        if record.reason == "resign":
            result = f"{who}+R"
        elif record.score is not None:
            result = f"{who}+{_format_number(abs(record.score))}"
        else:
            result = f"{who}+"
    props = [
        "GM[1]",
        "FF[4]",
        "CA[UTF-8]",
        "AP[tabula-train]",
        f"SZ[{n}]",
        f"KM[{_format_number(record.komi or 0.0)}]",
        "RU[Tromp-Taylor]",
        f"PB[{record.players[0]}]",
        f"PW[{record.players[1]}]",
        f"RE[{result}]",
        f"DT[{datetime.date.today().isoformat()}]",
        f"EV[{record.event}]",
        f"C[{record.reason}]",
    ]
    moves = "".join(f";{'B' if i % 2 == 0 else 'W'}[{gtp_to_sgf(v, n)}]" for i, v in enumerate(record.moves))
    return "(;" + "".join(props) + moves + ")\n"


def format_game(record: GameRecord, number: int = 1) -> str:
    if record.game == "chess":
        return to_pgn(record, number)
    if record.game == "shogi":
        return to_csa(record)
    return to_sgf(record)


def format_games(records: Sequence[GameRecord]) -> str:
    """Many games in one file's text (PGN / SGF collections, CSA games separated by ``/``)."""
    if not records:
        return ""
    texts = [format_game(r, i + 1) for i, r in enumerate(records)]
    if records[0].game == "shogi":
        return "/\n".join(texts)
    return "\n".join(texts)
