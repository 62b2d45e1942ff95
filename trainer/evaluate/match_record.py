"""What a match leaves behind: its games as one record file (PGN / CSA / SGF, players ``A`` and ``B``)
and its line in the run's log (``match`` events)."""

from __future__ import annotations

from pathlib import Path

from engine.games.base import Game
from trainer.evaluate.evaluate import MatchReport
from trainer.store.records import GameRecord, format_games
from trainer.store.runfolder import RunFolder


def match_records(report: MatchReport, game: Game, komi: float | None) -> str:
    """The games of ``report`` as one record file's text, players ``A`` and ``B`` (``komi``: Go's)."""
    return format_games(
        [
            GameRecord(
                game=game.info.name,
                moves=m.opening + m.moves,
                winner=m.winner,
                reason=m.reason,
                players=("A", "B") if m.a_first else ("B", "A"),
                board_size=game.info.board_size,
                komi=komi,
                score=m.score,
                event="Tabula evaluation",
                position=m.position,
            )
            for m in report.games
        ]
    )


def log_match(
    folder: RunFolder, report: MatchReport, net_a: Path, b_name: str, games: int, sims: int
) -> None:
    """Log the match of network ``net_a`` against ``b_name`` (``games`` games of ``sims`` visits) in the
    run's log: its results and Elo with the interval."""
    elo, lo, hi = report.result.elo()
    folder.log_event(
        "match",
        a=str(net_a),
        b=b_name,
        games=games,
        simulations=sims,
        wins=report.result.wins,
        draws=report.result.draws,
        losses=report.result.losses,
        score=report.result.score,
        elo=elo,
        low=lo,
        high=hi,
    )
