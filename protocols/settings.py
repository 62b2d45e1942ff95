"""Settings of the `tabula` program that reach every protocol handler (frozen, passed in)."""

from __future__ import annotations

import dataclasses

from engine.options import EngineOptions


@dataclasses.dataclass(frozen=True)
class ProtocolSettings:
    """Command-line settings for a protocol handler.

    Attributes:
        engine: engine options (``--weights``, ``--backend``, ``--batch-size``, ``--threads``, ...);
            UCI/USI ``setoption`` changes them afterwards.
        resign_threshold: GTP: resign when the root value (from the engine's side) falls below
            ``-resign_threshold`` for the chosen move; 0 turns resignation off.
        go_board_size: GTP board size at start.
        go_komi: GTP komi at start.
        go_scoring: GTP ``final_score`` / ``final_status_list`` and when to pass: ``area`` (dead stones
            removed, as GUIs, gogui-twogtp's referee, KGS and people count; Tabula passes only in a
            settled position) or ``tromp-taylor`` (every stone on the board alive, as CGOS counts).
        go_keep_eyes: GTP ``genmove``: never a move into one's own true single-point eye
            (``GoState.true_eyes``; as self-play with ``selfplay.go_keep_eyes`` and every Monte-Carlo Go
            program's playouts): a weak network's search fills them and loses the stones around them.
    """

    engine: EngineOptions = dataclasses.field(default_factory=EngineOptions)
    resign_threshold: float = 0.95
    go_board_size: int = 19
    go_komi: float = 7.5
    go_scoring: str = "area"
    go_keep_eyes: bool = True


#: The range of the UCI/USI ``PolicyTemperature`` option, in hundredths (0.10 to 10.00).
POLICY_TEMPERATURE_PERCENT = (10, 1000)


def percent(temperature: float) -> int:
    """A policy temperature in the hundredths the UCI/USI option shows (1.6 -> 160)."""
    return round(temperature * 100)
