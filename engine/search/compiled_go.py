"""A compiled PUCT tree for Go: :class:`engine.search.tree.Tree`'s search, node for node, in numba.

The tree lives in preallocated numpy arrays (struct of arrays, :class:`TreeArrays`) and the whole walk
runs in compiled code on the compiled Go rules (:mod:`engine.games.go_kernel`): each walk copies the
root :class:`~engine.games.go_kernel.KernelState` into a scratch state and plays down the path, and each
leaf's 17 planes are written by ``encode_into`` straight into a batch buffer.  Python is entered once
per batch, not once per node: :meth:`CompiledGoTree.select_leaves_arrays` returns the batch's planes and
legal-move masks as arrays and :meth:`CompiledGoTree.backup_arrays` takes dense priors and values
(``select_leaves`` / ``backup`` wrap them for an :class:`~engine.evaluator.Evaluator`).  The kernels
are called through their compiled entry points (:class:`_Bound`), skipping numba's per-call typing of
the tree's arrays.

It makes exactly the choices of ``Tree`` (same arithmetic, same order of floating-point operations):

* PUCT ``Q(s, a) + c(s) P(s, a) sqrt(N(s)) / (1 + N(s, a))`` with ``c(s) = log((1 + N(s) + c_base) /
  c_base) + c_init``, first-play urgency ``Q(s) - reduction * sqrt(visited prior sum)``
  (``fpu_reduction_root`` at the root), the first maximum wins;
* virtual loss (``virtual_loss`` visits and ``-virtual_loss`` value along the path until backup),
  collisions (a walk ending on a pending leaf is reverted; more than ``max_collisions`` end the batch),
  the node budget (``node_budget``; a new node per walk at most);
* terminal nodes (two passes or the move limit) valued as ``GoState.outcome()``: the sign of the
  Tromp-Taylor score from the side to move; the MCTS-solver proofs of ``Tree._finish_exact`` /
  ``_update_proof``, proven non-root nodes ending the walk with their exact value.

Out of scope (the Python ``Tree`` does these): root Dirichlet noise and Gumbel root search (a config
asking for either raises ``ValueError``), forced playouts (also ``ValueError``), the network cache,
``searchmoves`` root masks, tree reuse, statistics.  Mate checks and repetition penalties are accepted
and have no effect, as in ``Tree`` for Go (no mate search; positional superko never repeats).

Priors and values handed to :meth:`CompiledGoTree.backup` or :meth:`~CompiledGoTree.backup_arrays` are
used as float64 (exactly, for float32 priors); ``Tree`` uses values as given, so an evaluator returning
``np.float32`` values makes ``Tree`` add the virtual loss back in float32 and the two trees can then
differ in the last bits (the engine's evaluators return Python floats).

Layout (``C`` node capacity, ``E`` edge capacity, both grown by doubling between calls; node 0 is the
root; a node's edges are ``first_edge .. first_edge + num_edges - 1``, its legal moves in
``GoState.legal_moves_and_indices()`` order: increasing points, pass ``N*N`` last)::

    per node  [C]: visits N(s), value_sum W(s), visited_prior, first_edge, num_edges, expanded, pending,
                   terminal, terminal_value, proven, proven_plies, parent, parent_edge
    per edge  [E]: move, prior P(s, a), child (-1 until created), child_n N(s, a), child_w W(s, a)
    counts    [2]: nodes used, edges used
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt

from engine.evaluator import Evaluation
from engine.games.go import NUM_PLANES, WHITE, GoState
from engine.games.go_kernel import (
    NOT_OVER,
    KernelState,
    copy_state,
    encode_into,
    from_go_state,
    legal_mask,
    outcome_code,
    play,
    score,
)
from engine.search.config import SearchConfig

__all__ = ["CompiledGoTree", "TreeArrays"]

F = TypeVar("F", bound=Callable[..., Any])


def _njit(fn: F) -> F:
    """``numba.njit(cache=True)`` keeping ``fn``'s signature for the type checker."""
    return cast(F, numba.njit(cache=True)(fn))


# Proof states (engine.search.tree.Proof's values).
_UNPROVEN = 0
_WIN = 1
_LOSS = -1
_DRAW = 2

# What a walk brought back when it was not a leaf (a leaf is its node index, >= 0).
_BACKED_UP = -1
_COLLISION = -2

_TO_PLAY = 1  # slot of KernelState.meta holding the colour code to move (see KernelState)
_ROOT = 0


class TreeArrays(NamedTuple):
    """The tree (see the module docstring): node arrays ``[C]``, edge arrays ``[E]``, ``counts[2]``."""

    visits: npt.NDArray[np.float64]
    value_sum: npt.NDArray[np.float64]
    visited_prior: npt.NDArray[np.float64]
    first_edge: npt.NDArray[np.int64]
    num_edges: npt.NDArray[np.int64]
    expanded: npt.NDArray[np.bool_]
    pending: npt.NDArray[np.bool_]
    terminal: npt.NDArray[np.bool_]
    terminal_value: npt.NDArray[np.float64]
    proven: npt.NDArray[np.int8]
    proven_plies: npt.NDArray[np.int64]
    parent: npt.NDArray[np.int64]
    parent_edge: npt.NDArray[np.int64]
    move: npt.NDArray[np.int64]
    prior: npt.NDArray[np.float64]
    child: npt.NDArray[np.int64]
    child_n: npt.NDArray[np.float64]
    child_w: npt.NDArray[np.float64]
    counts: npt.NDArray[np.int64]


_NODE_FIELDS = 13  # TreeArrays: 13 node arrays, then 5 edge arrays, then counts
_EDGE_FIELDS = 5


class _Params(NamedTuple):
    """The :class:`SearchConfig` fields the compiled search reads."""

    c_init: float
    c_base: float
    fpu_root: float
    fpu: float
    virtual_loss: float
    max_collisions: int
    node_budget: int


def _allocate(nodes: int, edges: int) -> TreeArrays:
    """Arrays for ``nodes`` nodes and ``edges`` edges, none used yet (left uninitialised: every field
    of a node or an edge is written when it is made)."""
    f8, i8 = np.float64, np.int64
    return TreeArrays(
        visits=np.empty(nodes, f8),
        value_sum=np.empty(nodes, f8),
        visited_prior=np.empty(nodes, f8),
        first_edge=np.empty(nodes, i8),
        num_edges=np.empty(nodes, i8),
        expanded=np.empty(nodes, np.bool_),
        pending=np.empty(nodes, np.bool_),
        terminal=np.empty(nodes, np.bool_),
        terminal_value=np.empty(nodes, f8),
        proven=np.empty(nodes, np.int8),
        proven_plies=np.empty(nodes, i8),
        parent=np.empty(nodes, i8),
        parent_edge=np.empty(nodes, i8),
        move=np.empty(edges, i8),
        prior=np.empty(edges, f8),
        child=np.empty(edges, i8),
        child_n=np.empty(edges, f8),
        child_w=np.empty(edges, f8),
        counts=np.zeros(2, i8),
    )


def _grown(t: TreeArrays, nodes: int, edges: int) -> TreeArrays:
    """``t`` copied into arrays with room for at least ``nodes`` nodes and ``edges`` edges."""
    bigger = _allocate(max(nodes, t.visits.shape[0]), max(edges, t.move.shape[0]))
    used = [int(t.counts[0])] * _NODE_FIELDS + [int(t.counts[1])] * _EDGE_FIELDS + [2]
    arrays = cast(tuple[npt.NDArray[Any], ...], t)  # every field is an array
    for old, new, n in zip(arrays, cast(tuple[npt.NDArray[Any], ...], bigger), used, strict=True):
        new[:n] = old[:n]
    return bigger


# ---- compiled kernels -----------------------------------------------------------------------------


@_njit
def _copy_array(dst: npt.NDArray[Any], src: npt.NDArray[Any]) -> None:
    """``dst[:] = src`` for 1-D arrays of one length, as a plain loop: numba's slice assignment goes
    element by element through its broadcasting code, 2 to 4 times slower on the kernel state."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@_njit
def _copy_into(dst: KernelState, src: KernelState) -> None:
    """Make ``dst`` equal to ``src`` (same board size; the shared read-only tables are not copied)."""
    _copy_array(dst.board, src.board)
    _copy_array(dst.head, src.head)
    _copy_array(dst.nxt, src.nxt)
    _copy_array(dst.libs, src.libs)
    _copy_array(dst.size, src.size)
    _copy_array(dst.history.reshape(-1), src.history.reshape(-1))
    _copy_array(dst.seen, src.seen)
    dst.zhash[0] = src.zhash[0]
    _copy_array(dst.meta, src.meta)


@_njit
def _outcome_value(s: KernelState) -> float:
    """``GoState.outcome().value`` of a finished game: the sign of the score from the side to move."""
    v = score(s)
    if s.meta[_TO_PLAY] == WHITE:
        v = -v
    return 1.0 if v > 0 else -1.0 if v < 0 else 0.0


@_njit
def _init_node(t: TreeArrays, node: int, parent: int, edge: int, s: KernelState) -> None:
    """Make ``node`` a fresh unexpanded node for position ``s``, reached by ``edge`` of ``parent``
    (-1, -1 for the root); terminal with its exact value when the game is over at ``s``."""
    t.visits[node] = 0.0
    t.value_sum[node] = 0.0
    t.visited_prior[node] = 0.0
    t.first_edge[node] = 0
    t.num_edges[node] = 0
    t.expanded[node] = False
    t.pending[node] = False
    t.proven[node] = _UNPROVEN
    t.proven_plies[node] = 0
    t.parent[node] = parent
    t.parent_edge[node] = edge
    over = outcome_code(s) != NOT_OVER
    t.terminal[node] = over
    t.terminal_value[node] = _outcome_value(s) if over else 0.0


@_njit
def _init_root(t: TreeArrays, root: KernelState) -> None:
    """Node 0 for ``root``: the tree's only node."""
    _init_node(t, _ROOT, -1, -1, root)
    t.counts[0] = 1
    t.counts[1] = 0


@_njit
def _new_child(t: TreeArrays, node: int, edge: int, s: KernelState) -> int:
    """Create the child behind ``edge`` of ``node`` (its position is ``s``); return its index."""
    child = t.counts[0]
    t.counts[0] = child + 1
    _init_node(t, child, node, edge, s)
    t.child[edge] = child
    return int(child)


@_njit
def _add_visits(t: TreeArrays, node: int, edge: int, dn: float, dw: float) -> None:
    """``Node.add_visits``: ``N(s, a) += dn; W(s, a) += dw; N(s) += dn`` with the visited prior sum."""
    before = t.child_n[edge]
    after = before + dn
    t.child_n[edge] = after
    t.child_w[edge] += dw
    t.visits[node] += dn
    if (before > 0) != (after > 0):
        p = t.prior[edge]
        t.visited_prior[node] += p if after > 0 else -p


@_njit
def _select(t: TreeArrays, prm: _Params, node: int) -> int:
    """The edge of expanded ``node`` with the first highest PUCT score (``Tree.puct_scores``)."""
    parent_n = t.visits[node]
    c = np.log((1.0 + parent_n + prm.c_base) / prm.c_base) + prm.c_init
    reduction = prm.fpu_root if node == _ROOT else prm.fpu
    q = t.value_sum[node] / parent_n if parent_n > 0 else 0.0
    fpu = q - reduction * np.sqrt(max(0.0, t.visited_prior[node]))
    scale = c * np.sqrt(parent_n)
    child_n, child_w, prior = t.child_n, t.child_w, t.prior  # locals: no reference counting per edge
    first = t.first_edge[node]
    best = first
    best_score = -np.inf
    for e in range(first, first + t.num_edges[node]):
        n = child_n[e]
        s = child_w[e] / n if n > 0 else fpu
        s += scale * prior[e] / (1.0 + n)
        if s > best_score:
            best_score = s
            best = e
    return int(best)


@_njit
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
        if proven[c] == _LOSS:
            plies = proven_plies[c] + 1
            best_win = plies if best_win < 0 else min(best_win, plies)
        elif proven[c] == _WIN:
            worst = max(worst, proven_plies[c] + 1)
        else:
            all_lost = False
    if best_win >= 0:
        t.proven[node] = _WIN
        t.proven_plies[node] = best_win
    elif all_lost:
        t.proven[node] = _LOSS
        t.proven_plies[node] = worst


@_njit
def _is_decided(proof: int) -> bool:
    return proof in (_WIN, _LOSS)


@_njit
def _backup_value(t: TreeArrays, prm: _Params, leaf: int, value: float) -> None:
    """``Tree._backup_value``: add ``value`` (from ``leaf``'s side to move) up to the root, negated once
    per ply, removing the virtual loss and updating proofs."""
    vl = prm.virtual_loss
    t.visits[leaf] += 1.0
    t.value_sum[leaf] += value
    v = value
    child = leaf
    node = t.parent[leaf]
    while node >= 0:
        v = -v
        _add_visits(t, node, t.parent_edge[child], 1.0 - vl, v + vl)
        t.value_sum[node] += v
        if _is_decided(t.proven[child]) and t.proven[node] == _UNPROVEN:
            _update_proof(t, node)
        child = node
        node = t.parent[node]


@_njit
def _finish_exact(t: TreeArrays, prm: _Params, node: int, value: float) -> None:
    """``Tree._finish_exact``: a terminal node becomes proven by its value; back ``value`` up."""
    if t.terminal[node] and t.proven[node] == _UNPROVEN:
        t.proven[node] = _WIN if value > 0 else _LOSS if value < 0 else _DRAW
    _backup_value(t, prm, node, value)


@_njit
def _revert(t: TreeArrays, prm: _Params, leaf: int) -> None:
    """Take back the virtual loss of the path from the root to ``leaf``."""
    vl = prm.virtual_loss
    node = leaf
    while t.parent[node] >= 0:
        _add_visits(t, t.parent[node], t.parent_edge[node], -vl, vl)
        node = t.parent[node]


@_njit
def _walk(t: TreeArrays, prm: _Params, root: KernelState, s: KernelState) -> int:
    """``Tree._walk``: one walk down from the root, playing the path on ``s`` (a scratch copy of
    ``root``).  Returns the leaf's node index (now pending; its position left on ``s``), or
    :data:`_BACKED_UP` (a terminal or proven node, backed up) or :data:`_COLLISION` (reverted)."""
    _copy_into(s, root)
    vl = prm.virtual_loss
    node = _ROOT
    while True:
        if t.terminal[node]:
            _finish_exact(t, prm, node, t.terminal_value[node])
            return _BACKED_UP
        if node != _ROOT and _is_decided(t.proven[node]):
            _finish_exact(t, prm, node, float(t.proven[node]))
            return _BACKED_UP
        if not t.expanded[node]:
            break
        edge = _select(t, prm, node)
        _add_visits(t, node, edge, vl, -vl)
        play(s, t.move[edge])
        child = t.child[edge]
        node = child if child >= 0 else _new_child(t, node, edge, s)
    if t.pending[node]:
        _revert(t, prm, node)
        return _COLLISION
    t.pending[node] = True
    return node


@_njit
def _select_leaves(
    t: TreeArrays,
    prm: _Params,
    root: KernelState,
    scratch: KernelState,
    count: int,
    planes: npt.NDArray[np.float32],
    legal: npt.NDArray[np.bool_],
    leaves: npt.NDArray[np.int64],
) -> int:
    """``Tree.select_leaves(count)``: up to ``count`` walks; each leaf's planes go to ``planes[m]``
    (float32 ``[count, 17, N, N]``), its legal moves to ``legal[m]`` (bool ``[count, N*N+1]``) and
    its node to ``leaves[m]`` (int64 ``[count]``).  Returns ``m``, the number of leaves.  The node
    arrays must have room for ``count`` more nodes."""
    if t.terminal[_ROOT]:
        return 0
    m = 0
    collisions = 0
    for _ in range(count):
        if t.counts[0] >= prm.node_budget:
            break
        found = _walk(t, prm, root, scratch)
        if found >= 0:
            encode_into(scratch, planes[m])
            _copy_array(legal[m], legal_mask(scratch))
            leaves[m] = found
            m += 1
        elif found == _COLLISION:
            collisions += 1
            if collisions > prm.max_collisions:
                break
    return m


@_njit
def _expand(t: TreeArrays, node: int, legal: npt.NDArray[np.bool_], priors: npt.NDArray[np.float64]) -> None:
    """Attach the moves of ``legal`` (bool ``[N*N+1]``) to ``node`` with their entries of ``priors``
    (float64 ``[N*N+1]``) unless it is expanded already, and clear its pending
    mark.  The edge arrays must have room."""
    t.pending[node] = False
    if t.expanded[node]:
        return
    first = t.counts[1]
    e = first
    move, prior, child, child_n, child_w = t.move, t.prior, t.child, t.child_n, t.child_w
    for p in range(legal.shape[0]):
        if legal[p]:
            move[e] = p
            prior[e] = priors[p]
            child[e] = -1
            child_n[e] = 0.0
            child_w[e] = 0.0
            e += 1
    t.counts[1] = e
    t.first_edge[node] = first
    t.num_edges[node] = e - first
    t.expanded[node] = True
    t.visited_prior[node] = 0.0


@_njit
def _backup(
    t: TreeArrays,
    prm: _Params,
    m: int,
    leaves: npt.NDArray[np.int64],
    legal: npt.NDArray[np.bool_],
    priors: npt.NDArray[np.float64],
    values: npt.NDArray[np.float64],
) -> None:
    """``Tree.backup`` of the first ``m`` leaves: expand leaf ``i`` (node ``leaves[i]``, moves
    ``legal[i]``, bool ``[_, N*N+1]``) with its dense priors ``priors[i]`` (float64 ``[_, N*N+1]``)
    and back up ``values[i]`` (float64 ``[_]``).  The edge arrays must have room."""
    for i in range(m):
        _expand(t, leaves[i], legal[i], priors[i])
        _backup_value(t, prm, leaves[i], values[i])


# ---- Python wrapper -------------------------------------------------------------------------------


def _params(config: SearchConfig) -> _Params:
    """The compiled search's settings, or ``ValueError`` for what it does not do."""
    if config.dirichlet_alpha is not None:
        raise ValueError("CompiledGoTree has no root Dirichlet noise (dirichlet_alpha must be None)")
    if config.gumbel is not None:
        raise ValueError("CompiledGoTree has no Gumbel root search (gumbel must be None)")
    if config.forced_playouts > 0:
        raise ValueError("CompiledGoTree has no forced playouts (forced_playouts must be 0)")
    return _Params(
        c_init=float(config.c_init),
        c_base=float(config.c_base),
        fpu_root=float(config.fpu_reduction_root),
        fpu=float(config.fpu_reduction),
        virtual_loss=float(config.virtual_loss),
        max_collisions=int(config.max_collisions),
        node_budget=int(config.node_budget),
    )


class _Bound:
    """A compiled kernel called straight through its machine-code entry point.

    Numba's dispatcher works out the argument types on every call, which for the tree's 19 arrays,
    two kernel states and the settings costs more than a whole batch of walks (about 12 us of 17 us
    for an empty call).  The first call goes through the dispatcher (compiling or loading the kernel)
    and records the overload for those argument types; later calls use its entry point directly.  The
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


class CompiledGoTree:
    """A PUCT tree over a Go position searched in compiled code; the same search as ``Tree`` (see the
    module docstring for what it leaves out).

    One batch at a time, either with evaluations (:meth:`select_leaves`, evaluate its planes,
    :meth:`backup` the :class:`Evaluation` list) or with arrays (:meth:`select_leaves_arrays`, then
    :meth:`backup_arrays` with dense priors and values: no Python object per leaf).  Both give the same
    search for the same priors and values.

    Args:
        state: the root position (not kept: the tree copies it into a kernel state).
        config: search settings.

    Raises:
        ValueError: the config asks for root noise, Gumbel or forced playouts.
    """

    def __init__(self, state: GoState, config: SearchConfig) -> None:
        self.config = config
        self._params = _params(config)
        self._root = from_go_state(state)
        self._scratch = copy_state(self._root)
        self._size = state.rules.board_size
        self._policy = self._size * self._size + 1
        nodes = max(2, min(config.node_budget + 1, 4096))
        self._arrays = _allocate(nodes, nodes * 8)
        _init_root(self._arrays, self._root)
        self._select = _Bound(_select_leaves)
        self._backup = _Bound(_backup)
        self._allocate_batch(0)
        self._batch: int | None = None  # leaves of the batch waiting for its backup

    @property
    def node_count(self) -> int:
        """Nodes in the tree (``Tree.node_count``)."""
        return int(self._arrays.counts[0])

    @property
    def full(self) -> bool:
        """True when the node budget is used up (``Tree.full``)."""
        return self.node_count >= self.config.node_budget

    def select_leaves_arrays(self, count: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """Walk down ``count`` times (fewer on collisions or a full tree), as ``Tree.select_leaves``.

        Returns:
            ``(planes, legal)``: float32 ``[m, 17, N, N]``, the ``m`` leaves' encoded positions, and
            bool ``[m, N*N+1]``, their legal moves (pass ``N*N`` last, always legal: leaves are
            never terminal).  Both are views of buffers that the next call overwrites; ``legal``
            is read-only.

        Raises:
            RuntimeError: the previous batch has not been backed up.
        """
        if self._batch is not None:
            raise RuntimeError("back up the previous batch before selecting more leaves")
        self._reserve(count)
        m = int(
            self._select(
                self._arrays,
                self._params,
                self._root,
                self._scratch,
                int(count),
                self._planes,
                self._legal,
                self._leaves,
            )
        )
        self._batch = m
        legal = self._legal[:m]
        legal.flags.writeable = False
        return self._planes[:m], legal

    def select_leaves(self, count: int) -> tuple[npt.NDArray[np.float32], list[npt.NDArray[np.int64]]]:
        """:meth:`select_leaves_arrays` for an :class:`~engine.evaluator.Evaluator`.

        Returns:
            ``(planes, legal)``: float32 ``[m, 17, N, N]``, the ``m`` leaves' encoded positions (a view
            of a buffer that the next call overwrites), and ``m`` int64 arrays ``[L_i]`` of their legal
            policy indices (increasing points, pass ``N*N`` last).

        Raises:
            RuntimeError: the previous batch has not been backed up.
        """
        planes, legal = self.select_leaves_arrays(count)
        return planes, [np.flatnonzero(row) for row in legal]

    def backup_arrays(self, priors: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Expand the leaves of the last selection with dense priors and back the values up, removing
        the virtual loss; one compiled call for the batch.

        Args:
            priors: float ``[m, N*N+1]``, each leaf's priors over the whole policy, already normalised
                over its legal moves (e.g. a masked softmax written back densely); the entries of
                illegal moves are ignored.  Used as float64 (exactly, for float32
                priors), so that priors ``p`` give the same search as evaluations with priors
                ``p[legal]`` of the same dtype.  No checks (a sum, a sign) are made.
            values: float ``[m]``, each leaf's value from its side to move (used as float64).

        Raises:
            RuntimeError: no batch is waiting.
            ValueError: the shapes do not match the leaves.
        """
        if self._batch is None:
            raise RuntimeError("no leaves to back up")
        m = self._batch
        p = np.asarray(priors)
        v = np.asarray(values)
        if p.shape != (m, self._policy) or v.shape != (m,):
            raise ValueError(
                f"priors {p.shape} and values {v.shape} for {m} leaves (expected ({m}, {self._policy}) and ({m},))"
            )
        self._priors[:m] = p
        self._values[:m] = v
        self._backup_batch(m)

    def backup(self, evaluations: Sequence[Evaluation]) -> None:
        """Expand the leaves of the last :meth:`select_leaves` with their evaluations (priors float32
        ``[L_i]`` in the order of the legal indices, value from the leaf's side to move) and back the
        values up, removing the virtual loss (through :meth:`backup_arrays`' compiled call).

        Raises:
            RuntimeError: no batch is waiting.
            ValueError: the evaluations do not match the leaves.
        """
        if self._batch is None:
            raise RuntimeError("no leaves to back up")
        m = self._batch
        legal = self._legal[:m]
        if len(evaluations) != m:
            raise ValueError(f"{len(evaluations)} evaluations for {m} leaves")
        sizes = legal.sum(axis=1)
        if any(len(ev.priors) != n for ev, n in zip(evaluations, sizes, strict=True)):
            raise ValueError("an evaluation's priors do not match its leaf's legal moves")
        if m:
            # a boolean mask fills row by row, each row's legal moves in increasing order
            self._priors[:m][legal] = np.concatenate([np.asarray(ev.priors) for ev in evaluations])
            self._values[:m] = [float(ev.value) for ev in evaluations]
        self._backup_batch(m)

    def root_visits(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """``(moves, visits)``: the root's legal moves int64 ``[L]`` and their visit counts ``N(s, a)``
        float64 ``[L]`` (``Tree.root_visits``; empty before the root is expanded)."""
        edges = self._root_edges()
        return self._arrays.move[edges].copy(), self._arrays.child_n[edges].copy()

    def root_values(self) -> npt.NDArray[np.float64]:
        """float64 ``[L]``: ``W(s, a)`` of the root moves, from the root player's point of view."""
        return self._arrays.child_w[self._root_edges()].copy()

    def root_proof(self) -> tuple[int, int]:
        """``(proof, plies)`` of the root (``Tree.root.proven`` as an int: 0 unproven, 1 win, -1 loss,
        2 draw; ``Tree.root.proven_plies``)."""
        return int(self._arrays.proven[_ROOT]), int(self._arrays.proven_plies[_ROOT])

    def _backup_batch(self, m: int) -> None:
        """The compiled backup of the ``m`` waiting leaves, whose priors and values are in the
        buffers; makes room for their edges first (at most ``N*N+1`` each)."""
        t = self._arrays
        need = int(t.counts[1]) + m * self._policy
        if need > t.move.shape[0]:
            self._arrays = _grown(t, 0, 2 * need)
        self._backup(self._arrays, self._params, m, self._leaves, self._legal, self._priors, self._values)
        self._batch = None

    def _root_edges(self) -> slice:
        t = self._arrays
        first = int(t.first_edge[_ROOT])
        return slice(first, first + int(t.num_edges[_ROOT]) if t.expanded[_ROOT] else first)

    def _reserve(self, count: int) -> None:
        """Room for ``count`` more nodes (a walk creates one at most) and ``count`` leaves."""
        t = self._arrays
        if t.counts[0] + count > t.visits.shape[0]:
            self._arrays = _grown(t, 2 * int(t.counts[0] + count), 0)
        if self._leaves.shape[0] < count:
            self._allocate_batch(count)

    def _allocate_batch(self, count: int) -> None:
        """Batch buffers for ``count`` leaves: planes float32 ``[count, 17, N, N]``, legal moves bool,
        priors float64 ``[count, N*N+1]``, leaves int64 and values float64 ``[count]``."""
        self._planes = np.zeros((count, NUM_PLANES, self._size, self._size), np.float32)
        self._legal = np.zeros((count, self._policy), np.bool_)
        self._priors = np.zeros((count, self._policy), np.float64)
        self._leaves = np.zeros(count, np.int64)
        self._values = np.zeros(count, np.float64)
