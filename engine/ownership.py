"""Go ownership from a network's ownership head (KataGo's auxiliary target, ``model.ownership``): what
GTP's dead-stone judgement uses when the network has the head, instead of random play-outs
(:mod:`engine.games.go_ownership`, which stays the fallback for networks without it).

The network sees the position under each of the 8 board symmetries; the 8 answers are mapped back to
the board and averaged, which evens out the noise of a small network.
"""

from __future__ import annotations

import numpy as np

from engine.evaluator import Evaluator
from engine.games.go import GoState
from engine.games.go_symmetry import NUM_SYMMETRIES, inverse_symmetry, symmetry_planes


def network_ownership(state: GoState, evaluator: Evaluator) -> np.ndarray | None:
    """float64 ``[N*N]`` in [-1, 1] from black's view (+1 black's), the mean of the network's ownership
    over the 8 symmetries of ``state``; ``None`` when the network has no ownership output."""
    planes = state.encode()  # [17, N, N]
    batch = np.stack([symmetry_planes(planes, k) for k in range(NUM_SYMMETRIES)])
    out = evaluator.ownership(batch)  # [8, N*N], side to move's view, each in its own symmetry
    if out is None:
        return None
    n = state.board_size
    back = [
        symmetry_planes(out[k].reshape(1, n, n), inverse_symmetry(k)).reshape(-1) for k in range(len(out))
    ]
    own: np.ndarray = np.mean(np.asarray(back, np.float64), axis=0)
    return own if state.side_to_move == 0 else -own
