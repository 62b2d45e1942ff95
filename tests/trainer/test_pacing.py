"""Self-play paced to the learner (``train.max_lag_steps``): the hysteresis, the driver's decisions on a
run that falls behind and catches up, and a real worker that pauses its games while held."""

from __future__ import annotations

import functools
import json
import threading
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner

from tests.trainer.conftest import go5_args, set_flags
from trainer.cli import main as tabula_train
from trainer.config import preset_config
from trainer.run.loop import Driver, Session, selfplay_should_wait
from trainer.selfplay.worker import run_worker
from trainer.store.runfolder import RunFolder
from trainer.store.shards import list_shards


def test_waiting_starts_above_the_limit_and_ends_at_half_of_it() -> None:
    assert not selfplay_should_wait(100, 100, waiting=False)
    assert selfplay_should_wait(101, 100, waiting=False)
    assert selfplay_should_wait(51, 100, waiting=True)  # once waiting, until within half
    assert not selfplay_should_wait(50, 100, waiting=True)
    assert not selfplay_should_wait(-5, 100, waiting=False)


class _Workers:
    def __init__(self) -> None:
        self.calls: list[bool] = []

    def hold(self, on: bool) -> None:
        self.calls.append(on)


def _session(workers: _Workers, positions: int, step: int) -> SimpleNamespace:
    """The parts of the driver's session that pacing reads, with the session's own bookkeeping."""
    session = SimpleNamespace(
        workers=workers,
        replay=SimpleNamespace(total_positions=positions),
        learner=SimpleNamespace(step=step),
        pace_from=(positions, step),
        held_since=None,
        held_seconds=0.0,
    )
    session.selfplay_held = functools.partial(Session.selfplay_held, session)
    return session


def test_the_driver_holds_self_play_while_the_learner_is_behind(tmp_path) -> None:
    """0.05 steps a position, at most 100 steps behind: the ratio counts from the invocation's start
    (a resumed run's old shortfall is not made up), a learner that cannot train is never waited for."""
    config = preset_config("tiny", "go5").replace("train", steps_per_sample=0.05, max_lag_steps=100)
    driver = Driver(RunFolder(tmp_path / "run"), config, progress=False)
    workers = _Workers()
    session = _session(workers, positions=10_000_000, step=200_000)  # far below the ratio overall
    driver._pace_selfplay(session, trainable=True)
    assert workers.calls == []  # this invocation owes nothing yet
    session.replay.total_positions += 2_000  # 100 steps owed: not more than the limit
    driver._pace_selfplay(session, trainable=True)
    assert workers.calls == []
    session.replay.total_positions += 40  # 102 owed
    driver._pace_selfplay(session, trainable=False)  # but the learner cannot train now
    assert workers.calls == []
    driver._pace_selfplay(session, trainable=True)
    assert workers.calls == [True] and session.held_since is not None
    session.learner.step += 40  # 62 owed: still waiting (down to half the limit)
    driver._pace_selfplay(session, trainable=True)
    assert workers.calls == [True]
    time.sleep(0.01)
    session.learner.step += 20  # 42 owed
    driver._pace_selfplay(session, trainable=True)
    assert workers.calls == [True, False] and session.held_since is None and session.held_seconds > 0
    off = Driver(RunFolder(tmp_path / "off"), preset_config("tiny", "go5"), progress=False)
    session.replay.total_positions += 100_000
    off._pace_selfplay(session, trainable=True)  # max_lag_steps 0 (the default): never held
    assert workers.calls == [True, False]


def test_a_held_worker_pauses_its_games_and_goes_on_when_released(tmp_path) -> None:
    config = preset_config("tiny", "go5").replace(
        "selfplay", games_in_parallel=2, simulations=4, positions_per_shard=10
    )
    config = config.replace("game", max_plies=20)
    folder = RunFolder(tmp_path / "run")
    Driver(folder, config, progress=False).prepare()  # the run folder and its first network
    hold, stop = threading.Event(), threading.Event()
    hold.set()
    played: list[int] = []
    thread = threading.Thread(
        target=lambda: played.append(run_worker(folder.root, config, 0, 1, stop, max_games=2, hold=hold))
    )
    thread.start()
    try:
        time.sleep(2.0)
        assert thread.is_alive() and not list_shards(folder.shards)  # nothing played while held
        hold.clear()
        thread.join(120)
        assert not thread.is_alive() and played == [2]
        assert list_shards(folder.shards)
    finally:
        stop.set()
        thread.join(30)


@pytest.mark.slow
def test_a_paced_run_logs_the_share_of_time_self_play_waited(tmp_path) -> None:
    out = tmp_path / "go"
    settings = [
        "selfplay.games_in_parallel=4",
        "selfplay.simulations=4",
        "selfplay.positions_per_shard=30",
        "replay.min_positions=30",
        "train.batch_size=16",
        "train.interval_steps=4",
        "train.steps_per_sample=0.5",
        "train.max_lag_steps=2",
        "evaluate.every=0",
        "game.max_plies=30",
    ]
    args = [*go5_args("run", out), "--workers", "1", "--steps", "12", "--no-progress", *set_flags(settings)]
    result = CliRunner().invoke(tabula_train, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    events = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    shares = [e["selfplay_held_share"] for e in events if e["kind"] == "train"]
    assert len(shares) == 3 and all(0.0 <= s <= 1.0 for s in shares)
    assert max(shares) > 0  # every new shard owes 15 steps, more than the 2 allowed
    assert events[-1]["kind"] == "stop" and events[-1]["step"] == 12


def test_held_ray_actors_get_no_new_batch_and_still_count_as_alive(tmp_path, monkeypatch) -> None:
    """``RayWorkers.hold``: an actor that finishes a batch while held waits (alive, idle); released, it
    gets the next batch.  A stand-in for Ray's API (``wait``, ``get``, ``remote``); no Ray started."""
    import trainer.run.distributed as distributed

    submitted: list[int] = []

    class _Play:
        def __init__(self, i: int) -> None:
            self.i = i

        def remote(self, network: object, step: int) -> str:
            submitted.append(self.i)
            return f"ref{self.i}-{len(submitted)}"

    class _Ray:
        def wait(self, refs: list[str], num_returns: int, timeout: float) -> tuple[list[str], list[str]]:
            return refs, []

        def get(self, ref: str) -> tuple[dict[str, object], dict[str, object], str]:
            return {}, {}, ""

    written: list[str] = []
    monkeypatch.setattr(distributed, "write_payload", lambda folder, name, *rest: written.append(name))
    workers = distributed.RayWorkers(RunFolder(tmp_path / "run"), preset_config("tiny", "go5"), "local")
    workers.ray = _Ray()
    workers.actors = [SimpleNamespace(play=_Play(0)), SimpleNamespace(play=_Play(1))]
    monkeypatch.setattr(workers, "_refresh_network", lambda: None)
    workers._submit(0)
    workers._submit(1)
    workers.hold(True)
    assert workers.poll() == 2 and len(written) == 2
    assert submitted == [0, 1] and workers.alive() == 2 and sorted(workers.idle) == [0, 1]
    workers.hold(False)
    assert sorted(submitted[2:]) == [0, 1] and workers.idle == [] and workers.alive() == 2
    assert workers.poll() == 2 and len(submitted) == 6  # not held: each gets its next batch at once
