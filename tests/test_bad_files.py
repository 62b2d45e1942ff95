"""Bad files get one clear message and nothing is lost (issue 55): each bad file below, handed to the
real program where a user hands it over (the engine's ``WeightsFile`` over UCI / USI, ``--weights``,
GTP ``loadsgf``; the trainer's ``run`` resume of a run folder, ``--config``, ``evaluate --openings``),
gets one line that names the file and the fault, never a traceback; the engine plays on with what it
had (its last good network, its position), and a trainer run refuses to start with every file of its
folder unchanged."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.process import EngineProcess, tabula_command

ROOT = Path(__file__).resolve().parent.parent
WEIGHTS = ROOT / "weights"
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))

#: A tiny real 5x5 Go run (two training steps): the folder each run-folder case damages a copy of.
TINY_RUN = [
    "run", "--game", "go", "--size", "5", "--preset", "tiny", "--workers", "0", "--steps", "2",
    "--no-progress",
    *[
        x
        for item in (
            "selfplay.games_in_parallel=4", "selfplay.simulations=2", "selfplay.leaves_per_tree=2",
            "selfplay.positions_per_shard=20", "replay.min_positions=20", "train.batch_size=8",
            "train.interval_steps=1", "train.steps_per_sample=1", "evaluate.every=0", "game.max_plies=10",
        )
        for x in ("--set", item)
    ],
]  # fmt: skip


def _cut(source: Path, to: Path, fraction: float = 0.5) -> Path:
    """``to``: the first ``fraction`` of ``source``'s bytes (a copy or download cut short)."""
    data = source.read_bytes()
    to.write_bytes(data[: int(len(data) * fraction)])
    return to


def _random(to: Path, size: int = 4096) -> Path:
    to.write_bytes(os.urandom(size))
    return to


def _text(to: Path, text: str) -> Path:
    to.write_text(text, encoding="utf-8")
    return to


def _replaced(path: Path, old: str, new: str) -> Path:
    """``path`` with its first ``old`` replaced by ``new``."""
    text = path.read_text(encoding="utf-8")
    assert old in text
    return _text(path, text.replace(old, new, 1))


def _broken_graph(source: Path, to: Path) -> Path:
    """A network whose header and metadata read but whose graph is zeros (only onnxruntime sees it)."""
    data = bytearray(source.read_bytes())
    data[64 : len(data) // 2] = bytes(len(data) // 2 - 64)
    to.write_bytes(bytes(data))
    return to


@dataclasses.dataclass(frozen=True)
class Case:
    """One bad file: ``make(tmp)`` writes it (in a run folder copy at ``tmp / "run"`` for the run
    cases) and returns its path; ``entry`` says where it is handed over; ``fault`` is part of the
    one line the program must print about it."""

    name: str
    entry: str
    make: Callable[[Path], Path]
    fault: str


CASES = [
    # the engine: a bad WeightsFile after a good one (UCI, USI), a bad --weights, a bad loadsgf
    Case("uci-onnx-cut", "uci", lambda t: _cut(WEIGHTS / "chess.onnx", t / "cut.onnx"), "truncated"),
    Case("uci-onnx-random", "uci", lambda t: _random(t / "random.onnx"), "not a valid ONNX file"),
    Case(
        "uci-onnx-graph",
        "uci",
        lambda t: _broken_graph(WEIGHTS / "chess.onnx", t / "graph.onnx"),
        "cannot use network",
    ),
    Case("usi-onnx-cut", "usi", lambda t: _cut(WEIGHTS / "shogi.onnx", t / "cut.onnx", 0.9), "truncated"),
    Case(
        "weights-flag-cut", "weights-flag", lambda t: _cut(WEIGHTS / "go9.onnx", t / "go9.onnx"), "truncated"
    ),
    Case("weights-flag-random", "weights-flag", lambda t: _random(t / "net.onnx"), "not a valid ONNX file"),
    Case("sgf-unbalanced", "loadsgf", lambda t: _text(t / "a.sgf", "(;GM[1]SZ[9];B[ee];W[cc]"), "unbalanced"),
    Case("sgf-coordinates", "loadsgf", lambda t: _text(t / "b.sgf", "(;GM[1]SZ[9];B[ee];W[zz])"), "'zz'"),
    Case(
        "sgf-illegal", "loadsgf", lambda t: _text(t / "d.sgf", "(;GM[1]SZ[9];B[ee];W[ee])"), "illegal move E5"
    ),
    Case("sgf-size", "loadsgf", lambda t: _text(t / "c.sgf", "(;GM[1]SZ[13];B[ee])"), "13x13"),
    # the trainer: a run folder's files on resume, --config, opening suites
    Case(
        "checkpoint-cut",
        "resume",
        lambda t: _cut(t / "run/checkpoints/ckpt-00000002.pt", t / "run/checkpoints/ckpt-00000002.pt"),
        "cannot read the checkpoint",
    ),
    Case(
        "shard-cut",
        "resume",
        lambda t: _cut(next((t / "run/shards").glob("*.npz")), next((t / "run/shards").glob("*.npz")), 0.7),
        "not a readable shard",
    ),
    Case(
        "config-syntax", "resume", lambda t: _text(t / "run/config.toml", "[game\nname = \n"), "config.toml"
    ),
    Case(
        "config-type",
        "resume",
        lambda t: _replaced(t / "run/config.toml", "simulations = 2\n", 'simulations = "many"\n'),
        "selfplay.simulations: expected an integer",
    ),
    Case(
        "config-flag-syntax",
        "config-flag",
        lambda t: _text(t / "s.toml", "[train]\nbatch_size = \n"),
        "not TOML",
    ),
    Case(
        "config-flag-type",
        "config-flag",
        lambda t: _text(t / "s.toml", '[train]\nbatch_size = "big"\n'),
        "train.batch_size: expected an integer",
    ),
    Case(
        "openings-pgn",
        "openings-chess",
        lambda t: _text(t / "suite.pgn", '[Event "a"]\n\n1. e4 e5 *\n\n[Event "b"]\n\n1. e4 e5 2. Qxh7 *\n'),
        "game 2: illegal san: 'Qxh7'",
    ),
    Case(
        "openings-fen",
        "openings-chess",
        lambda t: _text(
            t / "suite.txt", "startpos moves e2e4\nrnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w\n"
        ),
        "suite.txt:2: malformed FEN",
    ),
    Case(
        "openings-sfen",
        "openings-shogi",
        lambda t: _text(t / "suite.txt", "startpos moves 7g7f\nsfen lnsgkgsnl/9 b - 1 moves 7g7f\n"),
        "suite.txt:2: SFEN board needs 9 ranks",
    ),
    Case(
        "openings-csa",
        "openings-shogi",
        lambda t: _text(t / "suite.csa", "V2.2\nPI\n+\n+7776FU\n-3334FU\n/\nPI\n+\n+2726FU\n+8384FU\n"),
        "suite.csa:10: illegal or malformed CSA move '+8384FU'",
    ),
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder made by a real two-step run of the trainer (checkpoints, a shard, networks)."""
    out = tmp_path_factory.mktemp("tiny") / "run"
    done = _tabula_train([*TINY_RUN, "--out", str(out)])
    assert done.returncode == 0, done.stderr
    return out


def _tabula_train(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainer.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=cwd,
    )


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _naming(lines: list[str], path: Path) -> list[str]:
    """The lines that name ``path`` (its full path or its file name)."""
    return [line for line in lines if str(path) in line or path.name in line]


def _one_error(stderr: str, path: Path, fault: str) -> None:
    """Exactly one ``Error:`` line, naming the file and the fault, beside click's usage hint only."""
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, stderr
    assert _naming(errors, path) and fault in errors[0], stderr
    others = [x for x in stderr.splitlines() if x.strip() and not x.startswith(("Usage:", "Try ", "Error:"))]
    assert not others, stderr  # nothing else: no traceback, no library's own log line


def _check_engine(protocol: str, bad: Path, fault: str) -> None:
    """A good network first, then the bad file: one ``info string`` at ``isready`` naming the file and
    the fault and keeping the good network, which then plays."""
    engine = EngineProcess([protocol], command=tabula_command(), env=ENV)
    ok = "uciok" if protocol == "uci" else "usiok"
    try:
        engine.send(protocol)
        engine.read_until(lambda line: line == ok, timeout=35)
        engine.send("isready")
        good = [
            x for x in engine.read_until(lambda x: x == "readyok", 60) if x.startswith("info string network")
        ]
        assert len(good) == 1, good
        engine.send(f"setoption name WeightsFile value {bad}")
        engine.send("isready")
        lines = engine.read_until(lambda line: line == "readyok", timeout=60)
        named = _naming(lines, bad)
        assert len(named) == 1 and fault in named[0] and named[0].startswith("info string cannot use"), lines
        kept = Path(named[0].split("; keeping network ")[-1])  # the file playing (its int8 copy on a CPU)
        assert kept.parent == WEIGHTS and kept.name.startswith("chess" if protocol == "uci" else "shogi"), (
            named
        )
        engine.send("go nodes 32")
        reply = engine.read_until(lambda line: line.startswith("bestmove"), timeout=60)
        assert reply[-1].split()[1] not in ("(none)", "resign"), reply
        engine.send("isready")  # the same network: nothing more to say
        assert not _naming(engine.read_until(lambda line: line == "readyok", 30), bad)
    finally:
        engine.close()
    assert "Traceback" not in "".join(engine.stderr)


def _check_loadsgf(bad: Path, fault: str) -> None:
    """``loadsgf`` of the bad file: one ``?`` answer naming the file and the fault; the game it had is
    kept (E5 is still taken) and ``genmove`` plays."""
    engine = EngineProcess(["gtp", "--boardsize", "9"], command=tabula_command(), env=ENV)

    def ask(command: str) -> list[str]:
        engine.send(command)
        return [x for x in engine.read_until(lambda line: line == "", timeout=60) if x]

    try:
        assert ask("play b E5") == ["="]
        answer = ask(f"loadsgf {bad}")
        assert len(answer) == 1 and answer[0].startswith("? ") and _naming(answer, bad), answer
        assert fault in answer[0], answer
        assert ask("play w E5")[0].startswith("?")  # the position before the loadsgf is kept
        assert ask("time_settings 0 1 1") == ["="]  # (a second a move: the test stays short)
        move = ask("genmove w")
        assert len(move) == 1 and move[0].startswith("= ") and move[0] != "= E5", move
    finally:
        engine.close()
    stderr = "".join(engine.stderr)
    assert "Traceback" not in stderr and not _naming(stderr.splitlines(), bad), stderr


@pytest.mark.parametrize(
    "case",
    # (the resume cases share a real training run made once, some 20 s on a busy 2-core machine)
    [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.entry == "resume" else []) for c in CASES],
)
def test_a_bad_file_gets_one_clear_line_and_nothing_is_lost(
    case: Case, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if case.entry == "resume":
        shutil.copytree(request.getfixturevalue("tiny_run"), tmp_path / "run")
    bad = case.make(tmp_path)
    if case.entry in ("uci", "usi"):
        _check_engine(case.entry, bad, case.fault)
    elif case.entry == "loadsgf":
        _check_loadsgf(bad, case.fault)
    elif case.entry == "weights-flag":
        done = subprocess.run(
            [*tabula_command(), "--weights", str(bad), "gtp"],
            input="quit\n",
            capture_output=True,
            text=True,
            timeout=60,
            env=ENV,
        )
        assert done.returncode == 2 and done.stdout == "", done
        _one_error(done.stderr, bad, case.fault)
    elif case.entry == "resume":
        folder = tmp_path / "run"
        before = _hashes(folder)
        done = _tabula_train(["run", "--out", str(folder), "--steps", "4", "--workers", "0", "--no-progress"])
        assert done.returncode == 1, done
        _one_error(done.stderr, bad, case.fault)
        assert _hashes(folder) == before  # nothing written, nothing removed
    elif case.entry == "config-flag":
        folder = tmp_path / "new"
        done = _tabula_train(
            ["run", "--game", "go5", "--out", str(folder), "--config", str(bad), "--steps", "1"]
        )
        assert done.returncode == 2, done
        _one_error(done.stderr, bad, case.fault)
        assert not folder.exists()
    else:
        game = case.entry.removeprefix("openings-")
        net = WEIGHTS / f"{game}.onnx"
        args = ["evaluate", "--game", game, "--a", str(net), "--b", str(net), "--games", "2"]
        done = _tabula_train([*args, "--openings", str(bad)])
        assert done.returncode == 2 and done.stdout == "", done
        _one_error(done.stderr, bad, case.fault)
