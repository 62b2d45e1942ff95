"""``tabula-train run``: the driver.  Self-play workers produce shards; the learner on this process
trains from the replay window at the configured steps-per-sample ratio, checkpoints and exports a network
each interval (self-play picks it up), and evaluates generations.

Start or resume::

    prepare()    run folder, config.toml, the first (random) network net-00000000.onnx = latest.onnx,
                 learner state from the newest checkpoint (resume), leftover temporaries removed
    workers      local ``spawn`` processes, Ray actors (``--ray-address``), or none (``workers = 0``:
                 self-play inline, alternating with training)
    loop         refresh the replay window from new shards
                 train while step < allowed_steps(positions)  (else wait for self-play)
                 every interval_steps: checkpoint, export net-<step>.onnx and latest.onnx, log, and
                 every ``evaluate.every`` intervals play the new network against the previous one and
                 the first one (Elo with error bars in log.jsonl / log.txt / TensorBoard)
    stop         at total_steps, at --minutes, or on Ctrl-C: a final checkpoint, workers stopped

``kill -9`` at any moment loses at most the steps since the last checkpoint and the games in progress;
the next ``run`` resumes from the newest checkpoint and all complete shards.  A checkpoint whose shards
are gone (a pack copied to another machine, see ``trainer.pack``) resumes too: the positions and games
it had seen still count for the sample ratio, and training waits until self-play has refilled the
replay window (or, for a run younger than its window, as many positions as it had seen).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import fcntl
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from trainer.atomic import atomic_write_bytes, remove_stale_temporaries
from trainer.config import RunConfig, make_game
from trainer.runfolder import RunFolder

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _graceful_signals():
    """Turn SIGTERM and SIGINT into KeyboardInterrupt (a shell starts background jobs with SIGINT
    ignored; ``kill`` sends SIGTERM): the driver then writes a final checkpoint and stops its workers."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    saved = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


class RunLockedError(RuntimeError):
    """Another process is running this run folder."""


@contextlib.contextmanager
def run_lock(folder: RunFolder):
    """An exclusive ``flock`` on ``run.lock`` (released by the kernel even after ``kill -9``)."""
    folder.root.mkdir(parents=True, exist_ok=True)
    path = folder.root / "run.lock"
    f = open(path, "a+")  # noqa: SIM115 - held for the whole run
    try:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(f"{folder.root} is in use by another tabula-train process") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        yield
    finally:
        f.close()


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def learner_threads(config: RunConfig) -> int:
    """torch threads for the learner: the setting, else the cores the workers leave (at least 1)."""
    if config.train.threads > 0:
        return config.train.threads
    used = config.selfplay.workers * config.selfplay.onnx_threads
    return max(1, available_cores() - used)


# ---- networks -------------------------------------------------------------------------------------------


def export_network(folder: RunFolder, model, step: int, config: RunConfig, made_by: str) -> Path:
    """Export ``net-<step>.onnx`` and install it as ``latest.onnx`` (both atomically)."""
    from trainer.export import export_onnx

    cpu_model = copy.deepcopy(model).to("cpu").eval()
    path = folder.network(step)
    export_onnx(cpu_model, path, step=step, komi=config.game.effective_komi(), made_by=made_by)
    atomic_write_bytes(folder.latest, path.read_bytes())
    return path


def ensure_first_network(folder: RunFolder, config: RunConfig, learner) -> None:
    """The random network of step 0 (``net-00000000.onnx``), ``latest.onnx`` and (gating) ``best.onnx``."""
    if not folder.first_network.is_file():
        export_network(folder, learner.model, 0, config, "tabula-train run; random init, untrained")
    if not folder.latest.is_file():
        steps = folder.network_steps()
        atomic_write_bytes(folder.latest, folder.network(steps[-1]).read_bytes())
    if config.selfplay.gating and not folder.best.is_file():
        atomic_write_bytes(folder.best, folder.first_network.read_bytes())


# ---- TensorBoard and progress ---------------------------------------------------------------------------


class Scalars:
    """TensorBoard scalars when tensorboard is importable (else nothing)."""

    def __init__(self, folder: RunFolder, enabled: bool, step: int):
        self.writer = None
        if not enabled:
            return
        try:
            from torch.utils.tensorboard import SummaryWriter
        except Exception:
            return
        self.writer = SummaryWriter(str(folder.tensorboard), purge_step=step if step > 0 else None)

    def add(self, step: int, values: dict[str, float], prefix: str) -> None:
        if self.writer is None:
            return
        for k, v in values.items():
            if isinstance(v, (int, float)) and np.isfinite(v):
                self.writer.add_scalar(f"{prefix}/{k}", v, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class Progress:
    """A tqdm bar on a terminal; plain lines otherwise."""

    def __init__(self, total: int, initial: int, enabled: bool):
        self.bar = None
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True, desc="train")
            except ImportError:
                self.bar = None

    def update(self, n: int, **postfix: Any) -> None:
        if self.bar is not None:
            self.bar.update(n)
            if postfix:
                self.bar.set_postfix(
                    {k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in postfix.items()},
                    refresh=False,
                )

    def write(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text)
        else:
            print(text, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---- the driver -----------------------------------------------------------------------------------------


@dataclasses.dataclass
class RunSummary:
    step: int
    positions: int
    games: int
    seconds: float
    stop_reason: str


class Driver:
    """One invocation of ``tabula-train run`` on a run folder (start or resume)."""

    def __init__(
        self,
        folder: RunFolder,
        config: RunConfig,
        command: str = "tabula-train run",
        ray_address: str | None = None,
        progress: bool = True,
        max_steps: int | None = None,
    ):
        self.folder = folder
        self.config = config
        self.command = command
        self.ray_address = ray_address
        self.progress_enabled = progress
        self.max_steps = max_steps
        self.game = make_game(config.game)
        self.info = self.game.info
        self.rng = np.random.default_rng(config.run.seed + 7919)
        self.resumed_counts = (0, 0)  # (positions, games) the resumed checkpoint had seen
        self.last_eval_step: int | None = None

    # ---- start / resume -------------------------------------------------------------------------------
    def prepare(self):
        from trainer.checkpoint import latest_checkpoint
        from trainer.train import Learner, set_torch_threads

        folder, config = self.folder, self.config
        folder.create()
        removed = remove_stale_temporaries(folder.root)
        folder.write_config(config, self.command)
        set_torch_threads(learner_threads(config))
        learner = Learner(self.info, config)
        state = latest_checkpoint(folder.checkpoints, learner.device)
        if state is not None:
            learner.load_state(state)
            self.resumed_counts = (int(state.get("positions", 0)), self._games_at(learner.step, state))
        ensure_first_network(folder, config, learner)
        folder.log_event(
            "start",
            step=learner.step,
            resumed=state is not None,
            command=self.command,
            game=self.info.label,
            preset=config.preset,
            model=learner.model.config.preset,
            removed_temporaries=removed,
            threads=learner_threads(config),
            workers=config.selfplay.workers,
            ray=self.ray_address or "",
        )
        evals = folder.read_events("evaluate")
        self.last_eval_step = evals[-1]["step"] if evals else None
        return learner

    def _games_at(self, step: int, state: dict[str, Any]) -> int:
        """Games played when the checkpoint of ``step`` was written (older checkpoints do not record
        them: the highest count the log gives at or before that step)."""
        if "games" in state:
            return int(state["games"])
        counts = [
            int(e["games"])
            for e in self.folder.read_events()
            if "games" in e and int(e.get("step", 0)) <= step
        ]
        return max(counts, default=0)

    def _carry_over(self, replay, step: int) -> int:
        """After :meth:`prepare`: count the positions and games the checkpoint saw that have no shard
        here; returns how many positions the window must hold before training goes on (0: no wait)."""
        positions, games = self.resumed_counts
        missing = positions - replay.total_positions
        if missing <= 0:
            return 0
        replay.carry(missing, games - replay.total_games)
        target = min(self.config.replay.window, positions)
        self.folder.log_event(
            "refill", step=step, positions=replay.total_positions, missing_positions=missing, refill_to=target
        )
        return target

    def _workers(self):
        if self.config.selfplay.workers == 0:
            return None
        if self.ray_address:
            from trainer.distributed import RayWorkers

            return RayWorkers(self.folder, self.config, self.ray_address, seed=self.config.run.seed)
        from trainer.worker import LocalWorkers

        return LocalWorkers(self.folder.root, self.config, seed=self.config.run.seed + 1000 * self._starts())

    def _starts(self) -> int:
        return len(self.folder.read_events("start"))

    # ---- the loop -------------------------------------------------------------------------------------
    def run(self) -> RunSummary:
        """Run until done; SIGTERM (and SIGINT, also when started in the background) stop it cleanly."""
        with run_lock(self.folder), _graceful_signals():
            return self._run()

    def _run(self) -> RunSummary:
        from trainer.checkpoint import checkpoint_path, prune_checkpoints, save_checkpoint
        from trainer.replay import ReplayBuffer
        from trainer.train import allowed_steps

        config, folder = self.config, self.folder
        tc = config.train
        learner = self.prepare()
        replay = ReplayBuffer(
            folder.shards,
            self.info,
            config.replay.window,
            config.replay.augment,
            config.train.q_ratio,
            config.replay.proven_weight,
        )
        replay.refresh()
        refill = self._carry_over(replay, learner.step)
        start_positions, start_games = replay.total_positions, replay.total_games
        scalars = Scalars(folder, config.run.tensorboard, learner.step)
        total_steps = tc.total_steps if self.max_steps is None else min(tc.total_steps, self.max_steps)
        progress = Progress(total_steps, learner.step, self.progress_enabled)
        t_start = time.monotonic()
        deadline = t_start + 60 * config.run.max_minutes if config.run.max_minutes else None
        workers = self._workers()
        inline = None
        if workers is None:
            inline = InlineSelfPlay(folder, config, self.game, seed=config.run.seed + 1000 * self._starts())
        else:
            workers.start()
        interval_metrics: list[dict[str, float]] = []
        interval_t0 = time.monotonic()
        stop_reason = "total steps"
        last_checkpoint = (learner.step, replay.total_positions)
        try:
            while learner.step < total_steps:
                if deadline is not None and time.monotonic() >= deadline:
                    stop_reason = "time limit"
                    break
                if workers is not None:
                    workers.poll()
                    if workers.alive() == 0:
                        stop_reason = f"self-play workers ended (exit codes {workers.failed()})"
                        break
                replay.refresh()
                allowed = min(
                    allowed_steps(replay.total_positions, config.replay.min_positions, tc.steps_per_sample),
                    total_steps,
                )
                if refill and replay.available >= refill:
                    folder.log_event("refilled", step=learner.step, window=replay.available)
                    refill = 0
                if learner.step >= allowed or replay.available == 0 or refill:
                    if inline is not None:
                        inline.play_some()
                    else:
                        time.sleep(0.25)
                    continue
                boundary = (learner.step // tc.interval_steps + 1) * tc.interval_steps
                chunk = min(allowed, boundary, learner.step + 50) - learner.step
                for _ in range(chunk):
                    metrics = learner.train_step(replay.sample(tc.batch_size, self.rng))
                    interval_metrics.append(metrics)
                progress.update(chunk, loss=metrics["loss"], positions=replay.total_positions)
                if learner.step % tc.interval_steps == 0 or learner.step >= total_steps:
                    elapsed = time.monotonic() - t_start
                    summary = self._end_interval(
                        learner,
                        replay,
                        interval_metrics,
                        time.monotonic() - interval_t0,
                        elapsed,
                        start_positions,
                        start_games,
                        scalars,
                        progress,
                        inline,
                    )
                    last_checkpoint = (learner.step, replay.total_positions)
                    interval_metrics = []
                    interval_t0 = time.monotonic()
                    del summary
        except KeyboardInterrupt:
            stop_reason = "interrupted"
        finally:
            # also when only self-play went on (a refill): the positions it made must not be counted
            # again as missing by the next resume
            if (learner.step, replay.total_positions) != last_checkpoint:
                save_checkpoint(
                    checkpoint_path(folder.checkpoints, learner.step),
                    {
                        **learner.state(),
                        "positions": replay.total_positions,
                        "games": replay.total_games,
                        "config": folder.config_path.read_text(),
                    },
                )
                prune_checkpoints(folder.checkpoints, tc.keep_checkpoints)
            if workers is not None:
                workers.stop()
            progress.close()
            scalars.close()
        seconds = time.monotonic() - t_start
        folder.log_event(
            "stop",
            step=learner.step,
            reason=stop_reason,
            seconds=round(seconds, 1),
            positions=replay.total_positions,
            games=replay.total_games,
        )
        return RunSummary(learner.step, replay.total_positions, replay.total_games, seconds, stop_reason)

    def _end_interval(
        self,
        learner,
        replay,
        metrics,
        interval_seconds,
        elapsed,
        start_positions,
        start_games,
        scalars,
        progress,
        inline,
    ) -> dict[str, Any]:
        """Checkpoint, export, log, evaluate."""
        from trainer.checkpoint import checkpoint_path, prune_checkpoints, save_checkpoint

        config, folder = self.config, self.folder
        step = learner.step
        save_checkpoint(
            checkpoint_path(folder.checkpoints, step),
            {
                **learner.state(),
                "positions": replay.total_positions,
                "games": replay.total_games,
                "config": folder.config_path.read_text(),
            },
        )
        prune_checkpoints(folder.checkpoints, config.train.keep_checkpoints)
        export_network(folder, learner.model, step, config, f"{self.command} (step {step})")
        if inline is not None:
            inline.reload()
        mean = {k: float(np.mean([m[k] for m in metrics])) for k in metrics[0]} if metrics else {}
        new_positions = replay.total_positions - start_positions
        new_games = replay.total_games - start_games
        rates = {
            "positions_per_s": new_positions / max(elapsed, 1e-9),
            "games_per_hour": 3600 * new_games / max(elapsed, 1e-9),
            "steps_per_s": len(metrics) / max(interval_seconds, 1e-9),
        }
        resign = self._resign_stats()
        fields = {
            **{k: round(v, 5) for k, v in mean.items()},
            **{k: round(v, 2) for k, v in rates.items()},
            "positions": replay.total_positions,
            "games": replay.total_games,
            "window": replay.available,
            "proven": len(replay.proven_indices),
            "replay_mb": round(replay.nbytes / 2**20, 1),
            **resign,
        }
        folder.log_event("train", step=step, **fields)
        scalars.add(step, mean, "train")
        scalars.add(step, rates, "selfplay")
        if resign.get("resign_false_positive_rate") is not None:
            scalars.add(step, {"false_positive_rate": resign["resign_false_positive_rate"]}, "resign")
        progress.write(
            f"step {step}: loss {mean.get('loss', float('nan')):.3f} (value {mean.get('value_loss', float('nan')):.3f}, "
            f"policy {mean.get('policy_loss', float('nan')):.3f}), {replay.total_games} games, "
            f"{replay.total_positions} positions, {rates['positions_per_s']:.1f} positions/s, "
            f"{rates['games_per_hour']:.0f} games/h"
        )
        interval = step // config.train.interval_steps
        if config.evaluate.every > 0 and interval % config.evaluate.every == 0 and config.evaluate.games > 0:
            for line in self.evaluate_generation(step, scalars):
                progress.write(line)
        return fields

    def _resign_stats(self) -> dict[str, Any]:
        """False-positive rate of resignation over the newest shards' played-out games."""
        from trainer.shards import list_shards, read_shard_meta

        played = would = false = 0
        threshold = None
        for path in list_shards(self.folder.shards)[-50:]:
            try:
                meta = read_shard_meta(path)
            except Exception as e:
                log.debug("resign stats: %s", e)
                continue
            played += meta.get("resign_played_out", 0)
            would += meta.get("resign_would", 0)
            false += meta.get("resign_false_positives", 0)
            threshold = meta.get("resign_threshold", threshold)
        return {
            "resign_threshold": threshold,
            "resign_played_out": played,
            "resign_would": would,
            "resign_false_positive_rate": (false / would) if would else None,
        }

    # ---- evaluation -----------------------------------------------------------------------------------
    def evaluate_generation(self, step: int, scalars: Scalars | None = None) -> list[str]:
        """Play the network of ``step`` against the previously evaluated one and against the first one;
        with gating, against ``best.onnx`` (promoting it on a win)."""
        from trainer.evaluate import play_match
        from trainer.worker import load_evaluator

        config, folder = self.config, self.folder
        ec = config.evaluate
        sims = config.eval_simulations
        settings = dataclasses.replace(
            config.selfplay, games_in_parallel=ec.games_in_parallel, leaves_per_tree=4
        )
        lines = []
        new = load_evaluator(folder.network(step), self.info, settings)
        opponents: list[tuple[str, Path, int]] = []
        previous = self.last_eval_step if self.last_eval_step is not None else 0
        if previous != step:
            opponents.append(("previous", folder.network(previous), previous))
        if ec.vs_first and previous != 0:
            opponents.append(("first", folder.first_network, 0))
        gating = config.selfplay.gating
        if gating:
            opponents.append(("best", folder.best, -1))
        prior = folder.read_events("evaluate")
        chain = prior[-1].get("elo_chain", 0.0) if prior else 0.0
        record: dict[str, Any] = {
            "step": step,
            "previous_step": previous,
            "games": ec.games,
            "simulations": sims,
        }
        for name, path, opp_step in opponents:
            if not path.is_file():
                continue
            opponent = load_evaluator(path, self.info, settings)
            report = play_match(
                self.game,
                (new, opponent),
                ec.games,
                sims,
                ec.opening_plies,
                seed=config.run.seed + step,
                games_in_parallel=ec.games_in_parallel,
            )
            opponent.close()
            r = report.result
            elo, lo, hi = r.elo()
            record[f"vs_{name}"] = {
                "wins": r.wins,
                "draws": r.draws,
                "losses": r.losses,
                "score": r.score,
                "elo": elo,
                "low": lo,
                "high": hi,
                "opponent_step": opp_step,
            }
            lines.append(
                f"evaluate step {step} vs {name} (step {opp_step}): {r.describe()} "
                f"in {report.seconds:.0f}s at {sims} visits"
            )
            if name == "previous":
                chain += elo
            if name == "best" and r.score >= ec.gating_threshold:
                atomic_write_bytes(folder.best, folder.network(step).read_bytes())
                record["promoted"] = True
                lines.append(
                    f"gating: step {step} scored {100 * r.score:.1f}% >= "
                    f"{100 * ec.gating_threshold:.0f}%: it is now best.onnx"
                )
        new.close()
        record["elo_chain"] = chain
        folder.log_event("evaluate", **record)
        if scalars is not None:
            values = {"elo_chain": chain}
            for name in ("previous", "first", "best"):
                if f"vs_{name}" in record:
                    values[f"elo_vs_{name}"] = record[f"vs_{name}"]["elo"]
                    values[f"score_vs_{name}"] = record[f"vs_{name}"]["score"]
            scalars.add(step, values, "eval")
        self.last_eval_step = step
        return lines


class InlineSelfPlay:
    """Self-play inside the driver (``selfplay.workers = 0``): a few steps between training chunks."""

    def __init__(self, folder: RunFolder, config: RunConfig, game, seed: int):
        from engine.inference import NNCache
        from trainer.selfplay import SelfPlayer
        from trainer.worker import ShardSink, load_evaluator

        self.folder = folder
        self.config = config
        self.game = game
        self.path = folder.selfplay_network(config.selfplay.gating)
        self.evaluator = load_evaluator(self.path, game.info, config.selfplay)
        cache = NNCache(config.selfplay.cache_size) if config.selfplay.cache_size else None
        self.player = SelfPlayer(
            game,
            config.selfplay,
            self.evaluator,
            seed=seed,
            network_step=self.evaluator.metadata.step,
            cache=cache,
        )
        self.sink = ShardSink(
            folder,
            game.info,
            config.game,
            worker=999,
            positions_per_shard=config.selfplay.positions_per_shard,
        )

    def reload(self) -> None:
        from trainer.worker import load_evaluator

        self.path = self.folder.selfplay_network(self.config.selfplay.gating)
        self.evaluator.close()
        self.evaluator = load_evaluator(self.path, self.game.info, self.config.selfplay)
        self.player.set_evaluator(self.evaluator, self.evaluator.metadata.step)

    def play_some(self, steps: int = 20) -> None:
        for _ in range(steps):
            finished = self.player.step()
            if self.sink.add(finished, selfplay_stats=self.player.stats.as_dict()):
                return
