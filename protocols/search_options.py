"""The search's PUCT parameters as engine options, declared once for every protocol.

UCI and USI declare each as a ``spin`` (integers only: the real value times ``scale``, as
``PolicyTemperature`` is in hundredths), GTP and the command line take it as a flag with the real
value.  They exist so that a tuner (SPSA, a Bayesian tuner) can play matches through the real
clients with other values (``benchmarks/tune.py``); the defaults are the paper's
(:class:`~engine.search.config.SearchConfig`).  ``LCBVisitShare`` turns on Leela Zero's choice of the
move to play by its lower confidence bound (:mod:`engine.search.lcb`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the table is read by ``tabula --help``, which imports no engine module
    from engine.search.config import SearchConfig


@dataclasses.dataclass(frozen=True)
class SearchParameter:
    """One :class:`SearchConfig` field as an option.

    Attributes:
        name: the UCI/USI option name.
        flag: the command-line / GTP flag (``--cpuct``).
        field: the :class:`SearchConfig` field it sets.
        scale: option units per unit of the field (100: the option is in hundredths).
        low / high: the option's range, in option units.
        meaning: what it is, for ``--help`` (the option's units: ``scale``).
        default: where the default comes from, for ``--help``.
    """

    name: str
    flag: str
    field: str
    scale: int
    low: int
    high: int
    meaning: str
    default: str = "the paper's"

    def option_value(self, config: SearchConfig) -> int:
        """The option's value (option units) for ``config``."""
        return round(float(getattr(config, self.field)) * self.scale)

    def applied(self, config: SearchConfig, option_value: int) -> SearchConfig:
        """``config`` with this parameter set from an option value (option units, in range)."""
        return dataclasses.replace(config, **{self.field: option_value / self.scale})  # type: ignore[arg-type]

    @property
    def flag_range(self) -> tuple[float, float]:
        """The flag's range (real values)."""
        return self.low / self.scale, self.high / self.scale

    @property
    def flag_dest(self) -> str:
        """The keyword click gives the flag's value under."""
        return self.flag.lstrip("-").replace("-", "_")


SEARCH_PARAMETERS: tuple[SearchParameter, ...] = (
    SearchParameter("CPuct", "--cpuct", "c_init", 100, 1, 1000, "PUCT exploration c_init"),
    SearchParameter(
        "CPuctBase", "--cpuct-base", "c_base", 1, 1, 100_000_000, "PUCT exploration growth c_base (visits)"
    ),
    SearchParameter(
        "FpuReduction",
        "--fpu-reduction",
        "fpu_reduction",
        100,
        0,
        500,
        "first-play urgency below the root: an unvisited move is valued at the parent's Q less this "
        "times the square root of its visited siblings' priors",
    ),
    SearchParameter(
        "FpuReductionRoot",
        "--fpu-reduction-root",
        "fpu_reduction_root",
        100,
        0,
        500,
        "first-play urgency at the root",
    ),
    SearchParameter(
        "LCBVisitShare",
        "--lcb-visit-share",
        "lcb_ratio",
        100,
        0,
        100,
        "play the root move with the best lower confidence bound of its value among those with more "
        "than this share of the most visited move's visits (Leela Zero: 0.10); 0: the most visited move",
        "the game's: 0.10 in chess, 0 in shogi and Go",
    ),
)

#: Option name, lower case -> its parameter (UCI names are case-insensitive).
BY_NAME = {p.name.lower(): p for p in SEARCH_PARAMETERS}


def config_from_flags(config: SearchConfig, flags: dict[str, object]) -> SearchConfig:
    """``config`` with every parameter whose flag was given (real values; ``None``: not given)."""
    for parameter in SEARCH_PARAMETERS:
        value = flags.get(parameter.flag_dest)
        if value is not None:
            config = dataclasses.replace(config, **{parameter.field: float(value)})  # type: ignore[arg-type]
    return config
