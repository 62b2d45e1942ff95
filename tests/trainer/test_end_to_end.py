"""Tiny end-to-end runs of ``tabula-train`` for each game: self-play, training, export, evaluation,
status and plot; the network produced is loaded and searched with by the engine."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from engine.games import get_game
from engine.inference import InferenceSettings, OnnxEvaluator
from engine.network import read_metadata
from engine.search.config import SearchConfig
from engine.search.tree_factory import new_tree
from tests.trainer.conftest import go5_args, set_flags
from trainer.cli import main as tabula_train
from trainer.store.shards import list_shards, read_shard

#: Settings that make a run take seconds: few games, very few simulations, short games.
TINY = [
    "selfplay.games_in_parallel=4",
    "selfplay.simulations=4",
    "selfplay.leaves_per_tree=2",
    "selfplay.positions_per_shard=30",
    "selfplay.sample_plies=2",
    "replay.min_positions=30",
    "train.batch_size=16",
    "train.interval_steps=4",
    "train.steps_per_sample=0.1",
    "evaluate.games=2",
    "evaluate.simulations=4",
    "evaluate.every=2",
    "evaluate.games_in_parallel=2",
]

GAMES = {
    "go": (["--game", "go", "--size", "5"], ["game.max_plies=30"]),
    "chess": (["--game", "chess"], ["game.max_plies=24"]),
    "shogi": (["--game", "shogi"], ["game.max_plies=24"]),
}


def invoke(args):
    result = CliRunner().invoke(tabula_train, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _search_with(path, game) -> object:
    """The engine loads the network and searches a position with it."""
    ev = OnnxEvaluator(path, game.info, InferenceSettings(backend="cpu", threads=1))
    tree = new_tree(game.new_state(), SearchConfig(batch_size=4))
    for _ in range(8):
        batch = tree.select_batch(4)
        if len(batch):
            batch.start(ev, None)
            tree.backup_batch(batch)
    move = tree.best_move()
    assert move is not None
    return move


@pytest.mark.parametrize("name", list(GAMES))
def test_tiny_run(tmp_path, name: str) -> None:
    flags, extra = GAMES[name]
    out = tmp_path / name
    output = invoke(
        [
            "run",
            *flags,
            "--preset",
            "tiny",
            "--out",
            str(out),
            "--workers",
            "0",
            "--steps",
            "8",
            "--no-progress",
            *set_flags(TINY + extra),
        ]
    )
    assert "step 8" in output
    game = get_game("go", board_size=5) if name == "go" else get_game(name)
    # files of every stage
    assert (out / "config.toml").is_file() and "[selfplay]" in (out / "config.toml").read_text()
    shards = list_shards(out / "shards")
    assert shards and all(len(read_shard(p, game.info)) > 0 for p in shards)
    records = list((out / "games").iterdir())
    assert len(records) == len(shards)
    assert {p.suffix for p in records} == {{"go": ".sgf", "chess": ".pgn", "shogi": ".csa"}[name]}
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["ckpt-00000004.pt", "ckpt-00000008.pt"]
    meta = read_metadata(out / "networks" / "latest.onnx")
    assert meta.step == 8 and meta.preset == "b2c16" and meta.game == game.info.name
    if name == "go":
        assert meta.komi == 9.0  # boards up to 7x7 default to komi 9
    _search_with(out / "networks" / "latest.onnx", game)
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "stop" and "train" in kinds and "evaluate" in kinds
    evaluation = [e for e in events if e["kind"] == "evaluate"][-1]
    assert (
        evaluation["vs_previous"]["wins"]
        + evaluation["vs_previous"]["draws"]
        + evaluation["vs_previous"]["losses"]
        == 2
    )
    train = [e for e in events if e["kind"] == "train"][-1]
    assert {
        "loss",
        "value_loss",
        "policy_loss",
        "policy_entropy",
        "positions_per_s",
        "games_per_hour",
        "cpu_hours",
    } <= set(train)
    assert 0 < train["cpu_hours"] <= events[-1]["cpu_hours"]  # the stop event has the run's total
    assert any((out / "tb").iterdir())  # TensorBoard scalars
    # status and plot
    status = invoke(["status", "--out", str(out)])
    assert "checkpoint step 8" in status and "losses" in status and "elo" in status
    invoke(["plot", "--out", str(out)])
    assert (out / "plot.png").read_bytes()[:4] == b"\x89PNG"


def test_run_resumed_from_a_pack_refills_the_window_then_trains(tmp_path) -> None:
    """A pack has no shards: the resumed run counts the positions its checkpoint saw, waits until
    self-play has refilled the window (here: as many positions as the young run had seen), then
    trains at the sample ratio instead of waiting for the positions counted from zero again; its
    next evaluation plays the packed network of the last one (the Elo chain goes on)."""
    out, pack = tmp_path / "go", tmp_path / "pack"
    sets = set_flags([*TINY, "game.max_plies=30"])
    invoke(
        [
            *go5_args("run", out),
            "--workers",
            "0",
            "--steps",
            "8",
            "--no-progress",
            *sets,
        ]
    )
    first_stop = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()][-1]
    invoke(["pack", "--out", str(out), "--to", str(pack)])
    # the pack keeps the network of the last evaluation (step 8), which the next one plays against
    assert sorted(p.name for p in (pack / "networks").iterdir()) == [
        "latest.onnx",
        "net-00000000.onnx",
        "net-00000008.onnx",
    ]
    assert "step 16" in invoke(
        ["run", "--out", str(pack), "--workers", "0", "--steps", "16", "--no-progress"]
    )
    events = [json.loads(x) for x in (pack / "log.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    refill = events[kinds.index("refill")]
    assert refill["step"] == 8 and refill["missing_positions"] == first_stop["positions"]
    assert refill["refill_to"] == first_stop["positions"]  # younger than its 20,000-position window
    refilled = events[kinds.index("refilled")]
    assert refilled["window"] >= refill["refill_to"]
    # no training step between the resume and the refill; afterwards the counts go on from the old ones
    assert not [e for e in events[kinds.index("refill") : kinds.index("refilled")] if e["kind"] == "train"]
    stop = events[-1]
    assert stop["kind"] == "stop" and stop["step"] == 16
    evaluation = [e for e in events if e["kind"] == "evaluate"][-1]
    assert evaluation["step"] == 16 and evaluation["vs_previous"]["opponent_step"] == 8
    assert stop["positions"] >= first_stop["positions"] + refilled["window"]
    assert stop["games"] > first_stop["games"]


def test_stages_run_alone(tmp_path) -> None:
    out = tmp_path / "go"
    sets = set_flags([*TINY, "game.max_plies=30"])
    invoke(
        [
            *go5_args("selfplay", out),
            "--workers",
            "0",
            "--games",
            "6",
            *sets,
        ]
    )
    shards = list_shards(out / "shards")
    assert sum(read_shard(p).meta["games"] for p in shards) == 6
    output = invoke(["train", "--out", str(out), "--steps", "3"])
    assert "step 3" in output and (out / "checkpoints" / "ckpt-00000003.pt").is_file()
    # resume with more settings: the recorded config is kept and extended
    output = invoke(["train", "--out", str(out), "--steps", "2", "--set", "train.batch_size=8"])
    assert "step 5" in output
    net = tmp_path / "exported.onnx"
    invoke(["export", "--checkpoint", str(out), "--out", str(net)])
    meta = read_metadata(net)
    assert meta.step == 5 and meta.game == "go" and meta.board_size == 5 and "--checkpoint" in meta.made_by
    invoke(["export", "--checkpoint", str(out / "checkpoints" / "ckpt-00000003.pt"), "--out", str(net)])
    assert read_metadata(net).step == 3
    record = tmp_path / "match.sgf"
    output = invoke(
        [
            "evaluate",
            "--out",
            str(out),
            "--games",
            "4",
            "--simulations",
            "4",
            "--parallel",
            "4",
            "--record",
            str(record),
        ]
    )
    assert "Elo" in output and record.read_text().count("(;GM[1]") == 4
    output = invoke(
        [
            "evaluate",
            "--out",
            str(out),
            "--b",
            "uniform",
            "--games",
            "2",
            "--simulations",
            "4",
            "--parallel",
            "2",
        ]
    )
    assert "vs uniform:" in output and "Elo" in output
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [e for e in events if e["kind"] == "match"][-1]["b"] == "uniform"
    # a pack keeps settings, logs, the newest checkpoint and the networks, not the data; training resumes from it
    pack = tmp_path / "pack"
    assert "packed" in invoke(["pack", "--out", str(out), "--to", str(pack)])
    assert sorted(p.name for p in (pack / "checkpoints").iterdir()) == ["ckpt-00000005.pt"]
    assert (pack / "networks" / "net-00000000.onnx").is_file() and (pack / "config.toml").is_file()
    assert not (pack / "shards").exists() and not (pack / "games").exists()
    invoke(["selfplay", "--out", str(pack), "--workers", "0", "--games", "4"])
    assert "step 7" in invoke(["train", "--out", str(pack), "--steps", "2"])
    # selfplay with one spawned worker process appends shards
    invoke(["selfplay", "--out", str(out), "--workers", "1", "--games", "2"])
    assert len(list_shards(out / "shards")) > len(shards)


def test_resume_refuses_another_game(tmp_path) -> None:
    out = tmp_path / "go"
    invoke(
        [
            *go5_args("selfplay", out),
            "--workers",
            "0",
            "--games",
            "1",
            *set_flags([*TINY, "game.max_plies=10"]),
        ]
    )
    result = CliRunner().invoke(tabula_train, ["run", "--game", "chess", "--out", str(out)])
    assert result.exit_code != 0 and "go5 run" in result.output


def test_initial_network_is_random_and_engine_loadable(tmp_path) -> None:
    out = tmp_path / "g"
    invoke(
        [
            *go5_args("selfplay", out),
            "--workers",
            "0",
            "--games",
            "1",
            *set_flags([*TINY, "game.max_plies=10"]),
        ]
    )
    first = out / "networks" / "net-00000000.onnx"
    assert read_metadata(first).step == 0
    assert np.array_equal(
        np.frombuffer(first.read_bytes(), np.uint8),
        np.frombuffer((out / "networks" / "latest.onnx").read_bytes(), np.uint8),
    )


def test_gating_plays_with_the_best_network(tmp_path) -> None:
    out = tmp_path / "gated"
    invoke(
        [
            *go5_args("run", out),
            "--workers",
            "0",
            "--steps",
            "8",
            "--no-progress",
            *set_flags(
                [
                    *TINY,
                    "game.max_plies=30",
                    "selfplay.gating=true",
                    "evaluate.every=1",
                    "evaluate.gating_threshold=0.0",
                ]
            ),
        ]
    )
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    evaluations = [e for e in events if e["kind"] == "evaluate"]
    assert evaluations and all("vs_best" in e for e in evaluations)
    assert evaluations[-1].get("promoted") is True  # threshold 0: every new network is promoted
    assert read_metadata(out / "networks" / "best.onnx").step == 8


def test_cpu_minutes_stop_a_run_on_its_cpu_time(tmp_path) -> None:
    """``--cpu-minutes``: the run stops once this invocation used that much CPU (driver and workers),
    however long that takes on the clock (A/B runs that share the cores)."""
    out = tmp_path / "cpu"
    flags, extra = GAMES["go"]
    limits = ["--workers", "0", "--steps", "100000", "--cpu-minutes", "0.05", "--no-progress"]
    output = invoke(["run", *flags, "--preset", "tiny", "--out", str(out), *limits, *set_flags(TINY + extra)])
    assert "step 100000" not in output
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    stop = events[-1]
    assert stop["kind"] == "stop" and stop["reason"] == "CPU limit"
    assert 0.0008 <= stop["cpu_hours"] < 60.0 / 3600  # at least 3 s, logged in hours to 4 decimals


def test_a_pack_with_its_shards_resumes_on_them_without_a_refill(tmp_path) -> None:
    """``pack --shards-mb`` carries the newest shards that fit: the resumed run loads them as its window
    and trains at once; packing again without them takes them out of the pack."""
    out, pack = tmp_path / "go", tmp_path / "pack"
    sets = set_flags([*TINY, "game.max_plies=30"])
    invoke([*go5_args("run", out), "--workers", "0", "--steps", "8", "--no-progress", *sets])
    shards = sorted(p.name for p in (out / "shards").glob("*.npz"))
    assert shards
    newest = (out / "shards" / shards[-1]).stat().st_size
    invoke(["pack", "--out", str(out), "--to", str(tmp_path / "small"), "--shards-mb", str(newest / 1e6)])
    assert sorted(p.name for p in (tmp_path / "small" / "shards").glob("*.npz")) == shards[-1:]
    invoke(["pack", "--out", str(out), "--to", str(pack), "--shards-mb", "100"])
    assert sorted(p.name for p in (pack / "shards").glob("*.npz")) == shards
    assert "step 12" in invoke(
        ["run", "--out", str(pack), "--workers", "0", "--steps", "12", "--no-progress"]
    )
    events = [json.loads(x) for x in (pack / "log.jsonl").read_text().splitlines()]
    resumed = max(i for i, e in enumerate(events) if e["kind"] == "start")
    assert not [e for e in events[resumed:] if e["kind"] in ("refill", "refilled")]
    assert [e for e in events[resumed:] if e["kind"] == "train"]
    invoke(["pack", "--out", str(out), "--to", str(pack)])  # without shards: the pack's go
    assert not list((pack / "shards").glob("*.npz"))


def test_a_run_resumed_with_a_bigger_preset_grows_and_goes_on(tmp_path) -> None:
    """``--set model.preset=...`` on a resume grows the checkpoint's network (trainer.network.grow): the log
    records it, the step count and the schedule go on, and the networks from then on are the bigger
    one."""
    out = tmp_path / "go"
    sets = set_flags([*TINY, "game.max_plies=30", "model.preset=b1c8"])
    invoke([*go5_args("run", out), "--workers", "0", "--steps", "4", "--no-progress", *sets])
    resume = ["run", "--out", str(out), "--workers", "0", "--steps", "8", "--no-progress"]
    invoke([*resume, *set_flags(["model.preset=b2c16"])])
    events = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    (grown,) = [e for e in events if e["kind"] == "grown"]
    assert grown["step"] == 4
    assert (grown["source"]["blocks"], grown["source"]["filters"]) == (1, 8)
    assert (grown["model"]["blocks"], grown["model"]["filters"]) == (2, 16)
    assert events[-1]["kind"] == "stop" and events[-1]["step"] == 8
    trained = [e["step"] for e in events if e["kind"] == "train"]
    assert trained and max(trained) == 8
    latest = torch.load(sorted((out / "checkpoints").glob("ckpt-*.pt"))[-1], weights_only=False)
    assert latest["step"] == 8 and latest["model"]["filters"] == 16
