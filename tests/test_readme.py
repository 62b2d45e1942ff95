"""The README's commands run as written: every command in its fenced ``bash`` blocks names a program that
exists, each `tabula` / `tabula-train` / `python benchmarks/...` subcommand and ``--option`` it uses
appears in that command's ``--help`` (so a renamed option breaks this test), and the commands that are
quick and offline (help, `info`, `bench rules`, the bare engine, the ladder's `--list`) are run and must succeed.
Its ``python`` blocks (the Python API's example) run as written.  Also: the README stays a user's page (at most 300 lines, no dated history outside its figure tables)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: How each of the README's own programs is started here: the checkout's code, not an installed copy.
PROGRAMS: dict[str, list[str]] = {
    "tabula": [sys.executable, "-m", "protocols"],
    "tabula-train": [sys.executable, "-m", "trainer"],
}
#: Programs the README may name that this test does not drive (installers, shell tools, the build, the
#: test suite itself, the standalone binary it builds); anything else is a mistake in the README.
EXTERNAL = {"pip", "pyinstaller", "cp", "tar", "git", "bash", "dist/tabula/tabula"}
EXTERNAL_PYTHON_MODULES = {"pip", "pytest"}
#: Quick, offline, no side effects: these (sub)commands are run, not only checked.
RUNNABLE = [("info",), ("bench", "rules")]


@dataclass(frozen=True)
class Command:
    """One command of a README ``bash`` block: its line and its words (comment and ``&&`` split off)."""

    line: str
    words: tuple[str, ...]


def readme_commands() -> list[Command]:
    """Every command in the README's fenced ``bash`` blocks, in order."""
    blocks = re.findall(r"^```bash\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    commands = []
    for block in blocks:
        for line in block.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words:
                    commands.append(Command(line.strip(), tuple(words)))
    return commands


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@cache
def _help(prefix: tuple[str, ...]) -> str:
    """``--help`` of a program with subcommand words (``("tabula-train", "run")``)."""
    argv = _argv(prefix[0]) + list(prefix[1:]) + ["--help"]
    result = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{' '.join(prefix)} --help failed: {result.stderr}"
    return result.stdout


def _argv(program: str) -> list[str]:
    if program in PROGRAMS:
        return PROGRAMS[program]
    return [sys.executable, str(ROOT / program)]  # a script: benchmarks/NAME.py


def _command_argv(words: tuple[str, ...]) -> list[str]:
    """A README command's words as this test starts them (``python`` is this interpreter)."""
    if words[0] in ("python", "python3"):
        return [sys.executable, *words[1:]]
    return [*_argv(words[0]), *words[1:]]


def _subcommands(help_text: str) -> set[str]:
    """The names listed under click's ``Commands:`` heading."""
    _, _, tail = help_text.partition("\nCommands:\n")
    return {line.split()[0] for line in tail.splitlines() if line.startswith("  ") and line.split()}


def _has_option(help_text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text) is not None


def resolve(words: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]] | None:
    """The program and subcommand path of a README command (``("tabula", "bench", "rules")``) and its
    ``--options``; None for an external program.  A program or module the test does not know fails."""
    if words[0] in ("python", "python3"):
        if words[1] == "-m":
            assert words[2] in EXTERNAL_PYTHON_MODULES, f"README runs an unknown module: {' '.join(words)}"
            return None
        script = words[1]
        assert (ROOT / script).is_file(), f"README names a missing script: {script}"
        return (script,), [w.split("=")[0] for w in words[2:] if w.startswith("--")]
    if words[0] not in PROGRAMS:
        assert words[0] in EXTERNAL, f"README runs an unknown program: {' '.join(words)}"
        return None
    path = [words[0]]
    options = []
    for word in words[1:]:
        if word.startswith("--"):
            options.append(word.split("=")[0])
        elif word in _subcommands(_help(tuple(path))):
            path.append(word)
    return tuple(path), options


def _runnable(path: tuple[str, ...], words: tuple[str, ...]) -> bool:
    if words[-1] == "--help" or "--list" in words:
        return True
    return path[0] in PROGRAMS and ((len(path) == 1 and len(words) == 1) or path[1:] in RUNNABLE)


def test_every_readme_command_names_real_programs_subcommands_and_options() -> None:
    commands = readme_commands()
    checked = 0
    for command in commands:
        resolved = resolve(command.words)
        if resolved is None:
            continue
        path, options = resolved
        help_text = _help(path)
        for option in options:
            if option != "--help":
                assert _has_option(help_text, option), (
                    f"{command.line}: no {option} in `{' '.join(path)} --help`"
                )
        checked += 1
    assert checked >= 15, f"only {checked} README commands checked: did the blocks move out of ```bash?"


def test_quick_readme_commands_run_as_written() -> None:
    ran = []
    for command in readme_commands():
        resolved = resolve(command.words)
        if resolved is None or not _runnable(resolved[0], command.words):
            continue
        bare_engine = command.words == ("tabula",)  # it waits for protocol input: give it a handshake
        result = subprocess.run(
            _command_argv(command.words),
            input="uci\nquit\n" if bare_engine else None,
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, f"{command.line}: exit {result.returncode}\n{result.stderr[-2000:]}"
        assert result.stdout.strip(), f"{command.line}: printed nothing"
        if bare_engine:
            assert "uciok" in result.stdout.splitlines(), result.stdout
        ran.append(command.line)
    assert len(ran) >= 5, ran


def readme_python_blocks() -> list[str]:
    """The code of the README's fenced ``python`` blocks (a block inside a list item dedented)."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S)
    return [textwrap.dedent(code) for _, code in blocks]


def test_readme_python_examples_run_as_written() -> None:
    blocks = readme_python_blocks()
    assert blocks, "the README shows the Python API"
    for code in blocks:
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, f"{code}\nexit {result.returncode}\n{result.stderr[-2000:]}"
        assert result.stdout.strip(), f"{code}: printed nothing"


def test_status_of_a_shipped_pack() -> None:
    """`tabula-train status` as the README runs it, on a real run folder: a pack in `training/`."""
    result = subprocess.run(
        [*PROGRAMS["tabula-train"], "status", "--out", "training/go9"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"^checkpoint\s+step \d+", result.stdout, re.M), result.stdout


def test_a_renamed_option_would_be_caught() -> None:
    """The check itself: an option the program does not have is not found in its help."""
    path, options = resolve(("tabula-train", "run", "--out", "runs/x", "--no-such-option", "3")) or ((), [])
    assert path == ("tabula-train", "run")
    assert "--no-such-option" in options
    assert not _has_option(_help(path), "--no-such-option")
    assert _has_option(_help(path), "--out")


def test_readme_is_a_users_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    for number, line in enumerate(lines, 1):
        if re.search(r"20\d\d-\d\d-\d\d", line):
            assert line.startswith("|"), f"README.md:{number}: a date outside a figure table: {line}"
    marker = lines.index("<!-- test-command -->")
    assert lines[marker + 2] == 'python -m pip install -e ".[test]" && python -m pytest'


@pytest.mark.slow
def test_readme_search_benchmark_runs_on_one_game() -> None:
    """`tabula bench` as the README's speed section runs it, cut to one game and few nodes."""
    argv = [*PROGRAMS["tabula"], "bench", "--games", "go9", "--nodes", "64", "--repeat", "1"]
    result = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    row = [line for line in result.stdout.splitlines() if line.startswith("go9")]
    assert row and float(row[0].split()[3].replace(",", "")) > 0, result.stdout
