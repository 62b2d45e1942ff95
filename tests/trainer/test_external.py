"""Matches against an external engine over UCI / USI: the opponent is the real `tabula` program."""

from __future__ import annotations

import pytest

from engine.games import get_game
from engine.inference import UniformEvaluator
from tests.process import tabula_command
from trainer.evaluate.evaluate import ExternalEngine, play_external


@pytest.mark.parametrize("label,protocol", [("chess", "uci"), ("shogi", "usi")])
def test_network_against_an_external_engine(label: str, protocol: str) -> None:
    game = get_game(label, max_plies=12)
    command = " ".join([*tabula_command(), "--threads", "1", "--backend", "cpu"])
    engine = ExternalEngine(command, protocol, go="go nodes 8", timeout=60)
    try:
        report = play_external(
            game, UniformEvaluator(game.info), engine, games=2, simulations=4, opening_plies=2, seed=1
        )
    finally:
        engine.close()
    r = report.result
    assert r.games == 2
    for g in report.games:
        state = game.new_state()
        for text in g.opening + g.moves:
            state.push(state.parse_move(text))  # every move of both sides was legal
        assert g.reason in ("max-length", "resign", "checkmate", "win", "repetition") or state.outcome()


FAKE_GTP = r"""
import sys
size, stones = 5, set()
cols = "ABCDEFGHJKLMNOPQRST"
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    cmd = words[0]
    reply = ""
    if cmd == "boardsize":
        size = int(words[1])
    elif cmd == "clear_board":
        stones = set()
    elif cmd == "play" and words[2].lower() != "pass":
        stones.add(words[2].upper())
    elif cmd == "genmove":
        reply = "pass"
    elif cmd == "quit":
        print("=\n", flush=True)
        break
    print(f"= {reply}\n", flush=True)
"""


def test_network_against_a_gtp_engine(tmp_path) -> None:
    import sys

    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_GTP)
    game = get_game("go", board_size=5, komi=0.5)
    engine = ExternalEngine(f"{sys.executable} {script}", "gtp", board_size=5, komi=0.5)
    try:
        report = play_external(
            game, UniformEvaluator(game.info), engine, games=2, simulations=8, opening_plies=0
        )
    finally:
        engine.close()
    # An engine that always passes loses every game to one that plays stones (pass rule: no pass when behind).
    assert report.result.games == 2 and report.result.wins == 2
    assert all(g.reason == "two-passes" for g in report.games)
