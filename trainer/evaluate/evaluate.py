"""Matches: network against network at equal visits, or a network against an external UCI / USI / GTP
engine, from varied openings, with Elo and error bars (:mod:`trainer.evaluate.elo`).

Network matches play ``games_in_parallel`` games at once.  Each game has one search tree per network
(the engine's own, :func:`~engine.search.tree_factory.new_tree`: compiled for Go and chess; no noise,
reused between moves); every step the side to move of each game selects leaves, the leaves of all games
are evaluated with one call per network (:class:`~engine.search.many_trees.ManyTreesBatch`), and a side
whose root has ``simulations`` visits plays its most visited move (greedy, as in evaluation play).

Openings: each pair of games starts from the same position, once with each network playing first, so
games differ and colour is balanced: by default the position reached by ``opening_plies`` random legal
moves (Go: no passes), or the openings of a suite (:mod:`trainer.evaluate.opening_suites`, :func:`suite_pairs`).
A caller's ``on_game`` sees each game as it ends and can stop the match (the SPRT of
:mod:`trainer.evaluate.sprt`): no game starts after that and the games still going are dropped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import queue
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.evaluator import Evaluator
from engine.games.base import Game, GameState, Outcome
from engine.search.config import SearchConfig
from engine.search.many_trees import ManyTreesBatch, TreeBatch
from engine.search.tree_factory import new_tree
from engine.search.tree_protocol import SelfPlayTree
from trainer.evaluate.elo import MatchResult
from trainer.evaluate.opening_suites import Opening
from trainer.selfplay.root_rules import DEFAULT_ROOT_RULES, GoRootRules, apply_root_rules

log = logging.getLogger(__name__)


@dataclasses.dataclass
class MatchGame:
    """One finished match game: ``a_first`` tells whether player A moved first."""

    opening: list[str]
    moves: list[str]
    a_first: bool
    winner: int | None  # 0 / 1 / None, by player index in the game (0 moves first)
    reason: str
    score: float | None = None
    pair: int = 0  # the games of a pair share the opening, colours reversed
    position: str | None = None  # the opening's start (FEN / SFEN); None: the initial position

    @property
    def a_result(self) -> float:
        """1 if A won, 0.5 for a draw, 0 if A lost."""
        if self.winner is None:
            return 0.5
        a_index = 0 if self.a_first else 1
        return 1.0 if self.winner == a_index else 0.0


@dataclasses.dataclass
class MatchReport:
    result: MatchResult
    games: list[MatchGame]
    seconds: float

    def describe(self) -> str:
        return self.result.describe()


def tally(games: Sequence[MatchGame]) -> MatchResult:
    w = sum(1 for g in games if g.a_result == 1.0)
    d = sum(1 for g in games if g.a_result == 0.5)
    return MatchResult(w, d, len(games) - w - d)


def random_openings(
    game: Game, count: int, plies: int, rng: np.random.Generator, tries: int = 50
) -> list[list[Any]]:
    """``count`` distinct openings of ``plies`` random legal moves (no pass in Go, never game-ending)."""
    openings: list[list[Any]] = []
    seen: set[tuple[str, ...]] = set()
    for _ in range(count):
        best: list[Any] = []
        for _attempt in range(tries):
            moves = random_plies(game, game.new_state(), plies, rng)
            key = tuple(str(m) for m in moves)
            best = moves
            if key not in seen:
                seen.add(key)
                break
        openings.append(best)
    return openings


def random_plies(game: Game, state: GameState[Any], plies: int, rng: np.random.Generator) -> list[Any]:
    """Up to ``plies`` random legal moves played on ``state`` (no pass in Go; stops before a move that
    would end the game)."""
    moves: list[Any] = []
    for _ply in range(plies):
        legal = state.legal_moves()
        if game.info.name == "go":
            legal = [m for m in legal if m != game.info.board_size**2]
        if not legal:
            break
        move = legal[int(rng.integers(len(legal)))]
        state.push(move)
        if state.outcome() is not None:
            state.pop()
            break
        moves.append(move)
    return moves


def random_start_openings(game: Game, count: int, plies: int, rng: np.random.Generator) -> list[Opening]:
    """:func:`random_openings` as :class:`Opening` starts (moves in protocol notation)."""
    starts = []
    for i, moves in enumerate(random_openings(game, count, plies, rng)):
        state = game.new_state()
        texts = []
        for m in moves:
            texts.append(state.move_to_text(m))
            state.push(m)
        starts.append(Opening(f"random {i + 1}", tuple(texts)))
    return starts


#: Random plies added to a suite's openings in each round after the first (:func:`suite_pairs`).
EXTRA_PLIES_PER_ROUND = 2


def suite_pairs(
    game: Game, suite: Sequence[Opening], pairs: int, rng: np.random.Generator, tries: int = 50
) -> list[Opening]:
    """The starts of ``pairs`` game pairs from ``suite``: its openings in order, then again and again,
    each later round adding :data:`EXTRA_PLIES_PER_ROUND` random plies per round to every opening, so
    that a deterministic search does not replay a pair it has played (the pairs stay distinct)."""
    starts: list[Opening] = []
    seen: set[tuple[str | None, tuple[str, ...]]] = set()
    for k in range(pairs):
        base = suite[k % len(suite)]
        extra = EXTRA_PLIES_PER_ROUND * (k // len(suite))
        start = base
        for _attempt in range(tries if extra else 1):
            state = base.state(game)
            texts = list(base.moves)
            for move in random_plies(game, state.copy(), extra, rng):
                texts.append(state.move_to_text(move))
                state.push(move)
            start = Opening(
                base.name + (f" +{len(texts) - len(base.moves)}" if extra else ""),
                tuple(texts),
                base.position,
            )
            if (start.position, start.moves) not in seen:
                break
        seen.add((start.position, start.moves))
        starts.append(start)
    return starts


@dataclasses.dataclass
class _MatchSlot:
    state: GameState[Any]
    trees: tuple[SelfPlayTree[Any], SelfPlayTree[Any]]  # tree of player A, tree of player B
    a_first: bool
    opening: Opening
    pair: int
    moves: list[str]

    def player_to_move(self) -> int:
        """0 for A, 1 for B."""
        side = self.state.side_to_move
        return side if self.a_first else 1 - side


def play_match(
    game: Game,
    evaluators: tuple[Evaluator, Evaluator],
    games: int,
    simulations: int,
    opening_plies: int = 4,
    seed: int = 0,
    games_in_parallel: int = 20,
    leaves_per_tree: int = 4,
    root_rules: GoRootRules = DEFAULT_ROOT_RULES,
    openings: Sequence[Opening] | None = None,
    on_game: Callable[[MatchGame], bool] | None = None,
) -> MatchReport:
    """Play ``games`` games between network A (``evaluators[0]``) and network B at equal visits
    (both under the Go root rules ``root_rules``: :func:`trainer.selfplay.root_rules.go_root_moves`).

    ``openings``: the start of each pair (games ``2k`` and ``2k + 1`` play ``openings[k]``), default
    ``opening_plies`` random moves.  ``on_game(game)`` is called as each game ends; ``True`` stops the
    match (the games still going are dropped)."""
    t0 = time.perf_counter()
    starts = _pair_starts(game, games, opening_plies, seed, openings)
    config = SearchConfig(batch_size=leaves_per_tree)
    pending = [(starts[i // 2], i // 2, i % 2 == 0) for i in range(games)]
    slots: list[_MatchSlot | None] = [None] * min(games_in_parallel, games)
    done: list[MatchGame] = []
    stopped = False
    while len(done) < games and not stopped:
        for i, slot in enumerate(slots):
            if slot is None and pending:
                slots[i] = _start_slot(game, *pending.pop(0), config, root_rules)
        _search(slots, evaluators, simulations, leaves_per_tree)
        for i, slot in enumerate(slots):
            if slot is None:
                continue
            tree = slot.trees[slot.player_to_move()]
            if _needs_search(tree, simulations):
                continue
            finished = _play(slot, tree, root_rules)
            if finished is not None:
                done.append(finished)
                slots[i] = None
                if on_game is not None and on_game(finished):
                    stopped = True
                    break
    return MatchReport(tally(done), done, time.perf_counter() - t0)


def _pair_starts(
    game: Game, games: int, opening_plies: int, seed: int, openings: Sequence[Opening] | None
) -> list[Opening]:
    """The start of each pair: ``openings``, or random ones (``opening_plies`` moves, seeded)."""
    pairs = (games + 1) // 2
    if openings is None:
        return random_start_openings(game, pairs, opening_plies, np.random.default_rng(seed))
    if len(openings) < pairs:
        raise ValueError(f"{games} games need {pairs} openings, got {len(openings)}")
    return list(openings)


def _start_slot(
    game: Game, opening: Opening, pair: int, a_first: bool, config: SearchConfig, root_rules: GoRootRules
) -> _MatchSlot:
    """A new match game after ``opening``: one tree for each player."""
    state = opening.state(game)
    slot = _MatchSlot(state, (new_tree(state, config), new_tree(state, config)), a_first, opening, pair, [])
    for t in slot.trees:
        apply_root_rules(t, state, root_rules)
    return slot


def _search(
    slots: Sequence[_MatchSlot | None],
    evaluators: tuple[Evaluator, Evaluator],
    simulations: int,
    leaves_per_tree: int,
) -> None:
    """One search step of every game: the side to move selects leaves, each network evaluates the
    leaves of all the games in one call, and the values are backed up."""
    groups: tuple[list[TreeBatch], list[TreeBatch]] = ([], [])
    for slot in slots:
        if slot is None:
            continue
        p = slot.player_to_move()
        tree = slot.trees[p]
        if _needs_search(tree, simulations):
            batch = tree.select_batch(leaves_per_tree)
            if len(batch):
                groups[p].append((tree, batch))
    for p in (0, 1):
        if groups[p]:
            ManyTreesBatch(groups[p], evaluators[p]).backup()


def _needs_search(tree: SelfPlayTree[Any], simulations: int) -> bool:
    if tree.root_terminal or tree.full or tree.root_proof()[0] != 0:
        return False
    if tree.root_move_count == 1:
        return False
    return tree.root_visit_count < simulations


def _result(state: GameState[Any], outcome: Outcome) -> tuple[int | None, float | None]:
    """``(winner, score)`` of a finished game: the winner by player index (0 moved first, ``None``
    for a draw) and the score from the first player's side (Go)."""
    mover = state.side_to_move
    winner = None if outcome.value == 0 else (mover if outcome.value > 0 else 1 - mover)
    score = None if outcome.score is None else (outcome.score if mover == 0 else -outcome.score)
    return winner, score


def _play(slot: _MatchSlot, tree: SelfPlayTree[Any], root_rules: GoRootRules) -> MatchGame | None:
    state = slot.state
    outcome = state.outcome()
    if outcome is None:
        move = tree.best_move()
        if move is None:
            moves = state.legal_moves()
            move = moves[0]
        slot.moves.append(state.move_to_text(move))
        state.push(move)
        for t in slot.trees:
            t.advance(move)
            t.reset_stats()
            apply_root_rules(t, state, root_rules)
        outcome = state.outcome()
        if outcome is None:
            return None
    winner, score = _result(state, outcome)
    opening = slot.opening
    return MatchGame(
        list(opening.moves),
        slot.moves,
        slot.a_first,
        winner,
        outcome.reason,
        score,
        slot.pair,
        opening.position,
    )


# ---- external engines ---------------------------------------------------------------------------------


class EngineError(RuntimeError):
    """An external engine misbehaved (died, timed out, sent nonsense)."""


class EngineProcess:
    """A text-protocol engine on stdin/stdout with a reader thread and timeouts."""

    def __init__(self, command: str | Sequence[str], timeout: float = 60.0):
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.timeout = timeout
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\r\n"))
        self.lines.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise EngineError(f"engine closed its input ({e})") from None

    def read_until(self, predicate: Callable[[str], bool], timeout: float | None = None) -> list[str]:
        """Lines up to and including the first for which ``predicate(line)`` is true."""
        deadline = time.monotonic() + (timeout or self.timeout)
        out: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise EngineError(f"engine timed out; last lines: {out[-5:]}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                raise EngineError(f"engine timed out; last lines: {out[-5:]}") from None
            if line is None:
                raise EngineError(f"engine exited; last lines: {out[-5:]}")
            out.append(line)
            if predicate(line):
                return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait(5)


class ExternalEngine:
    """An external opponent speaking UCI (chess), USI (shogi) or GTP (Go).

    Args:
        command: the command line (``stockfish``, ``fairy-stockfish``, ``gnugo --mode gtp --level 1``).
        protocol: ``uci``, ``usi`` or ``gtp``.
        go: the search command for UCI / USI (default ``go movetime 100`` / ``go btime 0 wtime 0 byoyomi
            100``); GTP uses ``genmove``.
        options: ``setoption`` pairs for UCI / USI (for example ``{"Skill Level": "0"}``).
        board_size, komi: GTP board settings.
    """

    def __init__(
        self,
        command: str,
        protocol: str,
        go: str | None = None,
        options: dict[str, str] | None = None,
        board_size: int = 19,
        komi: float | None = None,
        timeout: float = 60.0,
    ):
        self.protocol = protocol
        self.proc = EngineProcess(command, timeout)
        self.go = go or {"uci": "go movetime 100", "usi": "go btime 0 wtime 0 byoyomi 100"}.get(protocol, "")
        self.board_size = board_size
        self.komi = komi
        self.name = command.split()[0]
        if protocol in ("uci", "usi"):
            self.proc.send(protocol)
            self.proc.read_until(lambda l: l.strip() == f"{protocol}ok")
            for k, v in (options or {}).items():
                self.proc.send(f"setoption name {k} value {v}")
            self._isready()
        elif protocol == "gtp":
            self._gtp(f"boardsize {board_size}")
        else:
            raise ValueError(f"unknown protocol {protocol!r}: uci, usi or gtp")

    def _isready(self) -> None:
        self.proc.send("isready")
        self.proc.read_until(lambda l: l.strip() == "readyok")

    def _gtp(self, command: str) -> str:
        self.proc.send(command)
        lines = self.proc.read_until(lambda l: l.startswith(("=", "?")))
        reply = lines[-1]
        if reply.startswith("?"):
            raise EngineError(f"GTP {command!r} failed: {reply}")
        self.proc.read_until(lambda l: l.strip() == "")
        return reply[1:].strip()

    def new_game(self) -> None:
        if self.protocol == "uci":
            self.proc.send("ucinewgame")
            self._isready()
        elif self.protocol == "usi":
            self.proc.send("usinewgame")
            self._isready()
        else:
            self._gtp("clear_board")
            if self.komi is not None:
                self._gtp(f"komi {self.komi}")

    def play(self, colour: int, move: str) -> None:
        """GTP: tell the engine a move (UCI / USI engines get the whole line at ``genmove``)."""
        if self.protocol == "gtp":
            self._gtp(f"play {'B' if colour == 0 else 'W'} {move}")

    def genmove(self, moves: Sequence[str], colour: int, position: str | None = None) -> str:
        """The engine's move after ``moves`` from ``position`` (FEN / SFEN; ``None``: the initial
        position), ``resign`` to resign."""
        if self.protocol == "gtp":
            return self._gtp(f"genmove {'B' if colour == 0 else 'W'}").lower()
        start = (
            "startpos" if position is None else f"{'fen' if self.protocol == 'uci' else 'sfen'} {position}"
        )
        self.proc.send(f"position {start}" + (" moves " + " ".join(moves) if moves else ""))
        self.proc.send(self.go)
        line = self.proc.read_until(lambda l: l.startswith("bestmove"))[-1]
        parts = line.split()
        return parts[1] if len(parts) > 1 else "resign"

    def close(self) -> None:
        with contextlib.suppress(EngineError):
            self.proc.send("quit")
        self.proc.close()


def play_external(
    game: Game,
    evaluator: Evaluator,
    engine: ExternalEngine,
    games: int,
    simulations: int,
    opening_plies: int = 4,
    seed: int = 0,
    root_rules: GoRootRules = DEFAULT_ROOT_RULES,
    openings: Sequence[Opening] | None = None,
    on_game: Callable[[MatchGame], bool] | None = None,
) -> MatchReport:
    """Network (player A) against an external engine (player B), one game at a time (the network
    under the Go root rules ``root_rules``: :func:`trainer.selfplay.root_rules.go_root_moves`); ``openings`` and
    ``on_game`` as in :func:`play_match`."""
    t0 = time.perf_counter()
    starts = _pair_starts(game, games, opening_plies, seed, openings)
    config = SearchConfig(batch_size=4)
    done: list[MatchGame] = []
    for i in range(games):
        finished = _external_game(
            game, evaluator, engine, starts[i // 2], i % 2 == 0, simulations, config, root_rules
        )
        finished.pair = i // 2
        done.append(finished)
        if on_game is not None and on_game(finished):
            break
    return MatchReport(tally(done), done, time.perf_counter() - t0)


def _external_game(
    game: Game,
    evaluator: Evaluator,
    engine: ExternalEngine,
    opening: Opening,
    a_first: bool,
    simulations: int,
    config: SearchConfig,
    root_rules: GoRootRules,
) -> MatchGame:
    """One game of the network against ``engine`` after ``opening`` (the engine is told every move)."""
    state: GameState[Any] = game.state_from_text(opening.position) if opening.position else game.new_state()
    engine.new_game()
    texts: list[str] = []
    for text in opening.moves:
        engine.play(state.side_to_move, text)
        texts.append(text)
        state.push(state.parse_move(text))
    plies = len(texts)
    tree = new_tree(state, config)
    while (outcome := state.outcome()) is None:
        side = state.side_to_move
        if (side == 0) == a_first:
            move = _search_move(tree, state, evaluator, simulations, root_rules)
            text = state.move_to_text(move)
            engine.play(side, text)
        else:
            text = engine.genmove(texts, side, opening.position)
            if text in ("resign", "win"):
                engine_winner = 1 - side if text == "resign" else side
                return MatchGame(
                    texts[:plies], texts[plies:], a_first, engine_winner, text, position=opening.position
                )
            move = state.parse_move(text)
        texts.append(text)
        tree.advance(move)
        state.push(move)
        tree.reset_stats()
    winner, score = _result(state, outcome)
    return MatchGame(
        texts[:plies], texts[plies:], a_first, winner, outcome.reason, score, position=opening.position
    )


def _search_move(
    tree: SelfPlayTree[Any],
    state: GameState[Any],
    evaluator: Evaluator,
    simulations: int,
    root_rules: GoRootRules,
) -> Any:
    """The network's move in ``state`` (the tree's root): search the tree to ``simulations`` visits,
    then the most visited move."""
    apply_root_rules(tree, state, root_rules)
    while _needs_search(tree, simulations):
        batch = tree.select_batch(4)
        if len(batch):
            ManyTreesBatch([(tree, batch)], evaluator).backup()
    return tree.best_move()
