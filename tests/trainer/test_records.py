"""trainer.store.records: PGN, CSA and SGF that real parsers read back."""

from __future__ import annotations

import io

import chess.pgn

from trainer.store.records import GameRecord, format_games, gtp_to_sgf, to_csa, to_sgf


def test_pgn_round_trip() -> None:
    rec = GameRecord("chess", ["f2f3", "e7e5", "g2g4", "d8h4"], winner=1, reason="checkmate")
    text = format_games([rec, GameRecord("chess", ["e2e4"], None, "max-length")])
    first = chess.pgn.read_game(io.StringIO(text))
    assert first.headers["Result"] == "0-1"
    assert [m.uci() for m in first.mainline_moves()] == rec.moves
    assert first.end().board().is_checkmate()


def test_csa_is_read_by_cshogi(tmp_path) -> None:
    import cshogi.CSA

    rec = GameRecord("shogi", ["7g7f", "3c3d", "8h2b+", "3a2b"], winner=0, reason="resign")
    text = to_csa(rec)
    assert text.splitlines()[-1] == "%TORYO" and "+7776FU" in text and "-3334FU" in text
    path = tmp_path / "g.csa"
    path.write_text(text)
    parsed = cshogi.CSA.Parser.parse_file(str(path))[0]
    import cshogi

    assert [cshogi.move_to_usi(m) for m in parsed.moves] == rec.moves


def test_sgf_coordinates_and_result() -> None:
    assert gtp_to_sgf("A9", 9) == "aa" and gtp_to_sgf("J1", 9) == "ii" and gtp_to_sgf("pass", 9) == ""
    assert gtp_to_sgf("D4", 7) == "dd" and gtp_to_sgf("A1", 7) == "ag"
    text = to_sgf(
        GameRecord(
            "go", ["D4", "pass", "pass"], winner=0, reason="two-passes", board_size=7, komi=9.0, score=40.0
        )
    )
    assert "SZ[7]" in text and "KM[9]" in text and "RE[B+40]" in text
    assert text.strip().endswith(";B[dd];W[];B[])")
