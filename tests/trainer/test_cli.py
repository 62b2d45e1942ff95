"""The settings ``tabula-train`` builds for a run folder: recorded ones on resume, then files, ``--set``
and the dedicated flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.cli import RunOptions
from trainer.config import build_config, config_to_toml
from trainer.runfolder import RunFolder


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
