"""Stochastic weight averaging of the trained network, for the network a run ships.

lc0 exports the average of the weights the learner passed through rather than its last weights: the
last SGD step carries the noise of its batch, the average sits nearer the middle of the basin the
learner walks around (Izmailov et al., "Averaging Weights Leads to Wider Optima and Better
Generalization", 2018).  :class:`WeightAverage` keeps that average, sampled every ``train.swa_every``
steps; once ``train.swa_max_n`` samples are in, each new one gets the weight ``1 / (max_n + 1)``, so the
average forgets old weights as the learning rate schedule moves on (lc0's ``swa_max_n``).  Batch norm's
running statistics are averaged with the weights, as lc0 does; integer buffers keep the newest value.

The average costs no self-play or learner time (one pass over the parameters every ``swa_every``
steps); the run's own exports stay the learner's network, and ``tabula-train export --checkpoint``
writes the average (``--raw`` the learner's): docs/experiments.md, "Stochastic weight averaging".
"""

from __future__ import annotations

from typing import Any

import torch


class WeightAverage:
    """A running average of a model's ``state_dict`` (every float tensor; integer ones copied).

    Args:
        max_n: samples after which the average turns into an exponential one of rate ``1 / (max_n + 1)``.
    """

    def __init__(self, max_n: int):
        if max_n < 1:
            raise ValueError(f"train.swa_max_n must be at least 1, not {max_n}")
        self.max_n = max_n
        self.count = 0
        self.average: dict[str, torch.Tensor] = {}

    def add(self, model: torch.nn.Module) -> None:
        """Take ``model``'s current weights into the average."""
        n = min(self.count, self.max_n)
        with torch.no_grad():
            for name, value in model.state_dict().items():
                current = value.detach().to("cpu")
                if n == 0 or name not in self.average or not current.is_floating_point():
                    self.average[name] = current.clone()
                else:
                    self.average[name].mul_(n / (n + 1)).add_(
                        current.to(self.average[name].dtype), alpha=1 / (n + 1)
                    )
        self.count += 1

    def state(self) -> dict[str, Any]:
        return {"count": self.count, "max_n": self.max_n, "average": dict(self.average)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.count = int(state["count"])
        self.average = {name: value.to("cpu") for name, value in dict(state["average"]).items()}
