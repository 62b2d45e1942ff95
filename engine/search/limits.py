"""What a `go` asks for, in protocol-neutral form."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Clock:
    """The clock of the side to move, in milliseconds.

    One form covers every protocol's time controls:
      * sudden death: ``time_ms`` only;  Fischer increment: ``inc_ms``;
      * moves to go (UCI ``movestogo``; Go Canadian byo-yomi: ``time_ms`` = time left in the period,
        ``moves_to_go`` = stones left to play in it);
      * Japanese byo-yomi (USI ``byoyomi``, GTP ``kgs-time_settings byoyomi``): ``byoyomi_ms`` that is
        granted afresh for every move once ``time_ms`` is spent.
    """

    time_ms: float
    inc_ms: float = 0.0
    moves_to_go: int | None = None
    byoyomi_ms: float = 0.0


@dataclasses.dataclass(frozen=True)
class SearchLimits:
    """Limits of one search; the search stops at whichever comes first.

    Attributes:
        nodes: playouts to search (cache and terminal hits included).
        movetime_ms: exact time for this move.
        depth: stop once the average leaf depth reaches this.
        mate: stop once a mate in this many moves (for the root player) is proven.
        infinite: search until stopped (and never answer before ``stop``).
        ponder: search on the opponent's time until ``ponderhit`` (the clock starts then) or ``stop``.
        clock: the side to move's clock, for the time manager.
        searchmoves: restrict the root to these native moves (empty: all).
        received_at: ``time.perf_counter()`` when the protocol received the command: a time budget
            counts from then, so what happens before the search starts is on the clock too (``None``:
            from the search's start).
    """

    nodes: int | None = None
    movetime_ms: float | None = None
    depth: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    clock: Clock | None = None
    searchmoves: tuple[Any, ...] = ()
    received_at: float | None = None

    @property
    def unbounded(self) -> bool:
        """True when nothing but ``stop`` would end the search."""
        return (
            self.nodes is None
            and self.movetime_ms is None
            and self.depth is None
            and self.mate is None
            and self.clock is None
        )
