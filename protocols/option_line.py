"""The ``option`` line by which an engine declares a setting: one format for UCI and USI."""

from __future__ import annotations

from collections.abc import Sequence

#: How an empty string is written in ``option`` / ``setoption`` lines.
EMPTY = "<empty>"


def option_line(
    name: str,
    kind: str,
    default: str,
    low: int | None = None,
    high: int | None = None,
    choices: Sequence[str] = (),
) -> str:
    """``option name <name> type <kind> [default <default> [min <low> max <high>] [var <choice>...]]``.

    A ``button`` has no default; an empty default is written :data:`EMPTY`; ``min``/``max`` only for
    a ``spin``.
    """
    text = f"option name {name} type {kind}"
    if kind == "button":
        return text
    text += f" default {default or EMPTY}"
    if kind == "spin":
        text += f" min {low} max {high}"
    return text + "".join(f" var {choice}" for choice in choices)
