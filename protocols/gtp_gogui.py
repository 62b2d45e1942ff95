"""GoGui's analyze commands: the menu ``gogui-analyze_commands`` lists and the board answers they give.

GoGui's format (its manual, "Analyze Commands") is one ``type/label/command`` line per command; the
type says how GoGui reads the answer:

* ``dboard``: ``N`` lines (the top row first) of ``N`` numbers in [-1, 1], drawn as black (positive)
  and white (negative) squares sized by the value;
* ``sboard``: ``N`` lines of ``N`` short strings without spaces shown as labels, ``""`` for none;
* ``plist``: a list of points, marked on the board;
* ``string``: a text, shown in the status line.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.evaluator import Evaluator
from engine.games.go import GoState

#: The analyze commands Tabula offers GoGui, in menu order.
ANALYZE_COMMANDS = (
    "dboard/Ownership/tabula-ownership",
    "dboard/Policy/tabula-policy",
    "sboard/Policy Percent/tabula-policy percent",
    "plist/Dead Stones/final_status_list dead",
    "string/Final Score/final_score",
    "string/Rules/kata-get-rules",
)
#: The types GoGui knows (its manual's list).
GOGUI_TYPES = frozenset(
    (
        "bwboard",
        "cboard",
        "dboard",
        "eplist",
        "gfx",
        "hstring",
        "hpstring",
        "none",
        "param",
        "plist",
        "pspairs",
        "pstring",
        "sboard",
        "string",
        "var",
        "varb",
        "varc",
        "varp",
        "varpo",
        "varw",
    )
)
#: A policy share below this (half a percent) gets no label in ``tabula-policy percent``.
LABEL_MIN = 0.005


def format_dboard(values: npt.NDArray[np.float64], size: int) -> str:
    """A ``dboard`` answer: ``values`` (float ``[N*N]``, row by row from the top-left, the numbering of
    :mod:`engine.games.go`) as ``N`` lines of ``N`` numbers with three decimals."""
    rows = np.asarray(values, np.float64).reshape(size, size)
    return "\n".join(" ".join(f"{float(v):.3f}" for v in row) for row in rows)


def format_percent_sboard(shares: npt.NDArray[np.float64], size: int) -> str:
    """An ``sboard`` answer: ``shares`` (float ``[N*N]`` in [0, 1], as :func:`format_dboard`) as whole
    percentages, ``""`` where below :data:`LABEL_MIN`."""
    rows = np.asarray(shares, np.float64).reshape(size, size)
    return "\n".join(
        " ".join(f"{round(float(v) * 100)}" if v >= LABEL_MIN else '""' for v in row) for row in rows
    )


def policy_map(state: GoState, evaluator: Evaluator) -> npt.NDArray[np.float64]:
    """float64 ``[N*N + 1]``: the network's prior for every point of ``state`` (the side to move's
    next move; 0 for illegal points), the pass last; the priors of the legal moves sum to 1."""
    moves, indices = state.legal_moves_and_indices()
    evaluation = evaluator.evaluate(state.encode()[None], [indices])[0]
    out = np.zeros(state.board_size * state.board_size + 1, np.float64)
    out[np.asarray(moves, np.int64)] = np.asarray(evaluation.priors, np.float64)
    return out
