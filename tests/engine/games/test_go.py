"""Go rules (engine/games/go.py, go_symmetry.py) against hand-made positions and a slow reference."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.games import GameInfo, IllegalMoveError, InvalidPositionError, get_game
from engine.games.go import (
    BLACK,
    WHITE,
    GoGame,
    GoRules,
    GoState,
    fixed_handicap_points,
    parse_colour,
    point_to_vertex,
    vertex_to_point,
)
from engine.games.go_symmetry import (
    inverse_symmetry,
    symmetry_indices,
    symmetry_permutations,
    symmetry_planes,
    symmetry_point,
    symmetry_policy,
    transform_board,
)

# ---- helpers -------------------------------------------------------------------------------------


def position(rows: str, side: str = "b", komi: float = 7.5) -> GoState:
    """A state from a diagram: whitespace-separated rows, top row first (``.`` ``X`` ``O``)."""
    lines = rows.split()
    return GoState.from_text(f"{len(lines)} {komi} {side} {'/'.join(lines)}")


def v(state: GoState, vertex: str) -> int:
    return state.vertex_to_point(vertex)


def diagram(state: GoState) -> list[str]:
    return ["".join(".XO"[x] for x in row) for row in state.board_array()]


def _neighbours(r: int, c: int, n: int) -> list[tuple[int, int]]:
    return [(a, b) for a, b in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)) if 0 <= a < n and 0 <= b < n]


def _flood(board: np.ndarray, r: int, c: int) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    n = board.shape[0]
    colour = board[r, c]
    stones, libs, stack = {(r, c)}, set(), [(r, c)]
    while stack:
        a, b = stack.pop()
        for q in _neighbours(a, b, n):
            if board[q] == 0:
                libs.add(q)
            elif board[q] == colour and q not in stones:
                stones.add(q)
                stack.append(q)
    return stones, libs


def naive_after(board: np.ndarray, colour: int, point: int) -> np.ndarray | None:
    """Slow reference: the board after ``colour`` (1 black, 2 white) plays ``point``; ``None`` if the
    point is occupied or the move is suicide.  Superko is checked by the caller."""
    n = board.shape[0]
    r, c = divmod(point, n)
    if board[r, c] != 0:
        return None
    b = board.copy()
    b[r, c] = colour
    for q in _neighbours(r, c, n):
        if b[q] == 3 - colour:
            stones, libs = _flood(b, *q)
            if not libs:
                for s in stones:
                    b[s] = 0
    if not _flood(b, r, c)[1]:
        return None
    return b


def naive_legal(board: np.ndarray, colour: int, history: set[bytes]) -> tuple[set[int], int]:
    """Slow reference legal set (pass included) and the number of moves rejected only by superko."""
    n = board.shape[0]
    legal, superko = {n * n}, 0
    for p in range(n * n):
        after = naive_after(board, colour, p)
        if after is None:
            continue
        if after.tobytes() in history:
            superko += 1
        else:
            legal.add(p)
    return legal, superko


def check_invariants(state: GoState) -> None:
    """White-box: the kernel's incremental chains (stones, liberty counts) and hash equal a flood fill
    of the board and a rebuild from scratch."""
    fresh = GoState.from_text(state.to_text(), state.rules)
    assert state.board_hash() == fresh.board_hash()
    board = state.board_array()
    n = board.shape[0]
    expected = []
    seen: set[tuple[int, int]] = set()
    for r in range(n):
        for c in range(n):
            if board[r, c] and (r, c) not in seen:
                stones, libs = _flood(board, r, c)
                seen |= stones
                points = sorted(a * n + b for a, b in stones)
                expected.append((int(board[r, c]) - 1, points))
                assert all(state.liberties(p) == len(libs) for p in points)
    assert sorted(state.chains()) == sorted(expected)


# ---- settings, registry, coordinates ---------------------------------------------------------------


def test_rules_and_registry() -> None:
    game = get_game("go9")
    assert isinstance(game, GoGame)
    assert game.info == GameInfo("go", 9, 17, 82, 1)
    assert get_game("go", board_size=19).info.policy_size == 362
    assert get_game("go", board_size=5, komi=0.5, max_moves=10).rules == GoRules(5, 0.5, 10)
    assert GoRules(board_size=9).move_limit == 162
    assert GoRules(board_size=2).move_limit == 8
    for bad in (1, 20, 0, "9", True, 9.0):
        with pytest.raises(ValueError):
            GoRules(board_size=bad)
    for bad_komi in ("abc", float("nan"), float("inf"), None):
        with pytest.raises(ValueError):
            GoRules(komi=bad_komi)
    with pytest.raises(ValueError):
        GoRules(max_moves=0)
    state = game.new_state()
    assert state.info == game.info and state.komi == 7.5 and state.side_to_move == 0 and state.ply == 0
    assert GoState(GoRules(9), komi=6.5).komi == 6.5


def test_vertices() -> None:
    assert vertex_to_point("D4", 9) == 5 * 9 + 3
    assert vertex_to_point("d4", 9) == vertex_to_point(" D4 ", 9) == 48
    assert vertex_to_point("A9", 9) == 0
    assert vertex_to_point("J9", 9) == 8  # I is skipped: J is the 9th column
    assert vertex_to_point("J1", 9) == 80
    assert vertex_to_point("H1", 9) == 79
    assert vertex_to_point("T19", 19) == 18
    assert vertex_to_point("A1", 19) == 18 * 19
    assert vertex_to_point("pass", 9) == vertex_to_point("PASS", 9) == 81
    for bad in ("I5", "i5", "K1", "A10", "A0", "Z9", "", "4D", "D 4", "D4x", "D04", "resign", "DD"):
        with pytest.raises(IllegalMoveError):
            vertex_to_point(bad, 9)
    with pytest.raises(IllegalMoveError):
        vertex_to_point("T19", 18)
    for n in (2, 9, 19):
        for p in range(n * n + 1):
            text = point_to_vertex(p, n)
            assert "I" not in text
            assert vertex_to_point(text, n) == vertex_to_point(text.lower(), n) == p
    assert point_to_vertex(48, 9) == "D4" and point_to_vertex(81, 9) == "pass"
    with pytest.raises(IllegalMoveError):
        point_to_vertex(82, 9)
    with pytest.raises(IllegalMoveError):
        point_to_vertex(-1, 9)
    assert parse_colour("B") == parse_colour("black") == 0 and parse_colour("WHITE") == parse_colour("w") == 1
    with pytest.raises(ValueError):
        parse_colour("red")


def test_plane_cell_matches_vertex() -> None:
    state = get_game("go9").new_state()
    state.push(v(state, "C7"))  # column C = col 2, row number 7 = row index 2
    assert state.board_array()[2, 2] == BLACK
    assert state.encode()[1, 2, 2] == 1.0  # white to move: the black stone is the opponent's
    assert state.move_to_text(2 * 9 + 2) == "C7"


# ---- captures, suicide ---------------------------------------------------------------------------


def test_single_stone_capture() -> None:
    state = position(
        """
        .....
        ..X..
        .XO..
        ..X..
        .....
        """
    )
    state.push(state.parse_move("D3"))
    assert diagram(state) == [".....", "..X..", ".X.X.", "..X..", "....."]
    assert state.side_to_move == 1
    check_invariants(state)
    state.pop()
    assert diagram(state)[2] == ".XO.."
    check_invariants(state)


def test_multi_stone_capture_and_liberties_regained() -> None:
    state = position(
        """
        .XXX.
        XOOOX
        XO.OX
        .XOX.
        ..X..
        """
    )
    # the white ring of five and the white C2 stone share their last liberty C3: black captures six
    before = state.board_hash()
    state.push(state.parse_move("C3"))
    assert diagram(state) == [".XXX.", "X...X", "X.X.X", ".X.X.", "..X.."]
    check_invariants(state)
    # the black stone at C3 now has the four liberties the capture opened
    assert state.liberties(v(state, "C3")) == 4
    state.pop()
    assert state.board_hash() == before
    check_invariants(state)


def test_corner_captures() -> None:
    state = position(
        """
        OX...
        .....
        .....
        .....
        OX...
        """
    )
    state.push(state.parse_move("A2"))  # white A1 had one liberty, A2
    assert diagram(state)[3:] == ["X....", ".X..."]
    state.push(state.parse_move("E5"))  # white elsewhere
    state.push(state.parse_move("A4"))  # white A5 in the top-left corner is captured
    assert diagram(state)[0] == ".X..O"
    check_invariants(state)


def test_edge_capture_two_stones() -> None:
    state = position(
        """
        XOO..
        .XX..
        .....
        .....
        .....
        """
    )
    assert state.liberties(v(state, "B5")) == 1
    state.push(state.parse_move("D5"))
    assert diagram(state)[0] == "X..X."
    check_invariants(state)


def test_suicide_is_illegal() -> None:
    state = position(
        """
        .O...
        O....
        ...O.
        ..O.O
        ...O.
        """
    )
    # single-stone suicide in the corner and in the middle
    for vertex in ("A5", "D2"):
        assert v(state, vertex) not in state.legal_moves()
        assert not state.is_legal_for(0, v(state, vertex))
        with pytest.raises(IllegalMoveError):
            state.parse_move(vertex)
    # white may fill its own eye (not suicide: the string keeps liberties)
    assert state.is_legal_for(1, v(state, "D2"))


def test_multi_stone_suicide_and_capture_is_not_suicide() -> None:
    state = position(
        """
        X.XO.
        OXXO.
        .OO..
        .....
        .....
        """
    )
    # Black A5 (single) / B4-C4-C5 string share the liberty B5; white A4 is in atari at A3.
    # Black B5 would fill the last liberty of A5+B5+B4+C4+C5 with no capture: suicide of 5 stones.
    b5 = v(state, "B5")
    assert b5 not in state.legal_moves()
    with pytest.raises(IllegalMoveError):
        state.play_as(0, b5)
    # White B5 captures the black stones (A5 and the B4-C4-C5 string): legal although B5 is surrounded.
    assert state.is_legal_for(1, b5)
    state.play_as(1, b5)
    assert diagram(state)[:2] == [".O.O.", "O..O."]
    check_invariants(state)


def test_capture_into_an_eye_is_not_suicide() -> None:
    state = position(
        """
        .XO..
        XOO..
        OO...
        .....
        .....
        """,
        side="w",
    )
    # white A5 has no own liberty but captures black B5+A4?  A4 (X) has liberty A5 only, B5 too.
    a5 = v(state, "A5")
    assert a5 in state.legal_moves()
    state.push(a5)
    assert diagram(state)[:2] == ["O.O..", ".OO.."]
    check_invariants(state)


# ---- ko and superko ------------------------------------------------------------------------------


KO = """
    .XO..
    XO.O.
    .XO..
    .....
    .....
    """


def test_simple_ko() -> None:
    state = position(KO)
    c4, b4 = v(state, "C4"), v(state, "B4")
    state.push(state.parse_move("C4"))  # black takes the ko
    assert diagram(state)[1] == "X.XO."
    assert b4 not in state.legal_moves()  # immediate retake recreates the previous board
    with pytest.raises(IllegalMoveError):
        state.parse_move("B4")
    assert not state.is_legal_for(1, b4)
    state.push(state.parse_move("E1"))  # white threat elsewhere
    state.push(state.parse_move("E2"))  # black answers
    assert b4 in state.legal_moves()  # now the board differs: the retake is legal
    state.push(b4)
    assert diagram(state)[1] == "XO.O."
    assert c4 not in state.legal_moves()
    check_invariants(state)


def test_superko_is_positional_not_situational() -> None:
    # The starting board is seen with WHITE to move only.  Black (GTP play as black) takes the ko;
    # white's retake would recreate the starting board with BLACK to move: a new situation, but the
    # same whole-board position, so positional superko forbids it.
    state = position(KO, side="w")
    state.play_as(0, v(state, "C4"))
    assert state.side_to_move == 1
    assert not state.is_legal_for(1, v(state, "B4"))
    assert v(state, "B4") not in state.legal_moves()


def _triple_ko_board() -> GoState:
    """Three independent kos on 9x9: K1 and K3 black can take, K2 white can take; black to move."""
    board = [["."] * 9 for _ in range(9)]

    def ko(r0: int, c0: int, taken: bool) -> None:
        for dr, dc, s in ((0, 1, "X"), (0, 2, "O"), (1, 0, "X"), (1, 3, "O"), (2, 1, "X"), (2, 2, "O")):
            board[r0 + dr][c0 + dc] = s
        if taken:  # black has just taken it: black stone on the ko point, white's stone gone
            board[r0 + 1][c0 + 2] = "X"
        else:
            board[r0 + 1][c0 + 1] = "O"

    ko(0, 0, False)  # K1 (black takes at C8, white retakes at B8)
    ko(0, 5, True)  # K2 (white takes at G8, black retakes at H8)
    ko(5, 0, False)  # K3 (black takes at C3, white retakes at B3)
    return GoState.from_text("9 7.5 b " + "/".join("".join(r) for r in board))


def test_positional_superko_triple_ko() -> None:
    state = _triple_ko_board()
    start = state.board_hash()
    cycle = ["C8", "G8", "C3", "B8", "H8"]  # B K1, W K2, B K3, W K1, B K2: never an immediate retake
    for vertex in cycle:
        state.push(state.parse_move(vertex))
    # White's K3 retake at B3 is not an immediate recapture (black last played at K2), it captures a
    # single stone, but it would recreate the starting board: illegal by positional superko.
    b3 = v(state, "B3")
    after = naive_after(state.board_array(), WHITE, b3)
    assert after is not None  # a legal capture without superko
    assert after.tobytes() == _triple_ko_board().board_array().tobytes()
    assert b3 not in state.legal_moves()
    with pytest.raises(IllegalMoveError):
        state.parse_move("B3")
    with pytest.raises(IllegalMoveError):
        state.index_to_move(b3)
    check_invariants(state)
    # undo everything: the starting position and its legal moves come back exactly
    for _ in cycle:
        state.pop()
    assert state.board_hash() == start
    assert state.legal_moves() == _triple_ko_board().legal_moves()


# ---- end of game and scoring ---------------------------------------------------------------------


SEKI = """
    XX.OO
    XXXOO
    XX.OO
    XXXOO
    XXXOO
    """

DAME = """
    .XO..
    .XO..
    .XO..
    .X.O.
    .X.O.
    """


def test_pass_pass_ends_the_game() -> None:
    state = get_game("go", board_size=5).new_state()
    state.push(state.parse_move("pass"))  # black
    assert state.outcome() is None and state.consecutive_passes == 1
    state.push(state.parse_move("C3"))  # white
    assert state.consecutive_passes == 0
    state.push(25)  # black
    assert state.outcome() is None
    state.push(25)  # white
    out = state.outcome()
    assert out is not None and out.reason == "two-passes" and state.side_to_move == 0
    # white's single stone owns the whole board: black - white = 0 - 25 - 7.5, black to move
    assert state.score() == -32.5
    assert out.score == -32.5 and out.value == -1.0
    assert state.legal_moves() == [] and len(state.legal_moves_and_indices()[1]) == 0
    assert state.result_string() == "W+32.5"
    state.pop()
    assert state.outcome() is None and state.legal_moves()


def test_tromp_taylor_seki() -> None:
    # The black and white strings share the two liberties C5 and C3 and have no other: seki.
    state = position(SEKI, komi=7.5)
    assert state.liberties(v(state, "A5")) == state.liberties(v(state, "D5")) == 2
    assert state.point_owners()[[v(state, "C5"), v(state, "C3")]].tolist() == [0, 0]
    assert state.area() == (13, 10)  # stones in seki count, the shared liberties count for nobody
    assert state.score() == 13 - 10 - 7.5
    assert state.result_string() == "W+4.5"
    assert position(SEKI, komi=2.5).result_string() == "B+0.5"
    tie = position(SEKI, komi=3)
    assert tie.result_string() == "0"
    tie.push(25)
    tie.push(25)
    out = tie.outcome()
    assert out is not None and out.value == 0.0 and out.score == 0.0
    # playing a shared liberty is self-atari: legal, and white then captures all 13 black stones
    state.push(state.parse_move("C5"))
    state.push(state.parse_move("C3"))
    assert state.area() == (0, 25)


def test_tromp_taylor_territory_and_dame() -> None:
    state = position(DAME, komi=7.5)
    # black: 5 stones + column A (5); white: 5 stones + 8 points on the right; C2-C1 reach both: dame
    assert state.area() == (10, 13)
    assert state.score() == -10.5
    assert state.result_string() == "W+10.5"
    state.push(25)
    state.push(25)
    out = state.outcome()
    assert out is not None and state.side_to_move == 0
    assert out.value == -1.0 and out.score == -10.5 and out.reason == "two-passes"
    white_view = position(DAME, side="w")
    white_view.push(25)
    white_view.push(25)
    out = white_view.outcome()
    assert out is not None and white_view.side_to_move == 1 and out.value == 1.0 and out.score == 10.5
    # komi can change mid-game (GTP komi): the cached outcome follows
    white_view.komi = 3.0
    assert white_view.outcome().score == 13 - 10 + 3.0
    assert white_view.result_string() == "W+6"


def test_empty_board_score_and_max_length() -> None:
    assert get_game("go", board_size=9).new_state().score() == -7.5
    state = get_game("go", board_size=5, max_moves=4).new_state()
    for vertex in ("C3", "pass", "D4", "B2"):
        assert state.outcome() is None
        state.push(state.parse_move(vertex))
    out = state.outcome()
    assert out is not None and out.reason == "max-length"
    # black C3, D4 and white B2; the one empty region touches both colours
    assert state.area() == (2, 1)
    assert state.side_to_move == 0 and out.score == 2 - 1 - 7.5 and out.value == -1.0


# ---- handicap, GTP helpers -----------------------------------------------------------------------


def test_fixed_handicap_points() -> None:
    def names(n: int, count: int) -> list[str]:
        return [point_to_vertex(p, n) for p in fixed_handicap_points(count, n)]

    assert names(19, 2) == ["D4", "Q16"]
    assert names(19, 3) == ["D4", "Q16", "D16"]
    assert names(19, 4) == ["D4", "Q16", "D16", "Q4"]
    assert names(19, 5) == ["D4", "Q16", "D16", "Q4", "K10"]
    assert names(19, 6) == ["D4", "Q16", "D16", "Q4", "D10", "Q10"]
    assert names(19, 7) == ["D4", "Q16", "D16", "Q4", "D10", "Q10", "K10"]
    assert names(19, 8) == ["D4", "Q16", "D16", "Q4", "D10", "Q10", "K4", "K16"]
    assert names(19, 9) == ["D4", "Q16", "D16", "Q4", "D10", "Q10", "K4", "K16", "K10"]
    assert names(9, 2) == ["C3", "G7"]
    assert names(9, 5) == ["C3", "G7", "C7", "G3", "E5"]
    assert names(9, 9) == ["C3", "G7", "C7", "G3", "C5", "G5", "E3", "E7", "E5"]
    assert names(13, 4) == ["D4", "K10", "D10", "K4"]
    assert names(7, 4) == ["C3", "E5", "C5", "E3"]
    for n, count in ((7, 5), (8, 5), (10, 5), (9, 10), (9, 1), (6, 2), (5, 2), (19, 0)):
        with pytest.raises(ValueError):
            fixed_handicap_points(count, n)


@pytest.mark.parametrize("n, count", [(9, 5), (19, 9)])
def test_place_handicap(n: int, count: int) -> None:
    state = get_game("go", board_size=n).new_state()
    points = state.fixed_handicap_points(count)
    state.place_handicap(points)
    assert state.side_to_move == 1 and state.ply == 0
    board = state.board_array().reshape(-1)
    assert sorted(np.flatnonzero(board).tolist()) == sorted(points) and set(board[points]) == {BLACK}
    assert state.encode()[1].sum() == count and state.encode()[16].sum() == 0  # white to move
    with pytest.raises(IndexError):
        state.pop()
    with pytest.raises(IllegalMoveError):
        state.place_handicap([0])
    state.push(state.legal_moves()[0])
    assert state.pop() is not None and state.side_to_move == 1
    again = GoState.from_text(state.to_text())
    assert again.to_text() == state.to_text()
    played = get_game("go", board_size=n).new_state()
    played.push(0)
    with pytest.raises(IllegalMoveError):
        played.place_handicap(points)
    for bad in ([], [0, 0], [n * n], [-1]):
        with pytest.raises(IllegalMoveError):
            get_game("go", board_size=n).new_state().place_handicap(bad)


def test_play_as_either_colour_and_undo() -> None:
    state = get_game("go", board_size=9).new_state()
    state.play_as(0, v(state, "E5"))
    state.play_as(0, v(state, "D5"))  # black twice in a row (GTP allows it)
    assert state.side_to_move == 1 and state.ply == 2
    state.play_as(0, v(state, "pass"))
    assert state.side_to_move == 1 and state.consecutive_passes == 1
    with pytest.raises(IllegalMoveError):
        state.play_as(1, v(state, "E5"))  # occupied
    with pytest.raises(IllegalMoveError):
        state.play_as(2, v(state, "A1"))  # no such colour
    with pytest.raises(IllegalMoveError):
        state.play_as(1, 82)  # off the board
    assert state.pop() == 81
    assert state.pop() == v(state, "D5")
    assert state.side_to_move == 1  # after black E5
    copy = state.copy()
    assert state.pop() == v(state, "E5")
    with pytest.raises(IndexError):
        state.pop()
    assert copy.ply == 1 and copy.board_array()[4, 4] == BLACK  # the copy is independent
    arr = copy.board_array()
    arr[0, 0] = 2
    assert copy.board_array()[0, 0] == 0  # board_array returns a copy


# ---- position text -------------------------------------------------------------------------------


def test_position_text_round_trip_and_errors() -> None:
    game = get_game("go", board_size=5)
    state = game.new_state()
    assert state.to_text() == "5 7.5 b ...../...../...../...../....."
    for vertex in ("C3", "D3", "pass"):
        state.push(state.parse_move(vertex))
    text = state.to_text()
    assert text == "5 7.5 w ...../...../..XO./...../....."
    again = game.state_from_text(text)
    assert again.to_text() == text and again.key() == state.key() and again.ply == 0
    lower = GoState.from_text("5 -0.5 W ...../...../..xo./...../.....")
    assert lower.to_text() == "5 -0.5 w ...../...../..XO./...../....."
    bad_texts = [
        "",
        "5 7.5 b ...../...../...../.....",  # four rows
        "5 7.5 b ...../...../...../...../....",  # short row
        "5 7.5 x ...../...../...../...../.....",  # side
        "5 abc b ...../...../...../...../.....",  # komi
        "5 nan b ...../...../...../...../.....",
        "5 7.5 b ...../...../..#../...../.....",  # symbol
        "1 7.5 b .",  # size
        "5 7.5 b XO.../O..../...../...../.....",  # X in the corner has no liberty
        "5 7.5 b",
        "9 7.5 b " + "/".join(["........."] * 9),  # size differs from the game
    ]
    for bad in bad_texts:
        with pytest.raises(InvalidPositionError):
            game.state_from_text(bad)
    with pytest.raises(InvalidPositionError):
        GoState.from_text(None)


# ---- encoding ------------------------------------------------------------------------------------


def test_encode_exact_values() -> None:
    state = get_game("go", board_size=5).new_state()
    planes = state.encode()
    assert planes.shape == (17, 5, 5) and planes.dtype == np.float32
    assert planes[:16].sum() == 0 and (planes[16] == 1).all()  # black to move
    for vertex in ("C3", "D4", "B2"):  # black C3, white D4, black B2 -> white to move
        state.push(state.parse_move(vertex))
    planes = state.encode()
    c3, d4, b2 = (2, 2), (1, 3), (3, 1)

    def plane(*cells: tuple[int, int]) -> np.ndarray:
        out = np.zeros((5, 5), np.float32)
        for cell in cells:
            out[cell] = 1
        return out

    expected = [
        plane(d4),
        plane(c3, b2),  # now: own (white) and opponent (black)
        plane(d4),
        plane(c3),  # 1 ply ago (after white D4)
        plane(),
        plane(c3),  # 2 plies ago (after black C3)
        plane(),
        plane(),  # 3 plies ago: the empty board
    ] + [plane()] * 8
    np.testing.assert_array_equal(planes[:16], np.stack(expected))
    assert (planes[16] == 0).all()  # white to move
    state.push(state.parse_move("pass"))
    planes = state.encode()  # black to move: own = black now
    np.testing.assert_array_equal(planes[0], plane(c3, b2))
    np.testing.assert_array_equal(planes[1], plane(d4))
    np.testing.assert_array_equal(planes[2], plane(c3, b2))  # the pass left the board unchanged
    np.testing.assert_array_equal(planes[5], plane(d4))
    np.testing.assert_array_equal(planes[6], plane(c3))
    assert planes[8:16].sum() == 0 and (planes[16] == 1).all()
    assert state.history_keys()[0][1] == 1 and len(state.history_keys()) == 4
    # with more than 8 positions only the last 8 are encoded
    for vertex in ("A1", "A2", "A3", "A4", "A5", "E1", "E2", "E3"):
        state.push(state.parse_move(vertex))
    assert len(state.history_keys()) == 7
    planes = state.encode()
    boards = []
    probe = state.copy()
    for _ in range(8):
        boards.append(probe.board_array())
        probe.pop()
    own = BLACK if state.side_to_move == 0 else WHITE
    for k, board in enumerate(boards):
        np.testing.assert_array_equal(planes[2 * k], board == own)
        np.testing.assert_array_equal(planes[2 * k + 1], board == 3 - own)


def test_policy_indices_and_notation() -> None:
    state = get_game("go", board_size=9).new_state()
    moves, idx = state.legal_moves_and_indices()
    assert moves == list(range(82)) and idx.tolist() == moves and idx.dtype == np.int64
    assert state.move_to_index(81) == 81 and state.index_to_move(81) == 81
    assert state.move_to_text(81) == "pass" and state.parse_move("Pass") == 81
    with pytest.raises(IllegalMoveError):
        state.move_to_index(82)
    with pytest.raises(IllegalMoveError):
        state.index_to_move(82)
    state.push(40)
    with pytest.raises(IllegalMoveError):
        state.index_to_move(40)  # occupied
    with pytest.raises(IllegalMoveError):
        state.parse_move("E5")
    with pytest.raises(IllegalMoveError):
        state.parse_move("I5")


# ---- random play against the slow reference ------------------------------------------------------


def _random_game(state: GoState, rng: random.Random, plies: int, pass_prob: float = 0.03) -> None:
    for _ in range(plies):
        if state.outcome() is not None:
            return
        moves = state.legal_moves()
        board_moves = moves[:-1]
        state.push(rng.choice(board_moves) if board_moves and rng.random() > pass_prob else moves[-1])


@pytest.mark.parametrize("n, games, seed", [(5, 80, 1), (7, 8, 3), (9, 6, 2)])
def test_random_play_matches_slow_reference(n: int, games: int, seed: int) -> None:
    rng = random.Random(seed)
    game = GoGame(GoRules(board_size=n, max_moves=4 * n * n))
    superko_rejections = captures = positions = 0
    for _ in range(games):
        state = game.new_state()
        boards = [state.board_array()]
        while state.outcome() is None:
            board = boards[-1]
            history = {b.tobytes() for b in boards}
            colour = state.side_to_move + 1
            expected, rejected = naive_legal(board, colour, history)
            superko_rejections += rejected
            moves, idx = state.legal_moves_and_indices()
            assert set(moves) == expected and len(moves) == len(expected)
            assert moves == sorted(moves) and moves[-1] == n * n
            np.testing.assert_array_equal(idx, moves)
            positions += 1
            if n == 5:  # the other colour too (GTP play), and the rules-only legality checks
                other, _ = naive_legal(board, 3 - colour, history)
                assert {p for p in range(n * n + 1) if state.is_legal_for(2 - colour, p)} == other
            # occasionally GTP-style: the side not to move plays (two moves of one colour in a row)
            if rng.random() < 0.05:
                other, _ = naive_legal(board, 3 - colour, history)
                move = rng.choice(sorted(other))
                state.play_as(2 - colour, move)
                colour = 3 - colour
            else:
                board_moves = moves[:-1]
                move = rng.choice(board_moves) if board_moves and rng.random() > 0.05 else n * n
                state.push(move)
            after = board if move == n * n else naive_after(board, colour, move)
            assert after is not None
            captures += int((after != 0).sum() < (board != 0).sum() + (move != n * n))
            np.testing.assert_array_equal(state.board_array(), after)
            boards.append(after)
            if rng.random() < 0.1:
                check_invariants(state)
        check_invariants(state)
        # undo to the start: every intermediate board comes back
        for k in range(len(boards) - 1, 0, -1):
            np.testing.assert_array_equal(state.board_array(), boards[k])
            state.pop()
        assert state.ply == 0 and not state.board_array().any()
        check_invariants(state)
    assert positions > 200 and captures > 10
    if n == 5:
        assert superko_rejections > 0  # the reference saw real superko cases and the rules agreed


def test_undo_restores_everything_exactly() -> None:
    rng = random.Random(7)
    game = get_game("go", board_size=7)
    state = game.new_state()
    snapshots = []
    while state.outcome() is None and state.ply < 150:
        snapshots.append(
            (
                state.board_array(),
                state.key(),
                state.history_keys(),
                state.encode(),
                state.legal_moves(),
                state.to_text(),
                state.consecutive_passes,
            )
        )
        _random_game(state, rng, 1)
    check_invariants(state)
    while snapshots:
        board, key, hist, planes, legal, text, passes = snapshots.pop()
        state.pop()
        np.testing.assert_array_equal(state.board_array(), board)
        assert state.key() == key and state.history_keys() == hist and state.to_text() == text
        np.testing.assert_array_equal(state.encode(), planes)
        assert state.legal_moves() == legal and state.consecutive_passes == passes
    check_invariants(state)


def test_copy_is_independent_and_equal() -> None:
    rng = random.Random(3)
    state = get_game("go", board_size=9).new_state()
    _random_game(state, rng, 60)
    state.play_as(state.side_to_move, 81)
    twin = state.copy()
    assert twin.key() == state.key() and twin.history_keys() == state.history_keys()
    assert twin.move_stack == state.move_stack and twin.legal_moves() == state.legal_moves()
    np.testing.assert_array_equal(twin.encode(), state.encode())
    check_invariants(twin)
    _random_game(twin, rng, 20)
    twin_ply = twin.ply
    for _ in range(30):
        twin.pop()
    assert state.ply == 61 and twin.ply == twin_ply - 30
    check_invariants(state)
    check_invariants(twin)


def test_many_random_positions_round_trip() -> None:
    rng = random.Random(11)
    total = 0
    for n in (2, 3, 5, 9, 19):
        game = get_game("go", board_size=n)
        checked = 0
        while checked < 600:
            state = game.new_state()
            while state.outcome() is None:
                moves, idx = state.legal_moves_and_indices()
                assert len(set(idx.tolist())) == len(moves) and idx.min() >= 0 and idx.max() < n * n + 1
                assert idx.tolist() == [state.move_to_index(m) for m in moves]
                for m in rng.sample(moves, min(len(moves), 8)):
                    assert state.index_to_move(state.move_to_index(m)) == m
                    assert state.parse_move(state.move_to_text(m)) == m
                text = state.to_text()
                assert game.state_from_text(text).to_text() == text
                checked += 1
                state.push(rng.choice(moves))
        total += checked
    assert total >= 3000


# ---- symmetries ----------------------------------------------------------------------------------


def test_symmetry_permutations() -> None:
    for n in (2, 5, 9):
        perms = symmetry_permutations(n)
        assert perms.shape == (8, n * n)
        assert len({p.tobytes() for p in perms}) == 8
        np.testing.assert_array_equal(perms[0], np.arange(n * n))
        board = np.arange(n * n).reshape(n, n)
        for k in range(8):
            np.testing.assert_array_equal(symmetry_planes(board[None], k)[0], transform_board(board, k))
            inv = inverse_symmetry(k)
            np.testing.assert_array_equal(perms[inv][perms[k]], np.arange(n * n))
            np.testing.assert_array_equal(symmetry_planes(symmetry_planes(board[None], k), inv)[0], board)
            for p in range(n * n):
                q = symmetry_point(p, k, n)
                assert transform_board(board, k).reshape(-1)[q] == p  # the stone at p moves to q
            assert symmetry_point(n * n, k, n) == n * n
            np.testing.assert_array_equal(
                symmetry_indices(np.arange(n * n + 1), k, n),
                [symmetry_point(p, k, n) for p in range(n * n + 1)],
            )
    assert [inverse_symmetry(k) for k in range(8)] == [0, 3, 2, 1, 4, 5, 6, 7]
    with pytest.raises(ValueError):
        inverse_symmetry(8)
    # k = 1 is a counter-clockwise quarter turn: the top-left corner goes to the bottom-left
    assert symmetry_point(0, 1, 3) == 6


def test_symmetry_policy_and_batches() -> None:
    rng = np.random.default_rng(0)
    n = 5
    policy = rng.random(n * n + 1).astype(np.float32)
    planes = rng.random((3, 17, n, n)).astype(np.float32)
    for k in range(8):
        out = symmetry_policy(policy, k)
        assert out[-1] == policy[-1]
        for m in range(n * n + 1):
            assert out[symmetry_point(m, k, n)] == policy[m]
        np.testing.assert_array_equal(symmetry_policy(out, inverse_symmetry(k)), policy)
        batch = symmetry_planes(planes, k)
        assert batch.shape == planes.shape
        for b in range(3):
            np.testing.assert_array_equal(batch[b], symmetry_planes(planes[b], k))
        pol_batch = symmetry_policy(np.stack([policy, policy]), k)
        np.testing.assert_array_equal(pol_batch[1], out)
    with pytest.raises(ValueError):
        symmetry_policy(np.zeros(27), 1)


@pytest.mark.parametrize("k", range(8))
def test_symmetry_consistent_with_play(k: int) -> None:
    # Playing the transformed moves gives the transformed position: encode() and legal moves agree.
    rng = random.Random(100 + k)
    n = 7
    game = get_game("go", board_size=n)
    state, mirror = game.new_state(), game.new_state()
    while state.outcome() is None and state.ply < 120:
        np.testing.assert_array_equal(mirror.encode(), symmetry_planes(state.encode(), k))
        np.testing.assert_array_equal(mirror.board_array(), transform_board(state.board_array(), k))
        moves = state.legal_moves()
        assert sorted(symmetry_point(m, k, n) for m in moves) == mirror.legal_moves()
        move = rng.choice(moves)
        state.push(move)
        mirror.push(symmetry_point(move, k, n))


def test_point_owners_chains_and_own_eyes() -> None:
    state = position(
        """
        .X.O.
        XX.OO
        .XO..
        XXO..
        .XO.X
        """
    )
    owners = state.point_owners().reshape(5, 5)
    assert owners[0, 0] == 1 and owners[4, 0] == 1 and owners[2, 0] == 1  # black's enclosed points
    assert owners[0, 4] == -1 and owners[0, 2] == 0  # white's corner; C5 touches both colours
    assert owners[4, 3] == 0  # D1 touches white C1 and the black stone E1
    assert state.area() == (int((owners == 1).sum()), int((owners == -1).sum()))
    # without the lone black stone at E1, white's right side is white's alone
    removed = state.point_owners(removed=[v(state, "E1")]).reshape(5, 5)
    assert removed[4, 4] == -1 and removed[3, 4] == -1 and removed[4, 3] == -1
    chains = {(colour, tuple(points)) for colour, points in state.chains()}
    assert (0, (v(state, "E1"),)) in chains and (
        1,
        tuple(sorted([v(state, "D5"), v(state, "D4"), v(state, "E4")])),
    ) in chains
    assert len(chains) == 4
    assert state.is_own_eye(v(state, "A5"), 0) and state.is_own_eye(v(state, "A3"), 0)
    assert not state.is_own_eye(v(state, "A5"), 1) and not state.is_own_eye(v(state, "C5"), 0)
    assert state.is_own_eye(v(state, "E5"), 1) and not state.is_own_eye(v(state, "B5"), 0)  # B5 is a stone


@pytest.mark.parametrize(
    ("rows", "point", "true"),
    [
        (". . . . . / . . X . . / . X . X . / . . X . . / . . . . .", "C3", True),  # middle, no diagonal
        (". . . . . / . O X . . / . X . X . / . . X . . / . . . . .", "C3", True),  # one white diagonal
        (". . . . . / . O X . . / . X . X . / . . X O . / . . . . .", "C3", False),  # two: a false eye
        (". X . X . / . . X . . / . . . . . / . . . . . / . . . . .", "C5", True),  # edge
        (". X . X . / . O X . . / . . . . . / . . . . . / . . . . .", "C5", False),  # edge, one white
        (". X . . . / X . . . . / . . . . . / . . . . . / . . . . .", "A5", True),  # corner
        (". X . . . / X O . . . / . . . . . / . . . . . / . . . . .", "A5", False),  # corner, white B4
        (". . . . . / . . X . . / . X . . . / . . X . . / . . . . .", "C3", False),  # D3 empty: no eye
    ],
)
def test_true_eyes_are_own_single_point_eyes_that_are_not_false(rows: str, point: str, true: bool) -> None:
    state = position(rows.replace(" ", "").replace("/", " "))
    p = v(state, point)
    eyes = state.true_eyes(0)
    assert bool(eyes[p]) is true
    assert int(eyes.sum()) == int(true)  # no other point of black's is one
    assert not state.true_eyes(1).any()  # white has no eye on these boards
    assert state.is_own_eye(p, 0) or not true  # every true eye is an own eye


def test_a_stone_is_no_eye_and_white_eyes_are_whites() -> None:
    state = position(".O... O.O.. .O... ..... .....")  # white eyes at A5 (corner) and B4
    eyes = state.true_eyes(1).reshape(5, 5)
    assert eyes[0, 0] and eyes[1, 1] and int(eyes.sum()) == 2
    assert not eyes[0, 1]  # B5, a white stone
    assert not state.true_eyes(0).any()


def test_without_eye_fills_drops_only_the_movers_true_eyes() -> None:
    state = position(".X... X.... ..... ..... .....")  # black to move, its true eye at A5
    legal = state.legal_moves()
    kept = state.without_eye_fills(legal)
    assert v(state, "A5") in legal and kept == [m for m in legal if m != v(state, "A5")]
    assert 25 in kept  # pass stays


def _replayed(sgf_name: str, moves: int) -> GoState:
    """The first ``moves`` moves of a real game in ``tests/data`` (each played as the record has it)."""
    from pathlib import Path

    from protocols.sgf import read_game

    game = read_game((Path(__file__).resolve().parents[2] / "data" / sgf_name).read_text())
    state = get_game("go", board_size=game.size, komi=7.5).new_state()
    assert isinstance(state, GoState)
    for colour, point in game.moves[:moves]:
        state.play_as(
            colour, game.size**2 if point is None else point[1] * game.size + point[0], superko=False
        )
    return state


def test_a_superko_repetition_is_accepted_for_the_opponent_and_never_generated() -> None:
    """GNU Go's 95th move in a real game (B J4, a recapture) repeats an earlier whole-board position:
    illegal under positional superko, legal by the basic rules (GNU Go's, GoGui's).  ``play_as`` with
    ``superko=False`` accepts it and the game goes on; the moves generated afterwards repeat nothing."""
    state = _replayed("go9-superko-repeat.sgf", 94)
    j4 = v(state, "J4")
    assert not state.is_legal_for(0, j4) and state.is_legal_for(0, j4, superko=False)
    with pytest.raises(IllegalMoveError):
        state.copy().play_as(0, j4)
    seen = set()
    replay = get_game("go", board_size=9, komi=7.5).new_state()
    for move in state.move_stack:
        seen.add(replay.board_hash())
        replay.push(move)
    assert replay.board_hash() == state.board_hash()
    seen.add(state.board_hash())
    state.play_as(0, j4, superko=False)
    assert state.board_hash() in seen  # the repeated position
    seen.add(state.board_hash())
    check_invariants(state)
    for _ in range(6):  # the game goes on; every generated move leads to a new position
        moves = [m for m in state.legal_moves() if m != 81]
        assert moves
        for m in moves:
            after = state.copy()
            after.push(m)
            assert after.board_hash() not in seen, m
        state.push(moves[len(moves) // 2])
        seen.add(state.board_hash())
        check_invariants(state)
