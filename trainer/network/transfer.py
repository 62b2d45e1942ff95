"""Start a Go network of one board size from a trained network of another (KataGo trains one network on
many sizes; this is the one-off version of that): the weights that do not depend on the board size are
copied, the two dense layers that do are resampled.

What carries over as it is (same shapes at every size): the stem and the residual tower (3x3
convolutions, batch norm, the global pooling blocks' ``[F, 2F]`` layers), every head's 1x1 convolution
body, the ownership head (1x1 convolutions) and the pooled score and value heads.  What is resampled,
with ``m`` the map from a line of the target board to the source board's (the edge lines keep their
distance to the edge, the target's middle lines all map to the source's middle line)::

    policy FC  W [N*N+1, 2*N*N] (points row-major, then pass; inputs plane-major, row-major)
        point i to point j:  W'[i, c, j] = W[m(i), c, m(i) + (j - i)]   (0 where that falls off the board)
            the source's weights around the analogous point, at the same offsets: a point's logit
            reads the same neighbourhood as on the source board
        pass from point j:   W'[pass, c, j] = W[pass, c, m(j)] / |m^-1(m(j))|
        biases:              b'[i] = b[m(i)],  b'[pass] = b[pass]
    value FC1  W [H, N*N]:   W'[h, j] = W[h, m(j)] / |m^-1(m(j))|
        (each source point's weight shared by the target points that map to it, so a board of
        uniform features gives the same sum)

It is a starting point for self-play on the new size, not a finished network: the run it seeds then
trains every weight.  Tabula rasa still holds (the source network learned from self-play alone).  A
source network smaller than the run's (fewer blocks or filters) is moved first, then grown
(:mod:`trainer.network.grow`); chess and shogi networks have one board size and are only grown.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

import numpy as np
import torch

from engine.games import get_game
from trainer.network.checkpoint import checkpoint_at
from trainer.network.grow import grow_state, grows_into
from trainer.network.model import AlphaZeroNet, ModelConfig


def line_map(target: int, source: int) -> np.ndarray:
    """``m``: the source line of each target line, ``[target]`` ints.

    The ``min(target, source) // 2`` lines nearest each edge keep their distance to that edge; the
    lines between them map to the source's middle line (``source`` odd) or to the middle line on
    their side (``source`` even).  The same size maps every line to itself.
    """
    keep = min(target, source) // 2
    half = source // 2
    out = np.empty(target, dtype=np.int64)
    for r in range(target):
        from_far = target - 1 - r
        if r < keep:
            out[r] = r
        elif from_far < keep:
            out[r] = source - 1 - from_far
        else:
            out[r] = half if source % 2 == 1 or r >= target / 2 else half - 1
    return out


def point_map(target: int, source: int) -> np.ndarray:
    """``m`` on points: ``[target*target]`` source point indices (row-major)."""
    lines = line_map(target, source)
    points: np.ndarray = (lines[:, None] * source + lines[None, :]).reshape(-1)
    return points


def resample_policy_fc(
    weight: np.ndarray, bias: np.ndarray, source: int, target: int
) -> tuple[np.ndarray, np.ndarray]:
    """The dense Go policy layer for ``target``: ``weight [S*S+1, C*S*S]``, ``bias [S*S+1]`` ->
    ``[T*T+1, C*T*T]``, ``[T*T+1]`` (module docstring)."""
    s2, t2 = source * source, target * target
    channels = weight.shape[1] // s2
    w = weight.reshape(s2 + 1, channels, source, source)
    lines = line_map(target, source)
    out = np.zeros((t2 + 1, channels, target, target), dtype=weight.dtype)
    for r in range(target):
        for c in range(target):
            sr, sc = int(lines[r]), int(lines[c])
            # target rows rr in [0, T) read source row sr + (rr - r); keep those on the source board
            rr0, rr1 = max(0, r - sr), min(target, r + (source - sr))
            cc0, cc1 = max(0, c - sc), min(target, c + (source - sc))
            out[r * target + c, :, rr0:rr1, cc0:cc1] = w[
                sr * source + sc, :, sr + rr0 - r : sr + rr1 - r, sc + cc0 - c : sc + cc1 - c
            ]
    out[t2] = resample_points(w[s2].reshape(channels, s2), source, target).reshape(channels, target, target)
    new_bias = np.concatenate([bias[:s2][point_map(target, source)], bias[s2:]])
    return out.reshape(t2 + 1, channels * t2), new_bias


def resample_points(weight: np.ndarray, source: int, target: int) -> np.ndarray:
    """A layer reading the board's points, ``[H, S*S] -> [H, T*T]``: each source point's weight shared
    by the target points mapped to it."""
    pmap = point_map(target, source)
    shares = np.bincount(pmap, minlength=source * source).astype(weight.dtype)
    out: np.ndarray = weight[:, pmap] / shares[pmap]
    return out


#: Dense layers that read one value a point (the paper's value head, and the WDL head built like it).
_POINT_LAYERS = ("value_head.fc1.weight", "wdl_head.fc1.weight")


def transfer_weights(
    source_state: Mapping[str, torch.Tensor], source_board: int, target: AlphaZeroNet
) -> dict[str, str]:
    """Load ``source_state`` (a network's ``state_dict`` for ``source_board``) into ``target`` (a Go
    network of another board size, or any game's at the same size; same blocks, filters and heads where
    they are to carry over).

    Returns:
        ``{parameter name: "copied" | "resampled" | "fresh"}`` for every entry of ``target``'s state;
        ``fresh`` entries keep ``target``'s own initialisation (no counterpart, or a shape that no rule
        maps).
    """
    board = target.info.board_size
    if target.info.name != "go" and source_board != board:
        raise ValueError(f"board-size transfer is for Go networks, not {target.info.name}")
    state = target.state_dict()
    report: dict[str, str] = {}
    with torch.no_grad():
        for name, tensor in state.items():
            src = source_state.get(name)
            if src is None:
                report[name] = "fresh"
            elif src.shape == tensor.shape:
                tensor.copy_(src)
                report[name] = "copied"
            elif name == "policy_head.fc.weight":
                bias = source_state["policy_head.fc.bias"].numpy()
                w, b = resample_policy_fc(src.numpy(), bias, source_board, board)
                tensor.copy_(torch.from_numpy(w))
                state["policy_head.fc.bias"].copy_(torch.from_numpy(b))
                report[name] = report["policy_head.fc.bias"] = "resampled"
            elif name == "policy_head.fc.bias":
                report.setdefault(name, "resampled")  # written with the weight
            elif name in _POINT_LAYERS and src.dim() == 2 and src.shape[1] == source_board**2:
                tensor.copy_(torch.from_numpy(resample_points(src.numpy(), source_board, board)))
                report[name] = "resampled"
            else:
                report[name] = "fresh"
    target.load_state_dict(state)
    return report


def init_from(model: AlphaZeroNet, source: str | os.PathLike[str]) -> dict[str, int]:
    """Start ``model`` from the network of ``source``: a checkpoint (``.pt``) or a run folder (its newest
    checkpoint) of the same game, at another Go board size or the same one, of ``model``'s size or a
    smaller one (``ModelSettings.init_from``).  A smaller network is first moved to the board (this
    module), then grown (:mod:`trainer.network.grow`: the bigger network computes what the source did).

    Returns:
        How many tensors were ``copied``, ``resampled`` and left ``fresh`` (of the source's size), then
        ``grown`` and ``added`` by growing, and the source's ``step``.

    Raises:
        ValueError: no checkpoint there, another game, a trunk that neither fits nor grows (fewer
            blocks or filters, global pooling the source had not).
    """
    state = checkpoint_at(source)
    info = get_game(str(state["game"])).info
    if info.name != model.info.name:
        raise ValueError(f"init_from: {source} is a {info.name} network, this run plays {model.info.name}")
    stored = ModelConfig.from_dict(dict(state["model"]))
    wanted = model.config
    size = dataclasses.replace(
        wanted, blocks=stored.blocks, filters=stored.filters, value_hidden=stored.value_hidden
    )
    if not grows_into(size, wanted):
        raise ValueError(f"init_from: {source}'s {stored.preset} network cannot grow into a {wanted.preset}")
    bridge = model if size == wanted else AlphaZeroNet(model.info, size)  # the source's size, this board
    report = transfer_weights(state["model_state"], info.board_size, bridge)
    trunk = [k for k, v in report.items() if k.startswith(("stem.", "tower.")) and v != "copied"]
    if trunk:
        raise ValueError(
            f"init_from: {source}'s trunk does not fit this network ({len(trunk)} tensors, {trunk[0]} ...)"
        )
    counts = {kind: sum(1 for v in report.values() if v == kind) for kind in ("copied", "resampled", "fresh")}
    if bridge is not model:
        grown = grow_state(bridge.state_dict(), bridge.config, model)
        counts.update({kind: sum(1 for v in grown.values() if v == kind) for kind in ("grown", "added")})
    return {**counts, "step": int(state["step"])}
