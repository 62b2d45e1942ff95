"""Root moves that walk into a forced mate (``engine/search/mate_threats.py``), on positions from the
shogi ladder's games against Fairy-Stockfish, each checked against cshogi's df-pn directly."""

from __future__ import annotations

import time

import cshogi
import pytest

from engine.games import get_game
from engine.games.shogi import ShogiState
from engine.search.limits import SearchLimits
from engine.search.mate_threats import THREAT_SHARE, mate_threat_verdicts, threat_deadline
from engine.search.proof import Proof
from engine.search.time_manager import TimeBudget

#: Gote to move; the ladder game played R*5e, one of the 38 of 72 moves after which sente mates (in 5 to
#: 17 plies).
TACTICAL = "+R7l/1+B1pgk1s1/p5np1/2p1p1p1p/1p1n1p3/P1P5P/1P2P1PP1/3P1KS2/LNSG1G1NL w BGSLrp 54"
#: Sente to move: 17 of its 19 moves allow a mate in one.
CORNERED = "lns1gg1nl/1r2ks3/p1pppp1pp/1p2L1pP1/9/P1P2P3/1PN1s1P1P/4G4/+b3K1+b1L b rgsn2p 41"


def shogi(sfen: str) -> ShogiState:
    state = get_game("shogi").state_from_text(sfen)
    assert isinstance(state, ShogiState)
    return state


def mated_after(sfen: str, usi: str, nodes: int) -> bool:
    """Whether cshogi's df-pn proves a mate for the side to move after ``usi`` is played."""
    board = cshogi.Board(sfen)
    board.push_usi(usi)
    return not board.is_check() and bool(cshogi.DfPn(31, nodes).search(board))


@pytest.mark.parametrize("sfen", [TACTICAL, CORNERED])
def test_every_flagged_move_is_a_proven_mate_and_the_rest_are_not(sfen: str) -> None:
    state = shogi(sfen)
    verdicts = mate_threat_verdicts(state, 1000)
    assert state.to_text() == shogi(sfen).to_text()  # left as it was
    flagged = {state.move_to_text(m) for m in verdicts}
    for move in state.legal_moves():
        text = state.move_to_text(move)
        assert (text in flagged) == mated_after(sfen, text, 1000), text
    for verdict in verdicts.values():
        assert verdict.result == Proof.LOSS
        assert verdict.plies >= 2 and verdict.plies % 2 == 0  # our move, then the opponent's odd mate
        assert verdict.score.mate == -(verdict.plies // 2)


def test_the_counts_of_the_ladder_positions() -> None:
    tactical = shogi(TACTICAL)
    verdicts = mate_threat_verdicts(tactical, 1000)
    assert len(verdicts) == 38 and len(tactical.legal_moves()) == 72
    assert tactical.parse_move("R*5e") in verdicts  # the move the ladder game played
    cornered = shogi(CORNERED)
    assert len(mate_threat_verdicts(cornered, 1000)) == 17 and len(cornered.legal_moves()) == 19


def test_off_when_no_nodes_and_nothing_after_the_deadline() -> None:
    state = shogi(TACTICAL)
    assert mate_threat_verdicts(state, 0) == {}
    assert mate_threat_verdicts(state, 1000, deadline=time.perf_counter() - 1.0) == {}


def test_the_deadline_is_a_share_of_the_soft_time_from_go() -> None:
    limits = SearchLimits(received_at=100.0)
    assert threat_deadline(limits, TimeBudget(900.0, 900.0, True)) == pytest.approx(
        100.0 + THREAT_SHARE * 0.9
    )
    assert threat_deadline(limits, TimeBudget(None, None, False)) is None
