"""OpenSpiel's MCTS bot with random rollouts as a ladder opponent: the bot OpenSpiel's own AlphaZero is
measured against, a rung below the weakest settings of Stockfish and GNU Go.

Needs the ``open-spiel`` wheel (``pip install -e ".[ladder]"``).  Chess positions go in as FEN and moves
come out in SAN (python-chess parses them); Go is driven through the same GTP commands the ladder sends
to GNU Go (``boardsize``, ``clear_board``, ``komi``, ``play``, ``genmove``).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _spiel() -> tuple[Any, Any]:
    try:
        import pyspiel
        from open_spiel.python.algorithms import mcts
    except ImportError as exc:  # optional: only the ladder's OpenSpiel rungs need it
        raise SystemExit('OpenSpiel rungs need the open-spiel wheel: pip install -e ".[ladder]"') from exc
    return pyspiel, mcts


def mcts_bot(game: Any, simulations: int, seed: int) -> Any:
    """OpenSpiel's ``MCTSBot``: UCT (c = 2), one random rollout per leaf, ``simulations`` per move."""
    _, mcts = _spiel()
    rng = np.random.RandomState(seed)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=rng)
    return mcts.MCTSBot(game, uct_c=2.0, max_simulations=simulations, evaluator=evaluator, random_state=rng)


class ChessMcts:
    """Chess: the bot's move for a FEN, in SAN."""

    def __init__(self, simulations: int, seed: int = 0) -> None:
        pyspiel, _ = _spiel()
        self.game = pyspiel.load_game("chess")
        self.bot = mcts_bot(self.game, simulations, seed)

    def move_san(self, fen: str) -> str:
        state = self.game.new_initial_state(fen)
        action = self.bot.step(state)
        return str(state.action_to_string(state.current_player(), action))


class GoMctsGtp:
    """Go: a GTP player (the subset the ladder uses) around the bot; vertices as GTP writes them."""

    name = "openspiel-mcts"

    def __init__(self, simulations: int, seed: int = 0) -> None:
        self.simulations = simulations
        self.seed = seed
        self.size = 19
        self.komi = 7.5
        self._new_game()

    def _new_game(self) -> None:
        pyspiel, _ = _spiel()
        self.game = pyspiel.load_game("go", {"board_size": self.size, "komi": self.komi})
        self.state = self.game.new_initial_state()
        self.bot = mcts_bot(self.game, self.simulations, self.seed)

    def _action(self, vertex: str) -> int:
        """The action of a GTP vertex (``D4``, ``PASS``) in the current position."""
        player = self.state.current_player()
        for action in self.state.legal_actions():
            if self.state.action_to_string(player, action).split()[-1].upper() == vertex.upper():
                return int(action)
        raise ValueError(f"illegal move {vertex}")

    def must(self, command: str, timeout: float = 0.0) -> str:
        words = command.split()
        if words[0] == "boardsize":
            self.size = int(words[1])
            self._new_game()
        elif words[0] == "komi":
            self.komi = float(words[1])
            self._new_game()
        elif words[0] == "clear_board":
            self._new_game()
        elif words[0] == "play":
            self.state.apply_action(self._action(words[2]))
        elif words[0] == "genmove":
            action = self.bot.step(self.state)
            vertex = str(self.state.action_to_string(self.state.current_player(), action)).split()[-1]
            self.state.apply_action(action)
            return vertex.upper()
        else:
            raise ValueError(f"unsupported command {command!r}")
        return ""

    def close(self) -> None:
        """Nothing to release (in-process)."""
