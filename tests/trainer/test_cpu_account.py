"""The run's CPU hours: worker shards record their CPU time, the driver adds its own and what earlier
invocations logged."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from engine.games import get_game
from trainer.config import GameSettings
from trainer.learn.replay import ReplayBuffer
from trainer.run.loop import CpuAccount, previous_cpu_seconds
from trainer.run.status import elo_by_cpu_hours
from trainer.selfplay.player import FinishedGame
from trainer.selfplay.worker import ShardSink
from trainer.store.runfolder import RunFolder
from trainer.store.shards import GameData, pack_position, read_shard_meta


def finished_game(game_info, plies: int = 3) -> FinishedGame:
    state = get_game("go", board_size=5).new_state()
    positions = []
    moves = []
    for _ in range(plies):
        legal = state.legal_moves()
        pi = np.full(len(legal), 1.0 / len(legal), np.float32)
        positions.append(pack_position(state.encode(), np.array(legal), pi, state.ply))
        moves.append(state.move_to_text(legal[0]))
        state.push(legal[0])
    data = GameData(positions, [i % 2 for i in range(plies)], None)
    return FinishedGame(data, moves, None, "max-length", 0.0, False, None, 0)


def test_worker_shards_record_their_cpu_time_and_the_replay_adds_it(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.create()
    game = get_game("go", board_size=5)
    clock = iter([10.0, 12.5, 20.0])  # at the start, at the first shard, at the second
    sink = ShardSink(folder, game.info, GameSettings(name="go", size=5), 0, 3, cpu_clock=lambda: next(clock))
    first = sink.add([finished_game(game.info)])
    second = sink.add([finished_game(game.info)])
    assert read_shard_meta(first[0])["cpu_seconds"] == 2.5
    assert read_shard_meta(second[0])["cpu_seconds"] == 7.5
    inline = ShardSink(folder, game.info, GameSettings(name="go", size=5), 999, 3)  # the driver's own
    assert "cpu_seconds" not in read_shard_meta(inline.add([finished_game(game.info)])[0])
    replay = ReplayBuffer(folder.shards, game.info, window=100)
    replay.refresh()
    assert replay.total_cpu_seconds == 10.0


def test_cpu_account_adds_earlier_invocations_the_driver_and_new_shards(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    assert previous_cpu_seconds(folder) == 0.0
    folder.log_event("train", step=10, cpu_hours=0.5)
    folder.log_event("stop", step=12, cpu_hours=0.75)
    assert previous_cpu_seconds(folder) == 2700.0
    replay = ReplayBuffer(tmp_path / "none", get_game("go", board_size=5).info, window=10)
    replay.total_cpu_seconds = 100.0  # shards of earlier invocations, already in the log's figure
    account = CpuAccount(previous_cpu_seconds(folder), replay.total_cpu_seconds)
    busy = time.process_time()
    while time.process_time() - busy < 0.05:
        pass
    replay.total_cpu_seconds += 30.0  # a worker's new shard
    seconds = account.seconds(replay)
    assert 2700.0 + 30.0 + 0.05 <= seconds < 2700.0 + 30.0 + 5.0


def test_elo_by_cpu_hours_follows_the_log() -> None:
    events = [
        {"kind": "evaluate", "step": 500, "elo_chain": 50.0},  # before CPU time was logged: left out
        {"kind": "train", "step": 1000, "cpu_hours": 0.4},
        {"kind": "evaluate", "step": 1000, "elo_chain": 120.0},
        {"kind": "stop", "step": 1200, "cpu_hours": 0.5},
        {"kind": "train", "step": 1500, "cpu_hours": 0.9},
        {"kind": "evaluate", "step": 1500, "elo_chain": 180.0},
    ]
    assert elo_by_cpu_hours(events) == [(0.4, 120.0), (0.9, 180.0)]
