"""The game-independent core of the compiled PUCT trees (:mod:`engine.search.compiled_go`,
:mod:`engine.search.compiled_chess`, :mod:`engine.search.compiled_shogi`): the reference ``Tree``'s (``tests/engine/search/reference_tree.py``)
search, node for node, in numba.

The tree lives in preallocated numpy arrays (struct of arrays, :class:`TreeArrays`).  This module holds
what does not depend on the game: the arrays and their growth, PUCT selection, virtual loss, backup,
the MCTS-solver proofs, cancelled batches, tree reuse (:func:`reroot`), expansion from dense priors by
policy index and the repetition penalty's prior drop (chess, shogi), the root mate proof, the compiled
entry points (:class:`Bound`), and :class:`CompiledTree`, the Python side the trees share (counters,
root results, root noise, batch buffers, the root choices of a Gumbel root or forced playouts planned
in Python: :meth:`CompiledTree._root_slots`).  The games add their walks on their rules, the leaves'
encoding and expansion, and what only they have (chess and shogi: repetitions, the root mate search),
through :func:`walk`'s ``step`` and :func:`select_leaves`'s walk, leaf row and end of a walk.

Numba types a NamedTuple of arrays structurally, so one :class:`TreeArrays` serves every game (each
game's kernels are compiled for it once); njit functions here are called from the games' njit
functions.

Layout (``C`` node capacity, ``E`` edge capacity, both grown by doubling between calls, recycled
through :data:`POOL`; node 0 is the
root; a node's edges are ``first_edge .. first_edge + num_edges - 1``, in the game's move order)::

    per node  [C]: visits N(s), value_sum W(s), value_squares (the sum of the squares of the values
                   backed up through the node: their variance, for :mod:`~engine.search.lcb`), visited_prior, first_edge, num_edges, expanded, pending,
                   terminal, terminal_value, proven, proven_plies, parent, parent_edge, repeated,
                   frontier (scan positions before it hold every edge ever visited: :func:`select`)
    per edge  [E]: move (the game kernel's int, int32), prior P(s, a), child (int32, -1 until
                   created), child_n N(s, a), child_w W(s, a), order (int16: the slot offset at this
                   scan position of the node's edges): 34 bytes
    counts    [2]: nodes used, edges used
    stats     [4]: this search's playouts, evaluations, depth sum, deepest walk
    root_allowed [S]: per root slot (``S`` at least the most moves a position has), whether
                   ``searchmoves`` allows it

``repeated`` marks a penalised repetition (chess's and shogi's ``repetition_penalty``: terminal but
never proven); Go never sets it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from engine.evaluator import LegalRows
from engine.jit import njit, njit_no_alloc, njit_no_alloc_inline
from engine.search.batch import DenseBatch
from engine.search.config import SearchConfig
from engine.search.forced import prune_policy_target
from engine.search.gumbel import GumbelRoot
from engine.search.lcb import lower_bound, quantile_table
from engine.search.proof import Proof
from engine.search.puct import exploration_rate
from engine.search.root_plan import RootStats, plan_root_slots

if TYPE_CHECKING:  # many_trees imports nothing of this module; the rows are only passed in
    from engine.search.many_trees import SharedRows

F8 = npt.NDArray[np.float64]
I8 = npt.NDArray[np.int64]
I4 = npt.NDArray[np.int32]
B1 = npt.NDArray[np.bool_]


# Proof states (engine.search.proof's values, as plain ints for the kernels).
UNPROVEN = int(Proof.UNPROVEN)
WIN = int(Proof.WIN)
LOSS = int(Proof.LOSS)
DRAW = int(Proof.DRAW)

# What a walk brought back when it was not a leaf (a leaf is its node index, >= 0).
BACKED_UP = -1
COLLISION = -2

ROOT = 0


class TreeArrays(NamedTuple):
    """The tree (see the module docstring): node arrays ``[C]``, edge arrays ``[E]``, ``counts[2]``,
    ``stats[4]``, ``root_allowed[S]``."""

    visits: F8
    value_sum: F8
    value_squares: F8
    visited_prior: F8
    first_edge: I8
    num_edges: I8
    expanded: B1
    pending: B1
    terminal: B1
    terminal_value: F8
    proven: npt.NDArray[np.int8]
    proven_plies: I8
    parent: I8
    parent_edge: I8
    repeated: B1
    frontier: I8
    move: I4
    prior: F8
    child: I4
    child_n: F8
    child_w: F8
    order: npt.NDArray[np.int16]
    counts: I8
    stats: I8
    root_allowed: B1


_NODE_FIELDS = 16  # TreeArrays: 16 node arrays, then 6 edge arrays, then counts, stats, root_allowed
_EDGE_FIELDS = 6

# Slots of TreeArrays.stats: the counters of the current search (Tree's attributes of these names).
PLAYOUTS = 0
EVALUATIONS = 1
DEPTH_SUM = 2
MAX_DEPTH = 3


class Params(NamedTuple):
    """The :class:`SearchConfig` fields the compiled search reads (Go ignores ``repetition_penalty``)."""

    c_init: float
    c_base: float
    fpu_root: float
    fpu: float
    virtual_loss: float
    max_collisions: int
    node_budget: int
    repetition_penalty: float
    memory_budget: int  # bytes (SearchConfig.memory_budget_bytes; NO_MEMORY_BUDGET when None)
    node_bytes: int  # bytes per node (NODE_BYTES), against the memory budget


#: :attr:`Params.memory_budget` of a config without a memory budget.
NO_MEMORY_BUDGET = 1 << 62


def params(config: SearchConfig) -> Params:
    """The compiled search's settings.  The Gumbel root and forced playouts are
    not among them: their root choices are made in Python (:meth:`CompiledTree._root_slots`)."""
    return Params(
        c_init=float(config.c_init),
        c_base=float(config.c_base),
        fpu_root=float(config.fpu_reduction_root),
        fpu=float(config.fpu_reduction),
        virtual_loss=float(config.virtual_loss),
        max_collisions=int(config.max_collisions),
        node_budget=int(config.node_budget),
        repetition_penalty=float(config.repetition_penalty),
        memory_budget=NO_MEMORY_BUDGET
        if config.memory_budget_bytes is None
        else int(config.memory_budget_bytes),
        node_bytes=NODE_BYTES,
    )


def allocate(nodes: int, edges: int, slots: int) -> TreeArrays:
    """Arrays for ``nodes`` nodes and ``edges`` edges, none used yet (left uninitialised: every field
    of a node or an edge is written when it is made), zero counters, every one of ``slots`` root slots
    allowed."""
    f8, i8, b1 = np.float64, np.int64, np.bool_
    return TreeArrays(
        visits=np.empty(nodes, f8),
        value_sum=np.empty(nodes, f8),
        value_squares=np.empty(nodes, f8),
        visited_prior=np.empty(nodes, f8),
        first_edge=np.empty(nodes, i8),
        num_edges=np.empty(nodes, i8),
        expanded=np.empty(nodes, b1),
        pending=np.empty(nodes, b1),
        terminal=np.empty(nodes, b1),
        terminal_value=np.empty(nodes, f8),
        proven=np.empty(nodes, np.int8),
        proven_plies=np.empty(nodes, i8),
        parent=np.empty(nodes, i8),
        parent_edge=np.empty(nodes, i8),
        repeated=np.empty(nodes, b1),
        frontier=np.empty(nodes, i8),
        move=np.empty(edges, np.int32),
        prior=np.empty(edges, f8),
        child=np.empty(edges, np.int32),
        child_n=np.empty(edges, f8),
        child_w=np.empty(edges, f8),
        order=np.empty(edges, np.int16),  # slot offsets: no position has 32,768 moves
        counts=np.zeros(2, i8),
        stats=np.zeros(4, i8),
        root_allowed=np.ones(slots, b1),
    )


def _nbytes(t: TreeArrays) -> int:
    return sum(int(a.nbytes) for a in t)


def _fits(t: TreeArrays, nodes: int, edges: int, slots: int) -> bool:
    """Whether ``t`` has room for ``nodes`` nodes and ``edges`` edges and exactly ``slots`` root slots."""
    return bool(t.visits.shape[0] >= nodes and t.move.shape[0] >= edges and t.root_allowed.shape[0] == slots)


class ArrayPool:
    """Tree arrays that no tree uses any more (a tree that is gone, the smaller arrays a growing tree
    left behind), kept for the next tree to take.

    A fresh allocation of this size is a new memory mapping whose every page faults on first touch;
    a search that fills its arrays pays that inside its walks, up to a second for a large Go 19x19 tree
    (docs/benchmarks.md, "Costs behind the code's design").  Pooled arrays were touched already.  Their contents are stale,
    which the trees never read: every field of a node or an edge is written when it is made.

    Args:
        limit_bytes: the most bytes (allocated, not resident) the pool keeps; the oldest sets go first.
    """

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self._sets: list[TreeArrays] = []
        self._lock = threading.Lock()

    def take(self, nodes: int, edges: int, slots: int) -> TreeArrays:
        """Arrays with room for at least ``nodes`` nodes and ``edges`` edges and exactly ``slots``
        root slots, as :func:`allocate` makes them (zero counters, every slot allowed): the largest
        pooled set that fits (a tree that grew once will likely grow again), else new ones."""
        pooled = self.take_pooled(nodes, edges, slots)
        return pooled if pooled is not None else allocate(nodes, edges, slots)

    def take_pooled(self, nodes: int, edges: int, slots: int) -> TreeArrays | None:
        """:meth:`take`'s pooled set, or ``None`` when none fits (nothing is allocated)."""
        with self._lock:
            fits = [i for i, t in enumerate(self._sets) if _fits(t, nodes, edges, slots)]
            if not fits:
                return None
            t = self._sets.pop(max(fits, key=lambda i: _nbytes(self._sets[i])))  # by index: arrays
        t.counts[:] = 0
        t.stats[:] = 0
        t.root_allowed[:] = True
        return t

    def give(self, t: TreeArrays) -> None:
        """Keep ``t`` for a later :meth:`take` (no tree may use it any more)."""
        with self._lock:
            if any(s is t for s in self._sets):
                return
            self._sets.append(t)
            while self._sets and sum(_nbytes(s) for s in self._sets) > self.limit_bytes:
                self._sets.pop(0)

    def clear(self) -> None:
        """Drop every pooled set (their memory goes back to the system)."""
        with self._lock:
            self._sets.clear()

    def reserve(self, nodes: int, edges: int, slots: int) -> bool:
        """Make sure the pool holds arrays with room for ``nodes`` nodes and ``edges`` edges and
        ``slots`` root slots whose pages are mapped: when no pooled set fits, allocate one and write
        every page once (Stockfish's way with its hash table: the memory is claimed and touched
        before the first search, not inside it).  Returns whether a new set was made."""
        with self._lock:
            if any(_fits(t, nodes, edges, slots) for t in self._sets):
                return False
        t = allocate(nodes, edges, slots)
        for a in t:  # stale contents are never read: every field is written when a node or edge is made
            touch_pages(a.reshape(-1).view(np.uint8))
        t.root_allowed[:] = True
        self.give(t)
        return True


@njit_no_alloc
def touch_pages(a: npt.NDArray[np.uint8]) -> None:
    """Write one byte of every 4 KB page of ``a`` (its pages mapped), without the GIL: a reservation
    on a background thread does not stall the search's Python."""
    for i in range(0, a.shape[0], 4096):
        a[i] = 0


#: Bytes per node and per edge of :class:`TreeArrays` (the 16 node arrays; move, prior, child, child_n,
#: child_w), for sizing a reservation.
_ONE = allocate(1, 1, 1)
NODE_BYTES = sum(a.itemsize for a in _ONE[:_NODE_FIELDS])
EDGE_BYTES = sum(a.itemsize for a in _ONE[_NODE_FIELDS : _NODE_FIELDS + _EDGE_FIELDS])


def first_room(config: SearchConfig, edges_per_node: int, slots: int) -> tuple[int, int, int]:
    """``(nodes, edges, slots)`` of a new tree's first arrays: room for 65,536 nodes (or the node budget)
    with ``edges_per_node`` edges each on average (counting the nodes never expanded), and no more
    nodes or edges than the memory budget holds.  ``np.empty`` leaves the pages untouched until used,
    so what a search does not reach costs address space only."""
    nodes = max(2, min(config.node_budget + 1, 1 << 16))
    edges = nodes * edges_per_node
    memory = config.memory_budget_bytes
    if memory is not None:
        nodes = max(2, min(nodes, memory // NODE_BYTES + 1))
        edges = max(1, min(edges, memory // EDGE_BYTES + 1))
    return nodes, edges, slots


#: The most bytes :func:`reserve_memory` touches ahead of a search: their page faults stay within
#: ``isready``'s budget (docs/benchmarks.md, "Costs behind the code's design"); a larger ``Hash`` grows past it in the search.
RESERVE_LIMIT_BYTES = 512 << 20


def reserve_memory(first: tuple[int, int, int], edges_per_node: int, budget_bytes: int) -> bool:
    """Reserve tree arrays in :data:`POOL` (:meth:`ArrayPool.reserve`) for a tree whose first arrays are
    ``first`` = ``(nodes, edges, slots)`` (what its constructor takes) and that can grow to
    ``budget_bytes`` (the engine's ``Hash``, at most :data:`RESERVE_LIMIT_BYTES`): nodes for the
    larger of the two at ``edges_per_node`` edges a node, and edges for all the budget holds, so the
    tree never grows its edges, the large side, inside a search (docs/design.md,
    "Growing a tree inside a search").  Returns whether a new set was made."""
    nodes, edges, slots = first
    budget = min(max(0, budget_bytes), RESERVE_LIMIT_BYTES)
    fit = budget // (NODE_BYTES + edges_per_node * EDGE_BYTES)
    return POOL.reserve(max(nodes, fit), max(edges, budget // EDGE_BYTES + 1), slots)


def fixed_width_reserve(
    first_edges_per_node: int, edges_per_node: int, slots: int
) -> Callable[[Any, SearchConfig, int], bool]:
    """The ``reserve(state, config, budget_bytes)`` of a game whose trees start with
    ``first_edges_per_node`` edges a node (:func:`first_room`), average ``edges_per_node`` once grown
    and have at most ``slots`` root edges, whatever the position (chess, shogi): it claims and touches a
    tree's memory up to ``budget_bytes`` before a search (:func:`reserve_memory`) and returns whether new
    memory was touched."""

    def reserve(state: Any, config: SearchConfig, budget_bytes: int) -> bool:
        return reserve_memory(first_room(config, first_edges_per_node, slots), edges_per_node, budget_bytes)

    return reserve


#: The process's pool of tree arrays, shared by every compiled tree (1 GiB allocated at most).
POOL = ArrayPool(1 << 30)


# ---- compiled kernels: nodes, PUCT, proofs, backup --------------------------------------------------


@njit_no_alloc
def used_bytes(t: TreeArrays, prm: Params) -> int:
    """The bytes of the tree's nodes and edges in use (against :attr:`Params.memory_budget`)."""
    return int(t.counts[0] * prm.node_bytes + t.counts[1] * EDGE_BYTES)


@njit_no_alloc
def is_full(t: TreeArrays, prm: Params) -> bool:
    """Whether the tree holds its node budget or its memory budget (``Tree.full``): no walk starts."""
    return bool(t.counts[0] >= prm.node_budget or used_bytes(t, prm) >= prm.memory_budget)


@njit_no_alloc
def init_node(t: TreeArrays, node: int, parent: int, edge: int, terminal: bool, value: float) -> None:
    """Make ``node`` a fresh unexpanded node reached by ``edge`` of ``parent`` (-1, -1 for the root),
    terminal with exact ``value`` when ``terminal``."""
    t.visits[node] = 0.0
    t.value_sum[node] = 0.0
    t.value_squares[node] = 0.0
    t.visited_prior[node] = 0.0
    t.first_edge[node] = 0
    t.num_edges[node] = 0
    t.expanded[node] = False
    t.pending[node] = False
    t.terminal[node] = terminal
    t.terminal_value[node] = value
    t.proven[node] = UNPROVEN
    t.proven_plies[node] = 0
    t.parent[node] = parent
    t.parent_edge[node] = edge
    t.repeated[node] = False
    t.frontier[node] = 0


@njit_no_alloc
def init_root(t: TreeArrays, terminal: bool, value: float) -> None:
    """Node 0, the tree's only node (terminal with exact ``value`` when ``terminal``)."""
    init_node(t, ROOT, -1, -1, terminal, value)
    t.counts[0] = 1
    t.counts[1] = 0


@njit_no_alloc
def add_child(t: TreeArrays, node: int, edge: int, terminal: bool, value: float) -> int:
    """Create the child behind ``edge`` of ``node`` (:func:`init_node`); return its index.  The node
    arrays must have room."""
    child = t.counts[0]
    t.counts[0] = child + 1
    init_node(t, child, node, edge, terminal, value)
    t.child[edge] = child
    return int(child)


@njit_no_alloc
def attach_edges(t: TreeArrays, node: int, first: int, end: int) -> None:
    """Make edges ``first .. end - 1`` (written by the game's expansion, priors included) ``node``'s,
    expanding it, with its scan order (:func:`select`): every edge unvisited, the highest prior first."""
    t.counts[1] = end
    t.first_edge[node] = first
    t.num_edges[node] = end - first
    t.expanded[node] = True
    t.visited_prior[node] = 0.0
    order = t.order
    for i in range(end - first):
        order[first + i] = i
    t.frontier[node] = 0
    promote_frontier(t, node)


@njit_no_alloc
def promote_frontier(t: TreeArrays, node: int) -> None:
    """Put the never-visited edge of ``node`` with the highest prior (the lower slot of equal priors) at
    its scan position ``frontier`` (:func:`select`), swapping it with the edge there."""
    first, k, count = t.first_edge[node], t.frontier[node], t.num_edges[node]
    if k >= count:
        return
    order, prior = t.order, t.prior
    best = k
    best_slot = order[first + k]
    best_p = prior[first + best_slot]
    for i in range(k + 1, count):
        slot = order[first + i]
        p = prior[first + slot]
        if p > best_p or (p == best_p and slot < best_slot):
            best, best_slot, best_p = i, slot, p
    if best != k:
        order[first + best] = order[first + k]
        order[first + k] = best_slot


@njit_no_alloc
def add_visits(t: TreeArrays, node: int, edge: int, dn: float, dw: float) -> None:
    """``Node.add_visits``: ``N(s, a) += dn; W(s, a) += dw; N(s) += dn`` with the visited prior sum."""
    before = t.child_n[edge]
    after = before + dn
    t.child_n[edge] = after
    t.child_w[edge] += dw
    t.visits[node] += dn
    if (before > 0) != (after > 0):
        p = t.prior[edge]
        t.visited_prior[node] += p if after > 0 else -p
        if after > 0:  # the first visit of the edge at the frontier moves the frontier on
            first, k = t.first_edge[node], t.frontier[node]
            if k < t.num_edges[node] and first + t.order[first + k] == edge:
                t.frontier[node] = k + 1
                promote_frontier(t, node)


@njit_no_alloc
def _puct(n: float, w: float, p: float, fpu: float, scale: float) -> float:
    """An edge's PUCT score: ``W / N + scale * P / (1 + N)``, or for an unvisited edge Tree's ``fpu +
    scale * P / (1 + 0)`` (the same value without the division by 1)."""
    if n > 0:
        return w / n + scale * p / (1.0 + n)
    return fpu + scale * p


@njit_no_alloc
def select(t: TreeArrays, prm: Params, node: int) -> int:
    """The edge of expanded ``node`` with the first highest PUCT score (``Tree.puct_scores``; root
    slots outside ``searchmoves`` skipped).

    Below the root only the edges that have been visited and one more are scored, as lc0 does: a node
    keeps its edges' scan order (``order``, slot offsets) with every edge ever visited before position
    ``frontier`` and, at ``frontier``, the unvisited edge of highest prior (the lower slot of equal
    priors; :func:`promote_frontier`).  Every unvisited edge scores ``fpu + scale * P(s, a)`` with
    ``scale > 0`` (a node is selected from after its own evaluation), so none beyond the frontier can
    score above the one there, nor equal it with a lower slot: the first highest score in slot order,
    which the root's full scan finds, is found among the scanned edges, ties going to the lower slot.
    An edge visited only virtually and taken back stays before the frontier, scored as unvisited."""
    parent_n = t.visits[node]
    c = np.log((1.0 + parent_n + prm.c_base) / prm.c_base) + prm.c_init
    reduction = prm.fpu_root if node == ROOT else prm.fpu
    q = t.value_sum[node] / parent_n if parent_n > 0 else 0.0
    fpu = q - reduction * np.sqrt(max(0.0, t.visited_prior[node]))
    scale = c * np.sqrt(parent_n)
    child_n, child_w, prior = t.child_n, t.child_w, t.prior  # locals: no reference counting per edge
    first = t.first_edge[node]
    count = t.num_edges[node]
    best = first
    best_score = -np.inf
    if node == ROOT:  # every edge, in slot order (searchmoves, root noise and mate proofs change the root)
        allowed = t.root_allowed
        for e in range(first, first + count):
            if not allowed[e - first]:
                continue  # outside searchmoves: score -inf
            s = _puct(child_n[e], child_w[e], prior[e], fpu, scale)
            if s > best_score:
                best_score = s
                best = e
        return int(best)
    order = t.order
    for i in range(min(t.frontier[node] + 1, count)):
        e = first + order[first + i]
        s = _puct(child_n[e], child_w[e], prior[e], fpu, scale)
        if s > best_score or (s == best_score and e < best):
            best_score = s
            best = e
    return int(best)


@njit_no_alloc
def select_step(t: TreeArrays, prm: Params, node: int, depth: int, root_slot: int) -> int:
    """The edge a walk takes from ``node`` at ``depth``: :func:`select`'s, except at the root of a walk
    whose root child was chosen in Python (``root_slot`` not -1: the Gumbel root or forced playouts,
    :meth:`CompiledTree._root_slots`), which takes that slot."""
    if depth == 0 and root_slot >= 0:
        return int(t.first_edge[ROOT]) + root_slot
    return select(t, prm, node)


@njit_no_alloc
def _update_proof(t: TreeArrays, node: int) -> None:
    """``tree._update_proof``: a proven win when a child is lost for its mover (shortest such), a proven
    loss when every child is won for its mover (longest)."""
    best_win = -1
    all_lost = True
    worst = 0
    children, proven, proven_plies = t.child, t.proven, t.proven_plies
    first = t.first_edge[node]
    for e in range(first, first + t.num_edges[node]):
        c = children[e]
        if c < 0:
            all_lost = False
            continue
        if proven[c] == LOSS:
            plies = proven_plies[c] + 1
            best_win = plies if best_win < 0 else min(best_win, plies)
        elif proven[c] == WIN:
            worst = max(worst, proven_plies[c] + 1)
        else:
            all_lost = False
    if best_win >= 0:
        t.proven[node] = WIN
        t.proven_plies[node] = best_win
    elif all_lost and t.num_edges[node] > 0:
        t.proven[node] = LOSS
        t.proven_plies[node] = worst


@njit_no_alloc
def is_decided(proof: int) -> bool:
    return proof in (WIN, LOSS)


@njit_no_alloc
def backup_value(t: TreeArrays, prm: Params, leaf: int, value: float) -> int:
    """``Tree._backup_value``: add ``value`` (from ``leaf``'s side to move) up to the root, negated once
    per ply, removing the virtual loss and updating proofs; one playout.  Returns the leaf's depth."""
    vl = prm.virtual_loss
    t.visits[leaf] += 1.0
    t.value_sum[leaf] += value
    t.value_squares[leaf] += value * value
    t.stats[PLAYOUTS] += 1
    v = value
    child = leaf
    node = t.parent[leaf]
    depth = 0
    while node >= 0:
        depth += 1
        v = -v
        add_visits(t, node, t.parent_edge[child], 1.0 - vl, v + vl)
        t.value_sum[node] += v
        t.value_squares[node] += v * v
        if is_decided(t.proven[child]) and t.proven[node] == UNPROVEN:
            _update_proof(t, node)
        child = node
        node = t.parent[node]
    return depth


@njit_no_alloc
def note_depth(t: TreeArrays, depth: int) -> None:
    """Keep the deepest walk of the search (``Tree.max_depth``)."""
    if depth > t.stats[MAX_DEPTH]:
        t.stats[MAX_DEPTH] = depth


@njit_no_alloc
def finish_exact(t: TreeArrays, prm: Params, node: int, value: float) -> None:
    """``Tree._finish_exact``: a terminal node (not a penalised repetition) becomes proven by its value;
    back ``value`` up."""
    if t.terminal[node] and t.proven[node] == UNPROVEN and not t.repeated[node]:
        t.proven[node] = WIN if value > 0 else LOSS if value < 0 else DRAW
    depth = backup_value(t, prm, node, value)
    t.stats[DEPTH_SUM] += depth
    note_depth(t, depth)


@njit_no_alloc
def exact_end(t: TreeArrays, node: int) -> tuple[bool, float]:
    """Whether a walk reaching ``node`` ends there with an exact value (``Tree._walk``), and the value
    (from ``node``'s side to move): a terminal node's, a proof below the root, or 0 for an expanded node
    without edges (no legal move but not terminal: cannot happen with sane rules)."""
    if t.terminal[node]:
        return True, t.terminal_value[node]
    if node != ROOT and is_decided(t.proven[node]):
        return True, float(t.proven[node])
    if t.expanded[node] and t.num_edges[node] == 0:
        return True, 0.0
    return False, 0.0


@njit_no_alloc
def revert(t: TreeArrays, prm: Params, leaf: int) -> None:
    """Take back the virtual loss of the path from the root to ``leaf``."""
    vl = prm.virtual_loss
    node = leaf
    while t.parent[node] >= 0:
        add_visits(t, t.parent[node], t.parent_edge[node], -vl, vl)
        node = t.parent[node]


@njit_no_alloc
def cancel(t: TreeArrays, prm: Params, m: int, leaves: I8) -> None:
    """``Tree.cancel`` of the first ``m`` leaves: no longer pending, virtual loss taken back."""
    for i in range(m):
        t.pending[leaves[i]] = False
        revert(t, prm, leaves[i])


@njit_no_alloc_inline
def walk(t: TreeArrays, prm: Params, s: Any, scratch: Any, root_slot: int, step: Any) -> tuple[int, int]:
    """``Tree._walk``, for every game: one walk down from the root, with virtual loss along the path; at
    the root into slot ``root_slot`` when it is not -1 (a choice made in Python: the Gumbel root,
    forced playouts).  A terminal or proven node ends the walk with its exact value backed up
    (:func:`finish_exact`).  The game plugs in its rules through one compiled function (a numba
    dispatcher passed as an argument: each game's selection kernel is compiled, and cached, with its
    own), over its walk state ``s`` (the position on the path) and ``scratch``:
    ``step(t, prm, node, edge, depth, s, scratch) -> (child, fresh)`` plays ``edge``'s move from
    ``node`` (the walk's ``depth``-th move) and returns its child, created when missing (terminal with
    its exact value when the game is over there), with what the game keeps of a child made now
    (``fresh >= 0``: chess's and shogi's count of the legal moves they generated; -1 otherwise).

    Returns ``(found, fresh)``: the leaf's node index (now pending) and the last ``fresh``, or
    ``(BACKED_UP, -1)`` or ``(COLLISION, -1)`` (reverted)."""
    vl = prm.virtual_loss
    node = ROOT
    depth = 0
    fresh = -1
    while True:
        ends, value = exact_end(t, node)
        if ends:
            finish_exact(t, prm, node, value)
            return BACKED_UP, -1
        if not t.expanded[node]:
            break
        edge = select_step(t, prm, node, depth, root_slot)
        step_from = node
        add_visits(t, node, edge, vl, -vl)
        depth += 1
        node, fresh = step(t, prm, step_from, edge, depth, s, scratch)
    if t.pending[node]:
        revert(t, prm, node)
        return COLLISION, -1
    note_depth(t, depth)
    t.pending[node] = True
    return node, fresh


@njit_no_alloc_inline
def select_leaves(
    t: TreeArrays,
    prm: Params,
    game: Any,
    count: int,
    nlegal: npt.NDArray[np.int64],
    leaves: npt.NDArray[np.int64],
    root_slots: npt.NDArray[np.int64],
    walk_once: Any,
    write_leaf: Any,
    end_walk: Any,
) -> int:
    """``Tree.select_leaves(count)``, for every game: up to ``count`` walks, walk ``k`` into root slot
    ``root_slots[k]`` (int64 ``[>= count]``; -1: PUCT's choice), until the tree is full or more than
    ``max_collisions`` walks collided.  The game plugs in three compiled functions over its own
    arguments ``game`` (a tuple: its walk state, batch buffers and scratch):

    * ``walk_once(t, prm, game, m, root_slot) -> (found, fresh)``: one walk (:func:`walk` on the game's
      rules), the leaf to become batch row ``m``;
    * ``write_leaf(t, prm, game, m, found, fresh) -> int``: write leaf ``found``'s row ``m`` of the
      batch (its planes, legal moves and policy indices) and return its number of legal moves, or -1
      when the game proved the leaf without the network (a mate in one: backed up, no row);
    * ``end_walk(game)``: after every walk (chess and shogi take the path's moves back).

    Leaf ``m``'s node goes to ``leaves[m]`` and its move count to ``nlegal[m]`` (int64 ``[>= count]``).
    Returns the number of leaves."""
    if t.terminal[ROOT]:
        return 0
    m = 0
    collisions = 0
    for k in range(count):
        if is_full(t, prm):
            break
        found, fresh = walk_once(t, prm, game, m, root_slots[k])
        if found >= 0:
            n = write_leaf(t, prm, game, m, found, fresh)
            if n >= 0:
                nlegal[m] = n
                leaves[m] = found
                m += 1
        elif found == COLLISION:
            collisions += 1
        end_walk(game)
        if collisions > prm.max_collisions:
            break
    return m


# ---- compiled kernels: priors, expansion from dense priors, the root mate -----------------------


class SumScratch(NamedTuple):
    """What :func:`pairwise_sum_into` and :func:`drop_prior_into` work in, so they allocate nothing (and
    compile without numba's reference counting, :mod:`engine.jit`): the halving's stack, int64
    ``seg_start``, ``seg_n``, ``stage`` and float64 ``left`` ``[64]``, and float64 ``values`` ``[M]`` (the
    most edges a node has)."""

    seg_start: I8
    seg_n: I8
    stage: I8
    left: F8
    values: F8


def new_sum_scratch(width: int) -> SumScratch:
    """A :class:`SumScratch` for nodes of up to ``width`` edges."""
    stack = 64  # halvings: a range of 2 ** 70 entries would need as many
    return SumScratch(
        np.zeros(stack, np.int64),
        np.zeros(stack, np.int64),
        np.zeros(stack, np.int64),
        np.zeros(stack, np.float64),
        np.zeros(max(width, 1), np.float64),
    )


@njit_no_alloc
def _block_sum(a: F8, start: int, n: int) -> float:
    """numpy's pairwise sum of ``a[start : start + n]`` for ``n <= 128``: a plain loop below 8, else 8
    accumulators added pairwise, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(start, start + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    i = 8
    while i < n - n % 8:
        b = start + i
        r0 += a[b]
        r1 += a[b + 1]
        r2 += a[b + 2]
        r3 += a[b + 3]
        r4 += a[b + 4]
        r5 += a[b + 5]
        r6 += a[b + 6]
        r7 += a[b + 7]
        i += 8
    res = float(((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@njit_no_alloc
def pairwise_sum_into(a: F8, start: int, n: int, s: SumScratch) -> float:
    """numpy's sum of ``a[start : start + n]`` (float64, contiguous), bit for bit: blocks of up to 128
    (:func:`_block_sum`), longer ranges split in two halves (a multiple of 8 first) and added.  The
    halving is walked with an explicit stack in ``s`` (numba's cache mishandles recursive functions)."""
    seg_start, seg_n, stage, left = s.seg_start, s.seg_n, s.stage, s.left
    sp = 0
    seg_start[0], seg_n[0], stage[0] = start, n, 0
    result = 0.0
    while sp >= 0:
        s0, n0 = seg_start[sp], seg_n[sp]
        half = n0 // 2 - (n0 // 2) % 8
        if n0 <= 128:
            result = _block_sum(a, s0, n0)
            sp -= 1
        elif stage[sp] == 0:
            stage[sp] = 1
            sp += 1
            seg_start[sp], seg_n[sp], stage[sp] = s0, half, 0
        elif stage[sp] == 1:
            left[sp] = result
            stage[sp] = 2
            sp += 1
            seg_start[sp], seg_n[sp], stage[sp] = s0 + half, n0 - half, 0
        else:
            result = left[sp] + result
            sp -= 1
    return result


@njit_no_alloc
def drop_prior_into(t: TreeArrays, node: int, edge: int, s: SumScratch) -> None:
    """``tree._drop_prior``: the prior of ``edge`` to 0, the others renormalised (when they sum above
    0), the visited prior sum recounted; numpy's sums, so the result equals ``Tree``'s bit for bit.
    ``s`` has room for the node's edges."""
    first, count = t.first_edge[node], t.num_edges[node]
    t.prior[edge] = 0.0
    total = pairwise_sum_into(t.prior, first, count, s)
    if total > 0:
        for e in range(first, first + count):
            t.prior[e] = t.prior[e] / total
    visited = s.values
    k = 0
    for e in range(first, first + count):
        if t.child_n[e] > 0:
            visited[k] = t.prior[e]
            k += 1
    t.visited_prior[node] = pairwise_sum_into(visited, 0, k, s)
    promote_frontier(t, node)  # the dropped edge may have been the one at the frontier


@njit_no_alloc
def expand_indexed(t: TreeArrays, node: int, moves: I8, n: int, priors: npt.NDArray[Any]) -> None:
    """Attach the ``n`` moves ``moves`` to ``node`` with their priors ``priors[:n]`` (float ``[M]``, aligned
    with the moves) unless it is expanded already, and clear its pending mark.  The edge arrays must
    have room."""
    t.pending[node] = False
    if t.expanded[node]:
        return
    first = t.counts[1]
    for j in range(n):
        e = first + j
        t.move[e] = moves[j]
        t.prior[e] = np.float64(priors[j])
        t.child[e] = -1
        t.child_n[e] = 0.0
        t.child_w[e] = 0.0
    attach_edges(t, node, first, first + n)


@njit_no_alloc
def backup_indexed(
    t: TreeArrays,
    prm: Params,
    m: int,
    leaves: I8,
    moves: I8,
    nlegal: I8,
    priors: npt.NDArray[Any],
    values: F8,
) -> None:
    """``Tree.backup`` of the first ``m`` leaves: expand leaf ``i`` (node ``leaves[i]``, its
    ``nlegal[i]`` moves, rows of int64 ``[K, M]``) with its priors ``priors[i]`` (float32 or float64
    ``[K, M]``, aligned with the moves) and back up ``values[i]``.  The edge arrays must have room."""
    for i in range(m):
        expand_indexed(t, leaves[i], moves[i], nlegal[i], priors[i])
        t.stats[DEPTH_SUM] += backup_value(t, prm, leaves[i], values[i])
    t.stats[EVALUATIONS] += m


@njit_no_alloc
def expand_proven_mate(t: TreeArrays, node: int, moves: I8, n: int, slot: int, value: float) -> int:
    """``Tree._prove_mate``'s expansion of a leaf with a mate in one: ``node`` proven won in one, expanded
    with its ``n`` legal ``moves`` and all its prior on the mating ``slot``, the mated child created
    terminal (``value`` for its side to move) and proven lost.  Returns the child; the caller backs +1
    up (:func:`finish_exact`).  The node and edge arrays must have room."""
    t.proven[node] = WIN
    t.proven_plies[node] = 1
    t.pending[node] = False
    first = t.counts[1]
    for j in range(n):
        e = first + j
        t.move[e] = moves[j]
        t.prior[e] = 1.0 if j == slot else 0.0
        t.child[e] = -1
        t.child_n[e] = 0.0
        t.child_w[e] = 0.0
    attach_edges(t, node, first, first + n)
    child = add_child(t, node, first + slot, True, value)
    t.proven[child] = LOSS
    return child


@njit_no_alloc
def prove_root_mate(t: TreeArrays, slot: int, plies: int) -> None:
    """``Tree._search_root_mate`` once a mate of ``plies`` starting with root ``slot`` is found: the
    move's child (created unexpanded if missing; the node arrays must have room) a proven loss in
    ``plies - 1``, all the root prior on the move, the root a proven win in ``plies``."""
    first = t.first_edge[ROOT]
    edge = first + slot
    child = t.child[edge]
    if child < 0:
        child = add_child(t, ROOT, edge, False, 0.0)
    t.proven[child] = LOSS
    t.proven_plies[child] = plies - 1
    for e in range(first, first + t.num_edges[ROOT]):
        t.prior[e] = 0.0
    t.prior[edge] = 1.0
    t.visited_prior[ROOT] = 1.0 if t.child_n[edge] > 0 else 0.0
    t.proven[ROOT] = WIN
    t.proven_plies[ROOT] = plies


@njit_no_alloc
def prove_root_children(t: TreeArrays, slots: I8, proofs: I8, plies: I8, n: int) -> None:
    """``Tree.prove_root_moves`` on the expanded root: for ``i < n``, the child of root ``slots[i]``
    (created unexpanded if missing; the node arrays must have room) proven lost for its mover when
    ``proofs[i]`` is :data:`WIN` (a win for the root player), won when it is :data:`LOSS`, in
    ``plies[i] - 1`` plies; a child that is terminal or proven already is left as it is.  Then the root's
    proof from its children, as a backup would find it."""
    first = t.first_edge[ROOT]
    for i in range(n):
        edge = first + slots[i]
        child = t.child[edge]
        if child < 0:
            child = add_child(t, ROOT, edge, False, 0.0)
        if t.terminal[child] or t.proven[child] != UNPROVEN:
            continue
        t.proven[child] = LOSS if proofs[i] == WIN else WIN
        t.proven_plies[child] = plies[i] - 1
    if t.proven[ROOT] == UNPROVEN:
        _update_proof(t, ROOT)


# ---- compiled kernels: tree reuse ------------------------------------------------------------------


@njit
def _keep_subtree(t: TreeArrays, keep_root: int) -> I8:
    """int64 ``[nodes]``: the new index of each node of the subtree of ``keep_root`` (which becomes 0),
    numbered in the order of the old indices, -1 for the others.  A child's index is always above its
    parent's, so one ascending sweep finds the subtree and every new index is at most the old one."""
    used = t.counts[0]
    remap = np.full(used, -1, np.int64)
    remap[keep_root] = 0
    kept = 1
    parent = t.parent
    for i in range(keep_root + 1, used):
        if parent[i] >= 0 and remap[parent[i]] >= 0:
            remap[i] = kept
            kept += 1
    return remap


@njit_no_alloc
def _move_nodes(t: TreeArrays, remap: I8) -> int:
    """Move the kept nodes (``remap``, :func:`_keep_subtree`) to their new indices, ascending (a node
    never moves up, so nothing is overwritten before it is moved); returns how many were kept."""
    kept = 0
    for i in range(remap.shape[0]):
        j = remap[i]
        if j < 0:
            continue
        t.visits[j] = t.visits[i]
        t.value_sum[j] = t.value_sum[i]
        t.value_squares[j] = t.value_squares[i]
        t.visited_prior[j] = t.visited_prior[i]
        t.first_edge[j] = t.first_edge[i]
        t.num_edges[j] = t.num_edges[i]
        t.expanded[j] = t.expanded[i]
        t.pending[j] = t.pending[i]
        t.terminal[j] = t.terminal[i]
        t.terminal_value[j] = t.terminal_value[i]
        t.proven[j] = t.proven[i]
        t.proven_plies[j] = t.proven_plies[i]
        t.repeated[j] = t.repeated[i]
        t.frontier[j] = t.frontier[i]
        t.parent[j] = remap[t.parent[i]] if j > 0 else -1
        t.parent_edge[j] = t.parent_edge[i] if j > 0 else -1
        kept += 1
    return kept


@njit
def _order_by(keys: I8, n: int) -> I8:
    """The indices ``0 .. n-1`` ordered by ``keys`` (``np.argsort(keys[:n])``, equal keys in any order),
    by heapsort: numba's argsort costs seconds of compilation on a cold start, this a few loops."""
    order = np.arange(n)
    for start in range(n // 2 - 1, -1, -1):
        _sift_down(keys, order, start, n)
    for end in range(n - 1, 0, -1):
        order[0], order[end] = order[end], order[0]
        _sift_down(keys, order, 0, end)
    return order


@njit_no_alloc
def _sift_down(keys: I8, order: I8, root: int, size: int) -> None:
    """Restore the max-heap of ``order[:size]`` (by ``keys``) below ``root``."""
    while True:
        child = 2 * root + 1
        if child >= size:
            return
        if child + 1 < size and keys[order[child + 1]] > keys[order[child]]:
            child += 1
        if keys[order[root]] >= keys[order[child]]:
            return
        order[root], order[child] = order[child], order[root]
        root = child


@njit
def _move_edges(t: TreeArrays, kept: int, remap: I8) -> int:
    """Pack the edge blocks of the first ``kept`` (moved) nodes to the front in the order of their old
    offsets (so a block never moves up over one not yet moved; unexpanded nodes, whose offset is 0,
    have no block), renumbering children and their parent edges; returns the edges used."""
    order = _order_by(t.first_edge, kept)
    cursor = 0
    for k in range(kept):
        node = order[k]
        if not t.expanded[node]:
            continue
        first = t.first_edge[node]
        for e in range(first, first + t.num_edges[node]):
            d = cursor + e - first
            t.move[d] = t.move[e]
            t.prior[d] = t.prior[e]
            t.child_n[d] = t.child_n[e]
            t.child_w[d] = t.child_w[e]
            t.order[d] = t.order[e]
            c = t.child[e]
            if c >= 0:
                c = remap[c]
                t.parent_edge[c] = d
            t.child[d] = c
        t.first_edge[node] = cursor
        cursor += t.num_edges[node]
    return cursor


@njit_no_alloc
def best_root_slot(t: TreeArrays, lcb_ratio: float, quantiles: F8) -> int:
    """The first slot of :meth:`CompiledTree.ranked_root_slots` in one pass over the root's edges (-1
    when the root has none): the smallest :func:`~engine.search.tree_protocol.root_rank` key, the lower
    slot on a tie (the same floating-point values: ``W(s, a) / N(s, a)``, -2 unvisited).  With
    ``lcb_ratio > 0`` the unproven moves above :func:`lcb_floor` come first, by their lower
    confidence bound (:func:`root_lcb`, ``quantiles`` :func:`~engine.search.lcb.quantile_table`)."""
    if not t.expanded[ROOT]:
        return -1
    first = t.first_edge[ROOT]
    floor = lcb_floor(t, lcb_ratio)
    best = -1
    best_group, best_length, best_sub, best_k1, best_k2 = 0, 0, 0, 0.0, 0.0
    for s in range(t.num_edges[ROOT]):
        e = first + s
        c = t.child[e]
        proof = t.proven[c] if c >= 0 else UNPROVEN
        plies = t.proven_plies[c] if c >= 0 else 0
        won, lost = proof == LOSS, proof == WIN  # the child's proof, from its own side to move
        n = t.child_n[e]
        q = t.child_w[e] / n if n > 0 else -2.0
        group = 4 if not t.root_allowed[s] else (0 if won else (3 if lost else 1))
        length = plies if won else (-plies if lost else 0)
        if won:
            sub, k1, k2 = 0, 0.0, 0.0
        elif group == 1 and n > floor:
            sub, k1, k2 = 0, -root_lcb(t, e, quantiles), -n
        else:
            sub, k1, k2 = 1, -n, -q
        if best >= 0:
            if group != best_group:
                if group > best_group:
                    continue
            elif length != best_length:
                if length > best_length:
                    continue
            elif sub != best_sub:
                if sub > best_sub:
                    continue
            elif k1 != best_k1:
                if k1 > best_k1:
                    continue
            elif k2 >= best_k2:
                continue
        best, best_group, best_length, best_sub, best_k1, best_k2 = s, group, length, sub, k1, k2
    return best


@njit_no_alloc
def lcb_floor(t: TreeArrays, lcb_ratio: float) -> float:
    """The visits a root move needs to be chosen by its lower confidence bound: more than ``lcb_ratio``
    of the most visited unproven move's within ``searchmoves``, and more than 2 (Leela Zero's floor);
    infinite when ``lcb_ratio <= 0`` (the most visited move is played)."""
    if lcb_ratio <= 0.0:
        return np.inf
    first = t.first_edge[ROOT]
    most = 0.0
    for s in range(t.num_edges[ROOT]):
        e = first + s
        c = t.child[e]
        unproven = c < 0 or (t.proven[c] != WIN and t.proven[c] != LOSS)  # group 1 of best_root_slot
        if t.root_allowed[s] and t.child_n[e] > most and unproven:
            most = t.child_n[e]
    return max(2.0, lcb_ratio * most)


@njit_no_alloc
def root_lcb(t: TreeArrays, e: int, quantiles: F8) -> float:
    """The lower confidence bound of root edge ``e``'s mean value (root player's view) from the values
    backed up through its child (:func:`~engine.search.lcb.lower_bound`); ``e`` has at least 2 visits."""
    n = t.child_n[e]
    return lower_bound(n, t.child_w[e] / n, t.value_squares[t.child[e]], quantiles)


@njit
def reroot(t: TreeArrays, keep_root: int) -> None:
    """Keep only the subtree of ``keep_root`` (tree reuse): its nodes and edges moved to the front, in
    place, ``keep_root`` becoming the root (node 0)."""
    remap = _keep_subtree(t, keep_root)
    kept = _move_nodes(t, remap)
    t.counts[0] = kept
    t.counts[1] = _move_edges(t, kept, remap)


# ---- Python side -----------------------------------------------------------------------------------


class Bound:
    """A compiled kernel called straight through its machine-code entry point.

    Numba's dispatcher works out the argument types on every call, which for the tree's arrays, the
    kernel states and the settings costs more than a whole batch of walks (docs/benchmarks.md, "Costs behind the code's design").  The first call goes through the dispatcher (compiling or loading the kernel) and
    records the overload for those argument types; later calls use its entry point directly.  The
    caller must pass arguments of the same types every time (here: the tree's own buffers).
    """

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self._entry: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self._entry is not None:
            return self._entry(*args)
        result = self._kernel(*args)
        signature = tuple(self._kernel.typeof_pyval(a) for a in args)
        self._entry = self._kernel.overloads[signature].entry_point
        return result


#: The most batch buffers a tree keeps made of shared rows (:meth:`CompiledTree._take_buffers`): a
#: self-play tree meets one set of rows per position of its game among the others' (about 32), with
#: two own buffers at most.
_LENT_KEPT = 256


def _room(need: int, cap: int) -> int:
    """Twice ``need``, but no more than ``cap`` unless ``need`` itself is more."""
    return max(need, min(2 * need, cap))


class BatchBuffers(Protocol):
    """What every game's batch buffers hold (``K`` leaves at most): planes float32 ``[K, ...]``, the
    leaves' legal policy indices int64 ``[K, M]`` in the order of their edges and their counts int64
    ``[K]`` (:class:`~engine.evaluator.LegalRows`), leaf nodes int64 ``[K]``, and the record of what
    each row of planes holds, ``marks`` int64 ``[K, _]`` and ``flags`` bool ``[K, _]``, for a game
    that writes only what changed (shogi); no columns where every value is written."""

    @property
    def planes(self) -> npt.NDArray[np.float32]: ...

    @property
    def indices(self) -> I8: ...

    @property
    def nlegal(self) -> I8: ...

    @property
    def marks(self) -> I8: ...

    @property
    def flags(self) -> B1: ...

    @property
    def leaves(self) -> I8: ...


BuffersT = TypeVar("BuffersT", bound=BatchBuffers)
MoveT = TypeVar("MoveT")


class CompiledLeafBatch(DenseBatch, Generic[BuffersT]):
    """A batch of a compiled tree (:class:`~engine.search.batch.DenseBatch`): the first ``m`` rows of its
    buffers."""

    def __init__(self, buffers: BuffersT, m: int) -> None:
        super().__init__(buffers.planes[:m], LegalRows(buffers.indices[:m], buffers.nlegal[:m]))
        self.buffers = buffers
        self.size = m
        self.done = False  # backed up or cancelled: the buffers are free again


BatchT = TypeVar("BatchT", bound=CompiledLeafBatch[Any])


class CompiledTree(Generic[BuffersT, BatchT, MoveT]):
    """What the compiled trees share on the Python side: counters, root results, root noise and the batch
    buffers.  A game's tree sets the attributes below in its
    ``__init__`` and provides :meth:`select_batch`, :meth:`_backup_dense`, :meth:`_new_buffers` and
    :meth:`_to_move` (kernel move to public move)."""

    rng: np.random.Generator
    _config: SearchConfig
    _params: Params
    _best_root_slot = Bound(best_root_slot)  # the trees' arrays are of one type: one entry for all
    _arrays: TreeArrays
    _width: int  # entries of a leaf's prior row: its legal index rows' width M
    _noise_pending: bool
    root_mask: B1 | None  # bool [L]: root slots searchmoves allows (None: all)
    #: This move's Gumbel root decisions (``config.gumbel``; ``Tree.gumbel_root``), made at the first root
    #: choice of the search and dropped by ``advance``.
    gumbel_root: GumbelRoot | None = None
    #: The root slot of each walk of a selection (:meth:`_root_slots`); the shared empty default is never
    #: written (the first selection makes the tree's own).
    _planned: I8 = np.zeros(0, np.int64)
    _cancel: Bound
    _free: list[BuffersT]
    #: Where the next batches' planes and legal masks go (self-play: one array for all trees' leaves,
    #: :class:`~engine.search.many_trees.SharedRows`); ``None``: the tree's own buffers.
    shared_rows: SharedRows | None = None
    _lent: dict[int, Any]  # id of buffers holding shared rows -> the tree's own buffers they replace
    #: buffers made of the tree's own and shared rows, by their ids: ``(own, rows, made)`` (the objects
    #: kept, so their ids stay theirs)
    _lent_made: dict[tuple[int, int], tuple[Any, Any, Any]]

    # ---- what the game provides ------------------------------------------------------------------------
    def select_batch(self, count: int) -> BatchT:
        raise NotImplementedError

    def _backup_dense(self, batch: BatchT, priors: npt.NDArray[Any], values: npt.NDArray[Any]) -> None:
        raise NotImplementedError

    def _new_buffers(self, count: int) -> BuffersT:
        raise NotImplementedError

    def _to_move(self, move: int) -> MoveT:
        raise NotImplementedError

    # ---- settings ----------------------------------------------------------------------------------
    @property
    def config(self) -> SearchConfig:
        """The search settings; setting them (self-play's full and fast searches) takes effect at once,
        root noise (and a Gumbel root's sample) from the next :meth:`advance` on."""
        return self._config

    @config.setter
    def config(self, config: SearchConfig) -> None:
        self._params = params(config)
        self._config = config

    # ---- counters and root state (SearchTree) --------------------------------------------------------
    def _usage(self) -> tuple[int, int]:
        """``(nodes, bytes)`` in use: :func:`used_bytes` in Python arithmetic on the counters (a compiled
        call from Python unboxes every array of the tree, about ten times the cost of the sum, and
        the search loop asks once per batch)."""
        counts = self._arrays.counts
        nodes = int(counts[0])
        return nodes, nodes * self._params.node_bytes + int(counts[1]) * EDGE_BYTES

    @property
    def full(self) -> bool:
        """True when the node budget or the memory budget is used up (``Tree.full``; :func:`is_full`)."""
        nodes, used = self._usage()
        return nodes >= self._params.node_budget or used >= self._params.memory_budget

    @property
    def fill(self) -> float:
        """The share of the node or memory budget used, whichever is more, 0..1 (``hashfull`` / 1000)."""
        nodes, used = self._usage()
        prm = self._params
        return min(1.0, max(nodes / max(1, prm.node_budget), used / prm.memory_budget))

    @property
    def playouts(self) -> int:
        return int(self._arrays.stats[PLAYOUTS])

    @property
    def evaluations(self) -> int:
        return int(self._arrays.stats[EVALUATIONS])

    @property
    def depth_sum(self) -> int:
        return int(self._arrays.stats[DEPTH_SUM])

    @property
    def max_depth(self) -> int:
        return int(self._arrays.stats[MAX_DEPTH])

    @property
    def root_terminal(self) -> bool:
        return bool(self._arrays.terminal[ROOT])

    @property
    def root_expanded(self) -> bool:
        return bool(self._arrays.expanded[ROOT])

    def root_proof(self) -> tuple[int, int]:
        """``(proof, plies)`` of the root (``Tree.root.proven`` as an int: 0 unproven, 1 win, -1 loss,
        2 draw; ``Tree.root.proven_plies``)."""
        return int(self._arrays.proven[ROOT]), int(self._arrays.proven_plies[ROOT])

    def search_done(self, visits: float, fresh: int) -> bool:
        """:meth:`~engine.search.tree_protocol.SelfPlayTree.search_done`, read straight from the arrays
        (the properties it stands for are Python calls a game and step)."""
        t = self._arrays
        if t.terminal[ROOT] or t.proven[ROOT] != UNPROVEN or self.full:
            return True
        n = t.visits[ROOT]
        if n >= 1 and t.expanded[ROOT] and t.num_edges[ROOT] == 1:
            return True
        return bool(n >= visits and t.stats[PLAYOUTS] >= fresh)

    def reset_stats(self) -> None:
        """Zero the per-search counters (the tree itself is kept)."""
        self._arrays.stats[:] = 0

    @property
    def root_q(self) -> float:
        """The root's mean value from its side to move (``Tree.root.q``; 0 before any visit)."""
        t = self._arrays
        n = float(t.visits[ROOT])
        return float(t.value_sum[ROOT]) / n if n > 0 else 0.0

    @property
    def root_visit_count(self) -> float:
        """``N(s)`` of the root (``Tree.root.visits``)."""
        return float(self._arrays.visits[ROOT])

    @property
    def root_move_count(self) -> int:
        """The root's number of moves (0 before it is expanded)."""
        edges = self._root_edges()
        return int(edges.stop - edges.start)

    # ---- batches (SearchTree) ------------------------------------------------------------------------
    def backup_batch(self, batch: BatchT) -> None:
        """Back up a started batch with its dense priors and values (waits for the network call)."""
        if batch.done:
            return
        priors, values = batch.result()
        self._backup_dense(batch, np.asarray(priors), np.asarray(values))

    def cancel_batch(self, batch: BatchT) -> None:
        """Abandon a batch: its leaves are no longer pending and their virtual loss is taken back."""
        if batch.done:
            return
        self._cancel(self._arrays, self._params, batch.size, batch.buffers.leaves)
        self._release(batch)

    # ---- results (SearchTree) ------------------------------------------------------------------------
    def root_child_visits(self) -> F8:
        """float64 ``[L]``: the root's ``N(s, a)`` (a view, read only and only while the tree lives: its
        arrays go to another tree once it is gone)."""
        return self._arrays.child_n[self._root_edges()]

    def root_move(self, slot: int) -> MoveT:
        """The move of root ``slot``."""
        return self._to_move(int(self._arrays.move[self._root_edge(slot)]))

    def root_prior(self, slot: int) -> float:
        return float(self._arrays.prior[self._root_edge(slot)])

    def slot_stats(self, slot: int) -> tuple[float, float, int, int]:
        """``Tree.slot_stats``: ``(visits, q, proof, plies)`` of root ``slot``, root player's view."""
        t = self._arrays
        e = self._root_edge(slot)
        n = float(t.child_n[e])
        q = float(t.child_w[e]) / n if n > 0 else 0.0
        c = int(t.child[e])
        return n, q, self._child_proof(c), int(t.proven_plies[c]) + 1 if c >= 0 else 0

    def root_slot_proofs(self) -> I8:
        """int64 ``[L]``: :meth:`slot_stats`' proof of every root slot (1 a proven win for the root
        player, -1 a proven loss, 0 unproven), from the arrays at once."""
        proven = self._at_root_children(self._arrays.proven)
        return np.where(proven == LOSS, WIN, np.where(proven == WIN, LOSS, UNPROVEN)).astype(np.int64)

    def ranked_root_slots(self) -> list[int]:
        """``Tree.ranked_root_slots``: proven wins (shortest first), then visits, ties by Q (with
        ``lcb_ratio``, the moves above the floor first, by their bound: :func:`best_root_slot`); proven
        losses and moves outside ``searchmoves`` last.  :func:`~engine.search.tree_protocol.root_rank`'s
        order computed on the root's arrays at once (one sort of ``L`` keys, not ``L`` Python tuples:
        self-play ranks every root twice a move, with more than a hundred moves in shogi's middlegame)."""
        t = self._arrays
        edges = self._root_edges()
        visits = t.child_n[edges]
        slots = np.arange(visits.shape[0])
        proofs = self.root_slot_proofs()
        won, lost = proofs == WIN, proofs == LOSS
        plies = self._at_root_children(t.proven_plies)
        q = np.where(visits > 0, t.child_w[edges] / np.where(visits > 0, visits, 1.0), -2.0)
        group = np.where(won, 0, np.where(lost, 3, 1))
        group[~t.root_allowed[: slots.shape[0]]] = 4
        length = np.where(won, plies, np.where(lost, -plies, 0))
        k1, k2 = np.where(won, 0.0, -visits), np.where(won, 0.0, -q)
        sub = np.where(won, 0, 1)
        config = self._config
        if config.lcb_ratio > 0 and np.any(group == 1):
            most = float(visits[group == 1].max())
            eligible = np.flatnonzero((group == 1) & (visits > max(2.0, config.lcb_ratio * most)))
            quantiles = quantile_table(config.lcb_alpha)
            sub[eligible] = 0
            k2[eligible] = -visits[eligible]
            first = int(t.first_edge[ROOT])
            k1[eligible] = [-root_lcb(t, first + int(s), quantiles) for s in eligible]
        order = np.lexsort((slots, k2, k1, sub, length, group))
        ranked: list[int] = order.tolist()
        return ranked

    def _at_root_children(self, values: npt.NDArray[Any]) -> I8:
        """int64 ``[L]``: a node array's ``values`` at each root slot's child, 0 where none was made."""
        children = self._arrays.child[self._root_edges()].astype(np.int64)
        made = children >= 0
        out = np.zeros(children.shape[0], np.int64)
        out[made] = values[children[made]]
        return out

    def best_root_slot(self) -> int | None:
        """``ranked_root_slots()[0]`` without ranking the others (:func:`best_root_slot`, compiled);
        ``None`` before the root is expanded."""
        config = self._config
        slot = int(self._best_root_slot(self._arrays, config.lcb_ratio, quantile_table(config.lcb_alpha)))
        return slot if slot >= 0 else None

    def prove_root_moves(self, proofs: Mapping[Any, tuple[int, int]]) -> None:
        """``Tree.prove_root_moves``: mark the expanded root's children proven from ``proofs`` (move ->
        ``(1 win | -1 loss for the root player, plies from the root)``), then the root
        (:func:`prove_root_children`); nothing before the root is expanded."""
        t = self._arrays
        if not t.expanded[ROOT] or not proofs:
            return
        marks = [
            (slot, *proofs[move])
            for slot in range(int(t.num_edges[ROOT]))
            if (move := self.root_move(slot)) in proofs and proofs[move][0] in (WIN, LOSS)
        ]
        if not marks:
            return
        self._reserve(len(marks))
        rows = np.array(marks, np.int64).T.copy()
        prove_root_children(self._arrays, rows[0], rows[1], rows[2], len(marks))

    def best_move(self) -> MoveT | None:
        """The move to play (``Tree.best_move``), ``None`` before the root is expanded."""
        slot = self.best_root_slot()
        return self.root_move(slot) if slot is not None else None

    def principal_variation(self, first_slot: int | None = None, max_len: int = 64) -> list[MoveT]:
        """``Tree.principal_variation``: the most visited line (starting with ``first_slot``)."""
        t = self._arrays
        pv: list[MoveT] = []
        node = ROOT
        slot = first_slot
        while t.expanded[node] and len(pv) < max_len:
            first, count = int(t.first_edge[node]), int(t.num_edges[node])
            if slot is None:
                visits = t.child_n[first : first + count]
                if count == 0 or visits.max() <= 0:
                    break
                slot = int(np.argmax(visits))
            pv.append(self._to_move(int(t.move[first + slot])))
            child = int(t.child[first + slot])
            if child < 0:
                break
            node = child
            slot = None
        return pv

    def root_values(self) -> F8:
        """float64 ``[L]``: ``W(s, a)`` of the root moves, from the root player's point of view."""
        return self._arrays.child_w[self._root_edges()].copy()

    def pruned_root_visits(self) -> F8:
        """float64 ``[L]``: ``Tree.pruned_root_visits``: the root visits with the forced playouts taken back
        (:func:`~engine.search.forced.prune_policy_target`); a copy of the plain visits without forced
        playouts."""
        k = self.config.forced_playouts
        visits = self.root_child_visits().copy()
        if k <= 0 or not self._arrays.expanded[ROOT]:
            return visits
        n = self.root_visit_count
        c = exploration_rate(n, self.config)
        priors = self._arrays.prior[self._root_edges()]  # noise included
        return prune_policy_target(visits, self.root_values(), priors, c, n, k)

    def backup_batch_arrays(self, batch: BatchT, priors: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Back up ``batch`` (never started: no network call) with priors float ``[m, M]``, each leaf's
        priors aligned with its legal index row and normalised over its legal moves (entries past its
        count ignored; used as float64, exactly for float32), and values float ``[m]`` from each leaf's
        side to move, computed elsewhere: one network call for many trees
        (:mod:`engine.search.many_trees`).

        Raises:
            ValueError: the shapes do not match the batch.
        """
        self._backup_dense(batch, np.asarray(priors), np.asarray(values))

    # ---- internals -----------------------------------------------------------------------------------
    def _check_shapes(self, m: int, priors: npt.NDArray[Any], values: npt.NDArray[Any]) -> None:
        """``ValueError`` unless priors are ``[m, M]`` (``M`` the width of the batch's legal index rows)
        and values ``[m]``."""
        if priors.shape != (m, self._width) or values.shape != (m,):
            raise ValueError(
                f"priors {priors.shape} and values {values.shape} for {m} leaves "
                f"(expected ({m}, {self._width}) and ({m},))"
            )

    def _apply_root_noise(self) -> None:
        """``Tree._apply_root_noise``: once the root is expanded, mix ``Dir(alpha)`` noise into its priors
        (``(1 - eps) P + eps noise``, the same draws as ``Tree``) and recount the visited prior."""
        t = self._arrays
        if not self._noise_pending or not t.expanded[ROOT] or t.num_edges[ROOT] == 0:
            return
        self._noise_pending = False
        alpha = self.config.dirichlet_alpha
        assert alpha is not None  # noise is pending only when configured
        eps = self.config.dirichlet_epsilon
        edges = self._root_edges()
        noise = self.rng.dirichlet(np.full(edges.stop - edges.start, alpha))
        prior = (1.0 - eps) * t.prior[edges] + eps * noise
        t.prior[edges] = prior
        t.visited_prior[ROOT] = float(prior[t.child_n[edges] > 0].sum())

    def _root_slots(self, count: int, start: int = 0) -> I8:
        """int64 ``[>= count]``: the root slot of each walk of a selection of ``count`` walks, -1 where the
        compiled walk makes its own PUCT choice at the root.  With a Gumbel root or forced playouts on an
        expanded root the choices of walks ``start .. count - 1`` are planned here
        (:func:`~engine.search.root_plan.plan_root_slots`, ``Tree._select``'s root choice; the Gumbel
        sample is drawn at the first, as ``Tree._gumbel`` draws it); else they are all -1 (PUCT's
        selection pays one slice assignment).  ``start``: the walks before it are made already (a
        selection resumed after a mate in one expanded the root)."""
        slots = self._planned
        if slots.shape[0] < count:
            slots = self._planned = np.full(max(count, 2 * slots.shape[0]), -1, np.int64)
        config = self._config
        t = self._arrays
        if (
            (config.gumbel is None and config.forced_playouts <= 0)
            or not t.expanded[ROOT]
            or t.terminal[ROOT]
        ):
            slots[start:count] = -1
            return slots
        edges = self._root_edges()
        if config.gumbel is not None and self.gumbel_root is None:
            prior = t.prior[edges].copy()  # the decisions keep the priors of this moment (Tree's node.prior)
            self.gumbel_root = GumbelRoot(prior, t.child_n[edges], self.root_mask, config.gumbel, self.rng)
        stats = RootStats(
            t.child_n[edges].copy(),
            t.child_w[edges].copy(),
            t.prior[edges].copy(),
            float(t.visits[ROOT]),
            float(t.value_sum[ROOT]),
            float(t.visited_prior[ROOT]),
        )
        plan_root_slots(stats, slots, start, count, config, self.root_mask, self.gumbel_root)
        return slots

    def _child_proof(self, child: int) -> int:
        """``child_proof``: a move's proof from its mover's point of view (1 win, -1 loss, 0 else)."""
        if child < 0:
            return UNPROVEN
        proof = int(self._arrays.proven[child])
        return WIN if proof == LOSS else LOSS if proof == WIN else UNPROVEN

    def _root_edges(self) -> slice:
        t = self._arrays
        first = int(t.first_edge[ROOT])
        return slice(first, first + int(t.num_edges[ROOT]) if t.expanded[ROOT] else first)

    def _root_edge(self, slot: int) -> int:
        edges = self._root_edges()
        if not 0 <= slot < edges.stop - edges.start:
            raise IndexError(f"root slot {slot} of {edges.stop - edges.start}")
        return int(edges.start) + slot

    def _reserve(self, count: int) -> None:
        """Room for ``count`` more nodes (a walk creates one at most)."""
        t = self._arrays
        if t.counts[0] + count > t.visits.shape[0]:
            self._grow(int(t.counts[0] + count), 0)

    def _grow(self, nodes: int, edges: int) -> TreeArrays:
        """Move the tree into arrays with room for at least ``nodes`` nodes and ``edges`` edges; returns
        the new arrays.  New room is twice what is asked (a tree that grew once will likely grow again)
        but no more than the memory budget can fill (:func:`is_full` stops the walks there, so ``Hash``
        bounds the arrays too).  The pool's arrays when a set fits (touched already); else, when only
        one side needs room, only that side's arrays are new and copied, the other side's kept as they
        are: copying and faulting in a large tree's edges when its nodes ran out stalled a search for
        half a second (docs/design.md, "Growing a tree inside a search"); else new arrays.  Arrays
        left behind whole go to the pool."""
        old = self._arrays
        prm = self._params
        node_room = max(_room(nodes, prm.memory_budget // prm.node_bytes + 1), old.visits.shape[0])
        edge_room = max(_room(edges, prm.memory_budget // EDGE_BYTES + 1), old.move.shape[0])
        slots = old.root_allowed.shape[0]
        t = POOL.take_pooled(node_room, edge_room, slots)  # touched already: the cheapest
        grow_nodes, grow_edges = node_room > old.visits.shape[0], edge_room > old.move.shape[0]
        if t is None and grow_nodes != grow_edges:  # one side: its arrays alone new (none to the pool)
            fresh = allocate(node_room if grow_nodes else 1, edge_room if grow_edges else 1, 1)
            first, n = (0, int(old.counts[0])) if grow_nodes else (_NODE_FIELDS, int(old.counts[1]))
            names = TreeArrays._fields[first : first + (_NODE_FIELDS if grow_nodes else _EDGE_FIELDS)]
            for name in names:
                getattr(fresh, name)[:n] = getattr(old, name)[:n]
            self._arrays = old._replace(**{name: getattr(fresh, name) for name in names})
            return self._arrays
        if t is None:
            t = allocate(node_room, edge_room, slots)
        used = [int(old.counts[0])] * _NODE_FIELDS + [int(old.counts[1])] * _EDGE_FIELDS + [2, 4]
        sources: tuple[npt.NDArray[Any], ...] = tuple(old[:-1])  # every field is an array
        targets: tuple[npt.NDArray[Any], ...] = tuple(t[:-1])
        for src, dst, n in zip(sources, targets, used, strict=True):
            dst[:n] = src[:n]
        t.root_allowed[:] = old.root_allowed
        self._arrays = t
        POOL.give(old)
        return t

    def __del__(self) -> None:
        """Give the tree's arrays to the pool for the next tree."""
        arrays = getattr(self, "_arrays", None)
        if arrays is not None:
            try:
                POOL.give(arrays)
            except Exception:  # at interpreter exit the pool, or contextlib, may be gone already
                return

    def _take_buffers(self, count: int) -> BuffersT:
        """Free batch buffers for ``count`` leaves (made when none is free: a tree holds two batches
        at most, so two sets are made, plus one per larger batch size).  With :attr:`shared_rows`,
        the planes and legal index rows are the shared rows' next ``count`` (the tree's own stay
        aside; the shared rows' record of their planes comes with them)."""
        pool = self._free
        for i in range(len(pool)):
            if pool[i].leaves.shape[0] >= count:
                buffers = pool.pop(i)
                break
        else:
            buffers = self._new_buffers(count)
        shared = self.shared_rows
        if shared is None or shared.planes.dtype != buffers.planes.dtype:
            return buffers  # (a tree's compiled selection is bound to one type of rows)
        rows = shared.take(count, buffers.indices.shape[1], buffers.marks.shape[1], buffers.flags.shape[1])
        if rows is None:
            return buffers
        # the same own buffers over the same shared rows, step after step (self-play): made once
        key = (id(buffers), id(rows))
        made = self._lent_made.get(key)  # the entry keeps both alive: their ids cannot be reused
        if made is None:
            if len(self._lent_made) >= _LENT_KEPT:
                self._lent_made.clear()
            lent = cast("BuffersT", buffers._replace(**rows))  # type: ignore[attr-defined]
            made = self._lent_made[key] = (buffers, rows, lent)
        lent = made[2]
        self._lent[id(lent)] = buffers
        return lent

    def _release(self, batch: BatchT) -> None:
        """Give ``batch``'s buffers back (it is done): the tree's own, when its rows were shared."""
        batch.done = True
        self._free.append(self._lent.pop(id(batch.buffers), batch.buffers))
