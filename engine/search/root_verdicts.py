"""Results of root moves known before the search (endgame tablebases: :mod:`engine.chess_tablebase`).

The search does two things with them (:class:`~engine.search.searcher.Searcher`):

* once the root is expanded, the proven wins and losses become the tree's proofs of the root's children
  (:meth:`~engine.search.tree_protocol.SearchTree.prove_root_moves`), the same markers the MCTS solver
  and the mate search set: a won move proves the root won and ends the search (the shortest proof is
  played), a lost move is never chosen while another is not lost, and a walk reaching a proven child
  backs its exact value up.  Drawn moves are not marked: the search chooses among them as usual.
* the report gives each move with a verdict the verdict's score (``score cp 20000`` for a tablebase
  win, as Stockfish writes it), unless the tree proved a mate of its own.

Lengths: a verdict's ``plies`` orders proofs as the tree ranks them (wins shortest first, losses
longest first).  Tablebase proofs start at :data:`TABLEBASE_PLIES`, above any mate the tree can prove,
so that a real mate is played (and reported as ``mate N``) before a tablebase win and ``go mate N``
never stops on a tablebase proof.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.search.proof import Proof
from engine.search.score import Score

#: Where the lengths of proofs from outside the tree start (plies): above any mate the search proves.
TABLEBASE_PLIES = 10_000

#: ``score cp`` of a tablebase win at the root (Stockfish's ``TB_CP``), less one per ply below the root
#: where the tables were probed.
TABLEBASE_CP = 20_000


@dataclasses.dataclass(frozen=True)
class RootVerdict:
    """What is known of one root move, from the root player's point of view.

    Attributes:
        result: ``Proof.WIN``, ``Proof.DRAW`` or ``Proof.LOSS`` (under the fifty-move rule).
        plies: the proof's length for the tree's ranking (wins: the shortest first; losses: the longest
            first); :data:`TABLEBASE_PLIES` and up for tablebase results, the mate's plies for a move
            that checkmates; 0 for draws.
        score: the move's score in the report.
    """

    result: Proof
    plies: int
    score: Score

    @property
    def q(self) -> float:
        """The exact value of the move (+1, 0, -1): the report's ``wdl``."""
        return 0.0 if self.result == Proof.DRAW else float(self.result)


@dataclasses.dataclass(frozen=True)
class RootVerdicts:
    """The verdicts of a root's moves (not every move need have one) and the probes they took.

    Attributes:
        moves: native move -> verdict.
        hits: tablebase probes made (UCI ``tbhits``).
    """

    moves: Mapping[Any, RootVerdict]
    hits: int

    def proofs(self) -> dict[Any, tuple[int, int]]:
        """The proven wins and losses as :meth:`SearchTree.prove_root_moves` takes them:
        move -> ``(1 win | -1 loss, plies)``."""
        return {m: (int(v.result), v.plies) for m, v in self.moves.items() if v.result != Proof.DRAW}


def tablebase_score(result: Proof, depth: int) -> Score:
    """The score of a tablebase ``result`` found ``depth`` plies below the root (0: the root itself is in
    the tables): ``cp 20000 - depth`` for a win, ``cp -20000 + depth`` for a loss, ``cp 0`` for a draw
    (Stockfish's convention)."""
    if result == Proof.WIN:
        return Score(cp=TABLEBASE_CP - depth)
    if result == Proof.LOSS:
        return Score(cp=-TABLEBASE_CP + depth)
    return Score(cp=0)
