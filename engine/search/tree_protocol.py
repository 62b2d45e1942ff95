"""What the engine's search loop needs of a tree: :class:`SearchTree`, met by the compiled
:class:`~engine.search.compiled_go.CompiledGoTree` (Go),
:class:`~engine.search.compiled_chess.CompiledChessTree` (chess) and
:class:`~engine.search.compiled_shogi.CompiledShogiTree` (shogi); self-play also needs
:class:`SelfPlayTree`'s few root results.

The loop (:class:`~engine.search.searcher.Searcher`), the stopping rules (:mod:`engine.search.stoppers`)
and the protocols read a tree only through these methods, never through its nodes.  One batch of
leaves goes through three steps::

    batch = tree.select_batch(k)            # walks with virtual loss; a LeafBatch of len(batch) leaves
    batch.start(evaluator, executor)         # the network call: here, or in flight on the executor
    tree.backup_batch(batch)                 # waits for the call, expands, backs up, removes virtual loss
    # or tree.cancel_batch(batch)            # drop it: virtual loss taken back

A tree may hold two batches at once (one in flight while the next is selected: the engine's pipeline).

Root moves are addressed by *slot*, their position in the root's move list (``0 .. L-1``); moves are
the game's native moves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from typing import Any, Protocol, TypeVar

import numpy as np

from engine.evaluator import Evaluator
from engine.search.config import SearchConfig
from engine.search.gumbel import GumbelRoot

#: The order key of a root move in :meth:`SearchTree.ranked_root_slots` (smaller first).
RootRank = tuple[int, int, float, float]


def root_rank(won: bool, lost: bool, allowed: bool, plies: int, visits: float, q: float) -> RootRank:
    """A root move's place in :meth:`SearchTree.ranked_root_slots`: proven wins first (the shortest
    first), then unproven moves by visits and Q, then proven losses (the longest first), moves outside
    ``searchmoves`` last.  ``plies``: the proof's length; ``q``: the move's mean value (-2 unvisited)."""
    if won:
        return (0 if allowed else 4, plies, 0.0, 0.0)
    if lost:
        return (3 if allowed else 4, -plies, -visits, -q)
    return (1 if allowed else 4, 0, -visits, -q)


class LeafBatch(Protocol):
    """Leaves selected by one :meth:`SearchTree.select_batch`, waiting for their network call."""

    def __len__(self) -> int:
        """The number of leaves that need the network (0: nothing to evaluate)."""
        ...

    @property
    def in_flight(self) -> bool:
        """True when the network call runs on a helper thread (it may have finished there already)."""
        ...

    def start(self, evaluator: Evaluator, executor: Executor | None) -> None:
        """Start the network call: on ``executor`` (the network call only; the rest is done on the
        caller's thread at backup), or here and now when it is ``None``."""
        ...

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (``None``: for good); ``True`` once the call is done.  An
        exception of the call is raised here."""
        ...

    def withdraw(self) -> None:
        """Cancel the network call if it has not begun (queued behind another on the executor); a
        running or finished call is left to end on its own."""
        ...

    def take_over(self) -> bool:
        """Make the network call here and now if it has not begun on the executor (cancelled there);
        whether it did.  A running or finished call is left alone."""
        ...


BatchT = TypeVar("BatchT", bound=LeafBatch)


class SearchTree(Protocol[BatchT]):
    """A PUCT search tree over one position, as the engine's search loop drives it (module docstring).

    Counters (``playouts``, ``evaluations``, ``depth_sum``, ``max_depth``) are those of the current search
    (:meth:`reset_stats` zeroes them).
    """

    @property
    def config(self) -> SearchConfig: ...

    @property
    def playouts(self) -> int:
        """Playouts of this search: evaluations and exact (terminal or proven) backups."""
        ...

    @property
    def evaluations(self) -> int:
        """Leaves backed up with a network evaluation in this search."""
        ...

    @property
    def depth_sum(self) -> int:
        """The sum of the playouts' depths (plies below the root)."""
        ...

    @property
    def max_depth(self) -> int: ...

    @property
    def full(self) -> bool:
        """The node budget (``config.node_budget``) or the memory budget
        (``config.memory_budget_bytes``) is used up: the search should end."""
        ...

    @property
    def fill(self) -> float:
        """The share of the budget used, 0..1 (UCI's ``hashfull`` in thousandths)."""
        ...

    @property
    def root_terminal(self) -> bool:
        """The root has no legal move (the game is over there)."""
        ...

    @property
    def root_expanded(self) -> bool:
        """The root has its moves and priors (its first evaluation is backed up)."""
        ...

    def root_proof(self) -> tuple[int, int]:
        """``(proof, plies)`` of the root from its side to move (``Proof`` values: 0 unproven, 1 win,
        -1 loss, 2 draw) and the proven game length in plies."""
        ...

    def reset_stats(self) -> None:
        """Zero the per-search counters (the tree is kept)."""
        ...

    def set_root_moves(self, allowed: Sequence[Any] | None) -> None:
        """Search only ``allowed`` root moves (``searchmoves``); ``None`` or empty: all of them."""
        ...

    def select_batch(self, count: int) -> BatchT:
        """Up to ``count`` walks with virtual loss; exact leaves are backed up at once, the others
        come back in the batch."""
        ...

    def backup_batch(self, batch: BatchT) -> None:
        """Wait for ``batch``'s network call, expand its leaves and back their values up."""
        ...

    def backup_batch_arrays(self, batch: BatchT, priors: np.ndarray, values: np.ndarray) -> None:
        """Back ``batch`` up with priors ``[m, M]`` (aligned with its legal index rows) and values ``[m]``
        computed elsewhere: one network call for many trees (:mod:`engine.search.many_trees`)."""
        ...

    def cancel_batch(self, batch: BatchT) -> None:
        """Abandon ``batch`` (not evaluated): its virtual loss is taken back."""
        ...

    def advance(self, move: Any) -> None:
        """Play ``move`` at the root, keeping its subtree (tree reuse)."""
        ...

    def root_child_visits(self) -> np.ndarray:
        """float64 ``[L]``: ``N(s, a)`` of the root moves (empty before the root is expanded)."""
        ...

    def root_move(self, slot: int) -> Any:
        """The native move of root ``slot``."""
        ...

    def root_prior(self, slot: int) -> float:
        """``P(s, a)`` of root ``slot`` (with the root noise, if any)."""
        ...

    def slot_stats(self, slot: int) -> tuple[float, float, int, int]:
        """``(visits, q, proof, plies)`` of root ``slot`` from the root player's point of view; proof 1
        when the move is a proven win for the root player, -1 a proven loss, 0 unproven; plies the
        proven length counted from the root."""
        ...

    def root_slot_proofs(self) -> np.ndarray:
        """int64 ``[L]``: :meth:`slot_stats`' proof of every root slot at once (1 a proven win for the
        root player, -1 a proven loss, 0 unproven)."""
        ...

    def ranked_root_slots(self) -> list[int]:
        """Root slots best first: proven wins (shortest first), then visits, ties by Q; proven losses
        and moves outside ``searchmoves`` last."""
        ...

    def prove_root_moves(self, proofs: Mapping[Any, tuple[int, int]]) -> None:
        """Mark root moves proven from outside the search (tablebases): ``proofs[move] = (1 | -1,
        plies)``, a win or a loss for the root player in ``plies`` plies from the root; the move's child
        becomes proven (unless terminal or proven already), then the root from its children.  Nothing
        before the root is expanded."""
        ...

    def best_root_slot(self) -> int | None:
        """The first of :meth:`ranked_root_slots` (without ranking the rest); ``None`` when the root has
        no moves."""
        ...

    def best_move(self) -> Any | None:
        """The first of :meth:`ranked_root_slots`' moves; ``None`` when the root has none."""
        ...

    def principal_variation(self, first_slot: int | None = None, max_len: int = 64) -> list[Any]:
        """The most visited line from the root, starting with ``first_slot`` when given."""
        ...


class SelfPlayTree(SearchTree[BatchT], Protocol[BatchT]):
    """What self-play needs of a tree beyond the engine's search loop (:mod:`trainer.selfplay.player`): its
    settings switched between moves (full and fast searches), the root's value, visits and move count,
    the root mask, the visit counts a policy target is made from and a Gumbel root's decisions.  Met by the
    compiled trees (:func:`~engine.search.tree_factory.new_tree` makes one)."""

    @property
    def config(self) -> SearchConfig: ...

    @config.setter
    def config(self, config: SearchConfig) -> None:
        """The settings of the next search (set before :meth:`advance`, whose new root gets noise when
        they have it)."""
        ...

    @property
    def root_q(self) -> float:
        """The root's mean backed-up value from its side to move (0 before any visit)."""
        ...

    @property
    def root_visit_count(self) -> float:
        """``N(s)`` of the root: the visits backed up through it (reused ones included)."""
        ...

    @property
    def root_move_count(self) -> int:
        """The root's number of moves (0 before it is expanded)."""
        ...

    @property
    def root_mask(self) -> np.ndarray | None:
        """bool ``[L]``: the root slots :meth:`set_root_moves` allows (``None``: all)."""
        ...

    @property
    def gumbel_root(self) -> GumbelRoot | None:
        """This move's Gumbel root decisions (``config.gumbel``), made at the search's first root choice;
        ``None`` before, without a Gumbel root, and after :meth:`advance`."""
        ...

    def root_values(self) -> np.ndarray:
        """float64 ``[L]``: ``W(s, a)`` of the root moves from the root player's point of view."""
        ...

    def pruned_root_visits(self) -> np.ndarray:
        """float64 ``[L]``: the root visits with forced playouts taken back (the visits without them)."""
        ...

    def root_policy_indices(self) -> np.ndarray:
        """int64 ``[L]``: the policy index of each root move, in slot order (what a recorded position's
        policy target is spread over; empty before the root is expanded)."""
        ...

    def search_done(self, visits: float, fresh: int) -> bool:
        """Whether this move's search is over: the root is terminal, a forced move that has been
        visited, proven, or the tree is :attr:`~SearchTree.full`; or the root has ``visits`` visits
        (reused ones included) and this search made ``fresh`` playouts.  Self-play asks it after
        every step of every game, so a tree answers from its own fields in one call."""
        ...
