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
are gone (a pack copied to another machine, see ``trainer.store.pack``) resumes too: the positions and games
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
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import numpy as np

from engine.games.base import Game
from engine.network import read_metadata
from trainer.config import RunConfig, make_game
from trainer.evaluate.evaluate import MatchReport, play_match
from trainer.learn.replay import ReplayBuffer
from trainer.learn.train import Learner, allowed_steps, set_torch_threads
from trainer.network.checkpoint import checkpoint_path, prune_checkpoints, resume_checkpoint, save_checkpoint
from trainer.network.export import export_onnx
from trainer.network.model import AlphaZeroNet, ModelConfig
from trainer.network.transfer import init_from
from trainer.run.distributed import RayWorkers
from trainer.selfplay.player import SelfPlayer
from trainer.selfplay.reanalysis import WorkerReanalysis
from trainer.selfplay.root_rules import root_rules_of
from trainer.selfplay.worker import LocalWorkers, ShardSink, load_evaluator
from trainer.store.atomic import atomic_write_bytes, remove_stale_temporaries
from trainer.store.runfolder import RunFolder
from trainer.store.shards import ShardError, list_shards, read_shard_meta

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _graceful_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGINT into KeyboardInterrupt (a shell starts background jobs with SIGINT
    ignored; ``kill`` sends SIGTERM): the driver then writes a final checkpoint and stops its workers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
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
def run_lock(folder: RunFolder) -> Iterator[None]:
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


# ---- networks and checkpoints -------------------------------------------------------------------------


def export_network(
    folder: RunFolder, model: AlphaZeroNet, step: int, config: RunConfig, made_by: str
) -> Path:
    """Export ``net-<step>.onnx`` and install it as ``latest.onnx`` (both atomically)."""
    cpu_model = copy.deepcopy(model).to("cpu").eval()
    path = folder.network(step)
    export_onnx(cpu_model, path, step=step, komi=config.game.effective_komi(), made_by=made_by)
    atomic_write_bytes(folder.latest, path.read_bytes())
    return path


def ensure_first_network(folder: RunFolder, config: RunConfig, learner: Learner) -> None:
    """The network of step 0 (``net-00000000.onnx``: random, or ``model.init_from``'s), ``latest.onnx``
    and (gating) ``best.onnx``."""
    if not folder.first_network.is_file():
        source = config.model.init_from
        # "(trainer.transfer)" marks a transferred network in its metadata (MANIFEST, tests): a fixed text.
        start = f"from {source} (trainer.transfer)" if source else "random init, untrained"
        export_network(folder, learner.model, 0, config, f"tabula-train run; {start}")
    if not folder.latest.is_file():
        steps = folder.network_steps()
        atomic_write_bytes(folder.latest, folder.network(steps[-1]).read_bytes())
    if config.selfplay.gating and not folder.best.is_file():
        atomic_write_bytes(folder.best, folder.first_network.read_bytes())


def save_run_checkpoint(folder: RunFolder, learner: Learner, replay: ReplayBuffer, keep: int) -> None:
    """Checkpoint the learner with the positions and games it has seen and the run's settings; keep the
    newest ``keep``."""
    save_checkpoint(
        checkpoint_path(folder.checkpoints, learner.step),
        {
            **learner.state(),
            "positions": replay.total_positions,
            "games": replay.total_games,
            "config": folder.config_path.read_text() if folder.exists() else "",
        },
    )
    prune_checkpoints(folder.checkpoints, keep)


# ---- TensorBoard and progress ---------------------------------------------------------------------------


class Scalars:
    """TensorBoard scalars when tensorboard is importable (else nothing)."""

    def __init__(self, folder: RunFolder, enabled: bool, step: int):
        self.writer: Any = None
        if not enabled:
            return
        try:  # optional: a run goes on without TensorBoard
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
        self.bar: Any = None
        if enabled and sys.stderr.isatty():
            try:  # optional: plain lines without tqdm
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


def selfplay_should_wait(owed: int, limit: int, waiting: bool) -> bool:
    """Whether self-play pauses for a learner ``owed`` steps behind the sample ratio: above ``limit``
    it starts waiting, and once waiting it goes on waiting down to ``limit // 2`` (so the workers do not
    stop and start at every step)."""
    return owed > (limit // 2 if waiting else limit)


class SelfPlayWorkers(Protocol):
    """What the driver needs of its self-play workers (:class:`~trainer.selfplay.worker.LocalWorkers`,
    :class:`~trainer.run.distributed.RayWorkers`)."""

    def start(self) -> None: ...
    def poll(self) -> object: ...
    def hold(self, on: bool) -> None: ...
    def alive(self) -> int: ...
    def failed(self) -> Sequence[object]: ...
    def stop(self, timeout: float = 30.0) -> None: ...


@dataclasses.dataclass
class RunSummary:
    step: int
    positions: int
    games: int
    seconds: float
    stop_reason: str


@dataclasses.dataclass
class Interval:
    """The training interval in progress (``train.interval_steps`` steps, then a checkpoint): the
    metrics of its steps and when it began."""

    began: float = dataclasses.field(default_factory=time.monotonic)
    metrics: list[dict[str, float]] = dataclasses.field(default_factory=list)

    def add(self, metrics: dict[str, float]) -> None:
        self.metrics.append(metrics)

    @property
    def last(self) -> dict[str, float]:
        """The metrics of the newest step."""
        return self.metrics[-1]

    def mean(self) -> dict[str, float]:
        """Each metric averaged over the interval's steps (empty before the first step)."""
        if not self.metrics:
            return {}
        return {k: float(np.mean([m[k] for m in self.metrics])) for k in self.metrics[0]}

    def steps_per_second(self) -> float:
        return len(self.metrics) / max(time.monotonic() - self.began, 1e-9)


class CpuAccount:
    """The CPU time a run has used, across invocations: what earlier invocations logged, this driver
    process's own CPU time since it began (training, and self-play when it plays inline), and the CPU
    time of the worker processes, which each shard records (``cpu_seconds``).  Ray actors' CPU is not
    counted."""

    def __init__(self, previous_seconds: float, shard_seconds_at_start: float) -> None:
        self.previous = previous_seconds
        self.shards_at_start = shard_seconds_at_start
        self.process_at_start = time.process_time()

    def seconds(self, replay: ReplayBuffer) -> float:
        return self.previous + self.this_invocation(replay)

    def this_invocation(self, replay: ReplayBuffer) -> float:
        """CPU seconds since this invocation began (the driver's, and its workers' finished shards)."""
        driver = time.process_time() - self.process_at_start
        workers = replay.total_cpu_seconds - self.shards_at_start
        return driver + workers


def previous_cpu_seconds(folder: RunFolder) -> float:
    """The run's CPU time at the end of its previous invocations: the newest ``cpu_hours`` in its log
    (0 for a new run, or a run logged before CPU time was)."""
    hours = [float(e["cpu_hours"]) for e in folder.read_events() if "cpu_hours" in e]
    return 3600.0 * hours[-1] if hours else 0.0


@dataclasses.dataclass
class Session:
    """The moving parts of one invocation of the driver, from :meth:`Driver._open` to :meth:`Driver._close`."""

    learner: Learner
    replay: ReplayBuffer
    scalars: Scalars
    progress: Progress
    workers: SelfPlayWorkers | None
    inline: InlineSelfPlay | None  # self-play in this process when there are no workers
    total_steps: int
    began: float
    deadline: float | None
    start_positions: int  # positions and games when this invocation began (for the rates)
    start_games: int
    cpu: CpuAccount
    refill: int  # positions the window must hold before training goes on (0: no wait)
    checkpointed: tuple[int, int]  # (step, positions) of the newest checkpoint written
    pace_from: tuple[int, int] = (0, 0)  # (positions, step) from which self-play is paced (max_lag_steps)
    held_since: float | None = None  # self-play paused for the learner since (monotonic seconds)
    held_seconds: float = 0.0  # self-play paused for the learner, this invocation, before held_since

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def selfplay_held(self, now: float) -> float:
        """Seconds self-play has waited for the learner in this invocation, up to ``now``."""
        return self.held_seconds + (now - self.held_since if self.held_since is not None else 0.0)

    @property
    def unsaved(self) -> bool:
        """Steps or positions since the newest checkpoint (also when only self-play went on, a refill:
        the positions it made must not be counted again as missing by the next resume)."""
        return (self.learner.step, self.replay.total_positions) != self.checkpointed

    def wait_for_selfplay(self) -> None:
        if self.inline is not None:
            self.inline.play_some()
        else:
            time.sleep(0.25)


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
    def prepare(self) -> Learner:
        folder, config = self.folder, self.config
        folder.create()
        removed = remove_stale_temporaries(folder.root)
        folder.write_config(config, self.command)
        set_torch_threads(learner_threads(config))
        learner = Learner(self.info, config)
        state = resume_checkpoint(folder.checkpoints, learner.device)
        if state is not None:
            learner.load_state(state)
            self.resumed_counts = (int(state.get("positions", 0)), self._games_at(learner.step, state))
            stored = ModelConfig.from_dict(dict(state["model"]))
            if stored != learner.model.config:  # trainer.network.grow: the checkpoint's network, bigger
                folder.log_event(
                    "grown", step=learner.step, source=stored.to_dict(), model=learner.model.config.to_dict()
                )
        elif config.model.init_from:  # also on a restart before the first checkpoint: net 0's weights again
            counts = init_from(learner.model, config.model.init_from)
            source_step = counts.pop("step")
            folder.log_event(
                "init_from", step=0, source=config.model.init_from, source_step=source_step, **counts
            )
        ensure_first_network(folder, config, learner)
        if state is not None:
            self._export_checkpoint_network(learner)
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

    def _export_checkpoint_network(self, learner: Learner) -> None:
        """The network of the resumed checkpoint as ``net-<step>.onnx`` and ``latest.onnx``: a kill
        between an interval's checkpoint and its export left them older (a run killed so at its last
        step kept a ``latest.onnx`` older than its final checkpoint; found by ``benchmarks/chaos.py``:
        docs/benchmarks.md, "Chaos: kill -9 in every stage of a training run (2026-12-06)")."""
        folder, step = self.folder, learner.step
        path = folder.network(step)
        if not path.is_file():
            export_network(
                folder, learner.model, step, self.config, f"{self.command} (step {step}, at resume)"
            )
            folder.log_event("exported", step=step, reason="the checkpoint's network was missing")
        elif read_metadata(folder.latest).step < step:
            atomic_write_bytes(folder.latest, path.read_bytes())

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

    def _carry_over(self, replay: ReplayBuffer, step: int) -> int:
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

    def _workers(self) -> SelfPlayWorkers | None:
        if self.config.selfplay.workers == 0:
            return None
        if self.ray_address:
            return RayWorkers(self.folder, self.config, self.ray_address, seed=self.config.run.seed)
        return LocalWorkers(self.folder.root, self.config, seed=self.config.run.seed + 1000 * self._starts())

    def _starts(self) -> int:
        return len(self.folder.read_events("start"))

    # ---- the loop -------------------------------------------------------------------------------------
    def check_resumable(self) -> None:
        """Read what a resume needs before anything is written (the lock's pid included): the newest
        checkpoint whole and every shard's metadata (a shard cut short has no zip directory).

        Raises:
            CheckpointError, ShardError: a file that cannot be read (the run must not start: resuming
                past it would write over finished work); the message names the file and the fault.
        """
        resume_checkpoint(self.folder.checkpoints)
        for path in list_shards(self.folder.shards):
            try:
                read_shard_meta(path)
            except ShardError as exc:
                raise ShardError(
                    f"{exc}; nothing was changed (move the file away to resume without it)"
                ) from None

    def run(self) -> RunSummary:
        """Run until done; SIGTERM (and SIGINT, also when started in the background) stop it cleanly.
        A resume first checks its files (:meth:`check_resumable`)."""
        self.check_resumable()
        with run_lock(self.folder), _graceful_signals():
            return self._run()

    def _run(self) -> RunSummary:
        session = self._open()
        try:
            stop_reason = self._train_until_done(session)
        except KeyboardInterrupt:
            stop_reason = "interrupted"
        finally:
            self._close(session)
        return self._stopped(session, stop_reason)

    def _open(self) -> Session:
        """Prepare the learner, load the replay window, start self-play (workers or inline)."""
        config = self.config
        learner = self.prepare()
        replay = ReplayBuffer.for_run(self.folder.shards, self.info, config, self.folder.reanalysis)
        replay.refresh()
        refill = self._carry_over(replay, learner.step)
        total_steps = config.train.total_steps
        if self.max_steps is not None:
            total_steps = min(total_steps, self.max_steps)
        session = Session(
            learner=learner,
            replay=replay,
            scalars=Scalars(self.folder, config.run.tensorboard, learner.step),
            progress=Progress(total_steps, learner.step, self.progress_enabled),
            workers=self._workers(),
            inline=None,
            total_steps=total_steps,
            began=time.monotonic(),
            deadline=None,
            start_positions=replay.total_positions,
            start_games=replay.total_games,
            cpu=CpuAccount(previous_cpu_seconds(self.folder), replay.total_cpu_seconds),
            refill=refill,
            checkpointed=(learner.step, replay.total_positions),
            pace_from=(replay.total_positions, learner.step),
        )
        if config.run.max_minutes:
            session.deadline = session.began + 60 * config.run.max_minutes
        if session.workers is None:
            seed = config.run.seed + 1000 * self._starts()
            session.inline = InlineSelfPlay(self.folder, config, self.game, seed=seed)
        else:
            session.workers.start()
        return session

    def _train_until_done(self, session: Session) -> str:
        """Train while self-play allows it, ending an interval every ``interval_steps``; returns why
        the run stopped."""
        interval = Interval()
        while session.learner.step < session.total_steps:
            reason = self._stop_reason(session)
            if reason is not None:
                return reason
            allowed = self._trainable_to(session)
            self._pace_selfplay(session, trainable=allowed is not None)
            if allowed is None:
                session.wait_for_selfplay()
                continue
            self._train_chunk(session, interval, allowed)
            if self._interval_ends(session):
                self._end_interval(session, interval)
                interval = Interval()
        return "total steps"

    def _stop_reason(self, session: Session) -> str | None:
        """The time limit, the CPU limit, or all self-play workers gone (``None``: go on)."""
        if session.deadline is not None and time.monotonic() >= session.deadline:
            return "time limit"
        cpu_limit = self.config.run.max_cpu_minutes
        if cpu_limit is not None and session.cpu.this_invocation(session.replay) >= 60.0 * cpu_limit:
            return "CPU limit"
        workers = session.workers
        if workers is not None:
            workers.poll()
            if workers.alive() == 0:
                return f"self-play workers ended (exit codes {workers.failed()})"
        return None

    def _trainable_to(self, session: Session) -> int | None:
        """Load new shards; the step training may go up to now, or ``None`` while it waits for
        self-play (the sample ratio, an empty window, or a refill after a resume from a pack)."""
        replay, step = session.replay, session.learner.step
        replay.refresh()
        allowed = min(
            allowed_steps(
                replay.total_positions, self.config.replay.min_positions, self.config.train.steps_per_sample
            ),
            session.total_steps,
        )
        if session.refill and replay.available >= session.refill:
            self.folder.log_event("refilled", step=step, window=replay.available)
            session.refill = 0
            session.pace_from = (replay.total_positions, step)
        if step >= allowed or replay.available == 0 or session.refill:
            return None
        return allowed

    def _pace_selfplay(self, session: Session, trainable: bool) -> None:
        """Pause the self-play workers while the learner is more than ``train.max_lag_steps`` behind
        the sample ratio, and let them go on once it is within half of that.  The ratio counts from
        this invocation's start (from the end of a refill after a resume from a pack): a run that
        trained below its ratio before is not held until it has made the old shortfall up; and
        self-play never waits for a learner that cannot train (``trainable`` False: it waits for
        positions itself)."""
        limit, workers = self.config.train.max_lag_steps, session.workers
        if limit <= 0 or workers is None:
            return
        positions, step = session.pace_from
        new_positions = session.replay.total_positions - positions
        owed = int(new_positions * self.config.train.steps_per_sample) - (session.learner.step - step)
        waiting = session.held_since is not None
        hold = trainable and selfplay_should_wait(owed, limit, waiting)
        if hold == waiting:
            return
        workers.hold(hold)
        now = time.monotonic()
        if hold:
            session.held_since = now
        else:
            session.held_seconds, session.held_since = session.selfplay_held(now), None

    def _train_chunk(self, session: Session, interval: Interval, allowed: int) -> None:
        """Up to 50 steps, never past ``allowed`` nor the end of the interval."""
        tc, learner = self.config.train, session.learner
        boundary = (learner.step // tc.interval_steps + 1) * tc.interval_steps
        chunk = min(allowed, boundary, learner.step + 50) - learner.step
        for _ in range(chunk):
            interval.add(learner.train_step(session.replay.sample(tc.batch_size, self.rng)))
        session.progress.update(chunk, loss=interval.last["loss"], positions=session.replay.total_positions)

    def _interval_ends(self, session: Session) -> bool:
        step = session.learner.step
        return step % self.config.train.interval_steps == 0 or step >= session.total_steps

    def _close(self, session: Session) -> None:
        """Workers stopped, then the shards they finished since the last refresh counted, then a final
        checkpoint when anything is unsaved; progress bar and TensorBoard stopped.  (A shard written by
        the last poll used to stay out of the stop event's and the checkpoint's counts: the Ray cluster
        test saw 146 games in the shards and 142 counted.)"""
        if session.workers is not None:
            session.workers.stop()
        session.replay.refresh()
        if session.unsaved:
            self._checkpoint(session)
        session.progress.close()
        session.scalars.close()

    def _stopped(self, session: Session, reason: str) -> RunSummary:
        replay, step, seconds = session.replay, session.learner.step, session.elapsed
        self.folder.log_event(
            "stop",
            step=step,
            reason=reason,
            seconds=round(seconds, 1),
            positions=replay.total_positions,
            games=replay.total_games,
            cpu_hours=round(session.cpu.seconds(replay) / 3600.0, 4),
        )
        return RunSummary(step, replay.total_positions, replay.total_games, seconds, reason)

    def _checkpoint(self, session: Session) -> None:
        save_run_checkpoint(self.folder, session.learner, session.replay, self.config.train.keep_checkpoints)
        session.checkpointed = (session.learner.step, session.replay.total_positions)

    # ---- the end of an interval -----------------------------------------------------------------------
    def _end_interval(self, session: Session, interval: Interval) -> None:
        """Checkpoint, export (self-play picks the network up), log, and evaluate when it is due."""
        step = session.learner.step
        self._checkpoint(session)
        export_network(self.folder, session.learner.model, step, self.config, f"{self.command} (step {step})")
        if session.inline is not None:
            session.inline.reload()
        self._log_interval(session, interval)
        ec = self.config.evaluate
        number = step // self.config.train.interval_steps
        if ec.every > 0 and number % ec.every == 0 and ec.games > 0:
            for line in self.evaluate_generation(step, session.scalars):
                session.progress.write(line)

    def _log_interval(self, session: Session, interval: Interval) -> dict[str, Any]:
        """The interval's mean losses, self-play rates and resignation figures: to ``log.jsonl``,
        TensorBoard and the progress output."""
        replay, step, elapsed = session.replay, session.learner.step, max(session.elapsed, 1e-9)
        mean = interval.mean()
        rates = {
            "positions_per_s": (replay.total_positions - session.start_positions) / elapsed,
            "games_per_hour": 3600 * (replay.total_games - session.start_games) / elapsed,
            "steps_per_s": interval.steps_per_second(),
        }
        if self.config.train.max_lag_steps > 0:  # the share of this invocation self-play waited
            rates["selfplay_held_share"] = session.selfplay_held(time.monotonic()) / elapsed
        resign = self._resign_stats()
        fields = {
            **{k: round(v, 5) for k, v in mean.items()},
            **{k: round(v, 2) for k, v in rates.items()},
            "positions": replay.total_positions,
            "games": replay.total_games,
            "cpu_hours": round(session.cpu.seconds(replay) / 3600.0, 4),
            "window": replay.available,
            "proven": len(replay.proven_indices),
            "replay_mb": round(replay.nbytes / 2**20, 1),
            **resign,
        }
        if self.config.replay.reanalyse_share > 0:  # positions searched again, and those the window holds
            fields["reanalysed"] = replay.total_reanalysed
            fields["reanalysed_in_window"] = sum(len(rows) for rows in replay.targets.values())
        self.folder.log_event("train", step=step, **fields)
        session.scalars.add(step, mean, "train")
        session.scalars.add(step, rates, "selfplay")
        if resign.get("resign_false_positive_rate") is not None:
            session.scalars.add(step, {"false_positive_rate": resign["resign_false_positive_rate"]}, "resign")
        nan = float("nan")
        session.progress.write(
            f"step {step}: loss {mean.get('loss', nan):.3f} (value {mean.get('value_loss', nan):.3f}, "
            f"policy {mean.get('policy_loss', nan):.3f}), {replay.total_games} games, "
            f"{replay.total_positions} positions, {rates['positions_per_s']:.1f} positions/s, "
            f"{rates['games_per_hour']:.0f} games/h"
        )
        return fields

    def _resign_stats(self) -> dict[str, Any]:
        """False-positive rate of resignation over the newest shards' played-out games."""
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
        config, folder = self.config, self.folder
        settings = dataclasses.replace(  # the float32 networks: a check compares them, not their copies
            config.selfplay,
            games_in_parallel=config.evaluate.games_in_parallel,
            leaves_per_tree=4,
            precision="fp32",
        )
        previous = self.last_eval_step if self.last_eval_step is not None else 0
        prior = folder.read_events("evaluate")
        chain = prior[-1].get("elo_chain", 0.0) if prior else 0.0
        record: dict[str, Any] = {
            "step": step,
            "previous_step": previous,
            "games": config.evaluate.games,
            "simulations": config.eval_simulations,
        }
        lines = []
        new = load_evaluator(folder.network(step), self.info, settings)
        for name, path, opp_step in self._opponents(step, previous):
            if not path.is_file():
                continue
            opponent = load_evaluator(path, self.info, settings)
            report = play_match(
                self.game,
                (new, opponent),
                config.evaluate.games,
                config.eval_simulations,
                config.evaluate.opening_plies,
                seed=config.run.seed + step,
                games_in_parallel=config.evaluate.games_in_parallel,
                root_rules=root_rules_of(config.selfplay),
            )
            opponent.close()
            record[f"vs_{name}"] = _match_fields(report, opp_step)
            lines.append(
                f"evaluate step {step} vs {name} (step {opp_step}): {report.describe()} "
                f"in {report.seconds:.0f}s at {config.eval_simulations} visits"
            )
            if name == "previous":
                chain += record[f"vs_{name}"]["elo"]
            if name == "best":
                lines += self._promote_if_better(step, report, record)
        new.close()
        record["elo_chain"] = chain
        folder.log_event("evaluate", **record)
        if scalars is not None:
            scalars.add(step, _eval_scalars(record), "eval")
        self.last_eval_step = step
        return lines

    def _opponents(self, step: int, previous: int) -> list[tuple[str, Path, int]]:
        """``(name, network, step)`` of each opponent of the network of ``step`` (``best`` has step -1)."""
        opponents: list[tuple[str, Path, int]] = []
        if previous != step:
            opponents.append(("previous", self.folder.network(previous), previous))
        if self.config.evaluate.vs_first and previous != 0:
            opponents.append(("first", self.folder.first_network, 0))
        if self.config.selfplay.gating:
            opponents.append(("best", self.folder.best, -1))
        return opponents

    def _promote_if_better(self, step: int, report: MatchReport, record: dict[str, Any]) -> list[str]:
        """Gating: the network of ``step`` becomes ``best.onnx`` when it scored the threshold."""
        threshold = self.config.evaluate.gating_threshold
        if report.result.score < threshold:
            return []
        atomic_write_bytes(self.folder.best, self.folder.network(step).read_bytes())
        record["promoted"] = True
        return [
            f"gating: step {step} scored {100 * report.result.score:.1f}% >= "
            f"{100 * threshold:.0f}%: it is now best.onnx"
        ]


def _match_fields(report: MatchReport, opponent_step: int) -> dict[str, Any]:
    """One match of an ``evaluate`` event: the result and its Elo with the 95% interval."""
    r = report.result
    elo, low, high = r.elo()
    return {
        "wins": r.wins,
        "draws": r.draws,
        "losses": r.losses,
        "score": r.score,
        "elo": elo,
        "low": low,
        "high": high,
        "opponent_step": opponent_step,
    }


def _eval_scalars(record: dict[str, Any]) -> dict[str, float]:
    """TensorBoard values of an ``evaluate`` event."""
    values = {"elo_chain": record["elo_chain"]}
    for name in ("previous", "first", "best"):
        if f"vs_{name}" in record:
            values[f"elo_vs_{name}"] = record[f"vs_{name}"]["elo"]
            values[f"score_vs_{name}"] = record[f"vs_{name}"]["score"]
    return values


class InlineSelfPlay:
    """Self-play inside the driver (``selfplay.workers = 0``): a few steps between training chunks."""

    def __init__(self, folder: RunFolder, config: RunConfig, game: Game, seed: int):
        self.folder = folder
        self.config = config
        self.game = game
        self.path = folder.selfplay_network(config.selfplay.gating)
        self.evaluator = load_evaluator(self.path, game.info, config.selfplay, folder)
        self.player = SelfPlayer(
            game,
            config.selfplay,
            self.evaluator,
            seed=seed,
            network_step=self.evaluator.metadata.step,
        )
        self.sink = ShardSink(
            folder,
            game.info,
            config.game,
            worker=999,
            positions_per_shard=config.selfplay.positions_per_shard,
        )
        self.reanalysis = WorkerReanalysis(folder, config, game.info, 999, seed + 1_000_003)
        self.reanalysed = 0  # positions reanalysed since the last shard (its metadata counts them)

    def reload(self) -> None:
        self.path = self.folder.selfplay_network(self.config.selfplay.gating)
        self.evaluator.close()
        self.evaluator = load_evaluator(self.path, self.game.info, self.config.selfplay, self.folder)
        self.player.set_evaluator(self.evaluator, self.evaluator.metadata.step)

    def play_some(self, steps: int = 20) -> None:
        for _ in range(steps):
            finished = self.player.step()
            if self.sink.add(
                finished, selfplay_stats=self.player.stats.as_dict(), reanalysed=self.reanalysed
            ):
                self.reanalysed = self.reanalysis.after_shard(self.player, self.sink.last_positions)
                return
