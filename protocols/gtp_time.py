"""GTP time keeping: ``time_settings``, ``kgs-time_settings`` and ``time_left`` turned into the
:class:`~engine.search.limits.Clock` of the colour to move."""

from __future__ import annotations

import dataclasses

from engine.search.limits import Clock


@dataclasses.dataclass
class _ColourClock:
    main_s: float
    period_s: float = 0.0
    stones: int = 0  # stones left in the current Canadian period (0: not in byo-yomi)
    in_byoyomi: bool = False


class TimeKeeper:
    """The time control of the game and each colour's clock.

    Systems: ``none`` (no limit: the engine's finite default per move), ``absolute`` (sudden death),
    ``canadian`` (main time, then ``byo`` seconds for every ``stones`` stones), ``byoyomi`` (Japanese:
    main time, then ``byo`` seconds for every move, ``periods`` times).  ``time_left`` overrides the
    clock of a colour; between ``time_left`` commands the engine's own thinking time is subtracted.
    """

    def __init__(self) -> None:
        self.system = "none"
        self.main_s = 0.0
        self.byo_s = 0.0
        self.stones = 0
        self.clocks = [_ColourClock(0.0), _ColourClock(0.0)]

    def set(self, system: str, main_s: float = 0.0, byo_s: float = 0.0, stones: int = 0) -> None:
        """A new time control; both clocks start full (in byo-yomi at once when there is no main time)."""
        self.system, self.main_s, self.byo_s, self.stones = system, main_s, byo_s, stones
        self.clocks = [self._full_clock(), self._full_clock()]

    def _full_clock(self) -> _ColourClock:
        if self.main_s <= 0 and self.system in ("canadian", "byoyomi"):
            return _ColourClock(0.0, self.byo_s, self.stones, in_byoyomi=True)
        return _ColourClock(self.main_s)

    def set_gtp(self, main_s: float, byo_s: float, stones: int) -> None:
        """``time_settings``: byo > 0 with 0 stones means no limit; 0 byo means absolute time."""
        if byo_s > 0 and stones == 0:
            self.set("none")
        elif byo_s <= 0 or stones <= 0:
            self.set("absolute" if main_s > 0 else "none", main_s)
        else:
            self.set("canadian", main_s, byo_s, stones)

    def time_left(self, colour: int, secs: float, stones: int) -> None:
        """``time_left``: ``stones > 0`` means in byo-yomi with ``secs`` for ``stones`` stones
        (Japanese byo-yomi: ``secs`` left in the period, ``stones`` periods)."""
        if self.system == "none":  # a controller that only sends time_left still has a clock
            self.set("absolute", secs)
        clock = self.clocks[colour]
        if stones > 0:
            clock.main_s = 0.0
            clock.in_byoyomi = True
            clock.period_s = secs
            clock.stones = stones
        else:
            clock.main_s = secs
            clock.in_byoyomi = False

    def clock(self, colour: int) -> Clock | None:
        """The clock to give the time manager for ``colour``'s move, or ``None`` (no limit)."""
        c = self.clocks[colour]
        system = self.system
        if system == "none":
            return None
        if c.in_byoyomi:
            if system == "byoyomi":
                return Clock(time_ms=0.0, byoyomi_ms=max(c.period_s, 0.0) * 1000.0)
            return Clock(time_ms=max(c.period_s, 0.0) * 1000.0, moves_to_go=max(1, c.stones))
        main_ms = max(c.main_s, 0.0) * 1000.0
        if system == "byoyomi":
            return Clock(time_ms=main_ms, byoyomi_ms=self.byo_s * 1000.0)
        if system == "canadian":
            return Clock(time_ms=main_ms, byoyomi_ms=self.byo_s * 1000.0 / max(1, self.stones))
        return Clock(time_ms=main_ms)

    def spent(self, colour: int, seconds: float) -> None:
        """Subtract the engine's thinking time from ``colour``'s clock.  The move during which the main
        time runs out is the first stone of the first byo-yomi period."""
        c = self.clocks[colour]
        if self.system in ("none", "absolute"):
            c.main_s -= seconds
            return
        if not c.in_byoyomi:
            c.main_s -= seconds
            if c.main_s > 0:
                return
            seconds = -c.main_s  # the part of this move played in byo-yomi
            c.main_s, c.in_byoyomi, c.period_s, c.stones = 0.0, True, self.byo_s, self.stones
        if self.system == "canadian":
            c.period_s -= seconds
            c.stones -= 1
            if c.stones <= 0:  # period done: a new one starts
                c.period_s, c.stones = self.byo_s, self.stones
        else:  # Japanese byo-yomi: the period is granted afresh for every move
            c.period_s = self.byo_s


# =====================================================================================================
# The handler
# =====================================================================================================
