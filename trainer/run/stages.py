"""The stages a run's ``selfplay`` and ``train`` commands run alone on a run folder (``run`` runs them
together in :class:`~trainer.run.loop.Driver`): self-play games into the run's shards, and training
steps from them followed by a checkpoint and an export."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from trainer.config import RunConfig, make_game
from trainer.learn.replay import ReplayBuffer
from trainer.learn.train import Learner, set_torch_threads
from trainer.network.checkpoint import resume_checkpoint
from trainer.run.loop import ensure_first_network, export_network, run_lock, save_run_checkpoint
from trainer.selfplay.worker import LocalWorkers, run_worker
from trainer.store.runfolder import RunFolder


class StageError(RuntimeError):
    """A stage could not run: its workers failed, or there is nothing to train on."""


@dataclasses.dataclass(frozen=True)
class SelfPlayOutcome:
    """What :func:`play_selfplay_games` did: games played and shards written."""

    games: int
    shards: int


@dataclasses.dataclass(frozen=True)
class TrainOutcome:
    """What :func:`train_steps` did: the learner's step after it, the last step's metrics (``loss``
    ...), and the network it exported."""

    step: int
    metrics: dict[str, float]
    network: Path


def play_selfplay_games(folder: RunFolder, config: RunConfig, games: int, command: str) -> SelfPlayOutcome:
    """Play ``games`` self-play games with the run's newest network into its shards (the run folder,
    its settings and its first network made when missing), in this process with ``workers = 0``,
    else split over worker processes.  Raises :class:`StageError` when a worker failed."""
    folder.create()
    if not folder.exists():
        folder.write_config(config, command)
    if not folder.latest.is_file():
        ensure_first_network(folder, config, Learner(make_game(config.game).info, config))
    before = len(list(folder.shards.glob("*.npz")))
    if config.selfplay.workers == 0:
        played = run_worker(folder.root, config, worker=900, seed=config.run.seed + 900, max_games=games)
    else:
        pool = LocalWorkers(folder.root, config, seed=config.run.seed + 500, max_games=games)
        pool.start()
        pool.join()
        if pool.failed():
            raise StageError(f"self-play workers failed: exit codes {pool.failed()}")
        played = games
    after = len(list(folder.shards.glob("*.npz")))
    folder.log_event("selfplay", games=played, shards=after - before, command=command)
    return SelfPlayOutcome(played, after - before)


def train_steps(folder: RunFolder, config: RunConfig, steps: int, command: str) -> TrainOutcome:
    """Train ``steps`` steps from the run's shards (ignoring the sample ratio), from its newest
    checkpoint, then checkpoint and export (``latest.onnx``), all under the run's lock.  Raises
    :class:`StageError` when the run has no self-play data."""
    info = make_game(config.game).info
    with run_lock(folder):
        set_torch_threads(config.train.threads or 0)
        learner = Learner(info, config)
        state = resume_checkpoint(folder.checkpoints, learner.device)
        if state is not None:
            learner.load_state(state)
        replay = ReplayBuffer.for_run(folder.shards, info, config, folder.reanalysis)
        replay.refresh()
        if replay.available == 0:
            raise StageError(f"{folder.root}: no self-play data in {folder.shards}")
        rng = np.random.default_rng(config.run.seed + learner.step)
        metrics: dict[str, float] = {}
        for _ in range(steps):
            metrics = learner.train_step(replay.sample(config.train.batch_size, rng))
        save_run_checkpoint(folder, learner, replay, config.train.keep_checkpoints)
        path = export_network(folder, learner.model, learner.step, config, command)
        folder.log_event(
            "train",
            step=learner.step,
            **{k: round(v, 5) for k, v in metrics.items()},
            positions=replay.total_positions,
            games=replay.total_games,
            command=command,
        )
    return TrainOutcome(learner.step, metrics, path)
