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

import logging
import shlex
import sys
from pathlib import Path

import click

RUN_DIR_HELP = "The run folder (created by `run`)."


def _command_line() -> str:
    return "tabula-train " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _config_for(
    out: Path,
    game: str | None,
    size: int | None,
    komi: float | None,
    preset: str | None,
    config_files: tuple[str, ...],
    assignments: tuple[str, ...],
    flags: dict,
) -> RunConfig:  # noqa: F821
    """The run's config: recorded one (resume) or preset for ``game``, then files, --set, flags."""
    from trainer.config import apply_overrides, build_config, load_toml, parse_assignment, preset_config
    from trainer.runfolder import RunFolder

    folder = RunFolder(out)
    if folder.exists():
        config = folder.read_config()
        if game is not None:
            from engine.games.registry import parse_game_label

            name, label_size = parse_game_label(game)
            wanted_size = size or label_size or (config.game.size if name == "go" else None)
            if name != config.game.name or (name == "go" and wanted_size != config.game.size):
                raise click.UsageError(
                    f"{out} is a {config.game.label} run; --game {game} --size {size} does not match"
                )
        if preset is not None and preset != config.preset:
            base = preset_config(preset, config.game.label)
            config = apply_overrides(
                base, {"game": {"komi": config.game.komi, "max_plies": config.game.max_plies}}
            )
        for path in config_files:
            config = apply_overrides(config, load_toml(path))
        for text in assignments:
            config = apply_overrides(config, parse_assignment(text))
        return apply_overrides(config, {k: v for k, v in flags.items() if v})
    if game is None:
        raise click.UsageError(f"{out} has no run yet: give --game (and --size for Go)")
    flags = {k: dict(v) for k, v in flags.items()}
    if komi is not None:
        flags.setdefault("game", {})["komi"] = komi
    return build_config(preset or "small", game, size, config_files, assignments, flags)


def _flags(
    device: str | None = None,
    workers: int | None = None,
    minutes: float | None = None,
    steps: int | None = None,
    seed: int | None = None,
) -> dict:
    flags: dict = {"run": {}, "selfplay": {}, "train": {}}
    if device is not None:
        flags["run"]["device"] = device
    if minutes is not None:
        flags["run"]["max_minutes"] = minutes
    if seed is not None:
        flags["run"]["seed"] = seed
    if workers is not None:
        flags["selfplay"]["workers"] = workers
    if steps is not None:
        flags["train"]["total_steps"] = steps
    return flags


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


@click.group()
def main() -> None:
    """Tabula's AlphaZero trainer: self-play, training, export, evaluation.

    Quick start: tabula-train run --game go --size 9 --preset small --out runs/go9
    """


def _run_options(f):
    options = [
        click.option(
            "--out",
            "--run",
            "out",
            required=True,
            type=click.Path(file_okay=False, path_type=Path),
            help=RUN_DIR_HELP,
        ),
        click.option("--game", default=None, help="chess, shogi, go (or go9, go19 ...); only for a new run."),
        click.option("--size", type=int, default=None, help="Go board size (default 19, or from the label)."),
        click.option("--komi", type=float, default=None, help="Go komi (default 9 up to 7x7, else 7.5)."),
        click.option("--preset", default=None, help="tiny, small, medium, large, paper (default small)."),
        click.option(
            "--config",
            "config_files",
            multiple=True,
            type=click.Path(dir_okay=False, exists=True),
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
            "--workers", type=int, default=None, help="Self-play processes (0: inline in the driver)."
        ),
        click.option("--seed", type=int, default=None, help="Random seed."),
        click.option("-v", "--verbose", is_flag=True, help="Log more."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@main.command("run")
@_run_options
@click.option("--minutes", type=float, default=None, help="Stop after this many minutes (resume later).")
@click.option("--steps", type=int, default=None, help="Total training steps of the run (train.total_steps).")
@click.option(
    "--ray-address",
    default=None,
    help="Self-play workers as Ray actors: a cluster ADDRESS, 'auto', or 'local' (a private instance).",
)
@click.option("--no-progress", is_flag=True, help="No progress bar (log lines only).")
def run_cmd(
    out,
    game,
    size,
    komi,
    preset,
    config_files,
    assignments,
    device,
    workers,
    seed,
    verbose,
    minutes,
    steps,
    ray_address,
    no_progress,
) -> None:
    """Start a training run, or resume the one in --out."""
    from trainer.loop import Driver, RunLockedError
    from trainer.runfolder import RunFolder

    _setup_logging(verbose)
    config = _config_for(
        out,
        game,
        size,
        komi,
        preset,
        config_files,
        assignments,
        _flags(device, workers, minutes, steps, seed),
    )
    driver = Driver(
        RunFolder(out), config, _command_line(), ray_address=ray_address, progress=not no_progress
    )
    try:
        summary = driver.run()
    except RunLockedError as e:
        raise click.ClickException(str(e)) from None
    click.echo(
        f"{out}: step {summary.step}, {summary.games} games, {summary.positions} positions; "
        f"stopped: {summary.stop_reason} after {summary.seconds:.0f}s"
    )


@main.command("selfplay")
@_run_options
@click.option("--games", type=int, required=True, help="Games to play (split over the workers).")
def selfplay_cmd(
    out, game, size, komi, preset, config_files, assignments, device, workers, seed, verbose, games
) -> None:
    """Play self-play games with the run's newest network into its shards (creates the run if needed)."""
    from trainer.loop import ensure_first_network
    from trainer.runfolder import RunFolder
    from trainer.train import Learner
    from trainer.worker import LocalWorkers, run_worker

    _setup_logging(verbose)
    config = _config_for(
        out, game, size, komi, preset, config_files, assignments, _flags(device, workers, seed=seed)
    )
    folder = RunFolder(out)
    folder.create()
    if not folder.exists():
        folder.write_config(config, _command_line())
    if not folder.latest.is_file():
        from trainer.config import make_game

        ensure_first_network(folder, config, Learner(make_game(config.game).info, config))
    before = len(list(folder.shards.glob("*.npz")))
    if config.selfplay.workers == 0:
        played = run_worker(out, config, worker=900, seed=config.run.seed + 900, max_games=games)
    else:
        pool = LocalWorkers(out, config, seed=config.run.seed + 500, max_games=games)
        pool.start()
        pool.join()
        if pool.failed():
            raise click.ClickException(f"self-play workers failed: exit codes {pool.failed()}")
        played = games
    after = len(list(folder.shards.glob("*.npz")))
    folder.log_event("selfplay", games=played, shards=after - before, command=_command_line())
    click.echo(f"{out}: {played} games, {after - before} new shards")


@main.command("train")
@_run_options
@click.option("--steps", type=int, required=True, help="Training steps to do now (ignores the sample ratio).")
def train_cmd(
    out, game, size, komi, preset, config_files, assignments, device, workers, seed, verbose, steps
) -> None:
    """Train from the run's shards, then checkpoint and export (latest.onnx)."""
    import numpy as np

    from trainer.checkpoint import checkpoint_path, latest_checkpoint, prune_checkpoints, save_checkpoint
    from trainer.config import make_game
    from trainer.loop import export_network, run_lock
    from trainer.replay import ReplayBuffer
    from trainer.runfolder import RunFolder
    from trainer.train import Learner, set_torch_threads

    _setup_logging(verbose)
    config = _config_for(out, game, size, komi, preset, config_files, assignments, _flags(device, seed=seed))
    folder = RunFolder(out)
    info = make_game(config.game).info
    with run_lock(folder):
        set_torch_threads(config.train.threads or 0)
        learner = Learner(info, config)
        state = latest_checkpoint(folder.checkpoints, learner.device)
        if state is not None:
            learner.load_state(state)
        replay = ReplayBuffer(
            folder.shards,
            info,
            config.replay.window,
            config.replay.augment,
            config.train.q_ratio,
            config.replay.proven_weight,
        )
        replay.refresh()
        if replay.available == 0:
            raise click.ClickException(f"{out}: no self-play data in {folder.shards}")
        rng = np.random.default_rng(config.run.seed + learner.step)
        metrics = {}
        for _ in range(steps):
            metrics = learner.train_step(replay.sample(config.train.batch_size, rng))
        save_checkpoint(
            checkpoint_path(folder.checkpoints, learner.step),
            {
                **learner.state(),
                "positions": replay.total_positions,
                "games": replay.total_games,
                "config": folder.config_path.read_text() if folder.exists() else "",
            },
        )
        prune_checkpoints(folder.checkpoints, config.train.keep_checkpoints)
        path = export_network(folder, learner.model, learner.step, config, _command_line())
        folder.log_event(
            "train",
            step=learner.step,
            **{k: round(v, 5) for k, v in metrics.items()},
            positions=replay.total_positions,
            games=replay.total_games,
            command=_command_line(),
        )
    click.echo(f"{out}: step {learner.step}, loss {metrics.get('loss', float('nan')):.4f}; exported {path}")


@main.command("export")
@click.option(
    "--game", "label", default=None, help="Game label: chess, shogi, go9, go19, go<N> (with --random)."
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
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="The .onnx file to write.")
@click.option("--seed", default=0, show_default=True, help="Seed of the random initialisation.")
@click.option("--wdl", is_flag=True, help="Add a win/draw/loss head.")
@click.option(
    "--komi", type=float, default=None, help="Go: komi recorded in the metadata (default: the rules')."
)
def export_cmd(
    label: str | None,
    preset: str,
    random_init: bool,
    checkpoint: Path | None,
    out: str,
    seed: int,
    wdl: bool,
    komi: float | None,
) -> None:
    """Write a network under the network contract (one ONNX file with Tabula metadata)."""
    import torch

    from engine.games import get_game
    from trainer.export import export_onnx
    from trainer.model import build_model

    if checkpoint is not None:
        _export_checkpoint(checkpoint, out, komi)
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
    model = build_model(info, preset, wdl=wdl)
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


def _export_checkpoint(checkpoint: Path, out: str, komi: float | None) -> None:
    from engine.games import get_game
    from trainer.checkpoint import latest_checkpoint, load_checkpoint, model_from_checkpoint
    from trainer.config import config_from_toml
    from trainer.export import export_onnx

    if checkpoint.is_dir():
        folder = checkpoint / "checkpoints" if (checkpoint / "checkpoints").is_dir() else checkpoint
        state = latest_checkpoint(folder)
        if state is None:
            raise click.ClickException(f"no checkpoint in {folder}")
        checkpoint = Path(state["path"])
    else:
        state = load_checkpoint(checkpoint)
    game = get_game(state["game"])
    if komi is None and state.get("config"):
        komi = config_from_toml(state["config"]).game.effective_komi()
    if komi is None and game.info.name == "go":
        komi = getattr(getattr(game, "rules", None), "komi", None)
    model = model_from_checkpoint(state, game.info)
    made_by = f"tabula-train export --checkpoint {checkpoint} (step {state['step']})"
    meta = export_onnx(model, out, step=int(state["step"]), komi=komi, made_by=made_by)
    click.echo(f"wrote {out}: {meta.label} {meta.preset}, step {meta.step}, from {checkpoint}")


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
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
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
@click.option("--game", default=None, help="Game label when no run folder is given (go9, chess ...).")
@click.option("--komi", type=float, default=None, help="Go komi (default: the run's, or the rules').")
@click.option("--games", type=int, default=40, show_default=True)
@click.option("--simulations", type=int, default=None, help="Visits per move for both (default: the run's).")
@click.option("--opening-plies", type=int, default=None, help="Random opening plies (default: the run's).")
@click.option("--parallel", type=int, default=20, show_default=True, help="Games played at once.")
@click.option("--seed", type=int, default=12345, show_default=True)
@click.option("--engine", default=None, help="External opponent command line (instead of network B).")
@click.option(
    "--protocol",
    type=click.Choice(["uci", "usi", "gtp"]),
    default=None,
    help="External engine protocol (default by game: uci, usi, gtp).",
)
@click.option("--engine-go", default=None, help="UCI/USI search command, e.g. 'go nodes 1000'.")
@click.option("--option", "engine_options", multiple=True, metavar="NAME=VALUE", help="UCI/USI setoption.")
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the games to this record file (PGN / CSA / SGF).",
)
def evaluate_cmd(
    out,
    net_a,
    net_b,
    game,
    komi,
    games,
    simulations,
    opening_plies,
    parallel,
    seed,
    engine,
    protocol,
    engine_go,
    engine_options,
    record,
) -> None:
    """Play network A against network B (equal visits) or against an external engine; print Elo."""
    from engine.inference import UniformEvaluator
    from trainer.config import GameSettings, make_game, preset_config
    from trainer.evaluate import ExternalEngine, play_external, play_match
    from trainer.records import GameRecord, format_games
    from trainer.runfolder import RunFolder
    from trainer.worker import load_evaluator

    folder = RunFolder(out) if out is not None else None
    if folder is not None and folder.exists():
        config = folder.read_config()
        net_a = net_a or folder.latest
        net_b = net_b or folder.first_network
    elif game is not None:
        config = preset_config("tiny", game)
    else:
        raise click.UsageError("give --out RUN or --game")
    if komi is not None:
        config = config.replace("game", komi=komi)
    if net_a is None:
        raise click.UsageError("give --a NETWORK")
    g = make_game(config.game)
    sims = simulations or config.eval_simulations
    plies = config.evaluate.opening_plies if opening_plies is None else opening_plies
    settings = config.selfplay.__class__(games_in_parallel=parallel, leaves_per_tree=4, onnx_threads=0)
    a = load_evaluator(Path(net_a), g.info, settings)
    if engine:
        proto = protocol or {"chess": "uci", "shogi": "usi", "go": "gtp"}[g.info.name]
        options = dict(o.split("=", 1) for o in engine_options)
        ext = ExternalEngine(
            engine,
            proto,
            go=engine_go,
            options=options,
            board_size=g.info.board_size,
            komi=config.game.effective_komi(),
        )
        try:
            report = play_external(g, a, ext, games, sims, plies, seed)
        finally:
            ext.close()
        b_name = engine
    else:
        if net_b is None:
            raise click.UsageError("give --b NETWORK (or --engine)")
        if str(net_b) == UNIFORM:
            b = UniformEvaluator(g.info)
        elif not Path(net_b).is_file():
            raise click.BadParameter(f"no such network: {net_b}", param_hint="--b")
        else:
            b = load_evaluator(Path(net_b), g.info, settings)
        report = play_match(g, (a, b), games, sims, plies, seed=seed, games_in_parallel=parallel)
        b_name = str(net_b)
    line = (
        f"{net_a} vs {b_name}: {report.describe()} ({games} games, {sims} visits, {plies} opening plies, "
        f"{report.seconds:.0f}s)"
    )
    click.echo(line)
    if record is not None:
        settings_game: GameSettings = config.game
        recs = [
            GameRecord(
                game=g.info.name,
                moves=m.opening + m.moves,
                winner=m.winner,
                reason=m.reason,
                players=("A", "B") if m.a_first else ("B", "A"),
                board_size=g.info.board_size,
                komi=settings_game.effective_komi(),
                score=m.score,
                event="Tabula evaluation",
            )
            for m in report.games
        ]
        record.write_text(format_games(recs))
    if folder is not None and folder.exists():
        elo, lo, hi = report.result.elo()
        folder.log_event(
            "match",
            a=str(net_a),
            b=b_name,
            games=games,
            simulations=sims,
            wins=report.result.wins,
            draws=report.result.draws,
            losses=report.result.losses,
            score=report.result.score,
            elo=elo,
            low=lo,
            high=hi,
        )


@main.command("probe")
@click.option(
    "--out",
    "--run",
    "out",
    required=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help=RUN_DIR_HELP,
)
@click.option(
    "--net",
    "nets",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Networks to probe (default: the run's first and latest).",
)
@click.option(
    "--heldout-games",
    type=int,
    default=200,
    show_default=True,
    help="Games of the held-out set (made once, then kept in RUN/heldout/).  A game's positions "
    "share one result: with 60 games the value-loss difference of two networks has a 95% "
    "interval of about +-0.05, with 200 about +-0.025.",
)
@click.option(
    "--mates", type=int, default=1000, show_default=True, help="Mate-in-one positions (chess, shogi)."
)
def probe_cmd(out: Path, nets: tuple[Path, ...], heldout_games: int, mates: int) -> None:
    """Held-out losses and the raw policy's mate-in-one rate of the run's networks."""
    from trainer.config import make_game
    from trainer.probe import (
        ensure_heldout,
        heldout_errors,
        mate_in_one_positions,
        paired_difference,
        policy_mate_rate,
    )
    from trainer.runfolder import RunFolder
    from trainer.shards import read_shard
    from trainer.worker import load_evaluator

    folder = RunFolder(out)
    config = folder.read_config()
    game = make_game(config.game)
    info = game.info
    shards = [read_shard(p, info) for p in ensure_heldout(out, heldout_games)]
    probes = (
        mate_in_one_positions(game, mates, seed=7) if info.name in ("chess", "shogi") and mates > 0 else []
    )
    settings = config.selfplay.__class__(games_in_parallel=64, leaves_per_tree=4, onnx_threads=0)
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
            value = paired_difference(errors.value_errors, first.value_errors, errors.games)
            policy = paired_difference(errors.policy_errors, first.policy_errors, errors.games)
            click.echo(
                f"  against the first: value loss {value[0]:+.4f} [{value[1]:+.4f}, {value[2]:+.4f}], "
                f"policy loss {policy[0]:+.4f} [{policy[1]:+.4f}, {policy[2]:+.4f}] "
                f"(95%, bootstrap over {losses['games']} games)"
            )
            compared = {
                "value_diff": value[0],
                "value_diff_low": value[1],
                "value_diff_high": value[2],
                "policy_diff": policy[0],
                "policy_diff_low": policy[1],
                "policy_diff_high": policy[2],
            }
        folder.log_event(
            "probe",
            network=str(net),
            step=ev.metadata.step,
            mate_in_one=rate,
            mate_positions=len(probes),
            **losses,
            **compared,
        )


@main.command("pack")
@click.option(
    "--out",
    "--run",
    "out",
    required=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help=RUN_DIR_HELP,
)
@click.option(
    "--to",
    "dest",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the pack (copy it back to a run folder to resume there).",
)
def pack_cmd(out: Path, dest: Path) -> None:
    """Copy a run's resumable core (settings, logs, newest checkpoint, first, last evaluated and latest
    network) without its data."""
    from trainer.pack import pack_run

    try:
        files = pack_run(out, dest)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    size = sum(f.stat().st_size for f in files)
    click.echo(f"packed {len(files)} files, {size / 1e6:.1f} MB, into {dest}")


@main.command("status")
@click.option(
    "--out",
    "--run",
    "out",
    required=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help=RUN_DIR_HELP,
)
def status_cmd(out: Path) -> None:
    """Where a run stands: step, data, losses, Elo."""
    from trainer.status import run_status

    click.echo(run_status(out))


@main.command("plot")
@click.option(
    "--out",
    "--run",
    "out",
    required=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help=RUN_DIR_HELP,
)
@click.option(
    "--png",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the PNG (default RUN/plot.png).",
)
def plot_cmd(out: Path, png: Path | None) -> None:
    """PNG of Elo and losses over training."""
    from trainer.status import plot_run

    path = plot_run(out, png)
    click.echo(f"wrote {path}")


if __name__ == "__main__":
    main()
