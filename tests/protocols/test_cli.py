"""The `tabula` command: protocol auto-detection, flags before or after the subcommand, info, bench."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.process import tabula_command


def test_first_line_usi_selects_usi(engine_process) -> None:
    engine = engine_process()
    engine.send("usi")
    assert engine.read_until(lambda line: line == "usiok", 30)[0] == "id name Tabula"
    engine.send("isready")
    engine.read_until(lambda line: line == "readyok", 30)
    assert engine.close() == 0


def test_any_other_first_line_is_gtp_and_is_answered(engine_process) -> None:
    engine = engine_process()
    engine.send("protocol_version")
    assert engine.read_until(lambda line: line.startswith("="), 30)[-1] == "= 2"
    engine.send("1 name")
    assert engine.read_until(lambda line: line.startswith("=1"), 30)[-1] == "=1 Tabula"
    assert engine.close() == 0


def test_blank_lines_and_xboard_before_the_protocol_word(engine_process) -> None:
    engine = engine_process()
    for line in ("", "xboard", "   ", "usi"):
        engine.send(line)
    engine.read_until(lambda line: line == "usiok", 30)
    assert engine.close() == 0


def test_eof_before_any_line_exits_cleanly() -> None:
    proc = subprocess.run(tabula_command(), input=b"", capture_output=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout == b""


def test_flags_after_the_subcommand(engine_process) -> None:
    engine = engine_process("uci", "--weights", "weights/shogi.onnx")  # a network, not for chess
    engine.send("uci")
    engine.read_until(lambda line: line == "uciok", 30)
    engine.send("isready")
    lines = engine.read_until(lambda line: line == "readyok", 30)
    assert any("uniform" in line and "shogi.onnx" in line for line in lines), lines
    assert engine.close() == 0


def test_info_prints_the_network_metadata() -> None:
    proc = subprocess.run(
        [*tabula_command(), "info", "weights/go9.onnx"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "go" in proc.stdout and "b6c64" in proc.stdout and "17" in proc.stdout


def test_bench_rules_prints_figures() -> None:
    proc = subprocess.run(
        [*tabula_command(), "bench", "rules", "--games", "go9", "--seconds", "0.2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.strip().splitlines()[-2:]
    assert header.split()[:3] == ["game", "plies/s", "encodes/s"]
    assert row.split()[0] == "go9" and float(row.split()[1].replace(",", "")) > 0


@pytest.mark.parametrize("repeat", ["1", "3"])
def test_bench_search_prints_figures(repeat: str) -> None:
    command = ["bench", "--games", "go9", "--nodes", "50", "--evaluator", "uniform", "--repeat", repeat]
    proc = subprocess.run([*tabula_command(), *command], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = proc.stdout.strip().splitlines()[-1].split()
    # two fixed positions, 50 nodes each: the figures of each position's fastest search, not a sum
    assert row[0] == "go9" and int(row[1]) == 100
    assert float(row[3].replace(",", "")) > 0


@pytest.mark.parametrize("precision, network", [("auto", "go9.int8.onnx"), ("fp32", "go9.onnx")])
def test_bench_runs_the_copy_the_engine_would(precision: str, network: str) -> None:
    proc = subprocess.run(
        [
            *tabula_command(),
            "bench",
            "--games",
            "go9",
            "--nodes",
            "20",
            "--precision",
            precision,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    row = proc.stdout.strip().splitlines()[-1]
    if " on CPU," not in row:  # a GPU keeps float32 under auto
        network = "go9.onnx"
    assert row.split()[0] == "go9" and f" {network} (go9 " in row  # on the CPU: the int8 copy unless fp32
    # evaluations/s in the search over the same model's in onnxruntime's default session, and over the
    # best the machine gives it alone (the default session or one-thread calls side by side)
    evals, default, ratio, best, share = (float(row.split()[i].replace(",", "")) for i in range(4, 9))
    assert default > 0 and ratio == pytest.approx(evals / default, abs=0.01)
    assert best >= default and share == pytest.approx(evals / best, abs=0.01)


def test_backend_choices_are_the_engines() -> None:
    """The CLI lists the providers without importing the engine (startup time): the same list."""
    from engine.inference import BACKENDS
    from protocols.cli import BACKEND_CHOICES

    assert BACKEND_CHOICES == BACKENDS


@pytest.mark.parametrize(
    "command", [["bench", "--games", "nonsense"], ["bench", "rules", "--games", "chess,go99"]]
)
def test_bench_with_an_unknown_game_is_one_error_line_and_exit_status_2(command: list[str]) -> None:
    done = subprocess.run(tabula_command() + command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith("Error: Invalid value for '--games': "), done.stderr
    assert "Traceback" not in done.stderr


def test_quit_while_the_kernels_still_compile_ends_at_once(tmp_path: Path) -> None:
    """A first run (numba's cache empty): ``readyok`` comes after UCI's 3 s with the kernels still
    compiling, and ``quit`` then ends the process at once with status 0 (its helpers killed), rather than
    finalizing the interpreter under the compiler thread."""
    import os
    import time

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    proc = subprocess.Popen(
        [*tabula_command(), "--threads", "1", "uci"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("uci\nisready\n")
    proc.stdin.flush()
    for line in proc.stdout:
        if line.strip() == "readyok":
            break
    proc.stdin.write("quit\n")
    proc.stdin.flush()
    started = time.monotonic()
    assert proc.wait(timeout=20) == 0
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--threads", "-1", "gtp"], "--threads"),
        (["uci", "--hash", "0"], "--hash"),
        (["--batch-size", "0"], "--batch-size"),
        (["usi", "--move-overhead", "-5"], "--move-overhead"),
        (["gtp", "--boardsize", "25"], "--boardsize"),
        (["gtp", "--komi", "inf"], "--komi"),
        (["gtp", "--resign-threshold", "2"], "--resign-threshold"),
        (["--weights", "/no/such/network.onnx", "uci"], "--weights"),
        (["--log", "/no/such/folder/engine.log"], "--log"),
        (["--precision", "int4"], "--precision"),
        (["bench", "--games", "gomoku"], "--games"),
        (["bench", "--nodes", "-100"], "--nodes"),
        (["bench", "--net", "/no/such/network.onnx"], "--net"),
        (["bench", "--repeat", "0"], "--repeat"),
        (["bench", "rules", "--seconds", "-1"], "--seconds"),
        (["info", "/no/such/network.onnx"], "NETWORK"),
    ],
)
def test_a_bad_argument_is_one_error_line_and_exit_status_2(args: list[str], option: str) -> None:
    """click's answer to a bad value: one ``Error: Invalid value for '--x': ...`` line naming the option
    and what it allows, exit status 2, no traceback, nothing on stdout (no protocol was started)."""
    done = subprocess.run(
        tabula_command() + args,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert done.returncode == 2, done.stderr
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}': "), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
