"""The AlphaZero network (torch): a residual tower with a policy head and a value head.

Shapes (``B`` batch, ``C`` input planes, ``N`` board size, ``F`` filters, ``P`` policy size)::

    planes  [B, C, N, N]
      -> conv 3x3 C->F, BN, ReLU                                   [B, F, N, N]
      -> blocks x (conv 3x3, BN, ReLU, conv 3x3, BN, + skip, ReLU)  [B, F, N, N]
      -> policy head                                               [B, P] logits
           chess / shogi (convolutional): conv 3x3 F->F, BN, ReLU, conv 1x1 F->K (K = 73 / 139),
               flattened plane-major: index = plane * N*N + row * N + col (Table S2 order)
           Go (dense): conv 1x1 F->2, BN, ReLU, FC 2*N*N -> N*N+1
      -> value head, ``value_head="fc"`` (the paper's):
           conv 1x1 F->1, BN, ReLU, FC N*N -> H, ReLU, FC H -> 1, tanh                [B, 1]
         or ``value_head="pool"`` (global pooling, as KataGo's value head):
           conv 1x1 F->F, BN, ReLU, mean over the board [B, F], FC F -> H, ReLU, FC H -> 1, tanh
      -> optional WDL head: the same body with FC H -> 3                            [B, 3] logits
           (the training loss takes logits; the exported ONNX applies the softmax)
      -> optional auxiliary heads (Go, ``ownership=True``; KataGo's, Wu 2019):
           ownership: conv 1x1 F->32, BN, ReLU, conv 1x1 32->1, tanh, flattened   [B, N*N] in [-1, 1]
               (each point's final owner from the side to move: +1 its own, -1 the opponent's)
           score: the pooled scalar body, FC H -> 1, times N*N                   [B, 1] points
               (final area score margin from the side to move, komi included)

Global pooling in the trunk (``global_pooling=True``, KataGo's global pooling bias): every other
residual block adds to its first convolution's output a per-channel bias computed from that output's
mean and max over the board, ``[B, 2F] -> FC -> [B, F]``, so local shape can be read against
whole-board facts (who is ahead, where the fights are) from the first blocks on.

Why a pooled value head: the paper's head gives every square its own weights, so a network trained on
the few hundred games of a short run learns to tell the games apart rather than what wins them; a mean
over the board is a count of what the tower sees (measurements: docs/experiments.md).

Sizes are named presets (KataGo style ``b6c64`` = 6 blocks, 64 channels) kept in :class:`ModelConfig`,
which checkpoints and the ONNX metadata carry.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from engine.games.base import GameInfo

#: Named sizes: name -> (blocks, filters).
PRESETS: dict[str, tuple[int, int]] = {
    "tiny": (2, 16),
    "small": (6, 64),
    "medium": (10, 128),
    "large": (15, 192),
    "paper": (20, 256),
}

#: Value head kinds of :class:`ModelConfig`.
VALUE_HEADS: tuple[str, ...] = ("fc", "pool")

#: Policy planes of the convolutional heads (Table S2): chess 8x8x73, shogi 9x9x139.
CONV_POLICY_PLANES: dict[str, int] = {"chess": 73, "shogi": 139}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A network's architecture.

    Attributes:
        game: the game label it is for (``chess``, ``shogi``, ``go9``, ``go19``).
        blocks: residual blocks B.
        filters: channels F of the tower.
        wdl: whether there is a win/draw/loss head beside the value head.
        value_hidden: width H of the value head's hidden layer (256 in the paper).
        value_head: ``fc`` (the paper's) or ``pool`` (global mean pooling, see the module docstring).
        ownership: Go's auxiliary ownership and score heads (see the module docstring).
        global_pooling: global pooling bias in every other residual block.
        soft_policy: a second policy head trained on the search policy softened to ``pi^(1/T)``
            (KataGo's auxiliary soft policy target; ``TrainSettings.soft_policy_weight``); only the
            learner reads it, the exported network has the paper's two outputs.
    """

    game: str
    blocks: int
    filters: int
    wdl: bool = False
    value_hidden: int = 256
    value_head: str = "fc"
    ownership: bool = False
    global_pooling: bool = False
    soft_policy: bool = False

    def __post_init__(self) -> None:
        if self.blocks < 0 or self.filters < 1 or self.value_hidden < 1:
            raise ValueError(f"bad model size: {self}")
        if self.value_head not in VALUE_HEADS:
            raise ValueError(
                f"unknown value head {self.value_head!r}: expected one of {', '.join(VALUE_HEADS)}"
            )

    @property
    def preset(self) -> str:
        """KataGo-style size name, ``b6c64``."""
        return f"b{self.blocks}c{self.filters}"

    @classmethod
    def from_preset(
        cls,
        name: str,
        game: str,
        wdl: bool = False,
        value_head: str = "fc",
        ownership: bool = False,
        global_pooling: bool = False,
        soft_policy: bool = False,
    ) -> ModelConfig:
        """A preset by name (``tiny``, ``small``, ``medium``, ``large``, ``paper``) or as ``b6c64``."""
        key = name.strip().lower()
        if key in PRESETS:
            blocks, filters = PRESETS[key]
        else:
            m = re.fullmatch(r"b(\d+)c(\d+)", key)
            if not m:
                raise ValueError(
                    f"unknown preset {name!r}: expected one of {', '.join(PRESETS)} or bBcF such as b6c64"
                )
            blocks, filters = int(m.group(1)), int(m.group(2))
        return cls(
            game=game,
            blocks=blocks,
            filters=filters,
            wdl=wdl,
            value_hidden=min(256, 4 * filters),
            value_head=value_head,
            ownership=ownership,
            global_pooling=global_pooling,
            soft_policy=soft_policy,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for checkpoints)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        """Inverse of :meth:`to_dict`; keys added later take their defaults (older checkpoints)."""
        return cls(**d)


class ResidualBlock(nn.Module):
    """conv 3x3, BN, ReLU, conv 3x3, BN, + input, ReLU.  ``[B, F, N, N] -> [B, F, N, N]``."""

    def __init__(self, filters: int):
        super().__init__()
        self.conv1 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(filters)
        self.conv2 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


class GlobalPoolingBlock(ResidualBlock):
    """A residual block whose first convolution's output gets a per-channel bias from its own mean and
    max over the board (KataGo's global pooling bias).  ``[B, F, N, N] -> [B, F, N, N]``."""

    def __init__(self, filters: int):
        super().__init__(filters)
        self.pool_fc = nn.Linear(2 * filters, filters)
        # Zero at first: the block starts as a plain residual block (a checkpoint without pooling
        # resumes computing exactly what it did, trainer.network.grow).
        nn.init.zeros_(self.pool_fc.weight)
        nn.init.zeros_(self.pool_fc.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        pooled = torch.cat([y.mean(dim=(2, 3)), y.amax(dim=(2, 3))], dim=1)  # [B, 2F]
        y = y + self.pool_fc(pooled)[:, :, None, None]
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


def _tower(config: ModelConfig) -> nn.Sequential:
    """The residual blocks; with ``global_pooling`` every second block (the 2nd, 4th, ...) pools."""
    f = config.filters
    return nn.Sequential(
        *[
            GlobalPoolingBlock(f) if config.global_pooling and i % 2 == 1 else ResidualBlock(f)
            for i in range(config.blocks)
        ]
    )


def _conv_bn(cin: int, cout: int, k: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class ConvPolicyHead(nn.Module):
    """Chess / shogi: ``[B, F, N, N] -> [B, K*N*N]``, index = plane * N*N + row * N + col."""

    def __init__(self, filters: int, planes: int):
        super().__init__()
        self.body = _conv_bn(filters, filters, 3)
        self.out = nn.Conv2d(filters, planes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.out(self.body(x)), 1)


class DensePolicyHead(nn.Module):
    """Go: ``[B, F, N, N] -> [B, N*N+1]`` (points row-major, then pass)."""

    def __init__(self, filters: int, board: int, policy_size: int):
        super().__init__()
        self.body = _conv_bn(filters, 2, 1)
        self.fc = nn.Linear(2 * board * board, policy_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.fc(torch.flatten(self.body(x), 1))
        return logits


class ScalarHead(nn.Module):
    """``[B, F, N, N] -> [B, out]``: conv 1x1 -> 1, BN, ReLU, FC N*N -> hidden, ReLU, FC hidden -> out."""

    def __init__(self, filters: int, board: int, hidden: int, out: int):
        super().__init__()
        self.body = _conv_bn(filters, 1, 1)
        self.fc1 = nn.Linear(board * board, hidden)
        self.fc2 = nn.Linear(hidden, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc2(F.relu(self.fc1(torch.flatten(self.body(x), 1))))
        return out


class PooledScalarHead(nn.Module):
    """``[B, F, N, N] -> [B, out]``: conv 1x1 F -> F, BN, ReLU, mean over the board, FC F -> hidden, ReLU,
    FC hidden -> out."""

    def __init__(self, filters: int, hidden: int, out: int):
        super().__init__()
        self.body = _conv_bn(filters, filters, 1)
        self.fc1 = nn.Linear(filters, hidden)
        self.fc2 = nn.Linear(hidden, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc2(F.relu(self.fc1(self.body(x).mean(dim=(2, 3)))))
        return out


class OwnershipHead(nn.Module):
    """Go: ``[B, F, N, N] -> [B, N*N]`` in [-1, 1]: conv 1x1 F -> 32, BN, ReLU, conv 1x1 32 -> 1, tanh."""

    def __init__(self, filters: int):
        super().__init__()
        self.body = _conv_bn(filters, 32, 1)
        self.out = nn.Conv2d(32, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.flatten(self.out(self.body(x)), 1))


class NetOutput(NamedTuple):
    """What :class:`AlphaZeroNet` returns (``None`` for heads the network does not have).

    Attributes:
        policy: ``[B, P]`` logits.
        value: ``[B, 1]`` in [-1, 1] from the side to move.
        wdl: ``[B, 3]`` win/draw/loss logits.
        ownership: ``[B, N*N]`` in [-1, 1], each point's final owner from the side to move.
        score: ``[B, 1]`` final score margin in points from the side to move.
        soft_policy: ``[B, P]`` logits of the soft policy head (in training mode only).
    """

    policy: torch.Tensor
    value: torch.Tensor
    wdl: torch.Tensor | None = None
    ownership: torch.Tensor | None = None
    score: torch.Tensor | None = None
    soft_policy: torch.Tensor | None = None


def _scalar_head(config: ModelConfig, board: int, out: int) -> nn.Module:
    if config.value_head == "pool":
        return PooledScalarHead(config.filters, config.value_hidden, out)
    return ScalarHead(config.filters, board, config.value_hidden, out)


class AlphaZeroNet(nn.Module):
    """The residual network.  ``forward(planes [B, C, N, N])`` returns a :class:`NetOutput`.

    Attributes:
        config: the :class:`ModelConfig`.
        info: the :class:`GameInfo` it was built for.
    """

    def __init__(self, info: GameInfo, config: ModelConfig):
        super().__init__()
        self.config = config
        self.info = info
        n, f = info.board_size, config.filters
        self.stem = _conv_bn(info.planes, f, 3)
        self.tower = _tower(config)
        if info.name in CONV_POLICY_PLANES:
            k = CONV_POLICY_PLANES[info.name]
            if k * n * n != info.policy_size:
                raise ValueError(f"{info.name}: {k} planes x {n}x{n} != policy size {info.policy_size}")
            self.policy_head: nn.Module = ConvPolicyHead(f, k)
        else:
            self.policy_head = DensePolicyHead(f, n, info.policy_size)
        self.soft_policy_head: nn.Module | None = None
        if config.soft_policy:
            self.soft_policy_head = (
                ConvPolicyHead(f, CONV_POLICY_PLANES[info.name])
                if info.name in CONV_POLICY_PLANES
                else DensePolicyHead(f, n, info.policy_size)
            )
        self.value_head = _scalar_head(config, n, 1)
        self.wdl_head = _scalar_head(config, n, 3) if config.wdl else None
        if config.ownership and info.name != "go":
            raise ValueError(f"ownership and score heads are for Go, not {info.name}")
        self.ownership_head = OwnershipHead(f) if config.ownership else None
        self.score_head = PooledScalarHead(f, config.value_hidden, 1) if config.ownership else None
        self.board_points = float(n * n)

    def forward(self, planes: torch.Tensor) -> NetOutput:
        x = self.tower(self.stem(planes))
        policy = self.policy_head(x)
        value = torch.tanh(self.value_head(x))
        wdl = self.wdl_head(x) if self.wdl_head is not None else None
        ownership = self.ownership_head(x) if self.ownership_head is not None else None
        score = self.score_head(x) * self.board_points if self.score_head is not None else None
        # the soft head only in training mode: evaluation, probes and the ONNX export never compute it
        soft = self.soft_policy_head(x) if self.soft_policy_head is not None and self.training else None
        return NetOutput(policy, value, wdl, ownership, score, soft)


def build_model(
    info: GameInfo,
    preset: str | ModelConfig,
    wdl: bool = False,
    value_head: str = "fc",
    ownership: bool = False,
    global_pooling: bool = False,
    soft_policy: bool = False,
) -> AlphaZeroNet:
    """A freshly initialised network for ``info``.

    Args:
        info: the game's :class:`GameInfo` (planes, board size, policy size).
        preset: a preset name (``tiny``/``small``/``medium``/``large``/``paper`` or ``b6c64``) or a
            :class:`ModelConfig` (whose ``game`` must be ``info.label``).
        wdl: add a WDL head (only used with a preset name).
        value_head: ``fc`` or ``pool`` (only used with a preset name).
        ownership: Go's ownership and score heads (only used with a preset name).
        global_pooling: global pooling blocks in the trunk (only used with a preset name).
        soft_policy: the auxiliary soft policy head (only used with a preset name).
    """
    config = (
        preset
        if isinstance(preset, ModelConfig)
        else ModelConfig.from_preset(
            preset, info.label, wdl, value_head, ownership, global_pooling, soft_policy
        )
    )
    if config.game != info.label:
        raise ValueError(f"model config is for {config.game!r}, the game is {info.label!r}")
    return AlphaZeroNet(info, config)
