"""Every setting of a training run: frozen dataclasses, named presets, TOML in and out.

A run's settings are one :class:`RunConfig` made of sections (``game``, ``model``, ``selfplay``,
``replay``, ``train``, ``evaluate``, ``run``).  It is built in this order, each step overriding the last:

1. the preset (:func:`preset_config`: ``tiny``, ``small``, ``medium``, ``large``, ``paper``) for the game;
2. a TOML file (``--config settings.toml``) with the same sections;
3. ``--set section.key=value`` flags and the dedicated flags (``--device``, ``--workers`` ...).

The result is written to ``config.toml`` in the run folder and read back when the run resumes, so a
run always knows how it was made.  TOML has no null: ``None`` is written as the string ``"none"``
(for example ``dirichlet_alpha = "none"`` means "the game's default alpha").

Presets (Table S3 and the Configuration section of the paper for ``paper``; the smaller ones keep its
shape and shrink what dominates the cost):

==========  ========  ===========  =========  ==========  =======================================
preset      network   simulations  batch      window      meant for
==========  ========  ===========  =========  ==========  =======================================
tiny        b2c16     16 (Go), 32  64         20,000      CI and the 30-minute proofs on 2 cores
small       b6c64     100          256        100,000     a workstation, hours to days
medium      b10c128   200          512        250,000     one GPU machine, days
large       b15c192   400          1,024      500,000     a few GPU machines
paper       b20c256   800          4,096      1,000,000   the paper: LR 0.2 dropped 3 times, 700k steps
==========  ========  ===========  =========  ==========  =======================================
"""

from __future__ import annotations

import dataclasses
import logging
import math
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.games import Game, get_game, parse_game_label

PRESET_NAMES: tuple[str, ...] = ("tiny", "small", "medium", "large", "paper")

log = logging.getLogger("tabula.train")


@dataclasses.dataclass(frozen=True)
class GameSettings:
    """Which game is learned.

    Attributes:
        name: ``chess``, ``shogi`` or ``go``.
        size: Go board size (``None`` for chess and shogi).
        komi: Go komi (``None``: 9 on boards up to 7x7, 7.5 otherwise).
        max_plies: games longer than this are draws (``None``: the ruleset's own limit; Go's
            limit ``2 N^2`` ends and scores the game).
    """

    name: str = "go"
    size: int | None = 9
    komi: float | None = None
    max_plies: int | None = None

    @property
    def label(self) -> str:
        return f"go{self.size}" if self.name == "go" else self.name

    def effective_komi(self) -> float | None:
        if self.name != "go":
            return None
        if self.komi is not None:
            return float(self.komi)
        return 9.0 if (self.size or 19) <= 7 else 7.5


@dataclasses.dataclass(frozen=True)
class ModelSettings:
    """The network: ``preset`` is a size name of :mod:`trainer.network.model` (``tiny`` ... ``paper``, ``b6c64``);
    ``wdl`` adds a win/draw/loss head; ``value_head`` is ``fc`` (the paper's) or ``pool`` (global mean
    pooling, see :mod:`trainer.network.model`); ``ownership`` adds Go's ownership and score heads, trained on
    each game's final position (KataGo's auxiliary targets); ``global_pooling`` adds KataGo's global
    pooling bias to every other residual block; ``soft_policy`` adds KataGo's auxiliary soft policy
    head (``train.soft_policy_weight``).  A run resumed with a bigger ``preset`` (more blocks, more
    filters) or with ``ownership``, ``global_pooling`` or ``soft_policy`` newly on grows its checkpoint's
    network into one that computes what it did and goes on learning (:mod:`trainer.network.grow`).  The presets turn
    ``ownership`` and ``global_pooling`` on for Go: each won its A/B at equal CPU time on Go 9x9:
    docs/experiments.md, "KataGo's auxiliary targets (ownership and score heads) in Go 9x9: on by default";
    docs/experiments.md, "KataGo's global pooling in the trunk, Go 9x9: on by default, flagship grown to it at step 35820".

    ``init_from``: a checkpoint (``.pt``) or run folder of the same game, at another Go board size or
    the same one, of this network's size or a smaller one, whose network starts this run instead of
    random weights (:mod:`trainer.network.transfer`: the trunk and the size-free heads copied, the dense layers
    resampled, then :mod:`trainer.network.grow` to the run's size); read once, when the run has no checkpoint
    yet.  ``None``: random weights (tabula rasa)."""

    preset: str = "small"
    wdl: bool = False
    value_head: str = "fc"
    ownership: bool = False
    global_pooling: bool = False
    soft_policy: bool = False
    init_from: str | None = None


@dataclasses.dataclass(frozen=True)
class SelfPlaySettings:
    """Self-play (paper, Configuration; AlphaGo Zero for resignation; KataGo for playout caps).

    Attributes:
        workers: self-play processes (0: play inside the driver, alternating with training).
        games_in_parallel: games each worker plays at once; their leaves share one network call.
        leaves_per_tree: leaves selected per game and step (virtual loss keeps them apart).
        simulations: playouts per move (full searches).
        onnx_threads: onnxruntime intra-op threads per worker.
        sample_plies: moves are sampled in proportion to visit counts for this many plies, then greedy.
        dirichlet_alpha: root noise alpha (``None``: the game's ``profile.noise_alpha``).
        dirichlet_epsilon: weight of the noise.
        resign_threshold: resign when the root value and the best move's value are both below it
            (``None``: never resign).
        resign_consecutive: for this many consecutive own moves.
        resign_playout_fraction: fraction of games played to the end anyway, to measure how often
            resigning would have been wrong (false positives, logged).
        resign_false_positive_target: calibrate the threshold (AlphaGo Zero): use the lower of
            ``resign_threshold`` and the threshold at which this fraction of the played-out games would
            have been resigned wrongly (``None``: use ``resign_threshold`` as it is).
        resign_calibration_games: played-out games needed before anyone resigns (when calibrating).
        playout_cap: KataGo's playout-cap randomisation: a move gets a full search (with noise, and is
            recorded) with probability ``full_search_fraction``, else a fast search of
            ``fast_simulations`` (no noise, not recorded): more games for the value target at the same
            CPU.  Off by default; on in shogi's presets (but the paper's) and in the Go 9x9 run; its
            A/Bs: docs/experiments.md, "The eye rule and playout caps, Go 9x9: both win, both on
            (2026-11-26)" and "Playout caps (`selfplay.playout_cap`) and the repetition penalty".
        full_search_fraction, fast_simulations: see ``playout_cap``.
        positions_per_shard: positions per shard file written by a worker.
        gating: AlphaGo Zero's gating: play with ``best.onnx``, promoted when a new network wins
            ``evaluate.gating_threshold`` of a match; off (AlphaZero): always the newest network.
        pipeline: overlap tree work and network calls: the games are split in two halves and one half
            selects leaves while the other half's batch is evaluated on a helper thread.  Needs a core
            of its own for the helper (leave it off where the learner shares the cores).
        go_pass_rule: Go: no pass while behind on the board, pass back when ahead after the opponent's
            pass (exact under Tromp-Taylor; see ``trainer.selfplay.root_rules.go_pass_rule``); also in matches.
        go_pass_settled: Go, with ``go_pass_rule``: also no pass before the position is settled (every
            empty point someone's) unless the opponent just passed (the ``settled`` rule); also in the
            run's matches.
        go_keep_eyes: Go: no move into one's own true single-point eye (``GoState.true_eyes``) at the
            root, in self-play and in the run's matches; a player whose only other moves fill such eyes
            passes (``trainer.selfplay.root_rules.go_root_moves``).  Off in this dataclass, on in every Go preset
            (its A/B: the same section as ``playout_cap``'s).
        root_search: ``puct`` (AlphaZero: PUCT with Dirichlet noise at the root, visit counts as the
            policy target, moves sampled for ``sample_plies``) or ``gumbel`` (Gumbel root search with
            sequential halving over ``simulations``, the improved policy as the target, the Gumbel
            sample as the only exploration: :mod:`engine.search.gumbel`).  Full searches only; fast
            searches of ``playout_cap`` stay PUCT without noise.  Both search on the compiled trees
            (the Gumbel root's choices made in Python, :mod:`engine.search.root_plan`).
        gumbel_considered: root moves a Gumbel search considers (``m``; 16 in the paper).
        forced_playouts: KataGo's forced playouts in full PUCT searches, the ``k`` of
            ``sqrt(k P(c) sum N)`` (2 in KataGo), with policy target pruning of the recorded visits
            (:mod:`engine.search.forced`); 0 is off, no gain at this project's scale:
            docs/experiments.md, "KataGo's forced playouts with policy target pruning, Go 9x9: no gain at this scale, off (2026-11-26)".
        repetition_penalty: in every self-play search, a move into a position the game or the search path
            already had is valued ``-repetition_penalty`` for its mover
            (:attr:`engine.search.config.SearchConfig.repetition_penalty`); 0 is off.
        root_mate_nodes: the node budget of the rules' mate search at every self-play root
            (:attr:`engine.search.config.SearchConfig.root_mate_nodes`, 5,000 in the engine: shogi's
            df-pn, chess's mates in one and two); 0 is off.  Self-play's default is smaller: it finds
            most of the mates at a fraction of the cost:
            docs/experiments.md, "The root mate search in self-play: 1,000 nodes, not the engine's 5,000 (2026-11-26)".
        precision: ``fp32`` plays the exported network; ``int8`` plays its int8 copy, which each worker
            quantizes when it loads a new network (:mod:`trainer.network.quantize`, calibrated on the run's
            newest shards): several times the float32 positions per second on a CPU:
            docs/experiments.md, "Int8 self-play (`selfplay.precision`): 3.4x the positions per second, flagship on it since step 26000".
        uint8_planes: with an int8 copy on the CPU, shogi's compiled trees write their leaves' planes as
            uint8 and the network runs without its input ``QuantizeLinear`` (:mod:`trainer.network.uint8_planes`):
            the same evaluations in less network time.  ``False``: float32 planes.
    """

    workers: int = 1
    games_in_parallel: int = 32
    leaves_per_tree: int = 4
    simulations: int = 100
    onnx_threads: int = 1
    sample_plies: int = 30
    dirichlet_alpha: float | None = None
    dirichlet_epsilon: float = 0.25
    resign_threshold: float | None = -0.9
    resign_consecutive: int = 2
    resign_playout_fraction: float = 0.1
    resign_false_positive_target: float | None = 0.05
    resign_calibration_games: int = 20
    playout_cap: bool = False
    full_search_fraction: float = 0.25
    fast_simulations: int = 20
    positions_per_shard: int = 2000
    gating: bool = False
    pipeline: bool = False
    go_pass_rule: bool = True
    go_pass_settled: bool = False
    go_keep_eyes: bool = False
    root_search: str = "puct"
    gumbel_considered: int = 16
    forced_playouts: float = 0.0
    repetition_penalty: float = 0.0
    root_mate_nodes: int = 1000
    precision: str = "fp32"
    uint8_planes: bool = True

    def __post_init__(self) -> None:
        if self.forced_playouts < 0:
            raise ValueError(f"selfplay.forced_playouts must be at least 0, not {self.forced_playouts}")
        if not 0.0 <= self.repetition_penalty <= 1.0:
            raise ValueError(f"selfplay.repetition_penalty must be in [0, 1], not {self.repetition_penalty}")
        if self.root_mate_nodes < 0:
            raise ValueError(f"selfplay.root_mate_nodes must be at least 0, not {self.root_mate_nodes}")
        if self.precision not in SELFPLAY_PRECISIONS:
            raise ValueError(
                f"selfplay.precision must be one of {', '.join(SELFPLAY_PRECISIONS)}, not {self.precision!r}"
            )
        if self.root_search not in ROOT_SEARCHES:
            raise ValueError(
                f"selfplay.root_search must be one of {', '.join(ROOT_SEARCHES)}, not {self.root_search!r}"
            )


#: The network copies self-play can play (``SelfPlaySettings.precision``).
SELFPLAY_PRECISIONS = ("fp32", "int8")
#: The root searches of self-play (``SelfPlaySettings.root_search``).
ROOT_SEARCHES = ("puct", "gumbel")


@dataclasses.dataclass(frozen=True)
class ReplaySettings:
    """The replay window.

    Attributes:
        window: positions in the window (the newest ones).
        min_positions: training starts once this many positions exist.
        augment: Go: each sample gets one of the 8 board symmetries at random.
        proven_weight: how much more often a position whose root the search proved won (a mate found:
            its policy target is the mating move alone) is sampled than any other; 1 (the paper):
            uniform sampling.
        reanalyse_share: the share of the positions self-play workers search that are positions of the
            window searched again with the newest network (their new policy target and root value
            replace the stored ones: :mod:`trainer.selfplay.reanalysis`); 0 (the paper): none.
        reanalyse_simulations: visits of a reanalysis search (``None``: ``selfplay.simulations``).
    """

    window: int = 100_000
    min_positions: int = 5_000
    augment: bool = True
    proven_weight: float = 1.0
    reanalyse_share: float = 0.0
    reanalyse_simulations: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.reanalyse_share < 1.0:
            raise ValueError(f"replay.reanalyse_share must be in [0, 1), not {self.reanalyse_share}")
        if self.reanalyse_simulations is not None and self.reanalyse_simulations < 1:
            raise ValueError(
                f"replay.reanalyse_simulations must be at least 1, not {self.reanalyse_simulations}"
            )


@dataclasses.dataclass(frozen=True)
class TrainSettings:
    """The learner.

    Attributes:
        batch_size: positions per step.
        lr_schedule: ``(step, lr)`` pairs: from ``step`` on the learning rate is ``lr`` (stepped).
        momentum: SGD momentum (0.9).
        l2: ``c`` of the loss term ``c ||theta||^2`` (1e-4).
        value_weight: weight of the value term ``(z - v)^2`` in the loss (1 in the paper; AlphaGo Zero
            trained its supervised network with a low value weight "to avoid overfitting to the values").
        q_ratio: the value target is ``(1 - q_ratio) z + q_ratio q``, ``q`` the self-play search's root
            value of the position (Leela's q-ratio; 0 in the paper).  Far from a game's end ``q`` is
            the network's own smooth estimate, so the target carries less of one game's luck.
        ownership_weight: weight of the ownership term (networks with ``model.ownership``; KataGo's 1.5
            per point's mean cross-entropy).
        score_weight: weight of the score-margin term (squared error in units of the board's side).
        steps_per_sample: training steps allowed per new self-play position: the learner waits when
            ``step >= (positions - min_positions) * steps_per_sample``; each position is then seen about
            ``steps_per_sample * batch_size`` times.
        max_lag_steps: how far (in steps) the learner may fall behind ``steps_per_sample``
            before the self-play workers pause for it (they go on once it is within half of that); 0:
            they never pause, and a learner short of CPU trains each position fewer times than
            ``steps_per_sample`` says (the chess flagship: 0.02 steps a position against 0.05).
        interval_steps: steps between checkpoints and exports (one "generation").
        total_steps: the run ends here.
        keep_checkpoints: newest checkpoints kept.
        threads: torch intra-op threads (0: the cores left over by the self-play workers).
        amp: mixed precision on CUDA.
        swa_every: steps between samples of the learner's weights into their running average (stochastic
            weight averaging, :mod:`trainer.learn.swa`; kept in the checkpoints, written by ``tabula-train
            export --checkpoint``); 0: no average.
        swa_max_n: samples after which the average becomes exponential, each new one weighing
            ``1 / (swa_max_n + 1)`` (lc0's ``swa_max_n``).
        soft_policy_weight: weight of the soft policy term (networks with ``model.soft_policy``:
            :func:`trainer.learn.train.soft_policy_loss`; KataGo weighs it 8, its target being flatter
            and its loss's gradients smaller than the policy's).
        soft_policy_temperature: ``T`` of the soft target ``pi^(1/T)`` (KataGo's 4).
    """

    batch_size: int = 256
    lr_schedule: tuple[tuple[int, float], ...] = ((0, 0.02), (100_000, 0.002), (300_000, 0.0002))
    momentum: float = 0.9
    l2: float = 1e-4
    value_weight: float = 1.0
    q_ratio: float = 0.0
    ownership_weight: float = 1.5
    score_weight: float = 0.05
    steps_per_sample: float = 0.02
    max_lag_steps: int = 0
    interval_steps: int = 1000
    total_steps: int = 700_000
    keep_checkpoints: int = 3
    threads: int = 0
    amp: bool = True
    swa_every: int = 0
    swa_max_n: int = 10
    soft_policy_weight: float = 8.0
    soft_policy_temperature: float = 4.0

    def __post_init__(self) -> None:
        if self.swa_every < 0:
            raise ValueError(f"train.swa_every must be at least 0, not {self.swa_every}")
        if self.swa_max_n < 1:
            raise ValueError(f"train.swa_max_n must be at least 1, not {self.swa_max_n}")
        if self.soft_policy_weight < 0.0 or not self.soft_policy_temperature > 0.0:
            raise ValueError(
                "train.soft_policy_weight must not be negative, train.soft_policy_temperature positive"
            )

    def lr_at(self, step: int) -> float:
        lr = self.lr_schedule[0][1]
        for start, value in self.lr_schedule:
            if step >= start:
                lr = value
        return lr


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    """Matches between generations (and against the first network), at equal visits.

    Attributes:
        games: games per match (half with each colour, in pairs from the same opening).
        simulations: visits per move of both sides (``None``: the self-play simulations).
        opening_plies: random legal moves played before the networks take over, so games differ.
        every: evaluate every this many intervals (0: never during ``run``).
        vs_first: also play the newest network against the first (random) one.
        gating_threshold: score a new network needs against ``best.onnx`` when gating is on.
        games_in_parallel: games of a match played at once.
    """

    games: int = 20
    simulations: int | None = None
    opening_plies: int = 4
    every: int = 1
    vs_first: bool = True
    gating_threshold: float = 0.55
    games_in_parallel: int = 20


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """The driver.

    Attributes:
        device: ``cpu`` or ``cuda`` for training.
        seed: random seed of the initial network and of self-play.
        max_minutes: stop ``run`` after this many minutes of this invocation (``None``: no limit).
        max_cpu_minutes: stop ``run`` once this invocation has used this many CPU-minutes (the driver's
            own and its self-play workers', :class:`trainer.run.loop.CpuAccount`; ``None``: no limit).  An
            A/B pair run side by side under contention gets equal CPU this way, not equal wall time.
        tensorboard: write TensorBoard scalars when tensorboard is installed.
    """

    device: str = "cpu"
    seed: int = 0
    max_minutes: float | None = None
    max_cpu_minutes: float | None = None
    tensorboard: bool = True


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """All settings of one run (see the module docstring)."""

    preset: str = "small"
    game: GameSettings = GameSettings()
    model: ModelSettings = ModelSettings()
    selfplay: SelfPlaySettings = SelfPlaySettings()
    replay: ReplaySettings = ReplaySettings()
    train: TrainSettings = TrainSettings()
    evaluate: EvalSettings = EvalSettings()
    run: RunSettings = RunSettings()

    def replace(self, section: str, **changes: Any) -> RunConfig:
        """A copy with some fields of one section changed."""
        return dataclasses.replace(self, **{section: dataclasses.replace(getattr(self, section), **changes)})

    @property
    def eval_simulations(self) -> int:
        return self.evaluate.simulations or self.selfplay.simulations


SECTIONS: tuple[str, ...] = ("game", "model", "selfplay", "replay", "train", "evaluate", "run")


# ---- presets ----------------------------------------------------------------------------------------
# Why each setting of the presets has the value it has, with the measurements: docs/experiments.md.


@dataclasses.dataclass(frozen=True)
class _Scale:
    """What changes between the presets from ``small`` up (the rest keeps the section defaults)."""

    model: str  # model.preset
    simulations: int  # selfplay.simulations and evaluate.simulations
    games_in_parallel: int  # selfplay.games_in_parallel
    window: int  # replay.window
    min_positions: int  # replay.min_positions
    batch_size: int  # train.batch_size
    interval_steps: int  # train.interval_steps
    total_steps: int  # train.total_steps
    eval_games: int  # evaluate.games
    lr_schedule: tuple[tuple[int, float], ...]  # train.lr_schedule
    leaves_per_tree: int = 4  # selfplay.leaves_per_tree
    steps_per_sample: float = 0.02  # train.steps_per_sample


_SCALES: dict[str, _Scale] = {
    #                 model     sims games window     min_pos  batch interval total    eval  lr: (from step, lr)
    "small":  _Scale("small",  100, 32,   100_000,   5_000,   256,  1000,    200_000, 20,  ((0, 0.02), (100_000, 0.002), (150_000, 0.0002))),
    "medium": _Scale("medium", 200, 64,   250_000,   20_000,  512,  2000,    400_000, 40,  ((0, 0.05), (150_000, 0.005), (300_000, 0.0005))),
    "large":  _Scale("large",  400, 128,  500_000,   50_000,  1024, 2000,    600_000, 100, ((0, 0.1), (200_000, 0.01), (400_000, 0.001), (500_000, 0.0001))),
    # the paper: Configuration and Table S3
    "paper":  _Scale("paper",  800, 256,  1_000_000, 100_000, 4096, 1000,    700_000, 100, ((0, 0.2), (100_000, 0.02), (300_000, 0.002), (500_000, 0.0002)),
                     leaves_per_tree=8, steps_per_sample=0.0005),
}  # fmt: skip


def preset_config(preset: str, game: str = "go", size: int | None = None) -> RunConfig:
    """The named preset for one game.  ``game`` may be a label such as ``go9``."""
    name, label_size = parse_game_label(game)
    size = (size or label_size or 19) if name == "go" else None
    preset = preset.lower()
    if preset not in PRESET_NAMES:
        raise ValueError(f"unknown preset {preset!r}: expected one of {', '.join(PRESET_NAMES)}")
    settings = GameSettings(name=name, size=size)
    if preset == "tiny":
        return _tiny_preset(settings)
    return _scaled_preset(preset, _SCALES[preset], settings)


def _sample_plies(settings: GameSettings) -> int:
    """Opening plies sampled by visit count: 30 in AlphaGo Zero (19x19); scaled with the board for Go."""
    if settings.name != "go":
        return 30
    return max(4, round(30 * (settings.size or 19) ** 2 / 361))


def _repetition_penalty(settings: GameSettings) -> float:
    """0.3 for chess and shogi, whose weak networks otherwise shuffle into draws by repetition
    (docs/experiments.md, "Playout caps (`selfplay.playout_cap`) and the repetition penalty"); 0 for Go,
    where positional superko already forbids repeating."""
    return 0.0 if settings.name == "go" else 0.3


def _searches(settings: GameSettings, simulations: int, paper: bool = False) -> dict[str, Any]:
    """Self-play's visits for a preset of ``simulations``: shogi plays KataGo's playout caps, a quarter of
    the moves searched with twice the visits and recorded, the rest with half and not (it beat every
    move at ``simulations`` at equal CPU, +67 Elo in 200 games: docs/experiments.md, "Playout caps
    (`selfplay.playout_cap`) and the repetition penalty"); the others, and the paper's preset, search
    every move alike."""
    if settings.name != "shogi" or paper:
        return {"simulations": simulations}
    return {
        "simulations": 2 * simulations,
        "playout_cap": True,
        "fast_simulations": max(1, simulations // 2),
        "full_search_fraction": 0.25,
    }


def _scaled_preset(preset: str, scale: _Scale, settings: GameSettings) -> RunConfig:
    return RunConfig(
        preset=preset,
        game=settings,
        model=ModelSettings(
            scale.model, ownership=settings.name == "go", global_pooling=settings.name == "go"
        ),
        selfplay=SelfPlaySettings(
            **_searches(settings, scale.simulations, paper=preset == "paper"),
            games_in_parallel=scale.games_in_parallel,
            leaves_per_tree=scale.leaves_per_tree,
            sample_plies=_sample_plies(settings),
            repetition_penalty=_repetition_penalty(settings),
            go_keep_eyes=settings.name == "go",
        ),
        replay=ReplaySettings(window=scale.window, min_positions=scale.min_positions),
        train=TrainSettings(
            batch_size=scale.batch_size,
            interval_steps=scale.interval_steps,
            total_steps=scale.total_steps,
            steps_per_sample=scale.steps_per_sample,
            lr_schedule=scale.lr_schedule,
        ),
        evaluate=EvalSettings(games=scale.eval_games, simulations=scale.simulations),
    )


def _tiny_preset(settings: GameSettings) -> RunConfig:
    """CI and the 30-minute runs on 2 cores.  Go learns at 16 visits with the paper's targets; chess
    and shogi at 32 visits, sampling every move by visit count within the rules' 512-ply limit, with a
    pooled value head, a value target mixed with the search's root value (``q_ratio``: chess 0.5,
    shogi 0.8), fewer steps per new position and a window of the whole run; chess samples its proven
    positions 20 times as often; chess and shogi value a repeating move against its mover
    (``repetition_penalty``); shogi plays playout caps (64 visits for a quarter of the moves, 16 for the
    rest).  The measurements behind each choice: docs/experiments.md."""
    is_go = settings.name == "go"
    return RunConfig(
        preset="tiny",
        game=settings,
        model=ModelSettings(
            "tiny", value_head="fc" if is_go else "pool", ownership=is_go, global_pooling=is_go
        ),
        selfplay=SelfPlaySettings(
            workers=1,
            games_in_parallel=32,
            leaves_per_tree=2,
            **_searches(settings, 16 if is_go else 32),
            sample_plies=min(_sample_plies(settings), 12) if is_go else 512,
            resign_threshold=-0.95,
            positions_per_shard=500,
            repetition_penalty=_repetition_penalty(settings),
            go_keep_eyes=is_go,
        ),
        replay=ReplaySettings(
            window=20_000 if is_go else 100_000,
            min_positions=1_000,
            proven_weight=20.0 if settings.name == "chess" else 1.0,
        ),
        train=TrainSettings(
            batch_size=64,
            lr_schedule=((0, 0.02), (20_000, 0.002)),
            steps_per_sample=0.08 if is_go else 0.03,
            q_ratio={"go": 0.0, "chess": 0.5}.get(settings.name, 0.8),
            interval_steps=200,
            total_steps=40_000,
        ),
        evaluate=EvalSettings(
            games=10,
            simulations=16 if is_go else 32,
            opening_plies=2 if is_go else 4,
            every=2,
            games_in_parallel=10,
        ),
    )


# ---- dict / TOML conversion -------------------------------------------------------------------------


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _coerce(value: Any, hint: Any, where: str) -> Any:
    """Convert a TOML / flag value to the field type ``hint``."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        is_none = value is None or (isinstance(value, str) and value.lower() in ("none", "auto", "null"))
        if is_none and type(None) in args:
            return None
        non_none = [a for a in args if a is not type(None)]
        return _coerce(value, non_none[0], where)
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no", "on", "off"):
            return value.lower() in ("true", "1", "yes", "on")
        raise ValueError(f"{where}: expected true or false, got {value!r}")
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"{where}: expected an integer, got {value!r}")
        try:
            number = float(value) if isinstance(value, str) else value
        except ValueError:
            raise ValueError(f"{where}: expected an integer, got {value!r}") from None
        if not math.isfinite(number) or int(number) != number:
            raise ValueError(f"{where}: expected an integer, got {value!r}")
        return int(number)
    if hint is float:
        if isinstance(value, bool):
            raise ValueError(f"{where}: expected a number, got {value!r}")
        try:
            result = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: expected a number, got {value!r}") from None
        if not math.isfinite(result):
            raise ValueError(f"{where}: expected a finite number, got {value!r}")
        return result
    if hint is str:
        return str(value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], where) for v in value)
        if len(args) != len(value):
            raise ValueError(f"{where}: expected {len(args)} items, got {value!r}")
        return tuple(_coerce(v, a, where) for v, a in zip(value, args, strict=True))
    raise TypeError(f"{where}: unsupported field type {hint}")


#: Settings that are gone, with why: a run folder's ``config.toml`` that still has one (runs and packs
#: made before) loads with a warning, not an error.
RETIRED_SETTINGS: dict[tuple[str, str], str] = {
    ("selfplay", "cache_size"): "the network cache served only the Python tree, which no longer searches",
}


def _apply_section(obj: Any, values: Mapping[str, Any], section: str) -> Any:
    hints = _field_types(type(obj))
    changes = {}
    for key, value in values.items():
        retired = RETIRED_SETTINGS.get((section, key))
        if retired is not None:
            log.warning("ignoring the retired setting %s.%s (%s)", section, key, retired)
            continue
        if key not in hints:
            known = ", ".join(sorted(hints))
            raise ValueError(f"unknown setting {section}.{key} (known: {known})")
        changes[key] = _coerce(value, hints[key], f"{section}.{key}")
    return dataclasses.replace(obj, **changes)


def apply_overrides(config: RunConfig, data: Mapping[str, Any]) -> RunConfig:
    """``config`` with the values of a nested mapping (``{"train": {"batch_size": 64}}``) applied.

    Raises:
        ValueError: an unknown section or key, or a value of the wrong type.
    """
    for section, values in data.items():
        if section == "preset":
            config = dataclasses.replace(config, preset=str(values))
            continue
        if section not in SECTIONS:
            raise ValueError(f"unknown section [{section}] (known: {', '.join(SECTIONS)})")
        if not isinstance(values, Mapping):
            raise ValueError(f"[{section}] must be a table")
        config = dataclasses.replace(
            config, **{section: _apply_section(getattr(config, section), values, section)}
        )
    return config


def parse_assignment(text: str) -> dict[str, Any]:
    """``"train.batch_size=64"`` -> ``{"train": {"batch_size": 64}}`` (values parsed as TOML, else as
    a plain string)."""
    if "=" not in text or "." not in text.split("=", 1)[0]:
        raise ValueError(f"--set {text!r}: expected section.key=value")
    path, raw = text.split("=", 1)
    section, key = path.strip().split(".", 1)
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return {section: {key: value}}


def load_toml(path: str | Path) -> dict[str, Any]:
    """The TOML document at ``path``.  Raises ``ValueError`` naming the file (unreadable, not TOML)."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not TOML ({exc})") from None


def apply_toml_file(config: RunConfig, path: str | Path) -> RunConfig:
    """``config`` with the settings of the TOML file ``path`` applied.  Raises ``ValueError`` naming the
    file and the fault (not TOML, an unknown section or key, a value of the wrong type)."""
    data = load_toml(path)
    try:
        return apply_overrides(config, data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None


def config_to_dict(config: RunConfig) -> dict[str, Any]:
    """Nested plain dict (tuples become lists; ``None`` stays ``None``)."""
    out: dict[str, Any] = {"preset": config.preset}
    for section in SECTIONS:
        out[section] = {
            f.name: _plain(getattr(getattr(config, section), f.name))
            for f in dataclasses.fields(getattr(config, section))
        }
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def config_from_dict(data: Mapping[str, Any]) -> RunConfig:
    """Inverse of :func:`config_to_dict` (missing keys take the defaults)."""
    return apply_overrides(RunConfig(), data)


def _toml_value(value: Any) -> str:
    if value is None:
        return '"none"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to TOML")


def config_to_toml(config: RunConfig, header: str = "") -> str:
    """The config as a TOML document (read back by :func:`config_from_toml`)."""
    data = config_to_dict(config)
    lines = [f"# {line}" for line in header.splitlines()] if header else []
    lines.append(f"preset = {_toml_value(data.pop('preset'))}")
    for section, values in data.items():
        lines.append("")
        lines.append(f"[{section}]")
        for key, value in values.items():
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def config_from_toml(text: str) -> RunConfig:
    return config_from_dict(tomllib.loads(text))


def without_invocation_limits(config: RunConfig) -> RunConfig:
    """``config`` without ``run.max_minutes`` and ``run.max_cpu_minutes``.

    ``--minutes`` and ``--cpu-minutes`` bound one invocation ("stop, resume later"): a run folder does not
    record them, and a resume ignores them in records written before that (else a plain resume, or a new
    run started from a run's ``config.toml``, would stop after that run's last session's limit).
    """
    return dataclasses.replace(
        config, run=dataclasses.replace(config.run, max_minutes=None, max_cpu_minutes=None)
    )


def build_config(
    preset: str,
    game: str,
    size: int | None = None,
    toml_files: Sequence[str | Path] = (),
    assignments: Sequence[str] = (),
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> RunConfig:
    """Preset, then TOML files, then ``--set`` assignments, then dedicated flags (``overrides``)."""
    config = preset_config(preset, game, size)
    for path in toml_files:
        config = apply_toml_file(config, path)
    for text in assignments:
        config = apply_overrides(config, parse_assignment(text))
    if overrides:
        config = apply_overrides(config, {k: v for k, v in overrides.items() if v})
    return config


def make_game(settings: GameSettings) -> Game:
    """The :class:`~engine.games.base.Game` of these settings (komi and length limits applied)."""
    options: dict[str, Any] = {}
    if settings.name == "go":
        options["komi"] = settings.effective_komi()
        if settings.max_plies is not None:
            options["max_moves"] = settings.max_plies
        return get_game("go", board_size=settings.size, **options)
    if settings.max_plies is not None:
        options["max_plies"] = settings.max_plies
    return get_game(settings.name, **options)
