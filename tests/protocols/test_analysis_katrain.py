"""KaTrain 1.20 (PyPI ``katrain``) drives ``tabula analysis`` as its engine, configured as a user does:
KaTrain's own engine settings (its ``config.json``: model, analysis config, visits, time) with the KataGo
executable path pointing at the installed ``tabula`` program.  KaTrain then starts
``tabula analysis -model <its model> -config <its analysis_config.cfg> -override-config homeDataDir=...``
and its own engine class (``katrain.core.engine.KataGoEngine``, headless: no window is opened) and game
nodes read the answers: candidate moves, win rates, score leads, ownership."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("katrain", reason="KaTrain is not installed (pip install katrain==1.20.0)")

from katrain.core.engine import KataGoEngine
from katrain.core.game_node import GameNode
from pysgf import Move


class HeadlessKaTrain:
    """What KaTrain's engine asks of its app: a log, and popups (recorded, never shown)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, int]] = []
        self.popups: list[tuple[Any, ...]] = []

    def log(self, message: str, level: int = 0) -> None:
        self.messages.append((str(message), level))

    def __call__(self, *args: Any) -> None:
        self.popups.append(args)


def _user_config(visits: int) -> dict[str, Any]:
    """KaTrain's shipped engine settings, with the KataGo path set to Tabula's program (the one setting
    a user changes in KaTrain's engine dialog) and fewer visits, as a user may set."""
    import katrain

    shipped = json.loads((Path(katrain.__file__).parent / "config.json").read_text())["engine"]
    program = shutil.which(
        "tabula", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    )
    if program is None:
        pytest.skip("the tabula program is not installed (pip install -e .)")
    return {**shipped, "katago": program, "max_visits": visits}


def _game(size: int, rules: str, moves: list[str]) -> list[GameNode]:
    root = GameNode(properties={"SZ": str(size), "KM": "7.5", "RU": rules})
    nodes = [root]
    player = "B"
    for vertex in moves:
        nodes.append(nodes[-1].play(Move.from_gtp(vertex, player=player)))
        player = "W" if player == "B" else "B"
    return nodes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("size", "rules", "moves"),
    [
        (9, "chinese", ["E5", "C4", "G5", "E3", "D6"]),
        (19, "japanese", ["Q16", "D4", "Q4", "D16", "C14"]),
    ],
    ids=["9x9", "19x19"],
)
def test_katrain_engine_analyses_a_game_with_tabula(size: int, rules: str, moves: list[str]) -> None:
    app = HeadlessKaTrain()
    engine = KataGoEngine(app, _user_config(visits=40))
    try:
        assert isinstance(engine.command, list) and engine.command[1:2] == ["analysis"]
        nodes = _game(size, rules, moves)
        for node in nodes:
            node.analyze(engine)
        deadline = time.monotonic() + 240
        while not all(n.analysis_complete for n in nodes) and time.monotonic() < deadline:
            assert engine.check_alive(), app.messages[-10:]
            time.sleep(0.1)
        assert all(n.analysis_complete for n in nodes), app.messages[-10:]
        print(f"\nKaTrain ran: {' '.join(engine.command)}")
        for depth, node in enumerate(nodes):  # what KaTrain read (pytest -s shows it)
            best = node.candidate_moves[0]
            print(
                f"{size}x{size} move {depth}: visits {node.analysis['root']['visits']}, winrate(B) "
                f"{node.winrate:.3f}, scoreLead(B) {node.score:+.2f}, best {best['move']} "
                f"(pointsLost {best['pointsLost']:.2f}), {len(node.candidate_moves)} candidates, "
                f"ownership of {len(node.ownership)} points"
            )
        for node in nodes:
            candidates = node.candidate_moves
            assert candidates, node.analysis
            assert all(0.0 <= c["winrate"] <= 1.0 and isinstance(c["scoreLead"], float) for c in candidates)
            assert candidates[0]["pointsLost"] == pytest.approx(0.0, abs=50.0)
            assert 0.0 <= node.winrate <= 1.0 and isinstance(node.score, float)
            ownership = node.ownership
            assert ownership is not None and len(ownership) == size * size
            assert all(-1.0 <= v <= 1.0 for v in ownership)
            assert node.analysis["root"]["visits"] >= 40
            assert len(node.policy) == size * size + 1
        errors = [m for m, level in app.messages if "error" in m.lower() and "warning" not in m.lower()]
        assert not errors and not app.popups
        assert any("Territory scoring" in m for m, _ in app.messages) == (rules == "japanese")
    finally:
        engine.shutdown(finish=False)
