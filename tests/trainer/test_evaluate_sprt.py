"""``tabula-train evaluate --sprt``: a much stronger network is accepted as stronger early (H1), a
network against itself never is; both over the shipped Go 9x9 suite, a few visits a move."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from trainer.cli import main as tabula_train

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def random_go9(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained 1-block, 8-channel Go 9x9 network."""
    out = tmp_path_factory.mktemp("nets") / "random.onnx"
    result = CliRunner().invoke(
        tabula_train, ["export", "--game", "go9", "--preset", "b1c8", "--random", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def _evaluate(a: Path, b: Path, games: int, record: Path | None = None) -> str:
    args = ["evaluate", "--game", "go9", "--a", str(a), "--b", str(b), "--sprt", "0,10"]
    args += ["--games", str(games), "--simulations", "2", "--parallel", "64"]
    if record is not None:
        args += ["--record", str(record)]
    result = CliRunner().invoke(tabula_train, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_a_much_stronger_network_is_accepted_early(random_go9: Path, tmp_path: Path) -> None:
    record = tmp_path / "games.sgf"
    output = _evaluate(REPO / "weights" / "go9.onnx", random_go9, 400, record)
    lines = output.splitlines()
    assert lines[0].startswith("SPRT: nElo [0, 10], alpha 0.05, beta 0.05, LLR bounds [-2.94, 2.94]")
    verdict = re.fullmatch(r"SPRT: H1 accepted after (\d+) pairs \(LLR ([\d.]+) >= 2\.94\)", lines[-1])
    assert verdict, output
    pairs = int(verdict.group(1))
    assert pairs < 200  # stopped early: --games 400 allowed 200 pairs
    progress = [line for line in lines if line.startswith("  pairs ")]
    assert len(progress) == pairs and float(verdict.group(2)) >= 2.94
    played = int(re.search(r"\((\d+) games, 2 visits, openings of the shipped suite", output).group(1))
    assert 2 * pairs <= played < 2 * pairs + 64  # the games still going when it stopped may have ended
    sgf = record.read_text()
    assert sgf.count("(;") == played and ";B[ee];W[cf]" in sgf  # the suite's first opening, E5 C4


@pytest.mark.slow
def test_a_network_against_itself_is_not_accepted_as_stronger(random_go9: Path) -> None:
    output = _evaluate(random_go9, random_go9, 40)
    verdict = output.splitlines()[-1]
    assert verdict.startswith(("SPRT: H0 accepted", "SPRT: inconclusive after 20 pairs")), output
    assert "H1 accepted" not in output
