"""Self-play worker processes on this machine (``spawn``), and the shard sink they share with Ray actors.

A worker loads the network self-play must use (``networks/latest.onnx``, or ``best.onnx`` with gating),
plays games with :class:`~trainer.selfplay.player.SelfPlayer`, and writes a shard (plus a game-record file)
each ``positions_per_shard`` positions.  Between steps it checks (every ``reload_seconds``) whether the
network file changed and reloads it, so the newest network is always the one playing.  It stops when
the driver sets the stop event, when its game quota is done, or when its parent process is gone (a
``kill -9`` of the driver never leaves orphans playing on).

Threads: each worker runs onnxruntime with ``onnx_threads`` intra-op threads and sets
``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` to that number before the child
starts, so ``workers * onnx_threads + learner threads`` stays within the cores.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import fcntl
import logging
import multiprocessing as mp
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.games.base import GameInfo
from engine.inference import InferenceSettings, OnnxEvaluator
from engine.network import read_metadata
from trainer.config import (
    GameSettings,
    RunConfig,
    SelfPlaySettings,
    config_from_toml,
    config_to_toml,
    make_game,
)
from trainer.selfplay.player import FinishedGame, SelfPlayer
from trainer.selfplay.reanalysis import WorkerReanalysis
from trainer.store.atomic import atomic_write_text
from trainer.store.records import EXTENSIONS, GameRecord, format_games
from trainer.store.runfolder import RunFolder
from trainer.store.shards import build_shard, shard_metadata, shard_name, write_shard

log = logging.getLogger(__name__)

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@contextlib.contextmanager
def thread_environment(threads: int) -> Iterator[None]:
    """Set the BLAS / OpenMP thread variables for child processes started inside the block."""
    saved = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    for k in THREAD_VARIABLES:
        os.environ[k] = str(max(1, threads))
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ---- shards from finished games -------------------------------------------------------------------------


def game_records(games: Sequence[FinishedGame], settings: GameSettings, info: GameInfo) -> list[GameRecord]:
    return [
        GameRecord(
            game=info.name,
            moves=g.moves,
            winner=g.winner,
            reason=g.reason,
            players=(f"tabula step {g.network_step}",) * 2,
            board_size=info.board_size,
            komi=settings.effective_komi(),
            score=g.score,
        )
        for g in games
    ]


def shard_payload(
    games: Sequence[FinishedGame], info: GameInfo, settings: GameSettings, worker: int, **extra: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any], str]:
    """``(arrays, metadata, records text)`` of one shard of finished games."""
    arrays = build_shard([g.data for g in games], info)
    played_out = [g for g in games if g.played_out]
    would = [g for g in played_out if g.would_resign is not None]
    meta = shard_metadata(
        info,
        arrays,
        worker=worker,
        games=len(games),
        komi=settings.effective_komi(),
        plies_mean=float(np.mean([g.plies for g in games])) if games else 0.0,
        results=dict(collections.Counter("draw" if g.winner is None else str(g.winner) for g in games)),
        reasons=dict(collections.Counter(g.reason for g in games)),
        network_steps=sorted({g.network_step for g in games}),
        resign_played_out=len(played_out),
        resign_would=len(would),
        resign_false_positives=sum(1 for g in would if g.false_positive),
        moves=[list(g.moves) for g in games],  # each game's moves: reanalysis rebuilds positions from them
        **extra,
    )
    records = format_games(game_records(games, settings, info))
    return arrays, meta, records


def write_payload(
    folder: RunFolder, name: str, arrays: dict[str, np.ndarray], meta: dict[str, Any], records: str, game: str
) -> Path:
    """Write a shard and its record file (both atomically; the record first, so a shard never lacks it)."""
    path = folder.shards / name
    if records:
        atomic_write_text(folder.games / (Path(name).stem + EXTENSIONS[game]), records)
    write_shard(path, arrays, meta)
    return path


class ShardSink:
    """Collects finished games and writes a shard every ``positions_per_shard`` positions.

    ``cpu_clock`` (a worker process passes ``time.process_time``): each shard's metadata then records
    ``cpu_seconds``, the CPU time the process spent since its previous shard, which the driver adds to
    the run's CPU hours.  Self-play inside the driver leaves it out: the driver counts its own CPU.
    """

    def __init__(
        self,
        folder: RunFolder,
        info: GameInfo,
        settings: GameSettings,
        worker: int,
        positions_per_shard: int,
        cpu_clock: Callable[[], float] | None = None,
    ):
        self.folder = folder
        self.cpu_clock = cpu_clock
        self._cpu_mark = cpu_clock() if cpu_clock is not None else 0.0
        self.info = info
        self.settings = settings
        self.worker = worker
        self.positions_per_shard = positions_per_shard
        self.pending: list[FinishedGame] = []
        self.sequence = 0
        self.written: list[Path] = []
        self.last_positions = 0  # positions of the newest shard written

    @property
    def pending_positions(self) -> int:
        return sum(len(g.data.positions) for g in self.pending)

    def add(self, games: Sequence[FinishedGame], **extra: Any) -> list[Path]:
        self.pending.extend(games)
        if self.pending_positions >= self.positions_per_shard:
            path = self.flush(**extra)
            return [path] if path is not None else []
        return []

    def flush(self, **extra: Any) -> Path | None:
        if not self.pending:
            return None
        if self.cpu_clock is not None:
            now = self.cpu_clock()
            extra["cpu_seconds"] = round(now - self._cpu_mark, 3)
            self._cpu_mark = now
        arrays, meta, records = shard_payload(self.pending, self.info, self.settings, self.worker, **extra)
        self.last_positions = len(arrays["z"])
        name = shard_name(self.worker, self.sequence)
        self.sequence += 1
        path = write_payload(self.folder, name, arrays, meta, records, self.info.name)
        self.written.append(path)
        self.pending = []
        return path


# ---- one worker -----------------------------------------------------------------------------------------


def load_evaluator(
    path: Path, info: GameInfo, settings: SelfPlaySettings, folder: RunFolder | None = None
) -> OnnxEvaluator:
    """An :class:`~engine.inference.OnnxEvaluator` for self-play (CPU unless a GPU provider works): the
    network at ``path``, or with ``settings.precision == "int8"`` its int8 copy, quantized here on
    ``folder``'s newest shards (:func:`quantized_copy`) into a temporary folder that lives as long as the
    evaluator (self-play reads the copy again for its uint8-input model, ``trainer/network/uint8_planes.py``)."""
    batch = max(1, settings.games_in_parallel * settings.leaves_per_tree)
    inference = InferenceSettings(backend="auto", threads=settings.onnx_threads, batch_size=batch)
    if settings.precision != "int8":
        return OnnxEvaluator(path, info, inference)
    remove_orphaned_int8_folders()
    tmp, lock = _locked_folder(INT8_PREFIX)
    try:
        copy = quantized_copy(path, info, Path(tmp) / "int8.onnx", folder)
        evaluator = OnnxEvaluator(copy, info, dataclasses.replace(inference, backend="cpu"))
    except BaseException:
        _remove_locked_folder(tmp, lock)
        raise
    weakref.finalize(evaluator, _remove_locked_folder, tmp, lock)
    return evaluator


#: The prefix of the temporary folders of :func:`load_evaluator`'s int8 copies.
INT8_PREFIX = "tabula-int8-"


def _locked_folder(prefix: str) -> tuple[str, int]:
    """A new temporary folder and the descriptor of the ``flock`` its ``.lock`` file holds while it is in
    use (the kernel releases it when the process ends, also by ``kill -9``)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    fd = os.open(os.path.join(tmp, ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return tmp, fd


def _remove_locked_folder(tmp: str, fd: int) -> None:
    shutil.rmtree(tmp, ignore_errors=True)
    os.close(fd)


def remove_orphaned_int8_folders(root: str | os.PathLike[str] | None = None, grace: float = 600.0) -> int:
    """Remove the int8 folders of processes that are gone (a killed worker's copies and its quantizer's
    intermediate files, a few MB each): those whose ``.lock`` nobody holds, and those without one older
    than ``grace`` seconds (killed before it was made).  Returns how many.  Found by
    ``benchmarks/chaos.py``: docs/benchmarks.md, "Chaos: kill -9 in every stage of a training run (2026-12-06)"."""
    removed = 0
    for folder in Path(root if root is not None else tempfile.gettempdir()).glob(INT8_PREFIX + "*"):
        try:
            fd = os.open(folder / ".lock", os.O_RDWR)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                if time.time() - folder.stat().st_mtime > grace:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed += 1
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its process is alive
            continue
        else:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
        finally:
            os.close(fd)
    return removed


def quantized_copy(path: Path, info: GameInfo, out: Path, folder: RunFolder | None) -> Path:
    """Write ``path``'s int8 copy to ``out``, calibrated on the newest shards of ``folder`` (positions
    from the network's own games while there are none, as at step 0).  About five seconds."""
    from engine.games import get_game
    from trainer.network.quantize import calibration_for, quantize_network

    game = get_game(read_metadata(path).label)
    planes = calibration_for(path, game, folder.shards if folder is not None else None)
    note = "self-play worker, calibrated on the run's newest shards"
    return quantize_network(path, out, planes, note, scratch=out.parent)


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _wait_for_network(folder: RunFolder, gating: bool, wait_seconds: float, stop: Any | None) -> Path | None:
    """The network self-play must use, once it exists (``None``: not within ``wait_seconds``, or stopped)."""
    deadline = time.monotonic() + wait_seconds
    path = folder.selfplay_network(gating)
    while not path.is_file():
        if time.monotonic() > deadline or (stop is not None and stop.is_set()):
            return None
        time.sleep(0.2)
        path = folder.selfplay_network(gating)
    return path


class _WatchedNetwork:
    """A worker's evaluator, reloaded when the network file changes (looked at every ``reload_seconds``)."""

    def __init__(
        self, folder: RunFolder, path: Path, info: GameInfo, settings: SelfPlaySettings, reload_seconds: float
    ):
        self.folder = folder
        self.info = info
        self.settings = settings
        self.reload_seconds = reload_seconds
        self.stamp = _file_stamp(path)
        self.evaluator = load_evaluator(path, info, settings, folder)
        self.next_check = time.monotonic() + reload_seconds

    def refresh(self, player: SelfPlayer, worker: int) -> None:
        """Give ``player`` the newest network when the file changed (a file still being replaced is
        tried again at the next look)."""
        now = time.monotonic()
        if now < self.next_check:
            return
        self.next_check = now + self.reload_seconds
        path = self.folder.selfplay_network(self.settings.gating)
        stamp = _file_stamp(path)
        if stamp is None or stamp == self.stamp:
            return
        try:
            evaluator = load_evaluator(path, self.info, self.settings, self.folder)
        except Exception as e:
            log.warning("worker %d: cannot load %s yet (%s)", worker, path, e)
            return
        self.stamp = stamp
        self.evaluator.close()
        self.evaluator = evaluator
        player.set_evaluator(evaluator, read_metadata(path).step)


def run_worker(
    root: str | os.PathLike[str],
    config: RunConfig,
    worker: int,
    seed: int,
    stop: Any | None = None,
    max_games: int | None = None,
    parent_pid: int | None = None,
    reload_seconds: float = 2.0,
    wait_seconds: float = 600.0,
    hold: Any | None = None,
) -> int:
    """Play self-play games into the run folder until stopped; returns the number of games played.
    While ``hold`` (an event) is set, the games in progress wait (the learner is catching up)."""
    folder = RunFolder(root)
    game = make_game(config.game)
    settings = config.selfplay
    path = _wait_for_network(folder, settings.gating, wait_seconds, stop)
    if path is None:
        return 0
    network = _WatchedNetwork(folder, path, game.info, settings, reload_seconds)
    player = SelfPlayer(
        game,
        settings,
        network.evaluator,
        seed=seed,
        network_step=network.evaluator.metadata.step,
    )
    sink = ShardSink(folder, game.info, config.game, worker, settings.positions_per_shard, time.process_time)
    reanalysis = WorkerReanalysis(folder, config, game.info, worker, seed + 1_000_003)
    reanalysed = 0  # positions reanalysed since the last shard (its metadata counts them)
    played = 0
    try:
        while stop is None or not stop.is_set():
            if parent_pid is not None and os.getppid() != parent_pid:
                return played  # the driver died: stop at once (its shards so far are complete)
            if hold is not None and hold.is_set():
                time.sleep(0.1)
                continue
            if max_games is not None:
                player.game_limit = max_games
            network.refresh(player, worker)
            finished = player.step()
            played += len(finished)
            written = sink.add(
                finished,
                selfplay_stats=player.stats.as_dict(),
                resign_threshold=player.resign_threshold,
                reanalysed=reanalysed,
            )
            if written:
                reanalysed = reanalysis.after_shard(player, sink.last_positions)
            if max_games is not None and played >= max_games:
                break
            if not finished and player.active == 0:
                break
        sink.flush(
            selfplay_stats=player.stats.as_dict(),
            resign_threshold=player.resign_threshold,
            reanalysed=reanalysed,
        )
    finally:
        player.close()
        network.evaluator.close()
    return played


def _worker_entry(
    root: str,
    config_toml: str,
    worker: int,
    seed: int,
    stop: Any,
    max_games: int | None,
    parent_pid: int,
    hold: Any,
) -> None:
    logging.basicConfig(level=logging.WARNING, format=f"worker {worker}: %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        run_worker(root, config_from_toml(config_toml), worker, seed, stop, max_games, parent_pid, hold=hold)


class LocalWorkers:
    """Self-play worker processes started with ``spawn``."""

    def __init__(
        self, root: str | os.PathLike[str], config: RunConfig, seed: int = 0, max_games: int | None = None
    ):
        self.root = str(root)
        self.config = config
        self.seed = seed
        self.max_games = max_games
        self.ctx = mp.get_context("spawn")
        self.stop_event = self.ctx.Event()
        self.hold_event = self.ctx.Event()  # set: the workers pause (trainer.run.loop paces self-play)
        self.processes: list[Any] = []

    def start(self) -> None:
        n = self.config.selfplay.workers
        per_worker = None
        if self.max_games is not None:
            per_worker = [self.max_games // n + (1 if i < self.max_games % n else 0) for i in range(n)]
        text = config_to_toml(self.config)
        with thread_environment(self.config.selfplay.onnx_threads):
            for i in range(n):
                p = self.ctx.Process(
                    target=_worker_entry,
                    args=(
                        self.root,
                        text,
                        i,
                        self.seed * 1000 + i,
                        self.stop_event,
                        per_worker[i] if per_worker else None,
                        os.getpid(),
                        self.hold_event,
                    ),
                    name=f"tabula-selfplay-{i}",
                    daemon=True,
                )
                p.start()
                self.processes.append(p)

    def poll(self) -> None:
        """Nothing to collect: local workers write their shards themselves."""

    def hold(self, on: bool) -> None:
        """Pause (``True``) or resume the workers' games."""
        if on:
            self.hold_event.set()
        else:
            self.hold_event.clear()

    def alive(self) -> int:
        return sum(1 for p in self.processes if p.is_alive())

    def failed(self) -> list[int]:
        """Exit codes of workers that died with an error."""
        return [p.exitcode for p in self.processes if p.exitcode not in (None, 0)]

    def join(self, timeout: float | None = None) -> None:
        for p in self.processes:
            p.join(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the workers to finish (they flush their partial shard), then end stragglers."""
        self.stop_event.set()
        deadline = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.1, deadline - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.terminate()
                p.join(5)
