"""Self-play workers as Ray actors (``tabula-train run --ray-address ADDRESS|auto|local``).

The learner stays on the driver (this process).  Each actor owns a :class:`~trainer.selfplay.player.SelfPlayer`
and answers ``play(network, step)`` with one shard's worth of finished games (arrays, metadata, record
text); the driver writes the shard and its record atomically into the run folder, exactly as a local
worker would, and hands the actor the newest network (the ONNX bytes, put once in Ray's object store per
export) for its next shard.  Nodes need Tabula installed (``pip install .[distributed]``), not the run
folder; so they play only (``replay.reanalyse_share`` needs the shards: local workers and inline
self-play reanalyse).

Resources: actors ask for ``min(1, cluster CPUs / workers)`` CPUs each, so every actor can be placed
even on a 2-core machine (no deadlock waiting for CPUs that do not exist), and each runs onnxruntime
with ``selfplay.onnx_threads`` threads.  ``address="local"`` starts a private instance sized to the
workers.  Usage statistics are off (``RAY_USAGE_STATS_ENABLED=0``) and the dashboard is not started.
Ray is imported only here, only when ``--ray-address`` is given.

Node loss: an actor whose node (or process) dies takes only its batch in progress with it (the driver
writes every finished shard); Ray starts it again where there is room (``max_restarts=-1``: on the
node again when it rejoins), with a new seed so that it does not replay its first life's games, and
the driver gives it its batch again.  Actors are spread over the nodes (``SPREAD``).  Measured:
docs/benchmarks.md, "A two-node Ray cluster on one machine: a node lost and back (2026-12-06)".
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from engine.inference import OnnxEvaluator
from engine.network import read_metadata
from trainer.config import RunConfig, config_from_toml, config_to_toml, make_game
from trainer.selfplay.player import SelfPlayer
from trainer.selfplay.worker import THREAD_VARIABLES, load_evaluator, shard_payload, write_payload
from trainer.store.runfolder import RunFolder
from trainer.store.shards import shard_name

log = logging.getLogger(__name__)

#: Times an actor may die for good in a row (replaced each time) before its slot is given up.
MAX_LOSSES = 20


class SelfPlayActor:
    """The body of a Ray actor: self-play with the network it is given."""

    def __init__(self, config_toml: str, worker: int, seed: int):
        import ray  # inside an actor: ray is there

        context = ray.get_runtime_context()
        self.config = config_from_toml(config_toml)
        self.worker = worker
        # A restarted actor (its node was lost) must not replay its first life's games: a new seed.
        self.seed = seed + (int.from_bytes(os.urandom(4)) if context.was_current_actor_reconstructed else 0)
        self.node = context.get_node_id()
        self.game = make_game(self.config.game)
        self.info = self.game.info
        self.player: SelfPlayer | None = None
        self.evaluator: OnnxEvaluator | None = None
        self.step: int | None = None
        self.folder = Path(tempfile.mkdtemp(prefix=f"tabula-actor-{worker}-"))

    def _use_network(self, network: bytes, step: int) -> None:
        if step == self.step and self.player is not None:
            return
        path = self.folder / f"net-{step:08d}.onnx"
        path.write_bytes(network)
        evaluator = load_evaluator(path, self.info, self.config.selfplay)
        if self.evaluator is not None:
            self.evaluator.close()
        self.evaluator = evaluator
        if self.player is None:
            self.player = SelfPlayer(
                self.game,
                self.config.selfplay,
                evaluator,
                seed=self.seed,
                network_step=step,
            )
        else:
            self.player.set_evaluator(evaluator, step)
        for old in self.folder.glob("net-*.onnx"):
            if old != path:
                old.unlink(missing_ok=True)
        self.step = step

    def play(self, network: bytes, step: int) -> tuple[dict[str, Any], dict[str, Any], str]:
        """Play until one shard's worth of positions is finished; returns ``shard_payload(...)``."""
        self._use_network(network, step)
        assert self.player is not None
        finished = []
        positions = 0
        while positions < self.config.selfplay.positions_per_shard:
            done = self.player.step()
            finished.extend(done)
            positions += sum(len(g.data.positions) for g in done)
        return shard_payload(
            finished,
            self.info,
            self.config.game,
            self.worker,
            selfplay_stats=self.player.stats.as_dict(),
            node=os.uname().nodename,
            ray_node=self.node,
            resign_threshold=self.player.resign_threshold,
        )


def init_ray(address: str, workers: int) -> Any:
    """Connect to (or, for ``local``, start) Ray with usage statistics and the dashboard off."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray  # optional (the distributed extra): only with --ray-address

    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "configure_logging": True,
        "logging_level": logging.WARNING,
        "log_to_driver": False,
    }
    # ray.init installs its own SIGTERM handler, which aborts the process: the driver's (a final
    # checkpoint, trainer.run.loop) is put back (found by benchmarks/ray_cluster.py).
    main_thread = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main_thread else None
    if address == "local":
        ray.init(address="local", num_cpus=max(1, workers), **kwargs)
    else:
        ray.init(address=address, **kwargs)
    if main_thread and sigterm is not None:
        signal.signal(signal.SIGTERM, sigterm)
    return ray


class RayWorkers:
    """Self-play actors driven from the learner's loop (same interface as ``LocalWorkers``)."""

    def __init__(self, folder: RunFolder, config: RunConfig, address: str, seed: int = 0):
        self.folder = folder
        self.config = config
        self.address = address
        self.seed = seed
        self.ray: Any = None  # the ray module once started (ray has no type information)
        self.actors: list[Any] = []
        self.pending: dict[Any, int] = {}  # object ref -> actor number
        self.errors: list[str] = []
        self._stamp: tuple[int, int] | None = None
        self._network_ref: Any = None  # Ray's reference to the network bytes
        self._network_step = 0
        self._sequence = 0
        self.held = (
            False  # while True, actors that finish a batch wait here (trainer.run.loop paces self-play)
        )
        self.idle: list[int] = []
        self.losses: Counter[int] = Counter()  # actor number -> deaths in a row with no batch done
        self._new_actor: Any = None  # actor number -> a new actor handle (set by start)
        self.lost = 0  # batches lost in all

    def start(self) -> None:
        n = max(1, self.config.selfplay.workers)
        ray = self.ray = init_ray(self.address, n)
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        per_actor = min(1.0, cpus / n)
        threads = str(max(1, self.config.selfplay.onnx_threads))
        env = dict.fromkeys(THREAD_VARIABLES, threads)
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        # max_restarts: an actor whose node is lost is started again where there is room (on the node
        # when it rejoins); SPREAD: one actor a node before two on one.
        actor_class = ray.remote(
            num_cpus=per_actor,
            runtime_env={"env_vars": env},
            max_restarts=-1,
            scheduling_strategy="SPREAD",
        )(SelfPlayActor)
        self._new_actor = lambda i: actor_class.remote(
            config_to_toml(self.config), i, self.seed * 1000 + 100 + i
        )
        self.actors = [self._new_actor(i) for i in range(n)]
        self.losses = Counter()
        self._refresh_network()
        for i in range(n):
            self._submit(i)
        log.info("ray: %d self-play actors with %.2f CPU each on %s", n, per_actor, self.address)
        if self.config.replay.reanalyse_share > 0:
            log.warning(
                "ray: actors do not reanalyse (they lack the run folder): replay.reanalyse_share unused"
            )

    def _refresh_network(self) -> None:
        path = self.folder.selfplay_network(self.config.selfplay.gating)
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            self._stamp = stamp
            self._network_step = read_metadata(path).step
            self._network_ref = self.ray.put(path.read_bytes())

    def _submit(self, i: int) -> None:
        ref = self.actors[i].play.remote(self._network_ref, self._network_step)
        self.pending[ref] = i

    def poll(self) -> int:
        """Write the shards that actors finished and give those actors the newest network."""
        if not self.pending:
            return 0
        ray = self.ray
        ready, _ = ray.wait(list(self.pending), num_returns=len(self.pending), timeout=0)
        written = 0
        if ready:
            self._refresh_network()
        for ref in ready:
            i = self.pending.pop(ref)
            try:
                arrays, meta, records = ray.get(ref)
            except ray.exceptions.ActorUnavailableError:  # restarting (its node was lost): wait for it
                self.lost += 1
                log.warning("ray self-play actor %d lost its batch; it restarts", i)
                self._submit(i)
                continue
            except ray.exceptions.RayActorError as e:  # dead for good: a new actor in its place
                if self._lost(i, e):
                    self.actors[i] = self._new_actor(i)
                    self._submit(i)
                continue
            except Exception as e:
                self.errors.append(f"actor {i}: {e}")
                log.error("ray self-play actor %d failed: %s", i, e)
                continue
            self.losses[i] = 0
            write_payload(
                self.folder, shard_name(100 + i, self._sequence), arrays, meta, records, self.config.game.name
            )
            self._sequence += 1
            written += 1
            if self.held:
                self.idle.append(i)
            else:
                self._submit(i)
        return written

    def _lost(self, i: int, error: Exception) -> bool:
        """Actor ``i`` died for good with its batch: whether to start a new one in its place (``False``
        after :data:`MAX_LOSSES` deaths in a row with no batch done: the slot is given up)."""
        self.losses[i] += 1
        self.lost += 1
        if self.losses[i] > MAX_LOSSES:
            self.errors.append(f"actor {i}: died {self.losses[i] - 1} times in a row ({error})")
            log.error("ray self-play actor %d given up: %s", i, error)
            return False
        log.warning("ray self-play actor %d died (%s); a new one replaces it", i, type(error).__name__)
        return True

    def hold(self, on: bool) -> None:
        """Pause (``True``: no new batch for an actor that finishes one) or resume the actors."""
        self.held = on
        if not on and self.ray is not None:
            idle, self.idle = self.idle, []
            for i in idle:
                self._submit(i)

    def alive(self) -> int:
        return len(self.pending) + len(self.idle)

    def failed(self) -> list[str]:
        return self.errors

    def stop(self, timeout: float = 30.0) -> None:
        ray = self.ray
        if ray is None:
            return
        for actor in self.actors:
            try:
                ray.kill(actor)
            except Exception as e:
                log.debug("ray.kill: %s", e)
        self.actors = []
        self.pending = {}
        if self.address == "local":
            ray.shutdown()
