"""Crafted evaluators for search tests: known values, no network."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.evaluator import Evaluation, Evaluator
from tests.engine.search.reference_tree import Tree


def search_until(tree: Tree, evaluator: Evaluator, playouts: int, batch: int = 1) -> Tree:
    """Select, evaluate and back up ``batch`` leaves at a time until ``tree`` has ``playouts`` playouts."""
    while tree.playouts < playouts:
        leaves = tree.select_leaves(batch)
        if leaves:
            tree.backup(
                leaves, evaluator.evaluate(np.stack([x.planes for x in leaves]), [x.legal for x in leaves])
            )
    return tree


class FunctionEvaluator(Evaluator):
    """Uniform priors; value = ``value_of(planes[i])`` (from the side to move)."""

    def __init__(self, value_of: Callable[[np.ndarray], float]) -> None:
        self.value_of = value_of
        self.calls = 0
        self.positions = 0

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        self.calls += 1
        self.positions += len(legal)
        out = []
        for p, idx in zip(planes, legal, strict=True):
            n = len(idx)
            prior = np.full(n, 1.0 / n, np.float32) if n else np.zeros(0, np.float32)
            out.append(Evaluation(prior, float(self.value_of(p))))
        return out


def constant(value: float) -> FunctionEvaluator:
    return FunctionEvaluator(lambda _planes: value)


def stone_balance(_size: int) -> FunctionEvaluator:
    """Go: tanh of (own stones - opponent stones) / 4 in the current position (planes 0 and 1)."""
    return FunctionEvaluator(lambda p: float(np.tanh((p[0].sum() - p[1].sum()) / 4.0)))
