"""The small SGF reader behind GTP ``loadsgf``."""

from __future__ import annotations

import pytest

from protocols.sgf import SgfError, SgfGame, parse_main_line, parse_point, point_to_vertex, read_game


def test_main_line_follows_the_first_variation() -> None:
    nodes = parse_main_line("(;GM[1]SZ[9];B[dd](;W[ee](;B[ff])(;B[gg]))(;W[aa];B[hh]))")
    assert nodes == [{"GM": ["1"], "SZ": ["9"]}, {"B": ["dd"]}, {"W": ["ee"]}, {"B": ["ff"]}]


def test_second_game_tree_and_leading_text_are_ignored() -> None:
    nodes = parse_main_line("junk before (;SZ[9];B[aa]) (;SZ[19];B[bb])")
    assert nodes == [{"SZ": ["9"]}, {"B": ["aa"]}]


def test_escapes_whitespace_and_ff3_names() -> None:
    nodes = parse_main_line("(\n ;C[a \\] b \\\\ c]\n AddBlack[aa] [bb]\n ; B [cc] )")
    assert nodes == [{"C": ["a ] b \\ c"], "AB": ["aa", "bb"]}, {"B": ["cc"]}]


def test_read_game() -> None:
    game = read_game("(;GM[1]FF[4]SZ[9]KM[6.5]HA[2]AB[cc][gg]AW[ee:ef]PL[W];W[dd];B[];W[tt])")
    assert game == SgfGame(
        size=9,
        komi=6.5,
        handicap=2,
        black_setup=[(2, 2), (6, 6)],
        white_setup=[(4, 4), (4, 5)],
        moves=[(1, (3, 3)), (0, None), (1, None)],
        player_to_move=1,
    )


def test_defaults() -> None:
    game = read_game("(;GM[1];B[pd])")
    assert game.size == 19 and game.komi is None and game.handicap == 0 and game.player_to_move is None
    assert point_to_vertex(game.moves[0][1], 19) == "Q16"


def test_points() -> None:
    assert parse_point("aa", 9) == (0, 0)
    assert point_to_vertex((0, 0), 9) == "A9"
    assert point_to_vertex((8, 8), 9) == "J1"
    assert point_to_vertex(None, 9) == "pass"
    assert parse_point("tt", 19) is None
    assert parse_point("tt", 21) == (19, 19)
    for bad in ("a", "AA", "a1", "jj"):
        with pytest.raises(SgfError):
            parse_point(bad, 9)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no tree",
        "(;SZ[9];B[aa]",
        "(;SZ[9];B[aa)",
        "(;SZ[abc])",
        "(;SZ[9:13])",
        "(;SZ[30])",
        "(;GM[3];B[aa])",
        "(;SZ[9];B[zz])",
        "(;SZ[9]KM[x])",
        "(;SZ[9];B[aa];AB[bb])",
        "([aa])",
        "(SZ[9])",
        "(;SZ[9](;B[aa]);W[bb])",
        "(;SZ[9];B[aa]!)",
    ],
)
def test_bad_records(text: str) -> None:
    with pytest.raises(SgfError):
        read_game(text)
