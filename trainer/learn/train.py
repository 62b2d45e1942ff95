"""The learner: one training step reads top to bottom (:meth:`Learner.train_step`).

Loss (AlphaZero, paper Methods): ``l = w (z - v)^2 - pi^T log p + c ||theta||^2`` averaged over the batch,
where ``p`` is the softmax of the policy logits over all ``P`` entries, ``pi`` the search policy, ``z``
the game result from the side to move, ``c`` :attr:`TrainSettings.l2` and ``w``
:attr:`TrainSettings.value_weight` (1 in the paper).  With a WDL head its
cross-entropy against the one-hot result is added; with a soft policy head (``model.soft_policy``),
its cross-entropy against ``pi^(1/T)`` renormalised, weighted ``TrainSettings.soft_policy_weight``.
SGD with momentum 0.9 and the stepped learning-rate schedule of :attr:`TrainSettings.lr_schedule`.
On CUDA the forward pass runs in float16 autocast with a gradient scaler (mixed precision); on the CPU
in float32.
"""

from __future__ import annotations

import contextlib
import logging
import math
import typing
from typing import Any

import torch
from torch.nn import functional as F

from engine.games.base import GameInfo
from trainer.config import RunConfig
from trainer.learn.replay import Batch
from trainer.learn.swa import WeightAverage
from trainer.network.grow import grow_state, grows_into
from trainer.network.model import AlphaZeroNet, ModelConfig, NetOutput, build_model

log = logging.getLogger(__name__)


def resolve_device(device: str) -> str:
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: torch sees no CUDA device here (use --device cpu)")
    return device


class Learner:
    """The network being trained, its optimizer and step counter.

    Args:
        info: the game.
        config: the run settings (``model``, ``train``, ``run.device``).
        model: an existing network (default: a fresh one from ``config.model`` and ``config.run.seed``).
    """

    def __init__(self, info: GameInfo, config: RunConfig, model: AlphaZeroNet | None = None):
        self.info = info
        self.config = config
        self.settings = config.train
        self.device = resolve_device(config.run.device)
        if model is None:
            torch.manual_seed(config.run.seed)
            model_config = ModelConfig.from_preset(
                config.model.preset,
                info.label,
                config.model.wdl,
                config.model.value_head,
                config.model.ownership,
                config.model.global_pooling,
                config.model.soft_policy,
            )
            model = build_model(info, model_config)
        self.model = model.to(self.device)
        self.amp = self.settings.amp and self.device.startswith("cuda")
        self.optimizer = torch.optim.SGD(
            self.model.parameters(), lr=self.settings.lr_at(0), momentum=self.settings.momentum
        )
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp)
        self.step = 0
        self.swa = WeightAverage(self.settings.swa_max_n) if self.settings.swa_every > 0 else None

    # ---- one step ----------------------------------------------------------------------------------------
    def train_step(self, batch: Batch) -> dict[str, float]:
        """One SGD step on ``batch``; returns the losses and the policy entropy."""
        # 1. The learning rate of this step (stepped schedule).
        lr = self.settings.lr_at(self.step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr

        # 2. The batch on the device: planes [B, C, H, W], pi [B, P], z [B].
        planes = torch.from_numpy(batch.planes).to(self.device, non_blocking=True)
        pi = torch.from_numpy(batch.pi).to(self.device, non_blocking=True)
        z = torch.from_numpy(batch.z).to(self.device, non_blocking=True)

        # 3. Forward pass (float16 autocast on CUDA).
        self.model.train()
        with torch.autocast(device_type="cuda" if self.amp else "cpu", dtype=torch.float16, enabled=self.amp):
            out = self.model(planes)
        logits, value, wdl_logits = out.policy.float(), out.value.float().squeeze(1), out.wdl

        # 4. Loss = w (z - v)^2 - pi . log p + c ||theta||^2  (+ WDL cross-entropy with a WDL head).
        log_p = F.log_softmax(logits, dim=1)
        #    The value terms are importance-weighted when the replay weighted some positions up.
        weight = None if batch.value_weight is None else torch.from_numpy(batch.value_weight).to(self.device)
        value_loss = _weighted_mean((value - z) ** 2, weight)
        policy_loss = -(pi * log_p).sum(dim=1).mean()
        # a sum of tensors is a tensor (sum() starts at the int 0)
        l2_loss = self.settings.l2 * typing.cast(
            torch.Tensor, sum(p.square().sum() for p in self.model.parameters())
        )
        loss = self.settings.value_weight * value_loss + policy_loss + l2_loss
        if wdl_logits is not None:
            result = z if batch.result is None else torch.from_numpy(batch.result).to(self.device)
            wdl_target = torch.where(result > 0, 0, torch.where(result < 0, 2, 1)).long()
            loss = loss + _weighted_mean(
                F.cross_entropy(wdl_logits.float(), wdl_target, reduction="none"), weight
            )
        aux = self._auxiliary_losses(out, batch)
        if out.soft_policy is not None and self.settings.soft_policy_weight > 0.0:
            aux["soft_policy"] = soft_policy_loss(
                out.soft_policy.float(), pi, self.settings.soft_policy_temperature
            )
        for name, term in aux.items():
            loss = loss + getattr(self.settings, f"{name}_weight") * term

        # 5. Backward pass and SGD step (the scaler is a no-op without AMP).
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.step += 1
        if self.swa is not None and self.step % self.settings.swa_every == 0:
            self.swa.add(self.model)

        # 6. What to log.
        with torch.no_grad():
            entropy = -(log_p.exp() * log_p).sum(dim=1).mean()
        return {
            "loss": float(loss.detach()),
            "value_loss": float(value_loss.detach()),
            "policy_loss": float(policy_loss.detach()),
            "l2_loss": float(l2_loss.detach()),
            "policy_entropy": float(entropy),
            "lr": lr,
            **{f"{name}_loss": float(term.detach()) for name, term in aux.items()},
        }

    def _auxiliary_losses(self, out: NetOutput, batch: Batch) -> dict[str, torch.Tensor]:
        """Go's ownership and score terms (KataGo's auxiliary targets) when the network has the heads and
        the batch the targets; each a mean over the batch's positions that have targets (older shards
        have none)."""
        if out.ownership is None or out.score is None or batch.ownership is None or batch.score is None:
            return {}
        mask = torch.from_numpy(batch.aux_mask()).to(self.device)
        if float(mask.sum()) == 0.0:
            return {}
        target_own = torch.from_numpy(batch.ownership).to(self.device)
        target_score = torch.from_numpy(batch.score).to(self.device)
        return auxiliary_losses(
            out.ownership.float(), out.score.float().squeeze(1), target_own, target_score, mask
        )

    # ---- measurements ------------------------------------------------------------------------------------
    @torch.no_grad()
    def losses(self, batch: Batch, chunk: int = 512) -> dict[str, float]:
        """Value and policy losses of the current network on a fixed batch (no update, eval mode)."""
        return batch_losses(self.model, batch, self.device, chunk)

    # ---- checkpoint state -----------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "game": self.info.label,
            "model": self.model.config.to_dict(),
            "model_state": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict() if self.amp else {},
            "rng": torch.get_rng_state(),
            **({"swa": self.swa.state()} if self.swa is not None and self.swa.count else {}),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        if state.get("game") != self.info.label:
            raise ValueError(f"checkpoint is for {state.get('game')!r}, the run is {self.info.label!r}")
        stored = ModelConfig.from_dict(dict(state["model"]))
        if stored == self.model.config:
            self.model.load_state_dict(state["model_state"])
            self.optimizer.load_state_dict(state["optimizer"])
            if self.swa is not None and state.get("swa"):
                self.swa.load_state(state["swa"])
        elif grows_into(stored, self.model.config):
            self._load_grown(state["model_state"], stored)
        else:
            raise ValueError(
                f"checkpoint model {state['model']} differs from the run's {self.model.config.to_dict()}"
            )
        if self.amp and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        if isinstance(state.get("rng"), torch.Tensor):
            torch.set_rng_state(state["rng"])
        self.step = int(state["step"])

    def _load_grown(self, model_state: dict[str, Any], stored: ModelConfig) -> None:
        """Load a checkpoint of a smaller network (fewer blocks or filters, without the heads or pooling
        this run turns on) so that the grown one computes what it did (:mod:`trainer.network.grow`); SGD momentum
        restarts."""
        report = grow_state(model_state, stored, self.model)
        changed = sum(1 for kind in report.values() if kind != "copied")
        log.warning(
            "checkpoint grown from %s to %s: %d tensors grown or added, SGD momentum restarted",
            stored.preset,
            self.model.config.preset,
            changed,
        )


@torch.no_grad()
def batch_losses(
    model: AlphaZeroNet, batch: Batch, device: str = "cpu", chunk: int = 512
) -> dict[str, float]:
    """Mean value loss, policy loss and policy entropy of ``model`` on ``batch`` (eval mode)."""
    model.eval()
    n = len(batch.z)
    sums = {"value_loss": 0.0, "policy_loss": 0.0, "policy_entropy": 0.0}
    for start in range(0, n, chunk):
        sl = slice(start, start + chunk)
        out = model(torch.from_numpy(batch.planes[sl]).to(device))
        logits, value = out.policy, out.value
        log_p = F.log_softmax(logits.float(), dim=1)
        pi = torch.from_numpy(batch.pi[sl]).to(device)
        z = torch.from_numpy(batch.z[sl]).to(device)
        sums["value_loss"] += float(((value.float().squeeze(1) - z) ** 2).sum())
        sums["policy_loss"] += float(-(pi * log_p).sum())
        sums["policy_entropy"] += float(-(log_p.exp() * log_p).sum())
    return {k: v / max(1, n) for k, v in sums.items()}


def auxiliary_losses(
    ownership: torch.Tensor,
    score: torch.Tensor,
    target_ownership: torch.Tensor,
    target_score: torch.Tensor,
    mask: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """KataGo's auxiliary terms, averaged over the positions with ``mask [B]`` = 1:

    - ``ownership``: cross-entropy of each point's predicted owner ``ownership [B, N*N]`` (tanh, in
      [-1, 1]) against its final owner ``target_ownership [B, N*N]`` (in [-1, 1]), both read as the
      probability ``(1 + o) / 2`` that the side to move owns the point, averaged over the points;
    - ``score``: squared error of the predicted margin ``score [B]`` against ``target_score [B]``, in units
      of the board's side ``N`` (points / N), so 9x9 and 19x19 weigh alike.
    """
    points = ownership.shape[1]
    side = math.sqrt(points)
    p = ((1.0 + ownership) / 2.0).clamp(1e-6, 1.0 - 1e-6)
    t = ((1.0 + target_ownership) / 2.0).clamp(0.0, 1.0)
    per_point = -(t * torch.log(p) + (1.0 - t) * torch.log(1.0 - p))  # [B, N*N]
    total = mask.sum()
    own_loss = (per_point.mean(dim=1) * mask).sum() / total
    score_loss = ((((score - target_score) / side) ** 2) * mask).sum() / total
    return {"ownership": own_loss, "score": score_loss}


def soft_policy_loss(logits: torch.Tensor, pi: torch.Tensor, temperature: float) -> torch.Tensor:
    """KataGo's auxiliary soft policy term: the cross-entropy of the soft head's ``logits [B, P]`` against
    the search policy ``pi [B, P]`` softened to ``pi^(1/T) / sum pi^(1/T)``, averaged over the batch.  The
    soft target spreads weight over the moves the search gave a few visits, so the trunk learns to
    tell apart the moves the sharp target lumps together at 0."""
    soft = pi.clamp_min(0.0).pow(1.0 / temperature)
    soft = soft / soft.sum(dim=1, keepdim=True).clamp_min(1e-12)
    return -(soft * F.log_softmax(logits, dim=1)).sum(dim=1).mean()


def _weighted_mean(values: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    """Mean of ``values [B]``, each counted ``weight [B]`` times (``None``: plain mean)."""
    return values.mean() if weight is None else (values * weight).mean()


def allowed_steps(positions: int, min_positions: int, steps_per_sample: float) -> int:
    """Training steps the learner may have done after ``positions`` self-play positions."""
    if positions < min_positions:
        return 0
    return math.floor((positions - min_positions) * steps_per_sample) + 1


def set_torch_threads(threads: int) -> None:
    if threads > 0:
        torch.set_num_threads(threads)
        with contextlib.suppress(RuntimeError):  # already set in this process
            torch.set_num_interop_threads(1)
