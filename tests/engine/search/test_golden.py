"""Golden search results: root visit counts on fixed positions and self-play games on fixed seeds.

The figures were recorded from the search before its loop was rewritten around stopper objects (issue
#18) and must not drift: a change to the PUCT arithmetic, the batch schedule, tree reuse or self-play's
pipeline shows here as a different visit count or game.  Regenerate (only for an intended change, and
say why in the commit) with ``python -m tests.engine.search.test_golden``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games import get_game
from engine.games.base import GameState
from engine.search.config import SearchConfig
from engine.search.limits import SearchLimits
from engine.search.searcher import Searcher
from engine.search.time_manager import TimeBudget
from tests.engine.search.reference_cache import NNCache
from tests.engine.search.reference_tree import Tree
from trainer.config import SelfPlaySettings
from trainer.selfplay.player import SelfPlayer


class HashedEvaluator(Evaluator):
    """A deterministic stand-in for a network: priors from a fixed random logit per policy index, the
    value ``tanh`` of a fixed random projection of the planes (both seeded, so every run agrees)."""

    def __init__(self, seed: int = 7) -> None:
        self.seed = seed
        self._weights: dict[tuple[int, ...], np.ndarray] = {}
        self._logits = np.random.default_rng(seed).normal(0.0, 1.5, 20_000)

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        shape = planes.shape[1:]
        if shape not in self._weights:
            self._weights[shape] = np.random.default_rng(self.seed + 1).normal(0.0, 0.05, shape)
        w = self._weights[shape]
        out = []
        for p, idx in zip(planes, legal, strict=True):
            logits = self._logits[np.asarray(idx) % len(self._logits)]
            prior = np.exp(logits - logits.max()) if len(idx) else np.zeros(0)
            prior = (prior / prior.sum()).astype(np.float32) if len(idx) else prior.astype(np.float32)
            out.append(Evaluation(prior, float(np.tanh((p * w).sum()))))
        return out


def _state(game: str, moves: Sequence[str], **kw: int) -> GameState[Any]:
    state = get_game(game, **kw).new_state()
    for m in moves:
        state.push(state.parse_move(m))
    return state


POSITIONS = {
    "chess-start": ("chess", (), {}),
    "chess-open": ("chess", ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4"), {}),
    "shogi-start": ("shogi", (), {}),
    "go9-opening": ("go", ("E5", "C3", "G7"), {"board_size": 9}),
}


def root_visits(name: str, nodes: int, pipelined: bool, cache: bool, reuse: bool) -> list[list[object]]:
    """``[move, visits]`` of every visited root move, most visited first (ties by move text)."""
    game, moves, kw = POSITIONS[name]
    state = _state(game, moves, **kw)
    tree = Tree(state, SearchConfig(), cache=NNCache(10_000) if cache else None)
    evaluator = HashedEvaluator()
    budget = TimeBudget(None, None, False)
    with ThreadPoolExecutor(1) as pool:
        executor = pool if pipelined else None
        result = Searcher(tree, evaluator, SearchLimits(nodes=nodes), budget, executor=executor).run()
        if reuse:
            tree.advance(result.best_move)
            Searcher(tree, evaluator, SearchLimits(nodes=nodes), budget, executor=executor).run()
    root_moves, visits = tree.root_visits()
    rows = sorted(
        ((tree.state.move_to_text(m), int(n)) for m, n in zip(root_moves, visits, strict=True) if n > 0),
        key=lambda r: (-r[1], r[0]),
    )
    return [[text, n] for text, n in rows]


def selfplay_digest(pipeline: bool, playout_cap: bool) -> list[object]:
    """Self-play on Go 5x5: every game's moves, ending and recorded targets, digested."""
    settings = SelfPlaySettings(
        games_in_parallel=4,
        leaves_per_tree=4,
        simulations=24,
        fast_simulations=8,
        playout_cap=playout_cap,
        full_search_fraction=0.5,
        sample_plies=6,
        resign_threshold=None,
        positions_per_shard=100,
        pipeline=pipeline,
    )
    game = get_game("go", board_size=5)
    player = SelfPlayer(game, settings, HashedEvaluator(), seed=11)
    try:
        games = player.play_games(6)
    finally:
        player.close()
    digest = hashlib.sha256()
    for g in games:
        digest.update(json.dumps([g.moves, g.winner, g.reason, g.score]).encode())
        for pos in g.data.positions:
            digest.update(pos.pi_index.tobytes() + pos.pi_value.tobytes() + np.float64(pos.q).tobytes())
    return [sum(g.plies for g in games), player.stats.evaluations, digest.hexdigest()[:16]]


SEARCH_CASES = [
    ("chess-start", 400, False, False, False),
    ("chess-open", 400, True, False, False),
    ("chess-open", 300, True, True, True),
    ("shogi-start", 400, False, True, False),
    ("shogi-start", 300, True, False, True),
    ("go9-opening", 400, True, True, False),
    ("go9-opening", 300, False, False, True),
]
SELFPLAY_CASES = [(False, False), (True, False), (True, True)]

GOLDEN_SEARCH: dict[str, list[list[object]]] = {
    "chess-start-400-False-False-False": [
        ["c2c4", 75],
        ["h2h4", 51],
        ["h2h3", 28],
        ["g1f3", 26],
        ["c2c3", 21],
        ["d2d4", 21],
        ["g1h3", 18],
        ["g2g4", 17],
        ["d2d3", 15],
        ["e2e3", 15],
        ["f2f4", 14],
        ["b2b3", 13],
        ["a2a4", 12],
        ["b1a3", 12],
        ["b1c3", 12],
        ["b2b4", 11],
        ["g2g3", 11],
        ["a2a3", 10],
        ["e2e4", 9],
        ["f2f3", 8],
    ],
    "chess-open-400-True-False-False": [
        ["h7h5", 35],
        ["c6b8", 34],
        ["g8f6", 25],
        ["h7h6", 22],
        ["g8e7", 21],
        ["f8a3", 20],
        ["d8f6", 17],
        ["e8e7", 16],
        ["g8h6", 16],
        ["c6e7", 15],
        ["d7d5", 15],
        ["f8c5", 15],
        ["f8e7", 14],
        ["c6d4", 13],
        ["d8h4", 9],
        ["f7f5", 9],
        ["f8d6", 9],
        ["g7g5", 9],
        ["g7g6", 9],
        ["a7a5", 8],
        ["d7d6", 8],
        ["d8e7", 8],
        ["a7a6", 7],
        ["a8b8", 7],
        ["b7b5", 6],
        ["b7b6", 6],
        ["c6a5", 6],
        ["c6b4", 6],
        ["d8g5", 6],
        ["f7f6", 4],
        ["f8b4", 4],
    ],
    "chess-open-300-True-True-True": [
        ["h1g1", 105],
        ["e1f1", 29],
        ["f3e5", 18],
        ["h2h4", 18],
        ["c4e2", 13],
        ["c4b3", 11],
        ["d2d4", 10],
        ["e1g1", 10],
        ["c2c3", 9],
        ["c4a6", 9],
        ["c4d5", 9],
        ["c4e6", 9],
        ["c4f7", 9],
        ["g2g4", 9],
        ["b1c3", 8],
        ["f3h4", 8],
        ["h2h3", 8],
        ["g2g3", 7],
        ["b1a3", 6],
        ["d1e2", 6],
        ["d2d3", 6],
        ["f3g1", 4],
        ["b2b4", 2],
    ],
    "shogi-start-400-False-True-False": [
        ["5g5f", 36],
        ["2h4h", 35],
        ["6i6h", 33],
        ["6i7h", 33],
        ["6i5h", 32],
        ["7i7h", 32],
        ["2h3h", 29],
        ["2h5h", 26],
        ["5i6h", 23],
        ["2h7h", 20],
        ["4i3h", 16],
        ["8g8f", 14],
        ["2g2f", 13],
        ["3g3f", 13],
        ["6g6f", 12],
        ["5i4h", 10],
        ["4i5h", 9],
        ["1g1f", 1],
        ["1i1h", 1],
        ["2h1h", 1],
        ["2h6h", 1],
        ["3i3h", 1],
        ["3i4h", 1],
        ["4g4f", 1],
        ["4i4h", 1],
        ["5i5h", 1],
        ["7g7f", 1],
        ["7i6h", 1],
        ["9g9f", 1],
        ["9i9h", 1],
    ],
    "shogi-start-300-True-False-True": [
        ["4a5b", 82],
        ["5c5d", 42],
        ["8b5b", 32],
        ["8b7b", 30],
        ["6a7b", 26],
        ["3a3b", 25],
        ["4a3b", 25],
        ["4a4b", 24],
        ["2c2d", 19],
        ["1a1b", 1],
        ["1c1d", 1],
        ["3c3d", 1],
        ["4c4d", 1],
        ["5a4b", 1],
        ["5a5b", 1],
        ["5a6b", 1],
        ["6a5b", 1],
        ["6a6b", 1],
        ["6c6d", 1],
        ["7a6b", 1],
        ["7a7b", 1],
        ["7c7d", 1],
        ["8b3b", 1],
        ["8b4b", 1],
        ["8b6b", 1],
        ["8c8d", 1],
        ["9a9b", 1],
        ["9c9d", 1],
    ],
    "go9-opening-400-True-True-False": [
        ["E4", 36],
        ["H9", 26],
        ["D1", 19],
        ["B4", 18],
        ["E3", 17],
        ["C6", 16],
        ["D2", 15],
        ["B3", 14],
        ["J3", 14],
        ["C1", 13],
        ["D3", 13],
        ["E2", 13],
        ["F4", 13],
        ["G8", 13],
        ["H6", 13],
        ["B8", 12],
        ["C8", 12],
        ["F7", 12],
        ["G3", 12],
        ["G9", 12],
        ["H1", 12],
        ["J4", 12],
        ["H2", 9],
        ["J5", 9],
        ["D8", 7],
        ["B9", 6],
        ["C4", 6],
        ["H4", 6],
        ["A9", 5],
        ["B5", 5],
        ["H5", 5],
        ["F5", 4],
    ],
    "go9-opening-300-False-False-True": [
        ["H9", 34],
        ["E2", 21],
        ["E3", 17],
        ["J5", 15],
        ["B4", 14],
        ["C6", 14],
        ["D1", 13],
        ["H6", 13],
        ["F4", 12],
        ["B3", 11],
        ["C1", 11],
        ["B5", 10],
        ["D2", 10],
        ["D3", 10],
        ["H2", 10],
        ["J3", 10],
        ["B8", 9],
        ["C8", 9],
        ["F7", 9],
        ["G8", 9],
        ["G9", 9],
        ["H1", 9],
        ["H4", 9],
        ["J4", 9],
        ["C4", 8],
        ["D8", 7],
        ["F5", 5],
        ["H5", 4],
        ["B9", 1],
        ["G3", 1],
    ],
}
GOLDEN_SELFPLAY: dict[str, list[object]] = {
    "False-False": [253, 3752, "1425f0522e2f7f88"],
    "True-False": [239, 3610, "26a674e21c5d58fc"],
    "True-True": [238, 2555, "803938e6c31bde44"],
}


@pytest.mark.parametrize("case", SEARCH_CASES, ids=lambda c: "-".join(map(str, c)))
def test_root_visits_match_the_recorded_search(case: tuple[str, int, bool, bool, bool]) -> None:
    assert root_visits(*case) == GOLDEN_SEARCH["-".join(map(str, case))]


@pytest.mark.parametrize("case", SELFPLAY_CASES, ids=lambda c: "-".join(map(str, c)))
def test_selfplay_games_match_the_recorded_ones(case: tuple[bool, bool]) -> None:
    assert selfplay_digest(*case) == GOLDEN_SELFPLAY["-".join(map(str, case))]


if __name__ == "__main__":
    print("GOLDEN_SEARCH = {")
    for c in SEARCH_CASES:
        print(f"    {'-'.join(map(str, c))!r}: {root_visits(*c)!r},")
    print("}")
    print("GOLDEN_SELFPLAY = {")
    for c2 in SELFPLAY_CASES:
        print(f"    {'-'.join(map(str, c2))!r}: {selfplay_digest(*c2)!r},")
    print("}")
