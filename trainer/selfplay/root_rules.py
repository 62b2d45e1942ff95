"""The Go root rules of self-play and matches: which moves a root may play (both players alike; the
engine's own search is not changed).  The pass rules (:func:`go_pass_rule`) keep a weak network from
passing away a won game or passing while behind; ``keep_eyes`` keeps it from filling its own true eyes
(:func:`go_root_moves`).  Other games are not restricted.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np

from engine.games.base import GameState
from engine.games.go import GoState
from engine.search.tree_protocol import SelfPlayTree
from trainer.config import SelfPlaySettings

#: Go pass rules of self-play and matches (:func:`go_pass_rule`).
PassRule = Literal["off", "tromp-taylor", "settled"]
PASS_RULES: tuple[str, ...] = ("off", "tromp-taylor", "settled")


def go_pass_rule(state: GameState[Any], rule: PassRule = "tromp-taylor") -> list[Any] | None:
    """Root moves allowed by the Go pass rule ``rule``, or ``None`` for no restriction.

    ``tromp-taylor``: under Tromp-Taylor rules a pass can be answered by a pass, which ends the game
    with the board as it is.  So (an exact two-ply fact, not a heuristic): a player who is behind on the
    board now must not pass, and a player who is ahead after the opponent's pass wins by passing back.
    A search of a few visits rarely sees either, and self-play from random weights then drifts into
    games where one side passes from the first move on (observed at 16 visits on 7x7).

    ``settled`` adds: no pass before the position is settled (every empty point reaches stones of one
    colour only) unless the opponent has just passed or every other legal move fills one of the
    mover's own single-point eyes; as GTP's ``genmove`` passes only in a settled position.  Without it
    a player ahead may pass while the opponent plays on, which a weak network learns to do from the
    first moves and then loses the board to a random player (Go 19x19, ``docs/experiments.md``).

    Self-play and evaluation matches apply the rule to both players; the engine's own search is not
    changed.
    """
    if rule == "off" or not isinstance(state, GoState):
        return None
    moves = state.legal_moves()
    pass_move = state.info.board_size**2
    if len(moves) <= 1 or pass_move not in moves:
        return None
    score = state.score()  # black minus white, komi included
    mine = score if state.side_to_move == 0 else -score
    if state.consecutive_passes >= 1 and mine > 0:
        return [pass_move]
    others = [m for m in moves if m != pass_move]
    if mine < 0:
        return others
    if rule == "settled" and state.consecutive_passes == 0 and not _settled(state):
        mover = state.side_to_move
        if any(not state.is_own_eye(m, mover) for m in others):
            return others
    return None


def _settled(state: GoState) -> bool:
    """Every empty point reaches stones of one colour only (Tromp-Taylor: all of it is someone's)."""
    owners = state.point_owners()
    return bool(np.all(owners != 0))


def pass_rule_of(settings: SelfPlaySettings) -> PassRule:
    """The pass rule of ``settings`` (``go_pass_rule``, ``go_pass_settled``)."""
    if not settings.go_pass_rule:
        return "off"
    return "settled" if settings.go_pass_settled else "tromp-taylor"


@dataclasses.dataclass(frozen=True)
class GoRootRules:
    """What self-play and matches allow at a Go root (both players alike; the engine's own search is
    not changed): the pass rule ``passes`` (:func:`go_pass_rule`) and, with ``keep_eyes``, no move
    into one's own true single-point eye (:func:`go_root_moves`)."""

    passes: PassRule = "tromp-taylor"
    keep_eyes: bool = False


#: The pass rule ``tromp-taylor``, eyes not kept: matches' default.
DEFAULT_ROOT_RULES = GoRootRules()


def go_root_moves(state: GameState[Any], rules: GoRootRules) -> list[Any] | None:
    """Root moves allowed by ``rules``, or ``None`` for no restriction: :func:`go_pass_rule`'s, less the
    moves into the mover's own true eyes (``GoState.true_eyes``) with ``rules.keep_eyes``.

    A player whose allowed moves would all fill such eyes passes (even when the pass rule forbids
    the pass: behind on the board, filling one's eyes only gives the opponent the stones around
    them).  Without the rule, games between weak Go 19x19 networks end with the board filled, own
    eyes included, and whole groups captured at random (docs/experiments.md).
    """
    allowed = go_pass_rule(state, rules.passes)
    if not rules.keep_eyes or not isinstance(state, GoState):
        return allowed
    moves = allowed if allowed is not None else state.legal_moves()
    kept = state.without_eye_fills(moves)
    if len(kept) == len(moves):
        return allowed
    return kept or [state.info.board_size**2]


def root_rules_of(settings: SelfPlaySettings) -> GoRootRules:
    """The Go root rules of ``settings`` (``go_pass_rule``, ``go_pass_settled``, ``go_keep_eyes``)."""
    return GoRootRules(pass_rule_of(settings), settings.go_keep_eyes)


def apply_root_rules(tree: SelfPlayTree[Any], state: GameState[Any], rules: GoRootRules) -> None:
    """Restrict the root of ``tree`` (searching ``state``) with :func:`go_root_moves` (after every
    ``advance``)."""
    allowed = go_root_moves(state, rules)
    if allowed is not None:
        tree.set_root_moves(allowed)
