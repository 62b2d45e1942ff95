"""Self-play: many games at once, one network call per step, with the engine's own search.

:class:`SelfPlayer` keeps ``games_in_parallel`` games, each with its own search tree, the engine's
own (:func:`~engine.search.tree_factory.new_tree`: the compiled tree of Go, chess or shogi), and the
game's state beside it.  One :meth:`SelfPlayer.step`:

1. every unfinished game selects up to ``leaves_per_tree`` leaves (virtual loss keeps them apart);
2. all those leaves go to the evaluator in ONE call (:class:`~engine.search.many_trees.ManyTreesBatch`);
3. each tree backs up its own leaves;
4. a game whose root has its visit target picks a move (sampled by visit count for the first
   ``sample_plies`` plies, then the most visited), records ``(planes, pi)`` and advances the tree to the
   chosen child (tree reuse; ``advance`` puts fresh Dirichlet noise on the new root).

Visit targets count the visits of the root including those reused from the previous move (KataGo,
Leela).  With playout-cap randomisation a move is a full search (noise, recorded) with probability
``full_search_fraction``, else a fast search without noise that is not recorded.

Resignation (AlphaGo Zero): a player resigns when the root value and its best move's value stay below
``resign_threshold`` for ``resign_consecutive`` of its moves; in a fraction ``resign_playout_fraction``
of games resignation is off and the game is played out, and a *false positive* is counted when the
player who would have resigned did not lose.  The threshold is calibrated as AlphaGo Zero's was (kept
so that at most ``resign_false_positive_target`` of games would be resigned wrongly): every played-out
game yields the highest threshold at which no player who did not lose would have resigned, and the
threshold in use is the configured one or that bound's ``target`` quantile over the newest played-out
games, whichever is lower.  Until ``resign_calibration_games`` games were played out, nobody resigns.
A fixed threshold is far from safe early in training, and the value head learns from the wrong labels
(docs/experiments.md, "Resignation: a calibrated threshold").

A finished Go game also records each point's final owner and the final score margin (exact when the
game was counted, a play-out estimate when it was resigned): the targets of the networks' auxiliary
ownership and score heads (:mod:`trainer.network.model`).

No torch here: workers import numpy, onnxruntime and the engine only.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import time
from collections.abc import Hashable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from engine.evaluator import Evaluator
from engine.games.base import Game, GameState
from engine.games.go import GoState
from engine.games.go_ownership import final_ownership
from engine.inference import warm_up_network_thread
from engine.search.config import SearchConfig
from engine.search.gumbel import GumbelConfig, GumbelRoot
from engine.search.many_trees import ManyTreesBatch, SharedRows, TreeBatch
from engine.search.proof import Proof
from engine.search.tree_factory import new_tree
from engine.search.tree_protocol import SelfPlayTree
from engine.uint8_io import Uint8Quantization
from trainer.config import SelfPlaySettings
from trainer.network.uint8_planes import attach_uint8_planes
from trainer.selfplay.root_rules import apply_root_rules, root_rules_of
from trainer.store.shards import GameData, PackedPosition, pack_position

log = logging.getLogger(__name__)

#: Play-outs of the ownership estimate of a Go game that ended without being counted (a resignation):
#: the auxiliary ownership and score targets (:func:`~engine.games.go_ownership.final_ownership`).
OWNERSHIP_PLAYOUTS = 32


@dataclasses.dataclass
class FinishedGame:
    """A finished self-play game.

    Attributes:
        data: recorded positions and the result (for a shard).
        moves: every move in protocol notation (for the game record).
        winner: 0 / 1 / ``None`` (draw).
        reason: ``resign``, ``checkmate``, ``two-passes``, ``max-length`` ...
        score: Go score from black's point of view (``None`` elsewhere or on resignation).
        played_out: resignation was disabled in this game.
        would_resign: in a played-out game, the player who would have resigned first (else ``None``).
        network_step: step of the network that played most of it (the one at its end).
    """

    data: GameData
    moves: list[str]
    winner: int | None
    reason: str
    score: float | None
    played_out: bool
    would_resign: int | None
    network_step: int

    @property
    def plies(self) -> int:
        return len(self.moves)

    @property
    def false_positive(self) -> bool | None:
        """Played-out games only: would resigning have been wrong?"""
        if self.would_resign is None:
            return None
        return self.winner != 1 - self.would_resign


@dataclasses.dataclass
class _Slot:
    """One game in progress: its tree and position, the kind of its current search, what it recorded
    so far, and its resignation bookkeeping (per player)."""

    tree: SelfPlayTree[Any]
    state: GameState[Any]
    full: bool
    resign_allowed: bool
    positions: list[PackedPosition] = dataclasses.field(default_factory=list)
    players: list[int] = dataclasses.field(default_factory=list)
    moves: list[str] = dataclasses.field(default_factory=list)
    low_value_moves: list[int] = dataclasses.field(default_factory=lambda: [0, 0])
    would_resign: int | None = None
    #: per player: the resign signal (max of root and best-move value) of its newest moves, and the
    #: lowest threshold at which it would have resigned (min over ``resign_consecutive`` windows of the
    #: window's maximum; +inf: at none)
    signals: tuple[collections.deque[float], collections.deque[float]] = dataclasses.field(
        default_factory=lambda: (collections.deque(), collections.deque())
    )
    resign_bound: list[float] = dataclasses.field(default_factory=lambda: [float("inf"), float("inf")])
    #: how often each position (``GameState.key()``) occurred in this game so far
    seen: collections.Counter[Hashable] = dataclasses.field(default_factory=collections.Counter)
    #: whether the search of the current move is done, as last computed (:meth:`SelfPlayer._done`);
    #: ``None`` once the tree has changed since (a selection, a move)
    done: bool | None = None
    #: the visits this slot's search wants when not the settings' (a reanalysed position's)
    simulations: int | None = None


@dataclasses.dataclass(frozen=True)
class SearchTarget:
    """A search's training targets for one position: the policy indices ``[K]`` (int64) of the root
    moves given a share, their shares ``pi [K]`` (float32, summing to 1) and the root value ``q`` from
    the side to move (:func:`root_value`)."""

    indices: np.ndarray
    pi: np.ndarray
    q: float


@dataclasses.dataclass
class _InFlight:
    """A pipelined half-step whose network call is in flight: the games' indices (whose due moves are
    made once it is backed up) and the call with the trees' batches."""

    indices: list[int]
    call: ManyTreesBatch


@dataclasses.dataclass
class SelfPlayStats:
    """Counters since the player was made."""

    steps: int = 0
    calls: int = 0
    evaluations: int = 0
    eval_seconds: float = 0.0
    seconds: float = 0.0
    moves: int = 0
    positions: int = 0
    games: int = 0

    def as_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


def root_value(tree: SelfPlayTree[Any]) -> float:
    """The search's value of the root from its side to move: +-1 when proven, else the mean backed-up
    value (recorded beside ``z`` as the shards' ``q``, for value targets mixed with it; ``pack_position``
    keeps it in [-1, 1])."""
    proof, _ = tree.root_proof()
    if proof == Proof.WIN:
        return 1.0
    if proof == Proof.LOSS:
        return -1.0
    return float(tree.root_q)


def search_configs(
    game: Game, settings: SelfPlaySettings, seed: int | None = None
) -> tuple[SearchConfig, SearchConfig]:
    """``(full, fast)`` search settings: the full search has root noise and forced playouts (or the Gumbel
    root search) and no root FPU reduction; both search for mates at the root with
    ``settings.root_mate_nodes``."""
    alpha = settings.dirichlet_alpha
    if alpha is None:
        alpha = game.profile.noise_alpha
    gumbel = None
    if settings.root_search == "gumbel":
        gumbel = GumbelConfig(
            simulations=settings.simulations, considered=settings.gumbel_considered, reuse=True
        )
    full = SearchConfig(
        dirichlet_alpha=None if gumbel is not None else alpha,
        dirichlet_epsilon=settings.dirichlet_epsilon,
        fpu_reduction_root=0.0,
        batch_size=settings.leaves_per_tree,
        gumbel=gumbel,
        forced_playouts=0.0 if gumbel is not None else settings.forced_playouts,
        repetition_penalty=settings.repetition_penalty,
        root_mate_nodes=settings.root_mate_nodes,
        seed=seed,
    )
    fast = SearchConfig(
        batch_size=settings.leaves_per_tree,
        repetition_penalty=settings.repetition_penalty,
        root_mate_nodes=settings.root_mate_nodes,
        seed=seed,
    )
    return full, fast


class SelfPlayer:
    """Plays self-play games in parallel with one evaluator.

    Args:
        game: the ruleset (its ``new_state()`` starts each game).
        settings: :class:`~trainer.config.SelfPlaySettings`.
        evaluator: the network (replace it with :meth:`set_evaluator`).
        seed: random seed (noise, move sampling, resignation play-outs).
        network_step: the training step of the evaluator's network (recorded with each game).
    """

    def __init__(
        self,
        game: Game,
        settings: SelfPlaySettings,
        evaluator: Evaluator,
        seed: int = 0,
        network_step: int = 0,
    ) -> None:
        self.game = game
        self.info = game.info
        self.settings = settings
        self.root_rules = root_rules_of(settings)
        self.evaluator = evaluator
        self.network_step = network_step
        self.rng = np.random.default_rng(seed)
        self.full_config, self.fast_config = search_configs(game, settings)
        #: How the trees write their leaves' planes when the network takes uint8 ones (an int8 copy on the
        #: CPU, shogi's compiled trees: ``trainer/network/uint8_planes.py``); ``None``: float32.  Fixed for the
        #: run: a later network is made to take the same (:meth:`set_evaluator`).
        self.planes_quantization: Uint8Quantization | None = None
        if settings.uint8_planes and game.profile.uint8_planes:
            self.planes_quantization = attach_uint8_planes(evaluator)
        self.slots: list[_Slot | None] = []
        self.started = 0
        self.game_limit: int | None = None
        self.stats = SelfPlayStats()
        self.pipeline = settings.pipeline
        self._group = 0
        #: safe thresholds of the newest played-out games (see the module docstring); add with
        #: :meth:`add_resign_samples`, which keeps :attr:`resign_threshold` up to date
        self.resign_samples: collections.deque[float] = collections.deque(maxlen=500)
        self.resign_threshold: float | None = self._calibrated_threshold()
        self._pending: _InFlight | None = None
        self._pool: ThreadPoolExecutor | None = None
        # One network call's rows for each group of games (two calls in flight when pipelined): the
        # compiled trees write their leaves there, so the call takes them without a copy.
        self._rows: dict[int, SharedRows] = {}

    def add_resign_samples(self, bounds: Iterable[float]) -> None:
        """Add played-out games' safe thresholds and recompute :attr:`resign_threshold`."""
        self.resign_samples.extend(bounds)
        self.resign_threshold = self._calibrated_threshold()

    def _calibrated_threshold(self) -> float | None:
        """The threshold in use (``None``: nobody resigns, while calibrating or when disabled)."""
        s = self.settings
        if s.resign_threshold is None:
            return None
        if s.resign_false_positive_target is None:
            return s.resign_threshold
        if len(self.resign_samples) < s.resign_calibration_games:
            return None
        quantile = float(np.quantile(np.array(self.resign_samples), s.resign_false_positive_target))
        return min(s.resign_threshold, quantile)

    def set_evaluator(self, evaluator: Evaluator, network_step: int = 0) -> None:
        """Use a new network from the next step on."""
        if self.planes_quantization is not None:
            attach_uint8_planes(evaluator, self.planes_quantization)
        self.evaluator = evaluator
        self.network_step = network_step

    # ---- games --------------------------------------------------------------------------------------
    def _new_slot(self) -> _Slot:
        s = self.settings
        full = (not s.playout_cap) or self.rng.random() < s.full_search_fraction
        config = self.full_config if full else self.fast_config
        state = self.game.new_state()
        rng = np.random.default_rng(self.rng.integers(2**63))
        tree = new_tree(state, config, rng, self.planes_quantization)
        resign_allowed = self.resign_threshold is not None and self.rng.random() >= s.resign_playout_fraction
        self.started += 1
        apply_root_rules(tree, state, self.root_rules)
        slot = _Slot(tree=tree, state=state, full=full, resign_allowed=resign_allowed)
        slot.seen[state.key()] += 1
        return slot

    def _fill_slots(self) -> None:
        want = self.settings.games_in_parallel
        while len(self.slots) < want:
            self.slots.append(None)
        for i, slot in enumerate(self.slots):
            if slot is None and (self.game_limit is None or self.started < self.game_limit):
                self.slots[i] = self._new_slot()

    @property
    def active(self) -> int:
        return sum(1 for s in self.slots if s is not None)

    def play_games(self, count: int) -> list[FinishedGame]:
        """Play exactly ``count`` more games (in parallel) and return them."""
        self.game_limit = self.started + count
        finished: list[FinishedGame] = []
        while len(finished) < count:
            finished.extend(self.step())
        self.game_limit = None
        return finished

    # ---- one step -----------------------------------------------------------------------------------
    def step(self) -> list[FinishedGame]:
        """Select leaves in the games, evaluate them in one call, back up, make due moves.

        Without pipelining every game takes part in every step.  With ``pipeline`` the games are two
        halves: while one half's leaves are evaluated on a helper thread (onnxruntime releases the GIL),
        the other half selects its next leaves, so tree work and network work overlap.

        Returns:
            the games that ended in this step.
        """
        t0 = time.perf_counter()
        self._fill_slots()
        finished = self._step_pipelined() if self.pipeline else self._step_together()
        self.stats.steps += 1
        self.stats.games += len(finished)
        self.stats.seconds += time.perf_counter() - t0
        return finished

    def _step_together(self) -> list[FinishedGame]:
        """All games: select, one network call on this thread, back up, move."""
        indices = list(range(len(self.slots)))
        batch = self._select(indices)
        if batch:
            call = ManyTreesBatch(batch, self.evaluator, shared=self._rows.get(0))
            call.backup()
            self._count(call)
        return self._make_moves(indices)

    def _step_pipelined(self) -> list[FinishedGame]:
        """One half of the games selects and queues its network call; then the other half's call (queued
        by the previous step) is backed up and its due moves are made.

        This half's batch is queued before the other half's is finished, so the helper goes from one
        network call straight to the next while this thread backs up and makes moves.  Only the network
        call runs there (``Evaluator.infer_dense``, no GIL); the softmax runs here, in
        :meth:`ManyTreesBatch.backup`: a helper that needs the GIL waits for it while this thread
        holds it.
        """
        group = self._group
        self._group ^= 1
        indices = [i for i in range(len(self.slots)) if i % 2 == group]
        batch = self._select(indices, group)
        queued = None
        if batch:
            call = ManyTreesBatch(batch, self.evaluator, self._executor(), self._rows.get(group))
            queued = _InFlight(indices, call)
        finished: list[FinishedGame] = []
        previous, self._pending = self._pending, queued
        if previous is not None:
            previous.call.backup()
            self._count(previous.call)
            finished = self._make_moves(previous.indices)
        if queued is None:
            finished += self._make_moves(indices)
        return finished

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="selfplay-eval")
            warm_up_network_thread(self.evaluator, self._pool)
        return self._pool

    def close(self) -> None:
        """Wait for a batch in flight and stop the helper thread (pipelining only)."""
        if self._pending is not None:
            self._pending.call.wait()
            self._pending = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _select(self, indices: list[int], group: int = 0) -> list[TreeBatch]:
        """The batches of the games at ``indices`` that still search, per tree (games without leaves
        left out); the compiled trees' leaves go to ``group``'s shared rows, one after another."""
        return self._select_slots([self.slots[i] for i in indices], group)

    def _select_slots(self, slots: Sequence[_Slot | None], group: int) -> list[TreeBatch]:
        """:meth:`_select` over ``slots`` themselves."""
        k = self.settings.leaves_per_tree
        rows = self._shared_rows(group, len(slots) * k)
        batch: list[TreeBatch] = []
        for slot in slots:
            if slot is None or self._done(slot):
                continue
            slot.done = None  # the selection, and the backup after it, change the tree
            tree = slot.tree
            leaves_wanted = min(k, self._gumbel_walks(slot)) if slot.full else k
            shares = hasattr(tree, "shared_rows")  # the compiled trees (a test's reference tree has none)
            if shares:
                setattr(tree, "shared_rows", rows)  # noqa: B010 (not in the SelfPlayTree protocol)
            leaves = tree.select_batch(leaves_wanted)
            if shares:
                rows.advance(len(leaves))
            if len(leaves):
                batch.append((tree, leaves))
        return batch

    @staticmethod
    def _gumbel_walks(slot: _Slot) -> int:
        """The most walks a Gumbel search's next selection needs (at least 1): the simulations its
        schedule still asks for, within its fresh budget, so no walk of a batch goes past the schedule
        (a large number for other searches)."""
        tree = slot.tree
        gumbel = tree.config.gumbel
        root = tree.gumbel_root
        if gumbel is None or root is None:
            return 1 << 30
        left = min(root.remaining(tree.root_child_visits()), gumbel.simulations - tree.playouts)
        return max(1, left)

    def _shared_rows(self, group: int, rows: int) -> SharedRows:
        """``group``'s rows for a call of up to ``rows`` leaves, emptied (its last call is backed up)."""
        shared = self._rows.get(group)
        if shared is None or shared.planes.shape[0] < rows:
            shared = self._rows[group] = SharedRows(rows, self.info.input_shape, self.planes_quantization)
        shared.reset()
        return shared

    def _count(self, call: ManyTreesBatch) -> None:
        """Count a backed-up network call in the statistics."""
        self.stats.eval_seconds += call.seconds
        self.stats.evaluations += call.size
        self.stats.calls += 1

    def _make_moves(self, indices: list[int]) -> list[FinishedGame]:
        finished: list[FinishedGame] = []
        for i in indices:
            slot = self.slots[i]
            if slot is None or not self._done(slot):
                continue
            done = self._move(slot)
            if done is not None:
                finished.append(done)
                self.slots[i] = None
        return finished

    def _target(self, slot: _Slot) -> int:
        s = self.settings
        if slot.simulations is not None:
            return slot.simulations
        return s.simulations if slot.full else s.fast_simulations

    def _done(self, slot: _Slot) -> bool:
        """:meth:`_search_done`, computed once per change of the tree: a game's check after its backup
        (here, before its move) is still valid at the next step's selection."""
        if slot.done is None:
            slot.done = self._search_done(slot)
        return slot.done

    def _search_done(self, slot: _Slot) -> bool:
        """Whether the search of ``slot``'s move is over (``SelfPlayTree.search_done``: a terminal,
        proven or full root, or a forced move need no more search)."""
        tree = slot.tree
        gumbel = tree.config.gumbel
        if slot.full and gumbel is not None:  # the halving schedule met, or its fresh budget spent
            if tree.search_done(float("inf"), 0) or tree.playouts >= gumbel.simulations:
                return True
            root = tree.gumbel_root
            return root is not None and root.remaining(tree.root_child_visits()) == 0
        target = self._target(slot)
        # reused visits count, but a full search still makes some fresh ones so its new noise matters
        fresh = max(1, target // 4) if slot.full else 1
        return tree.search_done(target, fresh)

    # ---- positions searched again (reanalysis) ------------------------------------------------------
    def search_positions(
        self, states: Sequence[GameState[Any]], simulations: int | None = None
    ) -> list[SearchTarget]:
        """Search each of ``states`` (positions with legal moves) once with this player's network and
        full-search settings (root noise, forced playouts or Gumbel, the root rules), ``simulations``
        visits each (``None``: ``settings.simulations``), all trees' leaves in one network call a step.

        Returns:
            one :class:`SearchTarget` per state, in order: the targets self-play would have recorded.
        """
        slots: list[_Slot] = []
        for state in states:
            rng = np.random.default_rng(self.rng.integers(2**63))
            tree = new_tree(state, self.full_config, rng, self.planes_quantization)
            apply_root_rules(tree, state, self.root_rules)
            slot = _Slot(tree=tree, state=state, full=True, resign_allowed=False)
            slot.simulations = simulations
            slots.append(slot)
        group = 2  # rows of their own: a pipelined player's two groups may hold calls of its games
        while batch := self._select_slots(slots, group):
            call = ManyTreesBatch(batch, self.evaluator, shared=self._rows.get(group))
            call.backup()
            self._count(call)
        return [self._search_target(slot) for slot in slots]

    def _search_policy(self, slot: _Slot) -> tuple[np.ndarray, bool]:
        """``slot``'s finished search's policy target over the root moves (the Gumbel root's improved
        policy when it has one and the root is not a proven win), and whether the root is proven won."""
        tree = slot.tree
        pi, won = self._target_policy(tree, tree.pruned_root_visits())
        gumbel = self._gumbel_root(slot)
        if gumbel is not None and not won:
            pi = gumbel.policy_target(tree.root_child_visits(), tree.root_values(), tree.root_q)
        return pi, won

    def _search_target(self, slot: _Slot) -> SearchTarget:
        """The policy target and root value of ``slot``'s finished search (as :meth:`_move` records)."""
        tree = slot.tree
        pi, _ = self._search_policy(slot)
        indices = np.asarray(tree.root_policy_indices(), np.int64)
        keep = pi > 0
        return SearchTarget(indices[keep], pi[keep].astype(np.float32), root_value(tree))

    # ---- one move -----------------------------------------------------------------------------------
    def _move(self, slot: _Slot) -> FinishedGame | None:
        """Play a move in ``slot`` once its search is done (or end the game); returns the game when it
        is over: the position is recorded (full searches), the player may resign, the move is chosen
        and the tree advanced to it."""
        state = slot.state
        outcome = state.outcome()
        if outcome is not None:
            return self._finish(slot, state, outcome.value, outcome.reason, outcome.score)
        if not slot.tree.root_move_count:  # unexpanded root without moves: cannot happen with sane rules
            return self._finish(slot, state, 0.0, "no-moves", None)
        pi, won = self._search_policy(slot)
        if slot.full:
            self._record_position(slot, pi)
        if self.settings.resign_threshold is not None and self._resigns(slot):
            return self._finish(slot, state, -1.0, "resign", None)
        move = self._choose(slot, pi, won)
        return self._advance(slot, move)

    def _record_position(self, slot: _Slot, pi: np.ndarray) -> None:
        """Keep the root position with its search policy ``pi`` ``[L]`` over the root's moves (their policy
        indices from the tree) and the search's value."""
        tree, state = slot.tree, slot.state
        indices = tree.root_policy_indices()
        packed = pack_position(state.encode(), indices, pi.astype(np.float32), state.ply, root_value(tree))
        slot.positions.append(packed)
        slot.players.append(state.side_to_move)
        self.stats.positions += 1

    def _resigns(self, slot: _Slot) -> bool:
        """Whether the player to move resigns now: its root and best-move values stayed below the
        threshold for ``resign_consecutive`` moves, and resignation is allowed in this game (in a
        played-out game the would-be resignation is only noted)."""
        tree = slot.tree
        player = slot.state.side_to_move
        best = tree.best_root_slot()
        assert best is not None  # a move is being chosen: the root has moves
        _, best_q, _, _ = tree.slot_stats(best)
        root_q = tree.root_q
        self._note_signal(slot, player, max(float(root_q), float(best_q)))
        threshold = self.resign_threshold
        if threshold is not None and root_q < threshold and best_q < threshold:
            slot.low_value_moves[player] += 1
        else:
            slot.low_value_moves[player] = 0
        if slot.low_value_moves[player] < self.settings.resign_consecutive:
            return False
        if slot.resign_allowed:
            return True
        if slot.would_resign is None:
            slot.would_resign = player
        return False

    @staticmethod
    def _gumbel_root(slot: _Slot) -> GumbelRoot | None:
        """The Gumbel root decisions of a full search that made them (``None``: PUCT, or a forced move),
        over the tree's root arrays (``SelfPlayTree.gumbel_root``)."""
        return slot.tree.gumbel_root if slot.full else None

    def _choose(self, slot: _Slot, pi: np.ndarray, won: bool) -> Any:
        """A Gumbel search's own move; else sampled from ``pi`` ``[L]`` (over the root slots) in the
        opening (``sample_plies``), else the search's best move."""
        tree = slot.tree
        gumbel = self._gumbel_root(slot)
        if gumbel is not None and not won:
            return tree.root_move(gumbel.best(tree.root_child_visits(), tree.root_values(), tree.root_q))
        state = slot.state
        if state.ply < self.settings.sample_plies and float(pi.sum()) > 0 and not won:
            return tree.root_move(int(self.rng.choice(len(pi), p=pi)))
        return tree.best_move()

    def _advance(self, slot: _Slot, move: Any) -> FinishedGame | None:
        """Play ``move``, keep its subtree, and set up the next search; the game when ``move`` ends it."""
        tree, state = slot.tree, slot.state
        slot.moves.append(state.move_to_text(move))
        self.stats.moves += 1
        # the next move's kind (fast / full) decides whether the new root gets noise
        s = self.settings
        repeated = s.playout_cap and self._repeats(slot, move)
        drawn = (not s.playout_cap) or self.rng.random() < s.full_search_fraction
        slot.full = drawn or repeated
        tree.config = self.full_config if slot.full else self.fast_config
        slot.done = None
        tree.advance(move)
        state.push(move)
        tree.reset_stats()
        apply_root_rules(tree, state, self.root_rules)
        if tree.root_terminal:
            outcome = state.outcome()
            assert outcome is not None
            return self._finish(slot, state, outcome.value, outcome.reason, outcome.score)
        return None

    @staticmethod
    def _repeats(slot: _Slot, move: Any) -> bool:
        """Count the position ``move`` leads to; whether it occurred before in this game.  With playout
        caps a repeated position always gets a full search: fast searches (no noise, a handful of visits)
        play the network's favourite move, and an early network's favourites shuffle a piece back and
        forth until the game is drawn by repetition (shogi's sennichite, docs/experiments.md)."""
        state = slot.state
        state.push(move)
        key = state.key()
        state.pop()
        slot.seen[key] += 1
        return slot.seen[key] > 1

    def _note_signal(self, slot: _Slot, player: int, signal: float) -> None:
        """Track the lowest threshold at which ``player`` would have resigned so far."""
        window = slot.signals[player]
        window.append(signal)
        if len(window) > self.settings.resign_consecutive:
            window.popleft()
        if len(window) == self.settings.resign_consecutive:
            slot.resign_bound[player] = min(slot.resign_bound[player], max(window))

    def _calibrate(self, slot: _Slot, winner: int | None, reason: str) -> None:
        """A played-out game's safe threshold joins the calibration samples."""
        if self.settings.resign_threshold is None or slot.resign_allowed or reason == "resign":
            return
        not_losing = (0, 1) if winner is None else (winner,)
        self.add_resign_samples([min(slot.resign_bound[p] for p in not_losing)])

    @staticmethod
    def _target_policy(tree: SelfPlayTree[Any], visits: np.ndarray) -> tuple[np.ndarray, bool]:
        """The search policy ``pi`` over the root moves, and whether the root is a proven win.

        ``pi`` is the visit distribution, corrected by what the search proved: when a move is a proven
        win, ``pi`` is that move alone (the shortest win); moves proven to lose get no probability unless
        every move loses.  The search stops as soon as the root is proven, so the raw visits of a proven
        win can be a handful spread over many moves; without this correction the network never learns
        the winning reply (in Go under Tromp-Taylor rules: passing back after an early pass), the search
        at low visit counts cannot refute the losing move before it, and self-play collapses into
        three-ply games.
        """
        n = len(visits)
        best = tree.best_root_slot()
        assert best is not None  # a move is being chosen: the root has moves
        if tree.slot_stats(best)[2] == Proof.WIN:
            pi = np.zeros(n)
            pi[best] = 1.0
            return pi, True
        # moves excluded at the root (the Go root rules) keep no reused visits and get no share
        mask = tree.root_mask
        if mask is None:
            allowed = np.ones(n, bool)
            visits = np.asarray(visits, np.float64)
        else:
            allowed = np.asarray(mask, bool)
            visits = np.where(allowed, visits, 0.0)
        total = float(visits.sum())
        pi = visits / total if total > 0 else allowed / allowed.sum()
        losing = tree.root_slot_proofs() == Proof.LOSS
        if not losing.any():  # nothing proven lost: the visit shares stand
            return pi, False
        playable = allowed & ~losing
        if (losing & allowed).any() and playable.any():
            kept = np.where(playable, pi, 0.0)
            pi = kept / kept.sum() if kept.sum() > 0 else playable / playable.sum()
        return pi, False

    def _finish(
        self, slot: _Slot, state: GameState[Any], value: float, reason: str, score: float | None
    ) -> FinishedGame:
        """End a game whose result is ``value`` for the side to move of ``state``."""
        mover = state.side_to_move
        winner = None if value == 0 else (mover if value > 0 else 1 - mover)
        black_score = None
        if score is not None:
            black_score = score if mover == 0 else -score
        self._calibrate(slot, winner, reason)
        data = GameData(slot.positions, slot.players, winner)
        if isinstance(state, GoState):
            owners, margin = final_ownership(state, black_score is not None, OWNERSHIP_PLAYOUTS, self.rng)
            data.ownership, data.score = owners, margin
        return FinishedGame(
            data=data,
            moves=slot.moves,
            winner=winner,
            reason=reason,
            score=black_score,
            played_out=self.settings.resign_threshold is not None and not slot.resign_allowed,
            would_resign=slot.would_resign,
            network_step=self.network_step,
        )
