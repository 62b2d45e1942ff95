"""The PUCT arithmetic that must not drift silently: c(s), first-play urgency, virtual loss, the value's
sign through a backup, and exact visit counts on small trees with known priors and values.

The visit counts are checked twice: against literal numbers (worked out once, pinned here) and against
a plain recursive PUCT written independently below, one simulation at a time.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from engine.search.config import SearchConfig
from engine.search.puct import exploration_rate
from tests.engine.search.reference_tree import Node, Tree
from tests.engine.search.toy_game import Path, ToyEvaluator, ToyState, wavy_value

ROOT_PRIOR = (0.6, 0.3, 0.1)
INNER_PRIOR = (0.5, 0.3, 0.2)


def prior_of(path: Path) -> tuple[float, ...]:
    return ROOT_PRIOR if not path else INNER_PRIOR


def make_tree(config: SearchConfig, terminal: dict[Path, float] | None = None) -> Tree:
    return Tree(ToyState(3, terminal), config)


def simulate(tree: Tree, evaluator: ToyEvaluator, count: int) -> None:
    """``count`` playouts, one leaf per network call (no virtual loss in play)."""
    for _ in range(count):
        leaves = tree.select_leaves(1)
        if leaves:
            tree.backup(
                leaves, evaluator.evaluate(np.stack([x.planes for x in leaves]), [x.legal for x in leaves])
            )


def expanded_node(prior: list[float], visits: list[float], values: list[float], own_value: float) -> Node:
    """A node evaluated once (value ``own_value``) whose children have the given visits and total values
    (from this node's player to move)."""
    node = Node()
    node.expand([0, 1, 2][: len(prior)], np.arange(len(prior)), np.array(prior))
    node.visits = 1.0
    node.value_sum = own_value
    for slot, (n, w) in enumerate(zip(visits, values, strict=True)):
        if n:
            node.add_visits(slot, n, w)
            node.value_sum += w
    return node


# ---- c(s) ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("visits", "expected"),
    [
        (0, 1.25 + math.log(19653 / 19652)),
        (100, 1.25 + math.log(19753 / 19652)),
        (19651, 1.25 + math.log(2.0)),
    ],
)
def test_exploration_rate_is_alphazeros_schedule(visits: float, expected: float) -> None:
    assert exploration_rate(visits, SearchConfig()) == pytest.approx(expected, rel=1e-12)
    assert SearchConfig().c_init == 1.25 and SearchConfig().c_base == 19652.0


def test_puct_scores_of_visited_and_unvisited_children() -> None:
    config = SearchConfig(fpu_reduction=0.25, fpu_reduction_root=0.5)
    tree = make_tree(config)
    # N(s) = 1 + 3 + 1 = 5; Q(s) = (0.2 + 0.9 - 0.1) / 5 = 0.2; visited prior 0.6 + 0.3 = 0.9.
    node = expanded_node([0.6, 0.3, 0.1], [3, 1, 0], [0.9, -0.1, 0.0], own_value=0.2)
    c = 1.25 + math.log((1 + 5 + 19652) / 19652)
    u = [c * math.sqrt(5) * p / (1 + n) for p, n in [(0.6, 3), (0.3, 1), (0.1, 0)]]
    inner = tree.puct_scores(node, is_root=False)
    assert inner == pytest.approx([0.3 + u[0], -0.1 + u[1], 0.2 - 0.25 * math.sqrt(0.9) + u[2]], rel=1e-12)
    root = tree.puct_scores(node, is_root=True)
    assert root[2] == pytest.approx(0.2 - 0.5 * math.sqrt(0.9) + u[2], rel=1e-12)
    assert root[:2] == pytest.approx(inner[:2], rel=1e-12)


def test_first_play_urgency_tries_the_best_prior_then_stays_on_a_good_child() -> None:
    """With uniform priors and no visited child, FPU is the parent's Q: the first child is tried
    first.  Once it returned a good value for the parent, the unvisited children are valued at
    ``Q(s) - 0.25 * sqrt(1/3)`` and the search goes back to the first one."""
    config = SearchConfig(batch_size=1)
    tree = make_tree(config)
    values = {(): 0.0, (0,): -0.5}  # the first child is worth +0.5 to the root player
    evaluator = ToyEvaluator(lambda _p: (1 / 3, 1 / 3, 1 / 3), lambda p: values.get(p, 0.0))
    simulate(tree, evaluator, 2)
    # N(root) = 2, Q(root) = (0 + 0.5) / 2 = 0.25, visited prior 1/3 (float32 priors: 1e-7 precision).
    c = 1.25 + math.log((1 + 2 + 19652) / 19652)
    visited = 0.5 + c * math.sqrt(2) * (1 / 3) / 2
    unvisited = 0.25 - 0.25 * math.sqrt(1 / 3) + c * math.sqrt(2) * (1 / 3)
    assert tree.puct_scores(tree.root, is_root=True) == pytest.approx(
        [visited, unvisited, unvisited], rel=1e-7
    )
    simulate(tree, evaluator, 1)
    assert evaluator.paths == [(), (0,), (0, 0)]


# ---- virtual loss and backup ----------------------------------------------------------------------
def test_virtual_loss_is_applied_along_the_path_and_removed_by_the_backup() -> None:
    config = SearchConfig(batch_size=2, virtual_loss=1)
    tree = make_tree(config)
    evaluator = ToyEvaluator(prior_of, wavy_value)
    simulate(tree, evaluator, 4)  # root and its three children are evaluated
    before_n = tree.root.child_n.copy()
    before_w = tree.root.child_w.copy()
    leaves = tree.select_leaves(2)
    assert len(leaves) == 2 and leaves[0].path[0][1] != leaves[1].path[0][1]  # virtual loss spread them
    for leaf in leaves:
        slot = leaf.path[0][1]
        assert tree.root.child_n[slot] == before_n[slot] + 1  # N(s, a) += vl
        assert tree.root.child_w[slot] == pytest.approx(before_w[slot] - 1)  # W(s, a) -= vl (a loss)
    evaluations = evaluator.evaluate(np.stack([x.planes for x in leaves]), [x.legal for x in leaves])
    tree.backup(leaves, evaluations)
    for leaf, ev in zip(leaves, evaluations, strict=True):
        slot = leaf.path[0][1]
        child = tree.root.children[slot]
        assert child is not None
        # the leaf's value is negated once per ply on its way to the root's slot
        sign = (-1) ** len(leaf.path)
        assert tree.root.child_n[slot] == before_n[slot] + 1
        assert tree.root.child_w[slot] == pytest.approx(before_w[slot] + sign * ev.value)
        assert -tree.root.child_w[slot] == pytest.approx(child.value_sum)


def test_value_is_negated_once_per_ply_on_the_way_up() -> None:
    tree = make_tree(SearchConfig(batch_size=1))
    # child 0 is good for the root player (-0.4 for its own), so the third playout goes below it
    evaluator = ToyEvaluator(prior_of, lambda p: {(): 0.1, (0,): -0.4, (0, 0): 0.7}.get(p, 0.0))
    simulate(tree, evaluator, 3)
    assert evaluator.paths == [(), (0,), (0, 0)]
    child = tree.root.children[0]
    assert child is not None
    assert child.child_w[0] == pytest.approx(-0.7)  # W((0), 0) from (0)'s player: -value of (0, 0)
    assert child.value_sum == pytest.approx(-0.4 - 0.7)
    assert tree.root.child_w[0] == pytest.approx(0.4 + 0.7)
    assert tree.root.value_sum == pytest.approx(0.1 + 0.4 + 0.7)
    assert tree.root.visits == 3 and tree.root.q == pytest.approx((0.1 + 0.4 + 0.7) / 3)


# ---- exact visit counts ---------------------------------------------------------------------------
@dataclasses.dataclass
class RefNode:
    """A node of the reference search: visits and total value from its own player to move."""

    prior: tuple[float, ...] = ()
    n: float = 0.0
    w: float = 0.0
    children: dict[int, RefNode] = dataclasses.field(default_factory=dict)


def reference_playout(node: RefNode, path: Path, config: SearchConfig) -> float:
    """One PUCT playout written plainly; returns the value for ``node``'s player to move."""
    if not node.prior:
        node.prior = prior_of(path)
        value = wavy_value(path)
    else:
        c = math.log((1 + node.n + config.c_base) / config.c_base) + config.c_init
        reduction = config.fpu_reduction_root if not path else config.fpu_reduction
        visited = sum(p for a, p in enumerate(node.prior) if a in node.children)
        fpu = node.w / node.n - reduction * math.sqrt(visited)
        best, best_score = 0, -math.inf
        for a, p in enumerate(node.prior):
            child = node.children.get(a)
            q = -child.w / child.n if child is not None else fpu
            score = q + c * math.sqrt(node.n) * p / (1 + (child.n if child is not None else 0))
            if score > best_score:
                best, best_score = a, score
        value = -reference_playout(node.children.setdefault(best, RefNode()), (*path, best), config)
    node.n += 1
    node.w += value
    return value


def reference_visits(config: SearchConfig, playouts: int) -> list[int]:
    root = RefNode()
    for _ in range(playouts):
        reference_playout(root, (), config)
    return [int(root.children[a].n) if a in root.children else 0 for a in range(3)]


#: Root visits after N playouts (the root's own evaluation counts as one), recorded from this search
#: and the reference (they agree); a change here is a change of the search's arithmetic.
PINNED = {
    ("default", 10): [4, 5, 0],
    ("default", 50): [18, 6, 25],
    ("default", 200): [97, 30, 72],
    ("no-fpu-reduction", 50): [12, 6, 31],
    ("c_init-3", 50): [26, 9, 14],
}
CONFIGS = {
    "default": SearchConfig(batch_size=1),
    "no-fpu-reduction": SearchConfig(batch_size=1, fpu_reduction=0.0, fpu_reduction_root=0.0),
    "c_init-3": SearchConfig(batch_size=1, c_init=3.0),
}


@pytest.mark.parametrize(("name", "playouts"), list(PINNED))
def test_root_visit_counts_are_exact(name: str, playouts: int) -> None:
    config = CONFIGS[name]
    tree = make_tree(config)
    simulate(tree, ToyEvaluator(prior_of, wavy_value), playouts)
    visits = [int(n) for n in tree.root.child_n]
    assert visits == reference_visits(config, playouts)
    assert visits == PINNED[(name, playouts)]
    assert tree.root.visits == playouts


def test_whole_tree_matches_the_reference_search() -> None:
    """Every node's visits and value, not only the root's."""
    config = SearchConfig(batch_size=1, fpu_reduction=0.3, fpu_reduction_root=0.1, c_init=2.0)
    tree = make_tree(config)
    simulate(tree, ToyEvaluator(prior_of, wavy_value), 120)
    ref = RefNode()
    for _ in range(120):
        reference_playout(ref, (), config)

    def compare(node: Node, ref_node: RefNode) -> int:
        assert node.visits == ref_node.n
        assert node.value_sum == pytest.approx(ref_node.w, abs=1e-9)
        count = 1
        for slot, child in enumerate(node.children):
            ref_child = ref_node.children.get(slot)
            if child is None or child.visits == 0:
                assert ref_child is None
            else:
                assert ref_child is not None
                count += compare(child, ref_child)
        return count

    assert compare(tree.root, ref) > 20  # a real tree, several plies deep
