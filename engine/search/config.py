"""Search settings: one frozen dataclass passed into every tree (never globals)."""

from __future__ import annotations

import dataclasses

from engine.search.gumbel import GumbelConfig


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """PUCT search parameters.

    Attributes:
        c_init, c_base: AlphaZero's exploration schedule
            ``c(s) = log((1 + N(s) + c_base) / c_base) + c_init`` (pseudocode values 1.25 and 19652).
        fpu_reduction: first-play urgency.  An unvisited child is valued at the parent's current Q minus
            ``fpu_reduction * sqrt(sum of the priors of the visited children)`` (Leela Chess Zero's
            reduction).  AlphaZero's pseudocode valued unvisited children as losses, which makes the
            search very wide-then-narrow and slow to find a forced reply; the reduction keeps the search
            on its best lines but lets a high-prior move be tried early.  ``fpu_reduction_root`` applies
            at the root (0 in self-play with noise, so noised moves get tried).
        virtual_loss: visits added (as losses) along a path while its leaf awaits evaluation.
        batch_size: leaves gathered per network call.
        max_collisions: how many times a walk may end on a leaf already waiting in this batch before
            the batch is sent early.
        dirichlet_alpha: root noise ``Dir(alpha)`` (training only; ``None`` turns noise off).
        dirichlet_epsilon: weight of the noise in the root priors.
        node_budget: the most nodes a tree may hold; a full tree ends the search cleanly.
        memory_budget_bytes: the most memory the tree may hold (the engine's ``Hash``), ``None`` for no
            limit but ``node_budget``.  The compiled trees count the bytes of their nodes and edges
            (:func:`engine.search.compiled_tree.used_bytes`); the tests' reference ``Tree`` counts an
            estimate per node (1,000 nodes at least).  A full tree ends
            the search as the node budget does.
        mate_check: ask the rules for a mate in one at every new leaf (``GameState.mate_in_one``; the
            compiled trees ask their rules kernels, only the checking moves tried) and prove such
            leaves won without a network call.
        root_mate_nodes: at every new root, ask the rules for a forced mate with a mate search of at
            most this many nodes (``GameState.find_mate``; shogi: cshogi's df-pn; chess: mates in one,
            and in two starting with a check; their costs: docs/benchmarks.md, "Costs behind the code's design"); a root with one is
            proven won and plays it.  0 turns it off.
        gumbel: Gumbel root search instead of PUCT at the root (:mod:`engine.search.gumbel`; self-play
            only, ``None`` in the engine).
        forced_playouts: KataGo's forced playouts at a PUCT root, the constant ``k`` of
            ``n_forced = sqrt(k P(c) sum N)`` (2 in KataGo; :mod:`engine.search.forced`).  Self-play only,
            with policy target pruning of the recorded visits; 0 (off) in the engine.
        repetition_penalty: when positive, a move into a position that already occurred in the game or
            on the search path ends the walk there, valued ``-repetition_penalty`` for the player who
            made it (not a proof: the game goes on), and the move's prior goes to the other moves.  Weak networks value a repetition like any other
            draw and shuffle pieces back and forth into draws by repetition (shogi's sennichite); this
            makes the repeating side look elsewhere.  Self-play only; 0 (off) in the engine.
        lcb_ratio: when positive, the move played is the unproven root move with the highest lower
            confidence bound of its mean value among those with more than this share of the most
            visited one's visits (and more than 2; Leela Zero's 0.10), proven wins still first; 0
            plays the most visited move (:mod:`engine.search.lcb`).
        lcb_alpha: the bound's one-sided level: Student's t quantile at ``1 - lcb_alpha`` (Leela
            Zero's 1e-5).
        seed: random seed for the noise (and the Gumbel sample).
    """

    c_init: float = 1.25
    c_base: float = 19652.0
    fpu_reduction: float = 0.25
    fpu_reduction_root: float = 0.25
    virtual_loss: int = 1
    batch_size: int = 16
    max_collisions: int = 4
    dirichlet_alpha: float | None = None
    dirichlet_epsilon: float = 0.25
    node_budget: int = 2_000_000
    memory_budget_bytes: int | None = None
    mate_check: bool = True
    root_mate_nodes: int = 5_000
    gumbel: GumbelConfig | None = None
    forced_playouts: float = 0.0
    repetition_penalty: float = 0.0
    lcb_ratio: float = 0.0
    lcb_alpha: float = 1e-5
    seed: int | None = None
