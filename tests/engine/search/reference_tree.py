"""The reference PUCT tree: the step-based search in plain Python, that the engine's compiled trees
(``engine/search/compiled_*.py``) are checked against in lockstep (every node's visits, values and
proofs on fixed seeds), and that searches the tests' toy game.  It is not part of the engine: the
engine and self-play search with the compiled trees only (:mod:`engine.search.tree_factory`).  Its
batches are the engine's one form (:class:`ReferenceBatch`, a :class:`~engine.search.batch.DenseBatch`),
so the engine's search loop and self-play's many-trees call drive it as they drive the compiled trees.

A search is a loop of three steps (docs/design.md)::

    leaves = tree.select_leaves(k)        # walk down with virtual loss; terminal and cached leaves are
                                          # backed up at once, the rest come back with encoded planes
    evals = evaluator.evaluate(planes_of(leaves), [leaf.legal for leaf in leaves])
    tree.backup(leaves, evals)            # expand, remove virtual loss, update N / W

The engine loops this on one tree until the time manager stops it; self-play runs it on many trees and
puts all their leaves in one network call.

Node layout (minigo / dlshogi style): a :class:`Node` holds numpy arrays over its ``L`` legal moves and
creates children lazily::

    moves:     list[Move]        [L]  native moves of the rules library
    indices:   int64             [L]  policy indices of the moves
    prior:     float32           [L]  P(s, a) (root: with Dirichlet noise when configured)
    child_n:   float64           [L]  N(s, a) visits, virtual loss included while a walk is in flight
    child_w:   float64           [L]  W(s, a) total value from the point of view of the player to move at s
    children:  list[Node|None]   [L]

Values are always from the side to move at the node that owns them; a child's value is negated once
when it is backed up into its parent.

The tree walks one mutable :class:`~engine.games.base.GameState` down (``push``) and back up (``pop``)
for each leaf, so the root state is unchanged between calls.

Proofs (a small MCTS-solver): a terminal node carries its exact value; a node with a child whose
player to move is lost is a proven win in ``1 + plies`` of that child; a node whose children are all
proven wins for the opponent is a proven loss.  Proven non-root nodes are not searched below: the walk
stops there and backs up the exact value.  Proven wins give UCI/USI mate scores.

Mate in one (``SearchConfig.mate_check``, as dlshogi does at every node): when the rules library finds
a mating move cheaply (:meth:`~engine.games.base.GameState.mate_in_one`; shogi and chess), a leaf with one is
proven won in one ply without a network call: it is expanded with all its prior on the mate, the
mating child is created terminal, and the walk is backed up through it.  Moves that allow a mate in
one are then proven losses as soon as they are visited, and a root with a mate plays it.

Mate at the root (``SearchConfig.root_mate_nodes``, dlshogi's df-pn at the root): every new root is given
to the rules' mate search (:meth:`~engine.games.base.GameState.find_mate`: shogi's df-pn, chess's mates
in one and checking mates in two); a forced mate it finds makes the root a proven win in the mate's
length, with all the root prior on the mating move, so the search plays it at once (and self-play learns
it as the search policy).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from engine.evaluator import Evaluation, LegalRows
from engine.games.base import GameState
from engine.search.batch import DenseBatch
from engine.search.config import SearchConfig
from engine.search.forced import forced_child, prune_policy_target
from engine.search.gumbel import GumbelRoot
from engine.search.proof import Proof
from engine.search.puct import exploration_rate, puct_scores
from engine.search.tree_protocol import RootRank, root_rank

#: Memory per node of this tree (tracemalloc over a 5,000-node chess search: ~4,800 bytes: numpy arrays
#: over the moves, Python objects, the rules adapter's caches); turns a memory budget (``Hash``) into a
#: node limit (:attr:`Tree.node_limit`).
BYTES_PER_NODE = 5000

# Unexpanded nodes share these empty arrays (never written: ``expand`` replaces them).
_NO_INT = np.zeros(0, dtype=np.int64)
_NO_FLOAT = np.zeros(0, dtype=np.float64)
_NO_INT.flags.writeable = False
_NO_FLOAT.flags.writeable = False


class Node:
    """One position in the tree (see the module docstring for the array shapes)."""

    __slots__ = (
        "child_n",
        "child_w",
        "children",
        "expanded",
        "indices",
        "moves",
        "pending",
        "prior",
        "proven",
        "proven_plies",
        "repeated",
        "terminal",
        "value_sum",
        "visited_prior",
        "visits",
    )

    def __init__(self) -> None:
        self.expanded = False  # the legal moves and priors are attached (the arrays below are [L])
        self.moves: list[Any] = []
        self.indices: np.ndarray = _NO_INT
        self.prior: np.ndarray = _NO_FLOAT
        self.child_n: np.ndarray = _NO_FLOAT
        self.child_w: np.ndarray = _NO_FLOAT
        self.children: list[Node | None] = []
        self.visits: float = 0.0  # N(s): evaluations backed up through this node (+ virtual loss)
        self.value_sum: float = 0.0  # sum of backed-up values, from this node's player to move
        self.terminal: float | None = None  # exact value when the position ends the game
        self.proven: Proof = Proof.UNPROVEN
        self.proven_plies: int = 0
        self.pending: bool = False  # waiting for its network evaluation in the current batch
        self.visited_prior: float = 0.0  # sum of the priors of children with N(s, a) > 0 (for FPU)
        self.repeated: bool = False  # terminal only as a repetition (config.repetition_penalty): no proof

    @property
    def q(self) -> float:
        """Mean value from this node's player to move (0 when unvisited)."""
        return self.value_sum / self.visits if self.visits > 0 else 0.0

    def expand(self, moves: list[Any], indices: np.ndarray, prior: np.ndarray) -> None:
        """Attach the legal moves and their priors (``[L]`` arrays)."""
        n = len(moves)
        self.expanded = True
        self.moves = moves
        self.indices = indices
        self.prior = np.asarray(prior, dtype=np.float64)
        self.child_n = np.zeros(n, dtype=np.float64)
        self.child_w = np.zeros(n, dtype=np.float64)
        self.children = [None] * n
        self.visited_prior = 0.0

    def add_visits(self, slot: int, dn: float, dw: float) -> None:
        """``N(s, a) += dn; W(s, a) += dw; N(s) += dn``, keeping ``visited_prior`` in step."""
        n = self.child_n
        before = n[slot]
        after = before + dn
        n[slot] = after
        self.child_w[slot] += dw
        self.visits += dn
        if (before > 0) != (after > 0):
            p = float(self.prior[slot])
            self.visited_prior += p if after > 0 else -p


@dataclasses.dataclass
class Leaf:
    """A position reached by a walk that needs a network evaluation.

    Attributes:
        path: ``(node, slot)`` pairs from the root down to the leaf's parent (empty for the root).
        node: the leaf node (marked pending until its backup).
        moves: legal moves of the leaf position, ``[L]``.
        legal: int64 ``[L]`` policy indices of ``moves``.
        planes: float32 ``[C, H, W]`` encoded position.
        key: the network-cache key, or ``None`` without a cache.
    """

    path: list[tuple[Node, int]]
    node: Node
    moves: list[Any]
    legal: np.ndarray
    planes: np.ndarray
    key: Hashable | None


class ReferenceBatch(DenseBatch):
    """The tree's batch in the engine's one form: its leaves' planes stacked (float32 ``[m, C, H, W]``)
    and their legal policy indices as :class:`~engine.evaluator.LegalRows` (``width``: the policy's
    size, so that the rows of every tree of a game line up), with the leaves kept to
    expand.  Results come back as rows (priors ``[m, M]`` aligned with the legal rows, values ``[m]``)
    and go to :meth:`Tree.backup` as one :class:`~engine.evaluator.Evaluation` per leaf: the priors
    the leaf's legal moves have (``evaluate`` gives the same bits, ``Evaluator.evaluate_dense``), the
    value as a Python float (exact for float32 values)."""

    def __init__(self, leaves: Sequence[Leaf], width: int) -> None:
        self.leaves = list(leaves)
        planes = (
            np.stack([leaf.planes for leaf in self.leaves])
            if self.leaves
            else np.zeros((0, 1, 1, 1), np.float32)
        )
        super().__init__(planes, LegalRows.from_lists([leaf.legal for leaf in self.leaves], width))

    def evaluations(self, priors: np.ndarray, values: np.ndarray) -> list[Evaluation]:
        """The leaves' evaluations from result rows."""
        counts = self.legal.counts
        return [Evaluation(priors[i, : int(counts[i])], float(values[i])) for i in range(len(self.leaves))]


class EvalCache(Protocol):
    """What the tree needs of a network cache (``tests/engine/search/reference_cache.NNCache``)."""

    def get(self, key: Hashable) -> Evaluation | None: ...

    def put(self, key: Hashable, value: Evaluation) -> None: ...


class Tree:
    """A PUCT search tree over one game state.

    Args:
        state: the root position; the tree owns it from now on (pass ``state.copy()`` to keep yours).
        config: search settings.
        cache: optional network cache keyed by ``GameState.eval_key()``.
        rng: random generator for the root noise.
    """

    def __init__(
        self,
        state: GameState[Any],
        config: SearchConfig,
        cache: EvalCache | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.state = state
        self.config = config
        self.cache = cache
        self.rng = rng if rng is not None else np.random.default_rng(config.seed)
        self.root = Node()
        self.node_count = 1
        self.root_mask: np.ndarray | None = None  # bool [L]: moves allowed at the root (searchmoves)
        self._allowed: list[Any] | None = None  # the searchmoves the mask is made from
        self.gumbel_root: GumbelRoot | None = None  # this move's Gumbel root decisions (config.gumbel)
        self._noise_pending = config.dirichlet_alpha is not None
        self._init_root_terminal()
        # Statistics of the current search, for info lines.
        self.playouts = 0  # nodes searched: evaluations, cache hits and terminal hits
        self.evaluations = 0  # leaves sent to the network
        self.cache_hits = 0
        self.depth_sum = 0
        self.max_depth = 0

    # ---- public API ----------------------------------------------------------------------------
    @property
    def node_limit(self) -> int:
        """The most nodes this tree holds: ``config.node_budget``, and with a memory budget
        :data:`BYTES_PER_NODE` per node (1,000 nodes at least)."""
        config = self.config
        if config.memory_budget_bytes is None:
            return config.node_budget
        return min(config.node_budget, max(1000, config.memory_budget_bytes // BYTES_PER_NODE))

    @property
    def full(self) -> bool:
        """True when the node budget (:attr:`node_limit`) is used up: the search should end."""
        return self.node_count >= self.node_limit

    @property
    def fill(self) -> float:
        """The share of the budget used, 0..1 (UCI's ``hashfull`` / 1000)."""
        return min(1.0, self.node_count / max(1, self.node_limit))

    @property
    def root_terminal(self) -> bool:
        return self.root.terminal is not None

    @property
    def root_expanded(self) -> bool:
        return self.root.expanded

    def root_proof(self) -> tuple[int, int]:
        """``(proof, plies)`` of the root (:class:`~engine.search.tree_protocol.SearchTree`)."""
        return int(self.root.proven), self.root.proven_plies

    @property
    def root_q(self) -> float:
        """The root's mean value from its side to move (:class:`~engine.search.tree_protocol.SelfPlayTree`)."""
        return self.root.q

    @property
    def root_visit_count(self) -> float:
        """``N(s)`` of the root."""
        return self.root.visits

    @property
    def root_move_count(self) -> int:
        """The root's number of moves (0 before it is expanded)."""
        return len(self.root.moves)

    def search_done(self, visits: float, fresh: int) -> bool:
        """:meth:`~engine.search.tree_protocol.SelfPlayTree.search_done`."""
        root = self.root
        if root.terminal is not None or root.proven != Proof.UNPROVEN or self.full:
            return True
        if len(root.moves) == 1 and root.visits >= 1:
            return True
        return root.visits >= visits and self.playouts >= fresh

    def reset_stats(self) -> None:
        """Zero the per-search counters (the tree itself is kept)."""
        self.playouts = self.evaluations = self.cache_hits = self.depth_sum = self.max_depth = 0

    def set_root_moves(self, allowed: Sequence[Any] | None) -> None:
        """Restrict the root to ``allowed`` moves (UCI ``searchmoves``); ``None`` or empty: all moves."""
        self._allowed = list(allowed) if allowed else None
        self._apply_root_mask()

    def select_leaves(self, count: int) -> list[Leaf]:
        """Walk down ``count`` times (fewer on collisions or a full tree).

        Terminal positions, proven nodes and cache hits are backed up at once; positions that need the
        network come back as leaves, with virtual loss applied along their paths until
        :meth:`backup`.
        """
        leaves: list[Leaf] = []
        if self.root.terminal is not None:
            return leaves
        collisions = 0
        for _ in range(count):
            if self.full:
                break
            leaf = self._walk()
            if isinstance(leaf, Leaf):
                leaves.append(leaf)
            elif leaf is _WalkEnd.COLLISION:
                collisions += 1
                if collisions > self.config.max_collisions:
                    break
        return leaves

    def backup(self, leaves: Sequence[Leaf], evaluations: Sequence[Evaluation]) -> None:
        """Expand each leaf with its evaluation and back its value up (removing virtual loss)."""
        cache = self.cache
        for leaf, ev in zip(leaves, evaluations, strict=True):
            if cache is not None and leaf.key is not None:
                cache.put(leaf.key, ev)
            self._expand(leaf.node, leaf.moves, leaf.legal, ev.priors, is_root=not leaf.path)
            self._backup_value(leaf.path, leaf.node, ev.value)
            self.depth_sum += len(leaf.path)  # counted at backup, with the playout (not while in flight)
        self.evaluations += len(leaves)

    def select_batch(self, count: int) -> ReferenceBatch:
        """:meth:`select_leaves` as the engine's batch form (:class:`ReferenceBatch`)."""
        return ReferenceBatch(self.select_leaves(count), self.state.info.policy_size)

    def backup_batch(self, batch: ReferenceBatch) -> None:
        """:meth:`backup` of a started batch with its results (waits for them)."""
        if batch.leaves:
            priors, values = batch.result()
            self.backup(batch.leaves, batch.evaluations(priors, values))

    def backup_batch_arrays(self, batch: ReferenceBatch, priors: np.ndarray, values: np.ndarray) -> None:
        """:meth:`backup` of ``batch`` with priors ``[m, M]`` and values ``[m]`` computed elsewhere
        (self-play's one call for many trees, :mod:`engine.search.many_trees`)."""
        if batch.leaves:
            self.backup(batch.leaves, batch.evaluations(np.asarray(priors), np.asarray(values)))

    def cancel_batch(self, batch: ReferenceBatch) -> None:
        """:meth:`cancel` of a batch's leaves."""
        self.cancel(batch.leaves)

    def cancel(self, leaves: Sequence[Leaf]) -> None:
        """Abandon leaves that will not be evaluated: remove their virtual loss."""
        vl = self.config.virtual_loss
        for leaf in leaves:
            leaf.node.pending = False
            for node, slot in leaf.path:
                node.add_visits(slot, -vl, vl)

    def advance(self, move: Any) -> None:
        """Play ``move`` at the root and keep its subtree (tree reuse)."""
        root = self.root
        child = None
        for slot, m in enumerate(root.moves):
            if m == move:
                child = root.children[slot]
                break
        self.state.push(move)
        if child is None or not child.expanded:
            # pending, terminal or never expanded (it may carry a proof from the mate search): a fresh root
            self.root = Node()
            self.node_count = 1
            self._init_root_terminal()
        else:
            self.root = child
            self.node_count = max(1, int(child.visits))
        self._allowed = None
        self.root_mask = None
        self.gumbel_root = None
        self._noise_pending = self.config.dirichlet_alpha is not None
        if self.root.expanded:
            self._apply_root_noise()
            self._search_root_mate()

    # ---- results ---------------------------------------------------------------------------------
    def root_visits(self) -> tuple[list[Any], np.ndarray]:
        """Root moves and their visit counts ``[L]`` (empty before the root is expanded)."""
        root = self.root
        if not root.expanded:
            return [], np.zeros(0)
        return root.moves, root.child_n.copy()

    def root_child_visits(self) -> np.ndarray:
        """float64 ``[L]``: the root's ``N(s, a)`` (the tree's own array: read only)."""
        return self.root.child_n

    def root_values(self) -> np.ndarray:
        """float64 ``[L]``: ``W(s, a)`` of the root moves from the root player's point of view (a copy)."""
        return self.root.child_w.copy()

    def root_move(self, slot: int) -> Any:
        return self.root.moves[slot]

    def root_policy_indices(self) -> np.ndarray:
        """int64 ``[L]``: the root moves' policy indices (the root's ``indices``)."""
        return np.asarray(self.root.indices, np.int64)

    def root_prior(self, slot: int) -> float:
        return float(self.root.prior[slot])

    def ranked_root_slots(self) -> list[int]:
        """Root slots ordered best first: proven wins (shortest first), then by visits, ties by Q;
        proven losses and moves outside ``searchmoves`` last."""
        root = self.root
        keys: list[tuple[RootRank, int]] = []
        for slot, child in enumerate(root.children):
            n = float(root.child_n[slot])
            q = float(root.child_w[slot]) / n if n > 0 else -2.0
            proof = child_proof(child)
            allowed = self.root_mask is None or bool(self.root_mask[slot])
            plies = child.proven_plies if child is not None else 0
            keys.append((root_rank(proof == Proof.WIN, proof == Proof.LOSS, allowed, plies, n, q), slot))
        keys.sort()
        return [slot for _, slot in keys]

    def prove_root_moves(self, proofs: Mapping[Any, tuple[int, int]]) -> None:
        """Mark root moves proven from outside the search (tablebases, :mod:`engine.search.root_verdicts`):
        ``proofs[move] = (1 | -1, plies)``, a win or a loss for the root player in ``plies`` plies from
        the root.  Each such move's child (created if missing) becomes a proven loss or win for its
        mover, as the MCTS solver marks it, unless it is terminal or proven already; then the root is
        proven from its children as a backup would prove it.  Nothing before the root is expanded."""
        root = self.root
        if not root.expanded:
            return
        for slot, move in enumerate(root.moves):
            known = proofs.get(move)
            if known is None or known[0] not in (Proof.WIN, Proof.LOSS):
                continue
            child = root.children[slot]
            if child is None:
                child = Node()
                root.children[slot] = child
                self.node_count += 1
            if child.terminal is not None or child.proven != Proof.UNPROVEN:
                continue
            child.proven = Proof.LOSS if known[0] == Proof.WIN else Proof.WIN
            child.proven_plies = known[1] - 1
        if root.proven == Proof.UNPROVEN:
            _update_proof(root)

    def best_root_slot(self) -> int | None:
        """The first of :meth:`ranked_root_slots`; ``None`` when the root has no moves."""
        slots = self.ranked_root_slots()
        return slots[0] if slots else None

    def best_move(self) -> Any | None:
        """The move to play: a proven win if any, else the most visited move (ties by Q)."""
        slot = self.best_root_slot()
        return None if slot is None else self.root.moves[slot]

    def principal_variation(self, first_slot: int | None = None, max_len: int = 64) -> list[Any]:
        """Most visited line from the root (starting with ``first_slot`` when given)."""
        pv: list[Any] = []
        node = self.root
        slot = first_slot
        while node.expanded and len(pv) < max_len:
            if slot is None:
                if not node.moves or node.child_n.max() <= 0:
                    break
                slot = int(np.argmax(node.child_n))
            pv.append(node.moves[slot])
            child = node.children[slot]
            if child is None:
                break
            node = child
            slot = None
        return pv

    def slot_stats(self, slot: int) -> tuple[float, float, Proof, int]:
        """``(visits, q, proof, proven_plies)`` of a root move from the root player's point of view.
        ``proof`` is Proof.WIN when playing the move wins for the root player."""
        root = self.root
        n = float(root.child_n[slot])
        q = float(root.child_w[slot]) / n if n > 0 else 0.0
        child = root.children[slot]
        return n, q, child_proof(child), (child.proven_plies + 1) if child is not None else 0

    def root_slot_proofs(self) -> np.ndarray:
        """int64 ``[L]``: the proof of every root move from the root player's point of view
        (:meth:`slot_stats`' third field, all at once)."""
        return np.array([child_proof(child) for child in self.root.children], dtype=np.int64)

    # ---- internals -----------------------------------------------------------------------------
    def _init_root_terminal(self) -> None:
        """Mark the root terminal only when it has no legal move.  A root that is over by a rule while
        moves remain (a repetition or fifty-move draw the GUI did not adjudicate, a length cap) is
        searched normally: whoever asks for a move there gets one.  Below the root, rule endings are
        terminal as usual."""
        outcome = self.state.outcome()
        if outcome is not None and not self.state.legal_moves():
            self.root.terminal = outcome.value

    def _apply_root_mask(self) -> None:
        root = self.root
        allowed = self._allowed
        if not root.expanded or not allowed:
            self.root_mask = None
            return
        mask = np.array([m in allowed for m in root.moves], dtype=bool)
        self.root_mask = mask if mask.any() else None

    def _apply_root_noise(self) -> None:
        if not self._noise_pending or not self.root.moves:
            return
        self._noise_pending = False
        alpha = self.config.dirichlet_alpha
        assert alpha is not None  # noise is pending only when configured
        eps = self.config.dirichlet_epsilon
        root = self.root
        noise = self.rng.dirichlet(np.full(len(root.moves), alpha))
        root.prior = (1.0 - eps) * root.prior + eps * noise
        root.visited_prior = float(root.prior[root.child_n > 0].sum())

    def _expand(
        self, node: Node, moves: list[Any], indices: np.ndarray, prior: np.ndarray, is_root: bool
    ) -> None:
        node.pending = False
        if node.expanded:
            return
        node.expand(moves, indices, prior)
        if is_root:
            self._apply_root_noise()
            self._apply_root_mask()
            self._search_root_mate()

    def _search_root_mate(self) -> None:
        """Prove the (expanded) root won when the rules' mate search finds a forced mate (see the
        module docstring); nothing when it is already proven, off, or none is found."""
        root = self.root
        nodes = self.config.root_mate_nodes
        if nodes <= 0 or root.proven != Proof.UNPROVEN or root.terminal is not None or not root.moves:
            return
        found = self.state.find_mate(nodes)
        if found is None:
            return
        move, plies = found
        try:
            slot = root.moves.index(move)
        except ValueError:
            return
        if self.root_mask is not None and not self.root_mask[slot]:
            return  # not among the moves the GUI allowed
        child = root.children[slot]
        if child is None:
            child = Node()
            root.children[slot] = child
            self.node_count += 1
        child.proven = Proof.LOSS
        child.proven_plies = plies - 1
        prior = np.zeros(len(root.moves))
        prior[slot] = 1.0
        root.prior = prior
        root.visited_prior = float(prior[root.child_n > 0].sum())
        root.proven = Proof.WIN
        root.proven_plies = plies

    def puct_scores(self, node: Node, is_root: bool) -> np.ndarray:
        """The PUCT score of each child of an expanded ``node``, float64 ``[L]``::

            Q(s, a) + c(s) * P(s, a) * sqrt(N(s)) / (1 + N(s, a))

        with ``c(s)`` from :func:`exploration_rate`, ``Q(s, a) = W(s, a) / N(s, a)`` for visited children
        and the first-play urgency ``Q(s) - reduction * sqrt(sum of the visited children's priors)``
        for the others (``fpu_reduction_root`` at the root, ``fpu_reduction`` below).  Virtual loss
        is part of ``N`` and ``W`` while walks are in flight.  Root moves outside ``searchmoves``
        score ``-inf``."""
        cfg = self.config
        reduction = cfg.fpu_reduction_root if is_root else cfg.fpu_reduction
        mask = self.root_mask if is_root else None
        return puct_scores(
            node.child_n,
            node.child_w,
            node.prior,
            node.visits,
            node.q,
            node.visited_prior,
            reduction,
            cfg,
            mask,
        )

    def _select(self, node: Node, is_root: bool) -> int:
        """The child to walk into: the first of the highest :meth:`puct_scores` (at the root of a Gumbel
        search, the move sequential halving asks for; at a root with forced playouts, a child below its
        forced visits first, :mod:`engine.search.forced`)."""
        if is_root:
            if self.config.gumbel is not None:
                return self._gumbel().select(node.child_n, node.child_w, node.q)
            if self.config.forced_playouts > 0:
                forced = forced_child(node.child_n, node.prior, self.config.forced_playouts, self.root_mask)
                if forced is not None:
                    return forced
        return int(self.puct_scores(node, is_root).argmax())

    def pruned_root_visits(self) -> np.ndarray:
        """float64 ``[L]``: the root visits with the forced playouts taken back (KataGo's policy target
        pruning, :func:`~engine.search.forced.prune_policy_target`); the plain visits without forced
        playouts."""
        root = self.root
        k = self.config.forced_playouts
        if k <= 0 or not root.expanded:
            return root.child_n.copy()
        c = exploration_rate(root.visits, self.config)
        return prune_policy_target(root.child_n, root.child_w, root.prior, c, root.visits, k)

    def _gumbel(self) -> GumbelRoot:
        """This move's Gumbel root decisions, made at the first root selection (the root is expanded)."""
        if self.gumbel_root is None:
            assert self.config.gumbel is not None
            root = self.root
            self.gumbel_root = GumbelRoot(
                root.prior, root.child_n, self.root_mask, self.config.gumbel, self.rng
            )
        return self.gumbel_root

    def _walk(self) -> Leaf | _WalkEnd:
        """One walk from the root: a leaf for the network, or how the walk ended without one."""
        state = self.state
        node = self.root
        path: list[tuple[Node, int]] = []
        vl = self.config.virtual_loss
        pushed = 0
        try:
            while True:
                if node.terminal is not None:
                    self._finish_exact(path, node, node.terminal)
                    return _WalkEnd.BACKED_UP
                if path and node.proven in (Proof.WIN, Proof.LOSS):
                    self._finish_exact(path, node, float(node.proven))
                    return _WalkEnd.BACKED_UP
                if not node.expanded:
                    break
                if not node.moves:  # no legal moves but not terminal: cannot happen with sane rules
                    self._finish_exact(path, node, 0.0)
                    return _WalkEnd.BACKED_UP
                slot = self._select(node, not path)
                node.add_visits(slot, vl, -vl)
                path.append((node, slot))
                state.push(node.moves[slot])
                pushed += 1
                child = node.children[slot]
                node = child if child is not None else self._new_child(node, slot)
            if node.pending:
                self._revert(path)
                return _WalkEnd.COLLISION
            depth = len(path)
            if depth > self.max_depth:
                self.max_depth = depth
            moves, legal = state.legal_moves_and_indices()
            if self.config.mate_check:
                mate = state.mate_in_one()
                if mate is not None and self._prove_mate(path, node, moves, legal, mate):
                    return _WalkEnd.BACKED_UP
            key = None
            if self.cache is not None:
                key = state.eval_key()
                hit = self.cache.get(key)
                if hit is not None:
                    self.cache_hits += 1
                    self.depth_sum += depth
                    self._expand(node, moves, legal, hit.priors, is_root=not path)
                    self._backup_value(path, node, hit.value)
                    return _WalkEnd.BACKED_UP
            node.pending = True
            return Leaf(path, node, moves, legal, state.encode(), key)
        finally:
            for _ in range(pushed):
                state.pop()

    def _new_child(self, node: Node, slot: int) -> Node:
        """Create the child at ``slot`` of ``node``, whose position is on ``self.state`` now: terminal
        when the game is over there, or when it repeats and repetitions are penalised (the value then
        against the player who made the move, whose prior goes to the other moves)."""
        child = Node()
        node.children[slot] = child
        self.node_count += 1
        state = self.state
        outcome = state.outcome()
        if outcome is not None:
            child.terminal = outcome.value
        elif self.config.repetition_penalty and state.repetition_count() > 0:
            child.terminal = self.config.repetition_penalty  # good for its mover's opponent
            child.repeated = True
            _drop_prior(node, slot)
        return child

    def _prove_mate(
        self, path: list[tuple[Node, int]], node: Node, moves: list[Any], legal: np.ndarray, mate: Any
    ) -> bool:
        """Expand ``node`` (the walk's leaf, its position on ``self.state``) as a proven win in one by
        ``mate``: all its prior on the mate, the mated child created terminal (not visited), and its
        exact value +1 backed up as this walk's playout.  ``False`` (nothing changed) when ``mate`` is
        not among ``moves`` or does not end the game with a loss for the opponent."""
        try:
            slot = moves.index(mate)
        except ValueError:
            return False
        state = self.state
        state.push(mate)
        outcome = state.outcome()
        state.pop()
        if outcome is None or outcome.value >= 0:
            return False
        prior = np.zeros(len(moves), dtype=np.float32)
        prior[slot] = 1.0
        node.proven = Proof.WIN  # before expanding: a root proven here needs no longer mate search
        node.proven_plies = 1
        self._expand(node, moves, legal, prior, is_root=not path)
        child = Node()
        child.terminal = outcome.value
        child.proven = Proof.LOSS
        node.children[slot] = child
        self.node_count += 1
        node.proven = Proof.WIN
        node.proven_plies = 1
        self._finish_exact(path, node, 1.0)
        return True

    def _revert(self, path: list[tuple[Node, int]]) -> None:
        vl = self.config.virtual_loss
        for node, slot in path:
            node.add_visits(slot, -vl, vl)

    def _finish_exact(self, path: list[tuple[Node, int]], node: Node, value: float) -> None:
        """Back up an exact value reached by a walk (terminal or proven node)."""
        depth = len(path)
        self.depth_sum += depth
        if depth > self.max_depth:
            self.max_depth = depth
        if node.terminal is not None and node.proven == Proof.UNPROVEN and not node.repeated:
            node.proven = Proof.WIN if value > 0 else Proof.LOSS if value < 0 else Proof.DRAW
        self._backup_value(path, node, value)

    def _backup_value(self, path: list[tuple[Node, int]], leaf: Node, value: float) -> None:
        """Add ``value`` (from ``leaf``'s player to move) up the path, removing virtual loss."""
        vl = self.config.virtual_loss
        leaf.visits += 1.0
        leaf.value_sum += value
        self.playouts += 1
        v = value
        child = leaf
        for node, slot in reversed(path):
            v = -v
            node.add_visits(slot, 1.0 - vl, v + vl)
            node.value_sum += v
            if child.proven in (Proof.WIN, Proof.LOSS) and node.proven == Proof.UNPROVEN:
                _update_proof(node)
            child = node


def child_proof(child: Node | None) -> Proof:
    """Proof of a move from the point of view of the player who makes it."""
    if child is None:
        return Proof.UNPROVEN
    if child.proven == Proof.LOSS:
        return Proof.WIN
    if child.proven == Proof.WIN:
        return Proof.LOSS
    return Proof.UNPROVEN


def _drop_prior(node: Node, slot: int) -> None:
    """Take a repeating move's prior away (the others renormalised): the move keeps the visits and the
    penalty it has, but PUCT no longer sends visits after a prior the network learnt from shuffling,
    and the visit counts that self-play learns from stop teaching it."""
    prior = node.prior.copy()
    prior[slot] = 0.0
    total = float(prior.sum())
    node.prior = prior / total if total > 0 else prior
    node.visited_prior = float(node.prior[node.child_n > 0].sum())


def _update_proof(node: Node) -> None:
    """Mark ``node`` proven when one child is lost for its mover, or all children are won for theirs."""
    children = node.children
    if not children:
        return
    best_win: int | None = None
    all_lost = True
    worst = 0
    for child in children:
        if child is None:
            all_lost = False
            continue
        if child.proven == Proof.LOSS:
            plies = child.proven_plies + 1
            best_win = plies if best_win is None else min(best_win, plies)
        elif child.proven == Proof.WIN:
            worst = max(worst, child.proven_plies + 1)
        else:
            all_lost = False
    if best_win is not None:
        node.proven = Proof.WIN
        node.proven_plies = best_win
    elif all_lost:
        node.proven = Proof.LOSS
        node.proven_plies = worst


class _WalkEnd(enum.Enum):
    """How a walk ended when it brought back no leaf for the network."""

    BACKED_UP = "backed-up"  # a terminal, proven or cached position, or a mate in one: backed up at once
    COLLISION = "collision"  # the leaf already waits for its evaluation in this batch
