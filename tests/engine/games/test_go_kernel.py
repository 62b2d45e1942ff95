"""The compiled Go rules (engine/games/go_kernel.py) against GoState: random games and hand-made positions."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.games import go_kernel as gk
from engine.games.go import GoRules, GoState
from tests.engine.games.test_go import KO, position

# ---- helpers -------------------------------------------------------------------------------------


def legal_moves(kernel: gk.KernelState) -> list[int]:
    return np.flatnonzero(gk.legal_mask(kernel)).tolist()


def check_groups(kernel: gk.KernelState, state: GoState) -> None:
    """White-box: the kernel's groups (stones, liberty counts) equal GoState's."""
    chains: dict[int, list[int]] = {}
    for p, h in enumerate(kernel.head.tolist()):
        if h >= 0:
            chains.setdefault(h, []).append(p)
    for h, stones in chains.items():
        group = state._grp[h]
        assert group is not None and sorted(group.stones) == stones
        assert kernel.size[h] == len(stones) and kernel.libs[h] == len(group.libs)
    assert len(chains) == len(state.chains())


def check_same(kernel: gk.KernelState, state: GoState) -> None:
    """Everything observable agrees: board, hash, side, legal moves, planes, outcome and score."""
    np.testing.assert_array_equal(gk.board_array(kernel), state.board_array())
    assert gk.board_hash(kernel) == state.board_hash()
    assert gk.side_to_move(kernel) == state.side_to_move
    assert legal_moves(kernel) == state.legal_moves()
    assert np.array_equal(gk.encode(kernel), state.encode())
    assert gk.outcome(kernel) == state.outcome()
    assert gk.is_over(kernel) == (state.outcome() is not None)
    assert gk.score(kernel) == state.score()


def push_both(state: GoState, kernel: gk.KernelState, vertex: str) -> None:
    """Play the GTP ``vertex`` for the side to move in both rules."""
    move = state.parse_move(vertex)
    state.push(move)
    gk.play(kernel, move)


def random_game(rules: GoRules, rng: random.Random) -> tuple[int, int]:
    """Play one random game with both rules in lockstep, checking agreement at every ply.

    Moves: uniform over the board moves, a pass 5% of the time, and 3% of the time the side not to
    move plays (GTP ``play``), to vary colours and pass runs.  Returns ``(plies, superko decisions)``.
    """
    state = GoState(rules)
    kernel = gk.new_state(rules)
    superko = 0
    while True:
        check_same(kernel, state)
        superko += int(gk.superko_mask(kernel).sum())
        moves = state.legal_moves()
        if not moves:
            break
        nn = rules.board_size**2
        if rng.random() < 0.03:
            colour = 1 - state.side_to_move
            move = rng.choice([p for p in range(nn + 1) if state.is_legal_for(colour, p)])
            state.play_as(colour, move)
            gk.play_as(kernel, colour, move)
        else:
            move = rng.choice(moves[:-1]) if len(moves) > 1 and rng.random() > 0.05 else nn
            state.push(move)
            gk.play(kernel, move)
        if rng.random() < 0.05:
            check_groups(kernel, state)
    check_groups(kernel, state)
    return state.ply, superko


# ---- random games --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, games, seed", [(2, 20, 0), (3, 30, 1), (5, 80, 2), (7, 40, 3), (9, 40, 4), (13, 8, 5), (19, 4, 6)]
)
def test_random_games_agree(n: int, games: int, seed: int) -> None:
    rng = random.Random(seed)
    plies = superko = 0
    for g in range(games):
        rules = GoRules(
            board_size=n, komi=rng.choice([7.5, 0.0, 6.0, -2.5]), max_moves=None if g % 4 else 3 * n
        )
        p, s = random_game(rules, rng)
        plies += p
        superko += s
    assert plies > games * n
    if n in (5, 7):
        assert superko > 0  # real superko decisions were taken, and both rules agreed on them


def test_from_go_state_replays_loaded_positions_and_play_as() -> None:
    state = position(KO, side="w")
    state.play_as(0, state.vertex_to_point("E1"))  # black moves twice in a row
    rng = random.Random(11)
    for _ in range(12):
        state.push(rng.choice(state.legal_moves()))
    check_same(gk.from_go_state(state), state)
    handicap = GoState(GoRules(board_size=9))
    handicap.place_handicap(handicap.fixed_handicap_points(4))
    handicap.push(40)
    check_same(gk.from_go_state(handicap), handicap)


def test_copy_is_independent() -> None:
    state = GoState(GoRules(board_size=7))
    for move in (24, 25, 17, 18):
        state.push(move)
    kernel = gk.from_go_state(state)
    copy = gk.copy_state(kernel)
    assert gk.random_playout(copy, 3) > 0 and gk.is_over(copy)
    check_same(kernel, state)


def test_random_playout_ends_the_game() -> None:
    kernel = gk.new_state(GoRules(board_size=9))
    moves = gk.random_playout(kernel, 1)
    assert gk.is_over(kernel) and 0 < moves <= 2 * 81
    assert gk.outcome(kernel) is not None


def test_encode_into_a_batch_row() -> None:
    state = GoState(GoRules(board_size=5))
    for move in (12, 6, 25, 18):
        state.push(move)
    batch = np.full((3, 17, 5, 5), 9.0, dtype=np.float32)
    gk.encode_into(gk.from_go_state(state), batch[1])
    assert np.array_equal(batch[1], state.encode())
    assert (batch[0] == 9.0).all() and (batch[2] == 9.0).all()


# ---- hand-made positions -------------------------------------------------------------------------


def test_single_stone_capture() -> None:
    state = position(
        """
        .X...
        XO...
        .X...
        .....
        .....
        """
    )
    kernel = gk.from_go_state(state)
    push_both(state, kernel, "C4")
    assert gk.board_array(kernel)[1, 1] == 0
    check_same(kernel, state)
    check_groups(kernel, state)


def test_multi_stone_capture() -> None:
    state = position(
        """
        .OOX.
        XOOX.
        .XX..
        .....
        .....
        """
    )
    kernel = gk.from_go_state(state)
    push_both(state, kernel, "A5")  # takes the four white stones: their last liberty
    assert gk.board_array(kernel).tolist()[:2] == [[1, 0, 0, 1, 0], [1, 0, 0, 1, 0]]
    assert kernel.libs[kernel.head[0]] == 3  # A5 and A4 together: B5, B4 and A3
    check_same(kernel, state)
    check_groups(kernel, state)


def test_suicide_is_illegal() -> None:
    state = position(
        """
        .X...
        X....
        .....
        .....
        .....
        """,
        side="w",
    )
    kernel = gk.from_go_state(state)
    assert not gk.legal_mask(kernel)[0]
    assert gk.legal_mask(kernel)[25]  # pass
    check_same(kernel, state)
    # a multi-stone suicide: white filling its own last liberty
    state = position(
        """
        .OX..
        OOX..
        XX...
        .....
        .....
        """,
        side="w",
    )
    kernel = gk.from_go_state(state)
    assert not gk.legal_mask(kernel)[0]
    check_same(kernel, state)


def test_simple_ko() -> None:
    state = position(KO)
    kernel = gk.from_go_state(state)
    b4 = state.vertex_to_point("B4")
    push_both(state, kernel, "C4")  # black takes the ko
    assert not gk.legal_mask(kernel)[b4] and gk.superko_mask(kernel)[b4]  # the immediate retake
    check_same(kernel, state)
    push_both(state, kernel, "E1")  # a threat and its answer: the board differs, the retake is legal
    push_both(state, kernel, "E2")
    assert gk.legal_mask(kernel)[b4]
    check_same(kernel, state)


def test_superko_is_positional_not_situational() -> None:
    state = position(KO, side="w")
    kernel = gk.from_go_state(state)
    state.play_as(0, state.vertex_to_point("C4"))
    gk.play_as(kernel, 0, state.vertex_to_point("C4"))
    assert not gk.legal_mask(kernel)[state.vertex_to_point("B4")]
    check_same(kernel, state)


def triple_ko_board() -> GoState:
    """Three independent kos on 9x9: K1 and K3 black can take, K2 white can take; black to move."""
    board = [["."] * 9 for _ in range(9)]

    def ko(r0: int, c0: int, taken: bool) -> None:
        for dr, dc, s in ((0, 1, "X"), (0, 2, "O"), (1, 0, "X"), (1, 3, "O"), (2, 1, "X"), (2, 2, "O")):
            board[r0 + dr][c0 + dc] = s
        if taken:
            board[r0 + 1][c0 + 2] = "X"
        else:
            board[r0 + 1][c0 + 1] = "O"

    ko(0, 0, False)
    ko(0, 5, True)
    ko(5, 0, False)
    return GoState.from_text("9 7.5 b " + "/".join("".join(r) for r in board))


def test_positional_superko_triple_ko() -> None:
    state = triple_ko_board()
    kernel = gk.from_go_state(state)
    start = gk.board_hash(kernel)
    for vertex in ("C8", "G8", "C3", "B8", "H8"):  # never an immediate retake
        assert gk.legal_mask(kernel)[state.vertex_to_point(vertex)]
        push_both(state, kernel, vertex)
    # White's retake at B3 captures one stone and is no immediate recapture, but it would recreate the
    # starting board: illegal by positional superko in both rules.
    b3 = state.vertex_to_point("B3")
    assert b3 not in state.legal_moves()
    assert not gk.legal_mask(kernel)[b3] and gk.superko_mask(kernel)[b3]
    g8 = state.vertex_to_point("G8")  # and the immediate retake of K2, a simple ko
    assert np.flatnonzero(gk.superko_mask(kernel)).tolist() == [g8, b3]
    check_same(kernel, state)
    assert start == triple_ko_board().board_hash()


def test_two_passes_and_move_limit() -> None:
    rules = GoRules(board_size=5, komi=0.5, max_moves=3)
    state, kernel = GoState(rules), gk.new_state(rules)
    for move in (12, 25, 25):
        state.push(move)
        gk.play(kernel, move)
    assert gk.outcome_code(kernel) == gk.OVER_TWO_PASSES
    check_same(kernel, state)
    state, kernel = GoState(rules), gk.new_state(rules)
    for move in (12, 25, 6):
        state.push(move)
        gk.play(kernel, move)
    assert gk.outcome_code(kernel) == gk.OVER_MAX_LENGTH and not gk.legal_mask(kernel).any()
    check_same(kernel, state)


def test_tromp_taylor_seki_and_dame() -> None:
    seki = position(
        """
        XX.OO
        XXXOO
        XX.OO
        XXXOO
        XXXOO
        """,
        komi=0.5,
    )
    kernel = gk.from_go_state(seki)
    assert gk.score(kernel) == seki.score() == 13 - 10 - 0.5
    check_same(kernel, seki)


def test_score_leaves_the_groups_as_they_were() -> None:
    """``score`` floods the empty regions through ``head`` and ``nxt`` (no scratch arrays): every
    stone's group links and every point's head are as before, and play goes on as in GoState."""
    rng = random.Random(7)
    state = GoState(GoRules(board_size=9))
    kernel = gk.from_go_state(state)
    for _ in range(60):
        stones = kernel.board != 0
        head, nxt = kernel.head.copy(), kernel.nxt.copy()
        assert gk.score(kernel) == state.score()
        np.testing.assert_array_equal(kernel.head, head)
        np.testing.assert_array_equal(kernel.nxt[stones], nxt[stones])
        moves = state.legal_moves()
        move = moves[rng.randrange(len(moves) - 1)] if len(moves) > 1 else moves[0]
        state.push(move)
        gk.play(kernel, move)
        check_groups(kernel, state)
