"""The compiled Go rules (engine/games/go_kernel.py): kernel states taken from GoState (its view over
them), hand-made positions, the chains against a flood fill, and GoState's checkpoints and replay."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.games import go_kernel as gk
from engine.games.go import CHECKPOINT_PLIES, GoRules, GoState
from tests.engine.games.test_go import KO, check_invariants, position

# ---- helpers -------------------------------------------------------------------------------------


def legal_moves(kernel: gk.KernelState) -> list[int]:
    return np.flatnonzero(gk.legal_mask(kernel)).tolist()


def check_groups(kernel: gk.KernelState, state: GoState) -> None:
    """White-box: the kernel's chains (stones, sizes, liberty counts) equal a flood fill of the board."""
    check_invariants(state)
    for colour, stones in state.chains():
        h = kernel.head[stones[0]]
        assert (kernel.head[stones] == h).all() and kernel.board[h] == colour + 1
        assert kernel.size[h] == len(stones) and kernel.libs[h] == state.liberties(stones[0])


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


def snapshot(state: GoState) -> tuple[object, ...]:
    """Everything observable of a position."""
    return (
        state.to_text(),
        state.board_hash(),
        state.history_keys(),
        state.consecutive_passes,
        state.legal_moves(),
        state.encode().tobytes(),
        state.outcome(),
        state.ply,
    )


# ---- GoState over the kernel: checkpoints, replay, copies ------------------------------------------


@pytest.mark.parametrize("n, seed", [(5, 0), (9, 1), (19, 2)])
def test_pop_goes_back_through_checkpoints(n: int, seed: int) -> None:
    """``pop`` restores every earlier position exactly (checkpoints every CHECKPOINT_PLIES plies and
    the replay after them), also after moves out of turn, and a copy taken midway is independent."""
    rng = random.Random(seed)
    state = GoState(GoRules(board_size=n, komi=6.5))
    seen = [snapshot(state)]
    twin = None
    while state.outcome() is None and state.ply < 3 * CHECKPOINT_PLIES + 5:
        moves = state.legal_moves()
        if rng.random() < 0.05:
            colour = 1 - state.side_to_move
            state.play_as(colour, rng.choice([p for p in range(n * n + 1) if state.is_legal_for(colour, p)]))
        else:
            state.push(rng.choice(moves[:-1]) if len(moves) > 1 and rng.random() > 0.05 else n * n)
        seen.append(snapshot(state))
        if state.ply == CHECKPOINT_PLIES + 3:
            twin = state.copy()
    check_groups(state.kernel_state(), state)
    assert twin is not None and snapshot(twin) == seen[CHECKPOINT_PLIES + 3]
    while state.ply:
        state.pop()
        assert snapshot(state) == seen[state.ply]
        if state.ply % 7 == 0:
            check_groups(state.kernel_state(), state)
    assert snapshot(twin) == seen[CHECKPOINT_PLIES + 3]
    twin.pop()
    assert snapshot(twin) == seen[CHECKPOINT_PLIES + 2]


def test_kernel_state_is_a_copy_with_the_komi() -> None:
    state = GoState(GoRules(board_size=5, komi=7.5))
    state.push(12)
    state.komi = 0.5
    kernel = state.kernel_state()
    assert kernel.komi == 0.5 and gk.score(kernel) == state.score() == 25 - 0.5
    gk.play(kernel, 6)
    assert state.ply == 1 and state.board_array()[1, 1] == 0


def test_copy_is_independent() -> None:
    state = GoState(GoRules(board_size=7))
    for move in (24, 25, 17, 18):
        state.push(move)
    kernel = state.kernel_state()
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
    gk.encode_into(state.kernel_state(), batch[1])
    assert np.array_equal(batch[1], state.encode())
    assert (batch[0] == 9.0).all() and (batch[2] == 9.0).all()


def test_point_owners_with_dead_stones_removed() -> None:
    state = position(
        """
        .X.O.
        XX.OO
        ...O.
        OOOOO
        .....
        """
    )
    owners = state.point_owners()
    assert owners[0] == 1 and owners[2] == 0 and owners[4] == -1 and owners[20] == -1
    dead = [v for v in range(25) if state.board_array().reshape(-1)[v] == 1]
    removed = state.point_owners(dead)
    assert (removed[:10] == -1).all()  # the black stones gone, their region reaches only white
    assert (state.point_owners() == owners).all()  # the state is not changed


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
    kernel = state.kernel_state()
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
    kernel = state.kernel_state()
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
    kernel = state.kernel_state()
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
    kernel = state.kernel_state()
    assert not gk.legal_mask(kernel)[0]
    check_same(kernel, state)


def test_simple_ko() -> None:
    state = position(KO)
    kernel = state.kernel_state()
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
    kernel = state.kernel_state()
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
    kernel = state.kernel_state()
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
    kernel = seki.kernel_state()
    assert gk.score(kernel) == seki.score() == 13 - 10 - 0.5
    check_same(kernel, seki)


def test_score_leaves_the_groups_as_they_were() -> None:
    """``score`` floods the empty regions through ``head`` and ``nxt`` (no scratch arrays): every
    stone's group links and every point's head are as before, and play goes on as in GoState."""
    rng = random.Random(7)
    state = GoState(GoRules(board_size=9))
    kernel = state.kernel_state()
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


# ---- what the package build precompiles ----------------------------------------------------------

#: In a fresh process: GoGame.warm_up, then a game through GoState's whole surface (GTP's commands);
#: prints the go_kernel functions that needed a signature warm_up had not loaded.
WARM_UP_COVERS = """
import random
from engine.games import go_kernel
from engine.games.go import GoGame, GoRules

def signatures():
    return {n: set(f.signatures) for n, f in vars(go_kernel).items() if hasattr(f, "signatures")}

GoGame().warm_up()
before = signatures()
rng = random.Random(3)
for size in (9, 19):
    state = GoGame(GoRules(board_size=size)).new_state()
    state.place_handicap(state.fixed_handicap_points(2))
    while state.outcome() is None and state.ply < 80:
        moves = state.legal_moves_and_indices()[0]
        if rng.random() < 0.1:
            colour = 1 - state.side_to_move
            legal = [p for p in moves if state.is_legal_for(colour, p, superko=False)]
            state.play_as(colour, rng.choice(legal))
        else:
            state.push(rng.choice(moves))
        if rng.random() < 0.1:
            state.pop()
        state.encode()
    state.kernel_state()
    state.copy().pop()
    state.point_owners(range(5))
    state.score()
    state.result_string()
    state.chains()
    state.true_eyes(0)
after = signatures()
print(sorted(n for n in after if after[n] - before[n]))
"""


@pytest.mark.slow
def test_warm_up_loads_every_kernel_a_game_calls() -> None:
    """``GoGame.warm_up`` (what the package build's precompile step and ``isready`` run) calls every
    kernel signature a game through ``GoState`` needs, so a user's first game compiles nothing."""
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", WARM_UP_COVERS],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"
