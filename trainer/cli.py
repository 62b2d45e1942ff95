"""``tabula-train``: the trainer program.  One subcommand per stage; each runs alone on a run folder.

run        start or resume a run: self-play workers + learner + export + evaluation
selfplay   play games with the run's newest network into its shards
train      train a number of steps from the run's shards (checkpoint and export at the end)
export     a network file: random (--random) or from a checkpoint (--checkpoint)
evaluate   a match between two networks, or against an external UCI / USI / GTP engine
status     where a run stands
plot       PNG of Elo and losses over training
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

# Each command imports what it runs inside its body: torch, onnxruntime, numpy and the search take a
# second or more to load, and ``tabula-train --help`` (or a mistyped option) answers at once.
if TYPE_CHECKING:
    from engine.evaluator import Evaluator
    from engine.games.base import Game
    from engine.network import NetworkMetadata
    from trainer.config import RunConfig, SelfPlaySettings
    from trainer.evaluate.evaluate import ExternalEngine, MatchGame
    from trainer.evaluate.opening_suites import Opening
    from trainer.evaluate.probe import HeldoutErrors
    from trainer.evaluate.sprt import SprtSettings
    from trainer.store.runfolder import RunFolder

RUN_DIR_HELP = "The run folder (created by `run`)."

#: A click command function (the decorators keep its type).
Command = TypeVar("Command", bound=Callable[..., Any])
#: A file that must exist (a network, a checkpoint): click checks it before any work.
EXISTING_FILE = click.Path(dir_okay=False, exists=True, path_type=Path)
#: A folder that must exist (a run folder).
EXISTING_FOLDER = click.Path(file_okay=False, exists=True, path_type=Path)

#: ``--out`` of the commands that read a run folder which must exist.
_existing_run = click.option(
    "--out",
    "--run",
    "out",
    required=True,
    type=EXISTING_FOLDER,
    help=RUN_DIR_HELP,
)


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A float option that must be a finite number (click's ``float`` accepts ``nan`` and ``inf``)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number")
    return value


def _output_file(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A file to write: its folder must exist and it must not be a folder (checked before any work)."""
    if value is not None:
        if value.is_dir():
            raise click.BadParameter(f"{value} is a folder")
        if not value.resolve().parent.is_dir():
            raise click.BadParameter(f"no such folder: {value.parent}")
    return value


def output_file_option(*decls: str, help_text: str, required: bool = False) -> Callable[[Command], Command]:
    """An option naming a file to write (:func:`_output_file` checks it before any work)."""
    return click.option(
        *decls,
        required=required,
        default=None,
        type=click.Path(dir_okay=False, path_type=Path),
        callback=_output_file,
        help=help_text,
    )


def _run_config(folder: RunFolder) -> RunConfig:
    """The settings a run folder records; one ``Error:`` line (exit status 1) when there are none or
    they cannot be read, instead of a traceback."""
    if not folder.exists():
        raise click.ClickException(f"{folder.root} is not a run folder (no config.toml)")
    try:
        return folder.read_config()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise click.ClickException(
            f"{folder.root}: cannot read the run's settings in {folder.config_path.name} ({exc})"
        ) from None


def _command_line() -> str:
    return "tabula-train " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The options of the commands that work on a run folder (``run``, ``selfplay``, ``train``)."""

    out: Path
    game: str | None
    size: int | None
    komi: float | None
    preset: str | None
    config_files: tuple[str, ...]
    assignments: tuple[str, ...]
    device: str | None
    workers: int | None
    seed: int | None
    verbose: bool

    def config(
        self,
        minutes: float | None = None,
        steps: int | None = None,
        with_workers: bool = True,
        cpu_minutes: float | None = None,
    ) -> RunConfig:
        """The run's settings: the recorded ones (resume) or the preset for ``--game``, then the
        ``--config`` files, the ``--set`` assignments and the dedicated flags."""
        from trainer.config import build_config
        from trainer.store.runfolder import RunFolder

        flags = self._flags(minutes, steps, with_workers, cpu_minutes)
        try:
            if RunFolder(self.out).exists():
                return self._resumed_config(flags)
            if self.game is None:
                raise click.UsageError(f"{self.out} has no run yet: give --game (and --size for Go)")
            from engine.games import get_game

            get_game(self.game, self.size)  # chess or shogi with a --size: refused here
            if self.komi is not None:
                flags["game"] = {"komi": self.komi}
            return build_config(
                self.preset or "small", self.game, self.size, self.config_files, self.assignments, flags
            )
        except ValueError as exc:  # a setting the rules or the presets refuse: one Error line, no traceback
            raise click.UsageError(str(exc)) from None

    def _flags(
        self, minutes: float | None, steps: int | None, with_workers: bool, cpu_minutes: float | None = None
    ) -> dict[str, dict[str, Any]]:
        values = {
            ("run", "device"): self.device,
            ("run", "max_minutes"): minutes,
            ("run", "max_cpu_minutes"): cpu_minutes,
            ("run", "seed"): self.seed,
            ("selfplay", "workers"): self.workers if with_workers else None,
            ("train", "total_steps"): steps,
        }
        flags: dict[str, dict[str, Any]] = {"run": {}, "selfplay": {}, "train": {}}
        for (section, key), value in values.items():
            if value is not None:
                flags[section][key] = value
        return flags

    def _resumed_config(self, flags: dict[str, dict[str, Any]]) -> RunConfig:
        """The recorded config of an existing run, checked against ``--game``, with ``--preset`` (a new
        base keeping the run's komi and length limit), files, assignments and flags applied."""
        from engine.games import parse_game_label
        from trainer.config import (
            apply_overrides,
            apply_toml_file,
            parse_assignment,
            preset_config,
            without_invocation_limits,
        )
        from trainer.store.runfolder import RunFolder

        config = without_invocation_limits(_run_config(RunFolder(self.out)))
        if self.game is not None:
            name, label_size = parse_game_label(self.game)
            wanted_size = self.size or label_size or (config.game.size if name == "go" else None)
            if name != config.game.name or (name == "go" and wanted_size != config.game.size):
                raise click.UsageError(
                    f"{self.out} is a {config.game.label} run; --game {self.game} --size {self.size} does not match"
                )
        if self.preset is not None and self.preset != config.preset:
            base = preset_config(self.preset, config.game.label)
            config = apply_overrides(
                base, {"game": {"komi": config.game.komi, "max_plies": config.game.max_plies}}
            )
        for path in self.config_files:
            config = apply_toml_file(config, path)
        for text in self.assignments:
            config = apply_overrides(config, parse_assignment(text))
        return apply_overrides(config, {k: v for k, v in flags.items() if v})


def _config_files(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """``--config``: TOML files of known settings of the right types; else one ``Error: Invalid value``
    line naming the file and the fault, exit status 2 (checked before any file of the run is written)."""
    from trainer.config import RunConfig, apply_toml_file

    for path in value:
        try:
            apply_toml_file(RunConfig(), path)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def _game_label(value: str | None) -> str | None:
    """``--game``: a label that names a game (``chess``, ``shogi``, ``go``, ``go9`` ...); else one
    ``Error: Invalid value`` line and exit status 2 (click's answer to a bad value)."""
    if value is not None:
        from engine.games import get_game

        try:
            get_game(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


_RUN_OPTIONS = [
    click.option(
        "--out",
        "--run",
        "out",
        required=True,
        type=click.Path(file_okay=False, path_type=Path),
        help=RUN_DIR_HELP,
    ),
    click.option(
        "--game",
        default=None,
        callback=lambda ctx, param, value: _game_label(value),
        help="chess, shogi, go (or go9, go19 ...); only for a new run.",
    ),
    click.option(
        "--size",
        type=click.IntRange(2, 19),
        default=None,
        help="Go board size, 2..19 (default 19, or from the label).",
    ),
    click.option(
        "--komi", type=float, default=None, callback=_finite, help="Go komi (default 9 up to 7x7, else 7.5)."
    ),
    click.option("--preset", default=None, help="tiny, small, medium, large, paper (default small)."),
    click.option(
        "--config",
        "config_files",
        multiple=True,
        type=click.Path(dir_okay=False, exists=True),
        callback=_config_files,
        help="TOML file of settings (sections game, model, selfplay, replay, train, evaluate, run).",
    ),
    click.option(
        "--set",
        "assignments",
        multiple=True,
        metavar="SECTION.KEY=VALUE",
        help="Override one setting, e.g. --set selfplay.simulations=200 (repeatable).",
    ),
    click.option(
        "--device",
        type=click.Choice(["cpu", "cuda"]),
        default=None,
        help="Training device (mixed precision on cuda).",
    ),
    click.option(
        "--workers",
        type=click.IntRange(min=0),
        default=None,
        help="Self-play processes (0: inline in the driver).",
    ),
    click.option("--seed", type=click.IntRange(min=0), default=None, help="Random seed."),
    click.option("-v", "--verbose", is_flag=True, help="Log more."),
]


def _run_options(command: Callable[..., None]) -> Callable[..., None]:
    """Add the run-folder options; the command gets them as one :class:`RunOptions` (logging set up)."""

    @functools.wraps(command)
    def with_options(**values: Any) -> None:
        fields = [f.name for f in dataclasses.fields(RunOptions)]
        options = RunOptions(**{name: values.pop(name) for name in fields})
        _setup_logging(options.verbose)
        command(options, **values)

    for option in reversed(_RUN_OPTIONS):
        with_options = option(with_options)
    return with_options


@click.group()
def main() -> None:
    """Tabula's AlphaZero trainer: self-play, training, export, evaluation.

    Quick start: tabula-train run --game go --size 9 --preset small --out runs/go9
    """


@main.command("run")
@_run_options
@click.option(
    "--minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Stop after this many minutes (resume later).",
)
@click.option(
    "--cpu-minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Stop once this invocation has used this many CPU-minutes, its workers' included (A/B runs).",
)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=None,
    help="Total training steps of the run (train.total_steps).",
)
@click.option(
    "--ray-address",
    default=None,
    help="Self-play workers as Ray actors: a cluster ADDRESS, 'auto', or 'local' (a private instance).",
)
@click.option("--no-progress", is_flag=True, help="No progress bar (log lines only).")
def run_cmd(
    options: RunOptions,
    minutes: float | None,
    cpu_minutes: float | None,
    steps: int | None,
    ray_address: str | None,
    no_progress: bool,
) -> None:
    """Start a training run, or resume the one in --out."""
    from trainer.network.checkpoint import CheckpointError
    from trainer.run.loop import Driver, RunLockedError
    from trainer.store.runfolder import RunFolder
    from trainer.store.shards import ShardError

    config = options.config(minutes, steps, cpu_minutes=cpu_minutes)
    out = options.out
    driver = Driver(
        RunFolder(out), config, _command_line(), ray_address=ray_address, progress=not no_progress
    )
    try:
        summary = driver.run()
    except (RunLockedError, CheckpointError, ShardError) as e:  # another process, a file a resume cannot read
        raise click.ClickException(str(e)) from None
    click.echo(
        f"{out}: step {summary.step}, {summary.games} games, {summary.positions} positions; "
        f"stopped: {summary.stop_reason} after {summary.seconds:.0f}s"
    )


@main.command("selfplay")
@_run_options
@click.option(
    "--games", type=click.IntRange(min=1), required=True, help="Games to play (split over the workers)."
)
def selfplay_cmd(options: RunOptions, games: int) -> None:
    """Play self-play games with the run's newest network into its shards (creates the run if needed)."""
    from trainer.run.stages import StageError, play_selfplay_games
    from trainer.store.runfolder import RunFolder

    config = options.config()
    try:
        outcome = play_selfplay_games(RunFolder(options.out), config, games, _command_line())
    except StageError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{options.out}: {outcome.games} games, {outcome.shards} new shards")


@main.command("train")
@_run_options
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    required=True,
    help="Training steps to do now (ignores the sample ratio).",
)
def train_cmd(options: RunOptions, steps: int) -> None:
    """Train from the run's shards, then checkpoint and export (latest.onnx)."""
    from trainer.network.checkpoint import CheckpointError
    from trainer.run.stages import StageError, train_steps
    from trainer.store.runfolder import RunFolder

    config = options.config(with_workers=False)
    try:
        outcome = train_steps(RunFolder(options.out), config, steps, _command_line())
    except (StageError, CheckpointError) as exc:
        raise click.ClickException(str(exc)) from None
    loss = outcome.metrics.get("loss", float("nan"))
    click.echo(f"{options.out}: step {outcome.step}, loss {loss:.4f}; exported {outcome.network}")


@main.command("export")
@click.option(
    "--game",
    "label",
    default=None,
    callback=lambda ctx, param, value: _game_label(value),
    help="Game label: chess, shogi, go9, go19, go<N> (with --random).",
)
@click.option(
    "--preset",
    default="small",
    show_default=True,
    help="Model size: tiny, small, medium, large, paper, or bBcF such as b6c64.",
)
@click.option(
    "--random", "random_init", is_flag=True, help="Export a randomly initialised (untrained) network."
)
@click.option(
    "--checkpoint",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="A checkpoint file (.pt), or a run folder (its newest checkpoint).",
)
@output_file_option("--out", "out", required=True, help_text="The .onnx file to write.")
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Seed of the random initialisation.",
)
@click.option("--wdl", is_flag=True, help="Add a win/draw/loss head.")
@click.option(
    "--komi",
    type=float,
    default=None,
    callback=_finite,
    help="Go: komi recorded in the metadata (default: the rules').",
)
@click.option(
    "--raw",
    is_flag=True,
    help="With --checkpoint: the learner's own weights, not their average (train.swa_every).",
)
def export_cmd(
    label: str | None,
    preset: str,
    random_init: bool,
    checkpoint: Path | None,
    out: Path,
    seed: int,
    wdl: bool,
    komi: float | None,
    raw: bool,
) -> None:
    """Write a network under the network contract (one ONNX file with Tabula metadata)."""
    import torch

    from engine.games import get_game
    from trainer.network.export import export_onnx
    from trainer.network.model import build_model

    if checkpoint is not None:
        _export_checkpoint(checkpoint, out, komi, raw)
        return
    if not random_init:
        raise click.UsageError("give --random (a random network) or --checkpoint (a trained one)")
    if label is None:
        raise click.UsageError("--random needs --game")
    game = get_game(label)
    info = game.info
    if info.name == "go" and komi is None:
        komi = getattr(getattr(game, "rules", None), "komi", None)
    torch.manual_seed(seed)
    try:
        model = build_model(info, preset, wdl=wdl)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--preset'") from None
    command = f"tabula-train export --game {label} --preset {preset} --random --seed {seed}"
    command += (" --wdl" if wdl else "") + (
        f" --komi {komi}" if info.name == "go" and komi is not None else ""
    )
    command += f" --out {out}"
    meta = export_onnx(model, out, step=0, komi=komi, made_by=f"{command}; random init, untrained")
    size = Path(out).stat().st_size
    click.echo(
        f"wrote {out}: {meta.label} {meta.preset}, {size:,} bytes, random init (seed {seed}), untrained"
    )


def _export_checkpoint(checkpoint: Path, out: Path, komi: float | None, raw: bool) -> None:
    from trainer.network.export import export_checkpoint

    try:
        meta, path = export_checkpoint(checkpoint, out, komi, raw)
    except ValueError as e:
        raise click.ClickException(str(e)) from e
    averaged = "; averaged weights" if "averaged over" in meta.made_by else ""
    click.echo(f"wrote {out}: {meta.label} {meta.preset}, step {meta.step}, from {path}{averaged}")


@main.command("quantize")
@click.option("--network", required=True, type=EXISTING_FILE, help="The float32 network (.onnx) to quantize.")
@click.option(
    "--run",
    "run_dir",
    type=EXISTING_FOLDER,
    default=None,
    help="Calibrate on this run's newest self-play shards (default: games the network plays itself).",
)
@output_file_option("--to", "to", help_text="Default: NAME.int8.onnx.")
@click.option(
    "--positions", default=512, show_default=True, type=click.IntRange(min=1), help="Calibration positions."
)
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
def quantize_cmd(network: Path, run_dir: Path | None, to: Path | None, positions: int, seed: int) -> None:
    """Write the network's int8 copy (NAME.int8.onnx), which the engine runs on the CPU."""
    from engine.games import get_game
    from engine.network import int8_sibling
    from trainer.network.quantize import calibration_for, quantize_network
    from trainer.store.shards import list_shards

    meta = _network_metadata(network, "'--network'")
    game = get_game(meta.label)
    out = to or int8_sibling(network)
    if out.resolve() == network.resolve():
        raise click.UsageError(f"{network} is an int8 network already (give --to)")
    command = f"tabula-train quantize --network {network}"
    if run_dir is not None:
        if not list_shards(run_dir / "shards"):
            raise click.ClickException(f"no shards in {run_dir / 'shards'}")
        command += f" --run {run_dir}"
    planes = calibration_for(network, game, run_dir / "shards" if run_dir else None, positions, seed)
    command += f" --positions {positions} --seed {seed}"
    quantize_network(network, out, planes, command)
    click.echo(f"wrote {out}: int8, {out.stat().st_size:,} bytes, calibrated on {len(planes)} positions")
    if game.profile.uint8_planes:
        _write_uint8_planes(out)


def _network_metadata(network: Path, hint: str) -> NetworkMetadata:
    """The metadata of a network file; a file that is not a Tabula network is a bad value of the option
    ``hint`` (one ``Error:`` line, exit status 2)."""
    from engine.network import NetworkError, read_metadata

    try:
        return read_metadata(network)
    except (NetworkError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def _write_uint8_planes(int8: Path) -> None:
    """Write and report the uint8-planes model of the int8 copy ``int8``."""
    from trainer.network.uint8_planes import write_uint8_planes_model

    _network_metadata(int8, "'--network'")
    written = write_uint8_planes_model(int8)
    if written is None:
        raise click.ClickException(f"{int8} does not start with a QuantizeLinear of its planes")
    click.echo(f"wrote {written}: uint8 planes in, uint8 policy logits out, {written.stat().st_size:,} bytes")


@main.command("uint8-planes")
@click.option(
    "--network", required=True, type=EXISTING_FILE, help="The int8 copy (NAME.int8.onnx, from quantize)."
)
def uint8_planes_cmd(network: Path) -> None:
    """Write the int8 copy's uint8-planes model (NAME.int8.uint8-planes.onnx): the same network taking the
    planes as the int8 copy quantizes them, which the engine's compiled shogi search writes directly
    (quantize writes it for shogi; this makes it for a copy made before)."""
    _write_uint8_planes(network)


#: ``evaluate --b uniform``: the search without a network.
UNIFORM = "uniform"


@main.command("evaluate")
@click.option(
    "--out",
    "--run",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A run folder: defaults for the game and the networks (its newest vs its first).",
)
@click.option(
    "--a",
    "net_a",
    type=EXISTING_FILE,
    default=None,
    help="Network A (default: the run's latest.onnx).",
)
@click.option(
    "--b",
    "net_b",
    default=None,
    help="Network B (default: the run's first network); 'uniform': the search with uniform priors "
    "and value 0, the untrained baseline.",
)
@click.option(
    "--game",
    default=None,
    callback=lambda ctx, param, value: _game_label(value),
    help="Game label when no run folder is given (go9, chess ...).",
)
@click.option(
    "--komi", type=float, default=None, callback=_finite, help="Go komi (default: the run's, or the rules')."
)
@click.option(
    "--games",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="Games to play; with --sprt the most to play (pairs: half as many).",
)
@click.option(
    "--simulations",
    type=click.IntRange(min=1),
    default=None,
    help="Visits per move for both (default: the run's).",
)
@click.option(
    "--opening-plies",
    type=click.IntRange(min=0),
    default=None,
    help="Random opening plies when no suite is played (default: the run's).",
)
@click.option(
    "--openings",
    "suite",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="Opening suite: a PGN, SGF or text file (FEN / SFEN / move lists, one a line) or a folder of "
    "SGF files; each opening is played twice, colours reversed (default with --sprt: the shipped suite).",
)
@click.option(
    "--sprt",
    default=None,
    metavar="ELO0,ELO1[,ALPHA,BETA]",
    callback=lambda ctx, param, value: _sprt_settings(value),
    help="Sequential test of nElo ELO0 against ELO1 over game pairs (alpha, beta default 0.05): stop "
    "as soon as H0 or H1 is accepted, or at --games.",
)
@click.option(
    "--parallel", type=click.IntRange(min=1), default=20, show_default=True, help="Games played at once."
)
@click.option("--seed", type=click.IntRange(min=0), default=12345, show_default=True)
@click.option(
    "--pass-rule",
    type=click.Choice(["off", "tromp-taylor", "settled"]),
    default=None,
    help="Go: the pass rule of both players (default: the run's; tromp-taylor without a run).",
)
@click.option(
    "--keep-eyes/--fill-eyes",
    default=None,
    help="Go: neither player fills its own true eyes (default: the run's selfplay.go_keep_eyes; "
    "--fill-eyes without a run).",
)
@click.option("--engine", default=None, help="External opponent command line (instead of network B).")
@click.option(
    "--protocol",
    type=click.Choice(["uci", "usi", "gtp"]),
    default=None,
    help="External engine protocol (default by game: uci, usi, gtp).",
)
@click.option("--engine-go", default=None, help="UCI/USI search command, e.g. 'go nodes 1000'.")
@click.option(
    "--option",
    "engine_options",
    multiple=True,
    metavar="NAME=VALUE",
    callback=lambda ctx, param, value: _name_values(value),
    help="UCI/USI setoption.",
)
@output_file_option("--record", help_text="Write the games to this record file (PGN / CSA / SGF).")
def evaluate_cmd(
    out: Path | None,
    net_a: Path | None,
    net_b: str | None,
    game: str | None,
    komi: float | None,
    games: int,
    simulations: int | None,
    opening_plies: int | None,
    suite: Path | None,
    sprt: SprtSettings | None,
    parallel: int,
    seed: int,
    pass_rule: str | None,
    keep_eyes: bool | None,
    engine: str | None,
    protocol: str | None,
    engine_go: str | None,
    engine_options: tuple[str, ...],
    record: Path | None,
) -> None:
    """Play network A against network B (equal visits) or against an external engine; print Elo.

    With --sprt: game pairs from an opening suite until the sequential test decides (H0 or H1), or
    --games have been played (inconclusive); the LLR is printed after every pair."""
    from trainer.config import SelfPlaySettings, make_game
    from trainer.evaluate.evaluate import EngineError, play_external, play_match
    from trainer.evaluate.match_record import log_match, match_records
    from trainer.evaluate.sprt import SprtTracker
    from trainer.selfplay.root_rules import GoRootRules, PassRule, pass_rule_of

    folder, config, net_a, net_b = _match_setup(out, game, komi, net_a, net_b)
    g = make_game(config.game)
    sims = simulations or config.eval_simulations
    plies = config.evaluate.opening_plies if opening_plies is None else opening_plies
    if sprt is not None and games < 2:
        raise click.BadParameter("--sprt plays game pairs: give at least 2", param_hint="'--games'")
    starts = _suite_starts(suite, sprt is not None, g, games, seed)
    settings = SelfPlaySettings(games_in_parallel=parallel, leaves_per_tree=4, onnx_threads=0)
    passes = cast("PassRule", pass_rule) if pass_rule else pass_rule_of(config.selfplay)  # click checked it
    eyes = config.selfplay.go_keep_eyes if keep_eyes is None else keep_eyes
    rules = GoRootRules(passes, eyes)
    a = _load_network(net_a, g, settings, "'--a'")
    tracker = SprtTracker(sprt) if sprt is not None else None
    if tracker is not None:
        click.echo(f"SPRT: {tracker.settings.describe()}; at most {games // 2} pairs")
        games -= games % 2

    def on_game(finished: MatchGame) -> bool:
        if tracker is None:
            return False
        if tracker.add_game(finished.pair, finished.a_result):
            click.echo(f"  {tracker.status()}")
        return tracker.decision is not None

    if engine:
        ext = _external_engine(engine, protocol, engine_go, engine_options, g, config)
        try:
            report = play_external(g, a, ext, games, sims, plies, seed, rules, starts, on_game)
        except EngineError as exc:
            raise click.ClickException(f"the engine {engine!r} failed: {exc}") from None
        finally:
            ext.close()
        b_name = engine
    else:
        b = _network_b(net_b, g, settings)
        report = play_match(
            g,
            (a, b),
            games,
            sims,
            plies,
            seed=seed,
            games_in_parallel=parallel,
            root_rules=rules,
            openings=starts,
            on_game=on_game,
        )
        b_name = str(net_b)
    openings = f"{plies} opening plies" if starts is None else f"openings of {suite or 'the shipped suite'}"
    click.echo(
        f"{net_a} vs {b_name}: {report.describe()} ({len(report.games)} games, {sims} visits, {openings}, "
        f"{report.seconds:.0f}s)"
    )
    if tracker is not None:
        click.echo(tracker.verdict(games))
    if record is not None:
        record.write_text(match_records(report, g, config.game.effective_komi()))
    if folder is not None:
        log_match(folder, report, net_a, b_name, games, sims)


def _match_setup(
    out: Path | None, game: str | None, komi: float | None, net_a: Path | None, net_b: str | None
) -> tuple[RunFolder | None, RunConfig, Path, str | None]:
    """``(run folder if there is one, settings, network A, network B)`` of an ``evaluate``: the run's
    settings and networks (its newest against its first) by default, else the tiny preset of ``game``."""
    from trainer.config import preset_config
    from trainer.store.runfolder import RunFolder

    folder = RunFolder(out) if out is not None else None
    if folder is not None and folder.exists():
        config = _run_config(folder)
        net_a = net_a or folder.latest
        net_b = net_b or str(folder.first_network)
    elif game is not None:
        folder = None
        config = preset_config("tiny", game)
    elif out is not None:
        raise click.UsageError(f"{out} is not a run folder (no config.toml): give a run's folder, or --game")
    else:
        raise click.UsageError("give --out RUN or --game")
    if komi is not None:
        config = config.replace("game", komi=komi)
    if net_a is None:
        raise click.UsageError("give --a NETWORK")
    return folder, config, Path(net_a), net_b


def _network_b(net_b: str | None, game: Game, settings: SelfPlaySettings) -> Evaluator:
    """Network B of a match: a network file, or ``uniform`` (the search without a network)."""
    from engine.inference import UniformEvaluator

    if net_b is None:
        raise click.UsageError("give --b NETWORK (or --engine)")
    if net_b == UNIFORM:
        return UniformEvaluator(game.info)
    if not Path(net_b).is_file():
        raise click.BadParameter(f"no such network: {net_b}", param_hint="'--b'")
    return _load_network(Path(net_b), game, settings, "'--b'")


def _load_network(path: Path, game: Game, settings: SelfPlaySettings, hint: str) -> Evaluator:
    """The evaluator of a network file; a missing file, or one that is not a network for ``game``, is a
    bad value of the option ``hint`` (one ``Error:`` line, exit status 2)."""
    from engine.network import NetworkError, check_compatible
    from trainer.selfplay.worker import load_evaluator

    if not path.is_file():
        raise click.BadParameter(f"no such network: {path}", param_hint=hint)
    meta = _network_metadata(path, hint)
    try:
        check_compatible(meta, game.info, source=path.name)
        return load_evaluator(path, game.info, settings)
    except NetworkError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def _sprt_settings(text: str | None) -> SprtSettings | None:
    """``--sprt ELO0,ELO1[,ALPHA,BETA]``; a bad text is one ``Error: Invalid value`` line."""
    from trainer.evaluate.sprt import SprtSettings

    if text is None:
        return None
    try:
        return SprtSettings.parse(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _name_values(values: tuple[str, ...]) -> tuple[str, ...]:
    """``--option NAME=VALUE``: each must hold an ``=`` after a name."""
    for value in values:
        if "=" not in value or not value.partition("=")[0].strip():
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}")
    return values


def _suite_starts(suite: Path | None, sprt: bool, game: Game, games: int, seed: int) -> list[Opening] | None:
    """The start of each game pair: from ``suite``, or with ``sprt`` the game's shipped suite; ``None``
    (random openings) otherwise.  A suite that cannot be read is a bad ``--openings``."""
    import numpy as np

    from trainer.evaluate.evaluate import suite_pairs
    from trainer.evaluate.opening_suites import SuiteError, read_suite, shipped_suite

    path = suite if suite is not None else (shipped_suite(game.info) if sprt else None)
    if path is None:
        if sprt:
            raise click.BadParameter(
                f"no opening suite is shipped for {game.info.label}: give --openings FILE",
                param_hint="'--sprt'",
            )
        return None
    try:
        openings = read_suite(path, game)
    except SuiteError as exc:
        raise click.BadParameter(str(exc), param_hint="'--openings'") from None
    return suite_pairs(game, openings, (games + 1) // 2, np.random.default_rng(seed))


def _external_engine(
    command: str,
    protocol: str | None,
    go: str | None,
    options: tuple[str, ...],
    game: Game,
    config: RunConfig,
) -> ExternalEngine:
    """The ``--engine`` opponent, started, in the game's protocol unless ``--protocol`` says otherwise."""
    from trainer.evaluate.evaluate import EngineError, ExternalEngine

    try:
        return ExternalEngine(
            command,
            protocol or {"chess": "uci", "shogi": "usi", "go": "gtp"}[game.info.name],
            go=go,
            options=dict(o.split("=", 1) for o in options),
            board_size=game.info.board_size,
            komi=config.game.effective_komi(),
        )
    except (OSError, ValueError, EngineError) as exc:
        raise click.BadParameter(f"cannot start {command!r}: {exc}", param_hint="'--engine'") from None


@main.command("probe")
@_existing_run
@click.option(
    "--net",
    "nets",
    multiple=True,
    type=EXISTING_FILE,
    help="Networks to probe (default: the run's first and latest).",
)
@click.option(
    "--heldout-games",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Games of the held-out set (made once, then kept in RUN/heldout/).  A game's positions "
    "share one result: with 60 games the value-loss difference of two networks has a 95% "
    "interval of about +-0.05, with 200 about +-0.025.",
)
@click.option(
    "--mates",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Mate-in-one positions (chess, shogi).",
)
def probe_cmd(out: Path, nets: tuple[Path, ...], heldout_games: int, mates: int) -> None:
    """Held-out losses and the raw policy's mate-in-one rate of the run's networks."""
    from trainer.config import SelfPlaySettings, make_game
    from trainer.evaluate.probe import ensure_heldout, heldout_errors, mate_in_one_positions, policy_mate_rate
    from trainer.selfplay.worker import load_evaluator
    from trainer.store.runfolder import RunFolder
    from trainer.store.shards import read_shard

    folder = RunFolder(out)
    config = _run_config(folder)
    game = make_game(config.game)
    info = game.info
    shards = [read_shard(p, info) for p in ensure_heldout(out, heldout_games)]
    probes = (
        mate_in_one_positions(game, mates, seed=7) if info.name in ("chess", "shogi") and mates > 0 else []
    )
    settings = SelfPlaySettings(games_in_parallel=64, leaves_per_tree=4, onnx_threads=0)
    first = None
    for net in nets or (folder.first_network, folder.latest):
        ev = load_evaluator(Path(net), info, settings)
        errors = heldout_errors(ev, shards, info)
        losses = errors.summary()
        rate = policy_mate_rate(ev, game, probes) if probes else None
        line = (
            f"{net} (step {ev.metadata.step}): held-out value loss {losses['value_loss']:.4f} "
            f"(always 0: {losses['zero_value_loss']:.4f}; correlation with the result "
            f"{losses['value_corr']:+.3f}), policy loss {losses['policy_loss']:.4f} on "
            f"{losses['positions']} positions"
        )
        if rate is not None:
            line += f"; raw policy mates in one in {100 * rate:.1f}% of {len(probes)} positions"
        click.echo(line)
        compared: dict[str, float] = {}
        if first is None:
            first = errors
        elif len(errors.games):
            compared = _compare_with_first(errors, first, int(losses["games"]))
        folder.log_event(
            "probe",
            network=str(net),
            step=ev.metadata.step,
            mate_in_one=rate,
            mate_positions=len(probes),
            **losses,
            **compared,
        )


def _compare_with_first(errors: HeldoutErrors, first: HeldoutErrors, games: int) -> dict[str, float]:
    """Print and return a network's held-out losses minus the first network's, with their 95% intervals
    (:func:`~trainer.evaluate.probe.compare_with_first`)."""
    from trainer.evaluate.probe import compare_with_first

    d = compare_with_first(errors, first)
    click.echo(
        f"  against the first: value loss {d['value_diff']:+.4f} [{d['value_diff_low']:+.4f}, "
        f"{d['value_diff_high']:+.4f}], policy loss {d['policy_diff']:+.4f} [{d['policy_diff_low']:+.4f}, "
        f"{d['policy_diff_high']:+.4f}] (95%, bootstrap over {games} games)"
    )
    return d


@main.command("pack")
@_existing_run
@click.option(
    "--to",
    "dest",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the pack (copy it back to a run folder to resume there).",
)
@click.option(
    "--shards-mb",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Carry the newest self-play shards up to this many MB (a run whose games are slow to replay "
    "resumes on them instead of refilling its window first).",
)
def pack_cmd(out: Path, dest: Path, shards_mb: float) -> None:
    """Copy a run's resumable core (settings, logs, newest checkpoint, first, last evaluated and latest
    network) without its data, or with its newest shards (``--shards-mb``)."""
    from trainer.store.pack import pack_run

    try:
        files = pack_run(out, dest, int(shards_mb * 1e6))
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    size = sum(f.stat().st_size for f in files)
    click.echo(f"packed {len(files)} files, {size / 1e6:.1f} MB, into {dest}")


@main.command("status")
@_existing_run
def status_cmd(out: Path) -> None:
    """Where a run stands: step, data, losses, Elo."""
    from trainer.run.status import run_status
    from trainer.store.runfolder import RunFolder

    _run_config(RunFolder(out))
    click.echo(run_status(out))


@main.command("plot")
@_existing_run
@output_file_option("--png", help_text="Where to write the PNG (default RUN/plot.png).")
def plot_cmd(out: Path, png: Path | None) -> None:
    """PNG of Elo and losses over training."""
    from trainer.run.status import plot_run
    from trainer.store.runfolder import RunFolder

    _run_config(RunFolder(out))
    path = plot_run(out, png)
    click.echo(f"wrote {path}")


if __name__ == "__main__":
    main()
