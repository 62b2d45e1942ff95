"""``benchmarks/tune.py``: the SPSA arithmetic, the log, the opening rotation, the command line, and one
real iteration on Go through gogui-twogtp."""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import ladder, tune
from tests.process import find_program

ROOT = Path(__file__).resolve().parent.parent
CPUCT, FPU = tune.PARAMS["CPuct"], tune.PARAMS["FpuReduction"]


# ---- SPSA arithmetic --------------------------------------------------------------------------------


def test_gain_schedule_values() -> None:
    gains = tune.default_gains(CPUCT, 50)  # range 0.25 ... 5: c = 0.05 * 4.75, A = 50 / 10
    assert gains.c == pytest.approx(0.2375) and gains.big_a == pytest.approx(5.0)
    assert gains.a == pytest.approx(2 * 0.2375**2 * 6**0.602)  # 0.33174
    assert gains.a_k(0) == pytest.approx(0.1128125)  # 2 c^2: a whole-match win moves theta by c
    assert gains.a_k(0) / (2 * gains.c_k(0)) == pytest.approx(gains.c)
    assert gains.a_k(9) == pytest.approx(0.0649826, rel=1e-5)  # a / 15^0.602
    assert gains.c_k(9) == pytest.approx(0.1882191, rel=1e-5)  # c / 10^0.101
    scaled = tune.default_gains(FPU, 10, c_fraction=0.1, a_scale=0.5)
    assert scaled.c == pytest.approx(0.15) and scaled.big_a == pytest.approx(1.0)
    assert scaled.a_k(0) == pytest.approx(0.5 * 2 * 0.15**2)


def test_perturbation_is_signs_drawn_from_the_seed() -> None:
    draws = [tune.perturbation(random.Random(f"1:{k}"), 3) for k in range(40)]
    assert all(d in (-1, 1) for draw in draws for d in draw)
    assert {d for draw in draws for d in draw} == {-1, 1}
    assert tune.perturbation(random.Random("1:7"), 3) == draws[7]  # an iteration played again draws the same


def test_clip_and_perturbed_keep_the_range() -> None:
    assert tune.clip(7.0, CPUCT) == 5.0 and tune.clip(-1.0, CPUCT) == 0.25 and tune.clip(1.5, CPUCT) == 1.5
    plus, minus = tune.perturbed([1.25, 0.05], [1, 1], [0.2, 0.1], [CPUCT, FPU])
    assert plus == pytest.approx([1.45, 0.15]) and minus == pytest.approx([1.05, 0.0])  # -0.05 clipped


def test_spsa_update_arithmetic() -> None:
    # 1.25 + 0.1 * 0.5 / (2 * 0.2 * 1) = 1.375;  0.25 + 0.02 * 0.5 / (2 * 0.05 * -1) = 0.15
    after = tune.spsa_update([1.25, 0.25], [1, -1], 0.5, [0.1, 0.02], [0.2, 0.05], [CPUCT, FPU])
    assert after == pytest.approx([1.375, 0.15])
    # r = -1 with delta -1 moves up: 1.25 + 0.1 * -1 / (2 * 0.2 * -1) = 1.5
    assert tune.spsa_update([1.25], [-1], -1.0, [0.1], [0.2], [CPUCT]) == pytest.approx([1.5])
    assert tune.spsa_update([4.9], [1], 1.0, [1.0], [0.2], [CPUCT]) == [5.0]  # 4.9 + 2.5, clipped
    assert tune.spsa_update([1.25], [1], 0.0, [0.1], [0.2], [CPUCT]) == [1.25]


def test_score_difference() -> None:
    assert tune.score_difference(1.5, 2) == pytest.approx(0.5)
    assert tune.score_difference(2.0, 2) == 1.0 and tune.score_difference(0.0, 4) == -1.0
    assert tune.score_difference(2.0, 4) == 0.0 and tune.score_difference(0.0, 0) == 0.0


def test_engine_flags_and_options_round_to_the_options_units() -> None:
    values = {"CPuct": 1.4875, "CPuctBase": 19652.4, "FpuReduction": 0.325}
    assert tune.engine_flags(values) == [
        "--cpuct",
        "1.49",
        "--cpuct-base",
        "19652",
        "--fpu-reduction",
        "0.32",
    ]
    assert tune.engine_options(values) == [("CPuct", "149"), ("CPuctBase", "19652"), ("FpuReduction", "32")]


# ---- the log ----------------------------------------------------------------------------------------


def _record(k: int, theta: float = 1.25, **settings: Any) -> dict[str, Any]:
    return {"k": k, "theta_after": {"CPuct": theta}, "settings": {**_settings(), **settings}}


def _settings(**changes: Any) -> dict[str, Any]:
    base = {
        "game": "go9",
        "seed": "1",
        "c_fraction": 0.05,
        "a_scale": 1.0,
        "games_per_iteration": 2,
        "schedule_iterations": 50,
    }
    return {**base, **changes}


def test_read_log_ignores_a_cut_last_line(tmp_path: Path) -> None:
    log = tmp_path / "tune.jsonl"
    assert tune.read_log(log) == []
    whole = json.dumps(_record(0, 1.3))
    log.write_text(whole + "\n" + whole.replace('"k": 0', '"k": 1')[:25], encoding="utf-8")
    assert [r["k"] for r in tune.read_log(log)] == [0]


def test_append_record_ends_a_cut_line_first(tmp_path: Path) -> None:
    log = tmp_path / "sub" / "tune.jsonl"
    tune.append_record(log, _record(0, 1.3))
    with open(log, "a", encoding="utf-8") as f:
        f.write('{"k": 1, "theta_af')  # a kill mid-write
    tune.append_record(log, _record(1, 1.4))
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and lines[1] == '{"k": 1, "theta_af'
    assert [(r["k"], r["theta_after"]["CPuct"]) for r in tune.read_log(log)] == [(0, 1.3), (1, 1.4)]
    assert log.read_text(encoding="utf-8").endswith("\n")


def test_resume_theta_takes_the_last_record_and_refuses_other_parameters() -> None:
    assert tune.resume_theta([], ["CPuct"], [1.25]) == [1.25]
    assert tune.resume_theta([_record(0, 1.3), _record(1, 1.4)], ["CPuct"], [1.25]) == [1.4]
    with pytest.raises(SystemExit, match="the log tunes CPuct, not CPuct, FpuReduction"):
        tune.resume_theta([_record(0)], ["CPuct", "FpuReduction"], [1.25, 0.25])
    with pytest.raises(SystemExit, match=r"not 0 \.\.\. 1 in order"):
        tune.resume_theta([_record(0), _record(2)], ["CPuct"], [1.25])


def test_resume_settings_refuses_another_run_and_keeps_the_logs_schedule() -> None:
    records = [_record(0, schedule_iterations=20)]
    assert tune.resume_settings([], _settings(), playing=True) == 50
    assert tune.resume_settings(records, _settings(), playing=True) == 20  # A stays the first run's
    with pytest.raises(SystemExit, match="run with --seed 1: resume with the same"):
        tune.resume_settings(records, _settings(seed="2"), playing=True)
    assert tune.resume_settings(records, _settings(seed="2"), playing=False) == 20  # only confirming
    with pytest.raises(SystemExit, match="the log tunes go9, not chess"):
        tune.resume_settings(records, _settings(game="chess"), playing=False)


def test_parse_params() -> None:
    assert [p.name for p in tune.parse_params("cpuct, FpuReduction")] == ["CPuct", "FpuReduction"]
    assert [p.name for p in tune.parse_params("FPUREDUCTIONROOT,CPuctBase")] == [
        "FpuReductionRoot",
        "CPuctBase",
    ]
    with pytest.raises(SystemExit, match="unknown parameter Cpu; tunable: CPuct, CPuctBase"):
        tune.parse_params("Cpu")
    with pytest.raises(SystemExit, match="names CPuct twice"):
        tune.parse_params("CPuct,cpuct")
    with pytest.raises(SystemExit, match="names no parameter"):
        tune.parse_params(" , ")


# ---- openings -----------------------------------------------------------------------------------------


def test_opening_start_moves_by_the_pairs_of_an_iteration() -> None:
    assert [tune.opening_start(k, 2, 31) for k in (0, 1, 2, 30, 31, 32)] == [0, 1, 2, 30, 0, 1]
    assert [tune.opening_start(k, 4, 12) for k in range(8)] == [0, 2, 4, 6, 8, 10, 0, 2]
    assert [tune.opening_start(k, 6, 14) for k in range(4)] == [0, 3, 6, 9]
    assert tune.rotated([1, 2, 3, 4], 5) == [2, 3, 4, 1] and tune.rotated([], 3) == []


@pytest.mark.parametrize("game", ["chess", "shogi", "go9"])
def test_each_iteration_writes_the_suite_rotated_to_its_start(game: str, tmp_path: Path) -> None:
    size = tune.suite_size(game)
    assert size >= 12
    suite_chess = ladder.pgn_opening_names(ladder.OPENINGS / "chess.pgn")
    suite_shogi = [" ".join(line.split()[2:]) for line in tune.shogi_lines()]
    suite_go = sorted(p.stem for p in (ladder.OPENINGS / "go9").glob("*.sgf"))
    suite = {"chess": suite_chess, "shogi": suite_shogi, "go9": suite_go}[game]
    assert len(suite) == size
    seen = []
    for k in range(3):
        folder = tmp_path / f"iter{k}"
        folder.mkdir()
        start = tune.opening_start(k, 4, size)
        book = tune.write_book(game, folder, start)
        assert book.names == suite[start:] + suite[:start]
        seen.append(tune.match_openings(book, 4))
        if game == "chess":  # cutechess-cli order=sequential: the file's order
            assert ladder.pgn_opening_names(book.path) == book.names
        elif game == "shogi":  # what cshogi.cli plays after its --opening-seed 1 shuffle
            lines = book.path.read_text(encoding="utf-8").splitlines()
            assert sorted(lines) == sorted(tune.shogi_lines())
            state = random.getstate()
            random.seed(1)
            random.shuffle(lines)  # cshogi.cli: random.seed(opening_seed); random.shuffle(list)
            random.setstate(state)
            assert [" ".join(line.split()[2:]) for line in lines] == book.names
        else:  # gogui-twogtp: the folder's SGF files sorted by name
            files = sorted(book.path.glob("*.sgf"))
            assert [re.sub(r"^\d{3}-", "", p.stem) for p in files] == book.names
    assert seen == [suite[0:2], suite[2:4], suite[4:6]]  # a different pair of openings every iteration


def test_pgn_games_splits_the_chess_suite() -> None:
    games = tune.pgn_games((ladder.OPENINGS / "chess.pgn").read_text(encoding="utf-8"))
    assert len(games) == 31 and all(g.startswith('[Event "') and g.endswith("*") for g in games)
    assert '[Opening "Ruy Lopez, Berlin Defence"]' in games[1]


# ---- the loop, with the match played by a stand-in ---------------------------------------------------


def _args(tmp_path: Path, *extra: str) -> argparse.Namespace:
    args = tune.build_parser().parse_args(["go9", "--log", str(tmp_path / "t.jsonl"), *extra])
    tune.check_args(args)
    return args


def _match(tmp_path: Path) -> tune.Match:
    return tune.Match("go9", ladder.Settings(games=2, tabula=["tabula"], out=tmp_path))


def test_tune_plays_a_new_opening_pair_each_iteration_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[dict[str, float], dict[str, float], int]] = []

    def fake_play(
        match: tune.Match,
        first: dict[str, float],
        second: dict[str, float],
        folder: Path,
        label: str,
        start: int,
    ) -> tuple[list[ladder.Game], tune.Book]:
        calls.append((first, second, start))
        games = [ladder.Game(1, True, 1.0, "win"), ladder.Game(2, False, 0.5, "draw")]
        return games, tune.Book(folder, [f"opening{start}", f"opening{start + 1}"])

    monkeypatch.setattr(tune, "play", fake_play)
    log = tmp_path / "t.jsonl"
    args = _args(tmp_path, "--iterations", "2")
    theta = tune.tune(args, _match(tmp_path), [CPUCT], log)
    assert [c[2] for c in calls] == [0, 1]
    records = tune.read_log(log)
    gains = tune.default_gains(CPUCT, 2)
    first = records[0]
    assert (
        first["r"] == pytest.approx(0.5)
        and first["points"] == [1.0, 0.5]
        and first["openings"] == ["opening0"]
    )
    d = first["delta"]["CPuct"]
    assert first["plus"]["CPuct"] == pytest.approx(1.25 + gains.c_k(0) * d)
    assert first["theta_after"]["CPuct"] == pytest.approx(1.25 + gains.a_k(0) * 0.5 / (2 * gains.c_k(0) * d))
    assert theta == [pytest.approx(records[1]["theta_after"]["CPuct"])]
    more = _args(tmp_path, "--iterations", "4")
    tune.tune(more, _match(tmp_path), [CPUCT], log)  # resumes at iteration 2, gains of the 2-iteration run
    assert [c[2] for c in calls] == [0, 1, 2, 3] and [r["k"] for r in tune.read_log(log)] == [0, 1, 2, 3]
    assert calls[2][0]["CPuct"] == pytest.approx(
        tune.clip(
            records[1]["theta_after"]["CPuct"] + gains.c_k(2) * tune.read_log(log)[2]["delta"]["CPuct"], CPUCT
        )
    )
    with pytest.raises(SystemExit, match="run with --seed 1"):
        tune.tune(_args(tmp_path, "--iterations", "5", "--seed", "9"), _match(tmp_path), [CPUCT], log)


def test_go_errors_are_left_out_of_r(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_play(*a: Any) -> tuple[list[ladder.Game], tune.Book]:
        error = ladder.Game(
            1, True, 0.0, "error: Tabula:0.1.0 played invalid move", fault="error", faulty="Tabula"
        )
        return [error, ladder.Game(2, False, 1.0, "win")], tune.Book(tmp_path, ["x"])

    monkeypatch.setattr(tune, "play", fake_play)
    tune.tune(_args(tmp_path, "--iterations", "1"), _match(tmp_path), [CPUCT], tmp_path / "t.jsonl")
    (record,) = tune.read_log(tmp_path / "t.jsonl")
    assert (
        record["points"] == [1.0] and record["r"] == 1.0 and record["dropped"][0].startswith("game 1: error")
    )
    chess_error = ladder.Game(1, True, 0.0, "time forfeit", fault="time", faulty="Tabula")
    assert not tune.unscored("chess", chess_error) and not tune.unscored("go9", chess_error)


def test_confirm_walks_the_openings_a_pair_at_a_time_with_sprt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    starts: list[int] = []

    def fake_play(
        match: tune.Match,
        first: dict[str, float],
        second: dict[str, float],
        folder: Path,
        label: str,
        start: int,
    ) -> tuple[list[ladder.Game], tune.Book]:
        starts.append(start)
        assert match.settings.games == 2 and second == {"CPuct": 1.25}
        return [ladder.Game(1, True, 1.0, "win"), ladder.Game(2, False, 1.0, "win")], tune.Book(folder, [])

    monkeypatch.setattr(tune, "play", fake_play)
    args = _args(tmp_path, "--iterations", "0", "--confirm", "40", "--sprt", "0,50")
    tune.confirm(args, _match(tmp_path), [CPUCT], [1.5], tmp_path / "t.jsonl")
    out = capsys.readouterr().out
    assert 12 < len(starts) < 20  # stopped early
    assert starts == [i % 12 for i in range(len(starts))]  # a new pair each time, round the 12 openings
    assert "SPRT: H1 accepted" in out and f"W/D/L {2 * len(starts)}/0/0" in out


# ---- the command line ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--games-per-iteration", "3"], "--games-per-iteration must be even"),
        (["--iterations", "-1"], "--iterations must not be negative"),
        (["--minutes", "0.5"], "--minutes must be a whole number"),
        (["--sprt", "0,10"], "--sprt needs --confirm"),
        (["--confirm", "4", "--sprt", "10,0"], "--sprt: elo0 must be below elo1"),
        (["--confirm", "3"], "--confirm must be an even number"),
        (["--tc", "fast"], "--tc 'fast' is not a cutechess time control"),
        (["--c-fraction", "0"], r"--c-fraction must be in \(0, 0.5\]"),
        (["--weights", "/no/such.onnx"], "--weights /no/such.onnx: no such file"),
        (["--params", "Nope"], "unknown parameter Nope"),
        (["--concurrency", "2"], "--concurrency must be at least 1, and above 1 only in chess"),
    ],
)
def test_bad_values_give_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    with pytest.raises(SystemExit, match=message) as exit_info:
        tune.main(["go9", "--log", str(tmp_path / "t.jsonl"), *extra])
    assert "\n" not in str(exit_info.value)
    assert not (tmp_path / "t.jsonl").exists()


# ---- end to end ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_go_iteration_is_played_by_gogui_twogtp_and_resumed(tmp_path: Path) -> None:
    """Two SPSA iterations on 9x9, the second from a resumed log, through gogui-twogtp with GNU Go as the
    referee (Tabula capped at 32 playouts a move so that a game takes seconds)."""
    if ladder.find_tool("gogui-twogtp.jar") is None or shutil.which("java") is None:
        pytest.skip("gogui-twogtp.jar (and java) not in ../shared/tools or on the PATH")
    if find_program("gnugo") is None:
        pytest.skip("gnugo not installed (the referee)")
    log = tmp_path / "go9.jsonl"
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "tune.py"),
        "go9",
        "--params",
        "CPuct",
        "--minutes",
        "1",
    ]
    command += ["--tabula-arg=--weakening", "--tabula-arg=32", "--log", str(log)]
    outs = []
    for iterations in ("1", "2"):
        run = subprocess.run(
            [*command, "--iterations", iterations], capture_output=True, text=True, timeout=150, cwd=ROOT
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        outs.append(run.stdout)
    assert "resuming after iteration 0" in outs[1] and "iteration 0:" not in outs[1]
    records = tune.read_log(log)
    assert [r["k"] for r in records] == [0, 1]
    for record, opening in zip(records, ["01-tengen-c4", "02-tengen-d3"], strict=True):
        assert len(record["points"]) == 2 and record["openings"] == [opening]
        assert -1.0 <= record["r"] <= 1.0
        folder = Path(record["games_dir"])
        dat = (folder / "games.dat").read_text(encoding="utf-8")
        plus, minus = record["plus"]["CPuct"], record["minus"]["CPuct"]
        assert f"--cpuct {CPUCT.played(plus):g} gtp" in dat and f"--cpuct {CPUCT.played(minus):g} gtp" in dat
        assert len(ladder.parse_twogtp_dat(dat)) == 2
        for n in (0, 1):
            sgf = (folder / f"games-{n}.sgf").read_text(encoding="utf-8")
            assert "AP[gogui-twogtp:" in sgf and f"Opening: {folder}/openings/" in sgf
            assert re.search(rf"Opening: \S+/\d{{3}}-{opening}\.sgf", sgf)
        assert f"iteration {record['k']}: plus +" in outs[record["k"]]
