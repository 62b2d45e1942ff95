"""The settings ``tabula-train`` builds for a run folder: recorded ones on resume, then files, ``--set``
and the dedicated flags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainer.cli import RunOptions
from trainer.config import build_config, config_to_toml
from trainer.store.runfolder import RunFolder


def _options(out: Path, assignments: tuple[str, ...] = ()) -> RunOptions:
    return RunOptions(
        out=out,
        game=None,
        size=None,
        komi=None,
        preset=None,
        config_files=(),
        assignments=assignments,
        device=None,
        workers=None,
        seed=None,
        verbose=False,
    )


def _recorded_run(root: Path) -> RunFolder:
    """A chess run recorded (before the limits were left out of records) with its last invocation's
    ``--minutes 11 --cpu-minutes 110``, and a paced learner."""
    folder = RunFolder(root)
    folder.create()
    flags = {"run": {"max_minutes": 11.0, "max_cpu_minutes": 110.0}, "train": {"max_lag_steps": 500}}
    folder.config_path.write_text(
        config_to_toml(build_config("tiny", "chess", overrides=flags), "an old record")
    )
    assert folder.read_config().run.max_minutes == 11.0
    return folder


def test_a_resume_does_not_inherit_the_last_invocations_time_limits(tmp_path: Path) -> None:
    folder = _recorded_run(tmp_path / "chess")
    resumed = _options(folder.root).config()
    assert resumed.run.max_minutes is None and resumed.run.max_cpu_minutes is None
    # the run's own settings stay recorded
    assert resumed.game.name == "chess" and resumed.train.max_lag_steps == 500
    assert resumed.model == folder.read_config().model


def test_a_resume_takes_this_invocations_limits(tmp_path: Path) -> None:
    folder = _recorded_run(tmp_path / "chess")
    assert _options(folder.root).config(minutes=5.0).run.max_minutes == 5.0
    paced = _options(folder.root).config(cpu_minutes=7.0).run
    assert paced.max_cpu_minutes == 7.0 and paced.max_minutes is None
    assert _options(folder.root, ("run.max_minutes=3",)).config().run.max_minutes == 3.0


def test_a_run_folder_does_not_record_invocation_limits(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "chess")
    folder.create()
    flags = {"run": {"max_minutes": 11.0, "max_cpu_minutes": 110.0, "seed": 3}}
    folder.write_config(build_config("tiny", "chess", overrides=flags), "tabula-train run --minutes 11")
    recorded = folder.read_config().run
    assert recorded.max_minutes is None and recorded.max_cpu_minutes is None and recorded.seed == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--game", "gomoku"], "Error: Invalid value for '--game': unknown game 'gomoku'"),
        (
            ["--game", "go", "--size", "99"],
            "Error: Invalid value for '--size': 99 is not in the range 2<=x<=19.",
        ),
        (["--game", "go99"], "Error: Invalid value for '--game': Go board size must be an integer in 2..19"),
        (["--game", "chess", "--size", "9"], "Error: chess is played on 8x8"),
    ],
)
def test_a_bad_game_or_size_is_one_error_line_and_exit_status_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """As click answers any bad value: a usage hint and one ``Error:`` line, status 2, no traceback,
    and no run folder made."""
    from click.testing import CliRunner

    from trainer.cli import main

    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", *args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(message), result.output
    assert "Traceback" not in result.output and not out.exists()


def _tabula_train(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The real ``tabula-train`` command (``python -m trainer``) with ``args``, stdin closed."""
    return subprocess.run(
        [sys.executable, "-m", "trainer", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
    )


REPO = Path(__file__).resolve().parents[2]
GO9 = ["evaluate", "--game", "go9", "--a", "weights/go9.onnx"]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["evaluate", "--game", "gomoku", "--a", "weights/go9.onnx", "--b", "uniform"], "--game"),
        (["run", "--out", "{tmp}/run", "--game", "go", "--size", "25"], "--size"),
        (["run", "--out", "{tmp}/run", "--game", "go9", "--workers", "-1"], "--workers"),
        (["run", "--out", "{tmp}/run", "--game", "go9", "--minutes", "-5"], "--minutes"),
        (["selfplay", "--out", "{tmp}/run", "--game", "go9", "--games", "-3"], "--games"),
        (["train", "--out", "{tmp}/run", "--game", "go9", "--steps", "0"], "--steps"),
        (["export", "--game", "gomoku", "--random", "--out", "{tmp}/x.onnx"], "--game"),
        (["export", "--game", "go9", "--random", "--preset", "huge", "--out", "{tmp}/x.onnx"], "--preset"),
        (["export", "--game", "go9", "--random", "--out", "{tmp}/no/such/x.onnx"], "--out"),
        (["quantize", "--network", "{tmp}/missing.onnx"], "--network"),
        (["quantize", "--network", "README.md"], "--network"),
        ([*GO9, "--b", "uniform", "--games", "-2"], "--games"),
        ([*GO9, "--b", "uniform", "--simulations", "0"], "--simulations"),
        ([*GO9, "--b", "uniform", "--parallel", "0"], "--parallel"),
        ([*GO9, "--b", "uniform", "--komi", "nan"], "--komi"),
        ([*GO9, "--b", "{tmp}/missing.onnx"], "--b"),
        (["evaluate", "--game", "go9", "--a", "{tmp}/missing.onnx", "--b", "uniform"], "--a"),
        (["evaluate", "--game", "go9", "--a", "weights/chess.onnx", "--b", "uniform"], "--a"),
        ([*GO9, "--b", "uniform", "--sprt", "10"], "--sprt"),
        ([*GO9, "--b", "uniform", "--sprt", "10,0"], "--sprt"),
        ([*GO9, "--b", "uniform", "--sprt", "0,10,0.5,0.6"], "--sprt"),
        ([*GO9, "--b", "uniform", "--sprt", "zero,ten"], "--sprt"),
        (
            ["evaluate", "--game", "go7", "--a", "weights/go9.onnx", "--b", "uniform", "--sprt", "0,10"],
            "--sprt",
        ),
        ([*GO9, "--b", "uniform", "--openings", "{tmp}/missing.txt"], "--openings"),
        ([*GO9, "--b", "uniform", "--openings", "trainer/evaluate/openings/shogi.txt"], "--openings"),
        ([*GO9, "--b", "uniform", "--record", "{tmp}/no/such/games.sgf"], "--record"),
        ([*GO9, "--engine", "{tmp}/no-such-engine"], "--engine"),
        ([*GO9, "--engine", "gnugo", "--option", "Threads"], "--option"),
        (["probe", "--out", "{tmp}/run", "--mates", "-1"], "--mates"),
    ],
)
def test_a_bad_argument_is_one_error_line_and_exit_status_2(
    args: list[str], option: str, tmp_path: Path
) -> None:
    """click's answer to a bad value: a usage hint and one ``Error: Invalid value for '--x': ...`` line
    naming the option, exit status 2, no traceback; checked before any game is played or file written."""
    (tmp_path / "run").mkdir()
    done = _tabula_train([a.replace("{tmp}", str(tmp_path)) for a in args])
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert done.returncode == 2, done.stderr
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}': "), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status", "--out", "{tmp}/corrupt"], "cannot read the run's settings in config.toml"),
        (
            ["run", "--out", "{tmp}/corrupt", "--minutes", "1"],
            "cannot read the run's settings in config.toml",
        ),
        (["evaluate", "--out", "{tmp}/corrupt"], "cannot read the run's settings in config.toml"),
        (["probe", "--out", "{tmp}/empty"], "is not a run folder (no config.toml)"),
        (["evaluate", "--out", "{tmp}/empty"], "is not a run folder (no config.toml)"),
        (["status", "--out", "{tmp}/missing"], "does not exist"),
        (["run", "--out", "{tmp}/chess", "--game", "go9"], "is a chess run; --game go9"),
    ],
)
def test_a_run_folder_that_cannot_be_used_is_one_error_line(
    args: list[str], message: str, tmp_path: Path
) -> None:
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "config.toml").write_text("[game\nname = \n")
    (tmp_path / "empty").mkdir()
    _recorded_run(tmp_path / "chess")
    done = _tabula_train([a.replace("{tmp}", str(tmp_path)) for a in args])
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert done.returncode in (1, 2), done.stderr
    assert len(errors) == 1 and message in errors[0], done.stderr
    assert "Traceback" not in done.stderr
