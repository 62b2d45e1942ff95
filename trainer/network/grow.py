"""Grow a trained network into a bigger one that computes exactly what it did: more residual blocks,
more filters, a wider value head, global pooling, Go's auxiliary heads or the soft policy head turned on.

A run resumed with a bigger ``model.preset`` (or with ``ownership`` / ``global_pooling`` newly on) loads
its checkpoint through :func:`grow_state` (:meth:`trainer.learn.train.Learner.load_state`), keeps its step,
its learning-rate schedule and its log, and goes on learning with the room the old network lacked.
The rules (function preserving, as Net2Net, Chen et al. 2016, but with zeros instead of copies, so no
weights are shared between channels that then have to be told apart)::

    a stored weight W [O0, I0, k, k] (or [O0, I0]) in the new W' [O, I, k, k]:
        W'[:O0, :I0] = W           what the old units read from the old units
        W'[:O0, I0:] = 0           old units do not read the new ones, so they compute what they did
        W'[O0:, :]   = fresh init  new units read everything; nothing old reads them yet
    1-D tensors (biases, batch-norm weight / bias / running mean / running variance) [O0] -> [O]:
        the stored values, then the new units' initial ones (batch norm 1, 0, 0, 1)
    global pooling's layer [F, 2F] (inputs: F channel means, then F channel maxima):
        each half of the stored inputs goes to the same half of the new ones, the rest 0
    a new residual block (index >= the stored blocks): fresh init with its last batch norm's scale 0
        (Goyal et al. 2017), so it adds 0 to the skip connection: ReLU(x + 0) = x, x >= 0 already
    new heads (ownership, score) and new pooling layers: their own initialisation (pooling starts at
        0, trainer.network.model.GlobalPoolingBlock)
    a new soft policy head: a copy of the trained policy head (its target is the policy's, softened: a
        fresh head's loss, about ln P times its weight 8, would first pull the trunk off its policy)

New channels carry activations from the first step (fresh weights in, a batch norm with scale 1), so
the zeros that read them get gradients at once and the new room starts learning right away; the
batch-norm statistics of the old channels are per channel and unchanged, in training mode as in
evaluation.  Nothing shrinks: a smaller network, another board size (:mod:`trainer.network.transfer`) or
another kernel is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from trainer.network.model import AlphaZeroNet, ModelConfig

#: Modules a grown network may have that its checkpoint had not (besides new blocks and pooling layers).
NEW_HEAD_PREFIXES: tuple[str, ...] = ("ownership_head.", "score_head.", "soft_policy_head.")

_BLOCK = re.compile(r"tower\.(\d+)\.")


def grows_into(stored: ModelConfig, wanted: ModelConfig) -> bool:
    """Whether a checkpoint of ``stored`` can grow into ``wanted``: the same game and value head, no
    fewer blocks, filters or value-head units, and the auxiliary heads, global pooling and the WDL head
    never turned off (nothing is dropped)."""
    return (
        stored.game == wanted.game
        and stored.value_head == wanted.value_head
        and stored.wdl == wanted.wdl
        and stored.blocks <= wanted.blocks
        and stored.filters <= wanted.filters
        and stored.value_hidden <= wanted.value_hidden
        and stored.ownership <= wanted.ownership
        and stored.global_pooling <= wanted.global_pooling
        and stored.soft_policy <= wanted.soft_policy
    )


def grow_tensor(name: str, stored: torch.Tensor, fresh: torch.Tensor) -> torch.Tensor:
    """``stored`` placed in a tensor of ``fresh``'s shape by the module docstring's rules.

    Args:
        name: the parameter's name in the state dict (``...pool_fc.weight`` has the two-half input).
        stored: the checkpoint's tensor, no larger than ``fresh`` in any dimension.
        fresh: the grown network's freshly initialised tensor (not modified).

    Raises:
        ValueError: another rank, a smaller dimension, or another convolution kernel.
    """
    if stored.shape == fresh.shape:
        return stored.clone()
    if stored.dim() != fresh.dim() or any(s > f for s, f in zip(stored.shape, fresh.shape, strict=True)):
        raise ValueError(f"{name}: cannot grow {tuple(stored.shape)} into {tuple(fresh.shape)}")
    if stored.shape[2:] != fresh.shape[2:]:
        raise ValueError(f"{name}: kernel {tuple(stored.shape[2:])} is not {tuple(fresh.shape[2:])}")
    out = fresh.detach().clone()
    rows = stored.shape[0]
    if stored.dim() == 1:
        out[:rows] = stored
        return out
    out[:rows] = 0
    if name.endswith("pool_fc.weight"):
        old_half, new_half = stored.shape[1] // 2, fresh.shape[1] // 2
        out[:rows, :old_half] = stored[:, :old_half]
        out[:rows, new_half : new_half + old_half] = stored[:, old_half:]
    else:
        out[:rows, : stored.shape[1]] = stored
    return out


def grow_state(
    stored_state: Mapping[str, torch.Tensor], stored: ModelConfig, model: AlphaZeroNet
) -> dict[str, str]:
    """Load a checkpoint's network (``stored_state`` of a ``stored`` network) into the bigger ``model``.

    Returns:
        ``{parameter name: "copied" | "grown" | "added"}`` for every entry of ``model``'s state dict.

    Raises:
        ValueError: ``stored`` cannot grow into ``model.config`` (:func:`grows_into`), or the state has
            an entry the model lacks or lacks one that is neither a new block, a new head nor a new
            pooling layer.
    """
    if not grows_into(stored, model.config):
        raise ValueError(f"a {stored.preset} network {stored} cannot grow into {model.config}")
    unexpected = sorted(set(stored_state) - set(model.state_dict()))
    if unexpected:
        raise ValueError(f"the checkpoint has tensors the grown network lacks: {unexpected[:4]}")
    state = model.state_dict()
    report: dict[str, str] = {}
    with torch.no_grad():
        for name, fresh in state.items():
            old = stored_state.get(name)
            if old is not None:
                state[name] = grow_tensor(name, old.to(fresh.device), fresh)
                report[name] = "copied" if old.shape == fresh.shape else "grown"
                continue
            block = _BLOCK.match(name)
            if block and int(block.group(1)) >= stored.blocks:
                if name.endswith(".bn2.weight"):
                    state[name] = torch.zeros_like(fresh)  # the new block adds 0 to its skip connection
            elif not (name.startswith(NEW_HEAD_PREFIXES) or ".pool_fc." in name):
                raise ValueError(f"the checkpoint lacks {name}, which growing does not add")
            policy = stored_state.get(name.removeprefix("soft_"))
            if name.startswith("soft_policy_head.") and policy is not None and policy.shape == fresh.shape:
                state[name] = policy.to(fresh.device).clone()  # its target is the policy's, softened
            report[name] = "added"
    model.load_state_dict(state)
    return report
