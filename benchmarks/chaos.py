"""Chaos for the trainer: ``kill -9`` a tiny training run at random moments in every stage, resume it
with the same command each time, and check that no finished work was lost or torn.

    python benchmarks/chaos.py                         # 20 kills, Go 5x5 tiny, in a temporary folder
    python benchmarks/chaos.py --kills 3 --steps 60    # the short version tests/trainer/test_chaos.py runs
    python benchmarks/chaos.py --work /tmp/chaos --keep

The run (``tabula-train run --game go --size 5 --preset tiny``, inline self-play, 4 simulations, 40
positions a shard, an export every 10 steps, self-play on the int8 copy so that every new network is
quantized) is started in its own session and killed with SIGKILL on its process group, so the kill
reaches only the processes this script started.  The last kills hit ``tabula-train pack`` of the
finished run (a pack that ends before its kill lands is checked and started again, up to
``--pack-tries`` times).  Each kill is aimed at a stage (self-play, training, export, quantize, pack, in turn)
after a random delay: the script asks the child for its main thread's stack every few hundredths of a
second until it is in the stage aimed at, then kills (the stage reported is the one that stack showed;
a stage not met within ``--aim-seconds`` is killed wherever it is).  It asks through a pipe, not with a
signal: a thread of the child's own answers each request with ``sys._current_frames()``.  An earlier
version had faulthandler dump the stacks on SIGUSR1, and a dump landing in ``import torch`` (frames
read with no lock while they are built) crashed the child with SIGSEGV one short run in 25
(docs/benchmarks.md, "The chaos segfault was the harness's signals").

After every kill, and at the end, it checks:

* every shard and game record seen before is still there, every shard loads and has its record (with
  as many games as the shard says), no checkpoint or network is torn (each loads), no temporary file is
  counted as data, and the previous kill's temporaries (in the run folder and in the run's ``TMPDIR``)
  are gone once the run has resumed;
* the newest checkpoint's step never goes back, and the resumed run starts at it;
* at the end: the run reached ``--steps``, ``latest.onnx`` is the network of the final checkpoint, the
  games the log counts are the games in the shards, the pack loads (checkpoint, networks, shards) and
  the engine plays a move with the final network (``tabula gtp``, ``genmove``).

It prints a table per kill and a summary and exits 1 on any violation.  Figures and findings:
docs/benchmarks.md, "Chaos: kill -9 in every stage of a training run (2026-12-06)".
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAGES = ("self-play", "training", "export", "quantize", "pack")
RUN_STAGES = STAGES[:4]

#: The child: a thread that writes the main thread's stack (faulthandler's format) to $TABULA_CHAOS_DUMP for
#: every read from the pipe $TABULA_CHAOS_ASK, faulthandler for a crash of its own (SIGSEGV, SIGABRT ...:
#: the stack is then the dump's last), then the trainer.  No signal reaches the child before its kill.
CHILD = (
    "import faulthandler, os, sys, threading\n"
    "dump = open(os.environ['TABULA_CHAOS_DUMP'], 'a')\n"
    "faulthandler.enable(file=dump, all_threads=True)\n"
    "ask, main_id = int(os.environ['TABULA_CHAOS_ASK']), threading.main_thread().ident\n"
    "def answer():\n"
    "    while os.read(ask, 4096):\n"
    "        frame, lines = sys._current_frames().get(main_id), ['Current thread 0x0 (most recent call first):']\n"
    "        while frame is not None:\n"
    "            code = frame.f_code\n"
    "            lines.append(f'  File \"{code.co_filename}\", line {frame.f_lineno} in {code.co_name}')\n"
    "            frame = frame.f_back\n"
    "        dump.write('\\n'.join(lines) + '\\n\\n'); dump.flush()\n"
    "threading.Thread(target=answer, daemon=True, name='chaos-stacks').start()\n"
    "sys.setswitchinterval(0.001)\n"
    "dump.write('ready\\n'); dump.flush()\n"
    "sys.argv[0] = 'tabula-train'\n"
    "from trainer.cli import main\n"
    "main()\n"
)

SETTINGS = (
    "selfplay.games_in_parallel=8",
    "selfplay.simulations=4",
    "selfplay.leaves_per_tree=2",
    "selfplay.positions_per_shard=40",
    "selfplay.precision=int8",
    "replay.min_positions=40",
    "replay.reanalyse_share=0.2",
    "train.batch_size=128",
    "train.interval_steps=10",
    "train.steps_per_sample=0.3",
    "train.keep_checkpoints=3",
    "evaluate.every=0",
    "game.max_plies=30",
)

#: Functions on the main thread's stack that place it in a stage, most specific first.
STAGE_FRAMES = (
    ("pack", ("pack_run",)),
    ("quantize", ("quantized_copy", "quantize_network")),
    ("export", ("export_network", "export_onnx")),
    ("checkpoint", ("save_run_checkpoint",)),
    ("training", ("_train_chunk", "train_step")),
    ("reanalysis", ("reanalyse",)),
    ("self-play", ("play_some",)),
    ("start-up", ("prepare", "_open")),
)

FRAME = re.compile(r'File "([^"]+)", line \d+ in (\S+)')


def run_command(run: Path, steps: int) -> list[str]:
    """The one command every start and resume uses."""
    args = ["run", "--game", "go", "--size", "5", "--preset", "tiny", "--out", str(run)]
    args += ["--workers", "0", "--steps", str(steps), "--no-progress"]
    for item in SETTINGS:
        args += ["--set", item]
    return args


def pack_command(run: Path, pack: Path) -> list[str]:
    return ["pack", "--out", str(run), "--to", str(pack), "--shards-mb", "20"]


@dataclasses.dataclass
class Child:
    """A ``tabula-train`` process in its own session, with its stack-dump file and the pipe that asks
    for a stack."""

    proc: subprocess.Popen[bytes]
    dump: Path
    started: float
    ask: int  # the pipe's write end: a byte asks the child for its main thread's stack

    @classmethod
    def start(cls, args: list[str], work: Path, env: dict[str, str], name: str) -> Child:
        dump = work / f"{name}.stacks"
        dump.write_text("")
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        log = open(work / f"{name}.out", "ab")  # noqa: SIM115 - the child writes it
        proc = subprocess.Popen(
            ["nice", "-n", str(max(0, 10 - os.nice(0))), sys.executable, "-c", CHILD, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**env, "TABULA_CHAOS_DUMP": str(dump), "TABULA_CHAOS_ASK": str(read_end)},
            start_new_session=True,
            cwd=ROOT,
            pass_fds=(read_end,),
        )
        log.close()
        os.close(read_end)
        return cls(proc, dump, time.monotonic(), write_end)

    def ready(self) -> bool:
        return self.dump.read_text().startswith("ready")

    def last_words(self, lines: int = 40) -> str:
        """The tail of the child's output and of its stack dump (a crash's stack is the dump's last)."""
        out = self.dump.with_suffix(".out")
        tails = []
        for path in (out, self.dump):
            text = path.read_text(errors="replace").splitlines() if path.is_file() else []
            tails.append(f"[{path.name}]\n" + "\n".join(text[-lines:]))
        return "\n".join(tails)

    def request_stack(self) -> None:
        """One byte down the pipe; a full pipe or a child that is gone asks nothing."""
        if self.ask < 0:
            return
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            os.write(self.ask, b"?")

    def stage(self) -> str:
        """The stage the main thread's stack shows now ('' when the process did not answer)."""
        before = self.dump.stat().st_size
        self.request_stack()
        size, stable, deadline = before, 0, time.monotonic() + 2.0
        while time.monotonic() < deadline and stable < 3 and self.proc.poll() is None:
            time.sleep(0.005)
            now = self.dump.stat().st_size
            stable = stable + 1 if now == size and now > before else 0
            size = now
        with open(self.dump, "rb") as f:
            f.seek(before)
            text = f.read().decode("utf-8", "replace")
        return classify(text)

    def kill_inside(self, function: str, seconds: float) -> bool:
        """Ask for a stack every millisecond and SIGKILL the child as soon as one shows ``function``
        (a pack of a small run is inside ``pack_run`` for some milliseconds only: the settled polls of
        :meth:`stage` missed it 20 times running in CI); False when the child exited first or
        ``seconds`` passed."""
        offset, deadline = self.dump.stat().st_size, time.monotonic() + seconds
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.request_stack()
            time.sleep(0.001)
            with open(self.dump, "rb") as f:
                f.seek(offset)
                data = f.read()
            if f" in {function}\n".encode() in data:
                self.kill()
                return True
            offset += data.rfind(b"\n") + 1  # a line still being written is read again
        return False

    def kill(self) -> None:
        """SIGKILL to this child's own process group (its session: nothing else)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self.close()

    def close(self) -> None:
        """Close the asking pipe (once the child is gone)."""
        if self.ask >= 0:
            os.close(self.ask)
            self.ask = -1


def classify(dump: str) -> str:
    """The stage of the main thread in one faulthandler dump (the thread whose outermost frame is the
    ``-c`` program)."""
    blocks = [b for b in re.split(r"\n(?=(?:Current thread|Thread) 0x)", dump) if "File" in b]
    main = [b for b in blocks if FRAME.findall(b) and FRAME.findall(b)[-1][0] == "<string>"]
    functions = {f for _, f in FRAME.findall(main[-1] if main else dump)}
    for stage, names in STAGE_FRAMES:
        if functions.intersection(names):
            return stage
    return "other"


# ---- the checks ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Snapshot:
    shards: set[str]
    records: set[str]
    step: int


@dataclasses.dataclass
class Check:
    """What one look at a folder found."""

    shards: int = 0
    records: int = 0
    step: int = 0
    partial: list[str] = dataclasses.field(default_factory=list)  # torn or unreadable files
    temporaries: list[str] = dataclasses.field(default_factory=list)
    violations: list[str] = dataclasses.field(default_factory=list)


def snapshot(run: Path) -> Snapshot:
    from trainer.store.runfolder import list_checkpoints
    from trainer.store.shards import list_shards

    shards = {p.name for p in list_shards(run / "shards")}
    records = (
        {p.name for p in (run / "games").glob("*") if not p.name.startswith(".")} if run.is_dir() else set()
    )
    steps = [s for s, _ in list_checkpoints(run / "checkpoints")]
    return Snapshot(shards, records, max(steps, default=0))


def temporaries(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*.tmp")) if folder.is_dir() else []


def tmpdir_leftovers(tmpdir: Path) -> list[str]:
    """The folders the run left in its TMPDIR (self-play's int8 copies and their quantization; torch's
    compile cache, which is meant to stay, not counted)."""
    return sorted(p.name for p in tmpdir.iterdir() if p.is_dir() and p.name != "torchinductor_root")


def check_folder(folder: Path, game_label: str = "go5") -> Check:
    """Every shard (with its record), reanalysis overlay, checkpoint and network in ``folder`` loads."""
    from engine.games import get_game
    from engine.inference import InferenceSettings, OnnxEvaluator
    from trainer.network.checkpoint import load_checkpoint
    from trainer.store.overlays import OverlayError, list_overlays, read_overlay
    from trainer.store.records import EXTENSIONS
    from trainer.store.runfolder import list_checkpoints
    from trainer.store.shards import list_shards, read_shard, read_shard_meta

    info = get_game(game_label).info
    found = Check()
    for path in list_shards(folder / "shards"):
        found.shards += 1
        if path.name.startswith(".") or not path.name.endswith(".npz"):
            found.violations.append(f"{path.name} is listed as a shard")
        try:
            games = int(read_shard_meta(path)["games"])
            if len(read_shard(path, info)) == 0:
                raise ValueError("no positions")
        except Exception as e:
            found.partial.append(f"{path.name}: {e}")
            continue
        record = folder / "games" / (path.stem + EXTENSIONS["go"])
        if not record.is_file():
            if (folder / "games").is_dir():  # a pack carries shards without records
                found.violations.append(f"{path.name} has no record")
            continue
        found.records += 1
        if record.read_text().count("(;") != games:
            found.partial.append(f"{record.name}: not {games} games")
    for path in list_overlays(folder / "reanalysis"):
        try:
            read_overlay(path)
        except OverlayError as e:
            found.partial.append(f"{path.name}: {e}")
    for step, path in list_checkpoints(folder / "checkpoints"):
        try:
            state = load_checkpoint(path)
            assert int(state["step"]) == step
        except Exception as e:
            found.partial.append(f"{path.name}: {e}")
        found.step = max(found.step, step)
    for net in sorted((folder / "networks").glob("*.onnx")):
        try:
            OnnxEvaluator(net, info, InferenceSettings(backend="cpu", threads=1)).close()
        except Exception as e:
            found.partial.append(f"{net.name}: {e}")
    log = folder / "log.jsonl"
    if log.is_file():
        for line in log.read_text().splitlines()[:-1]:
            try:
                json.loads(line)
            except json.JSONDecodeError:
                found.partial.append(f"log.jsonl line {line[:40]!r}")
    found.temporaries = temporaries(folder)
    return found


def network_step(path: Path) -> int:
    from engine.network import read_metadata

    return read_metadata(path).step


def engine_plays(network: Path) -> str:
    """The engine's answer to ``genmove b`` on a 5x5 board with ``network`` (``= C3``), or the error."""
    tabula = Path(sys.executable).with_name("tabula")
    program = [str(tabula)] if tabula.is_file() else [sys.executable, "-m", "protocols.cli"]
    commands = "boardsize 5\nclear_board\ntime_settings 0 1 1\ngenmove b\nquit\n"
    proc = subprocess.run(
        [*program, "--weights", str(network), "--threads", "1", "gtp", "--boardsize", "5"],
        input=commands,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    answers = [line for line in proc.stdout.splitlines() if line.startswith(("=", "?"))]
    if "cannot use network" in proc.stderr or len(answers) < 4 or not answers[3].startswith("= "):
        return f"FAILED: {answers} {proc.stderr[-300:]}"
    return answers[3]


# ---- the chaos ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Kill:
    number: int
    aimed: str
    stage: str
    seconds: float  # since the process started
    step_before: int
    step_after: int
    shards_before: int
    shards_after: int
    records_after: int
    partial: int
    temporaries: int
    tmpdir: int


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kills", type=int, default=20, help="Kills in all (the last ones hit the pack).")
    parser.add_argument(
        "--pack-kills", type=int, default=None, help="Of them, kills of the pack (default kills // 6)."
    )
    parser.add_argument(
        "--steps", type=int, default=300, help="The run's total steps (--steps of the command)."
    )
    parser.add_argument(
        "--pack-tries",
        type=int,
        default=20,
        help="Starts of the pack per pack kill: one that ends before the kill lands is started again.",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--aim-seconds", type=float, default=90.0, help="How long a kill waits for its stage."
    )
    parser.add_argument(
        "--work", type=Path, default=None, help="Folder for the run (default: a temporary one)."
    )
    parser.add_argument("--keep", action="store_true", help="Keep the work folder.")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tabula-chaos-"))
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    try:
        return chaos(work, args)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def chaos(work: Path, args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    run, pack, tmpdir = work / "run", work / "pack", work / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(tmpdir), "PYTHONPATH": str(ROOT)}
    pack_kills = args.pack_kills if args.pack_kills is not None else max(1, args.kills // 6)
    run_kills = args.kills - pack_kills
    aims = [RUN_STAGES[i % len(RUN_STAGES)] for i in range(run_kills)] + ["pack"] * pack_kills
    kills: list[Kill] = []
    violations: list[str] = []
    seen_shards: set[str] = set()
    seen_records: set[str] = set()
    steps: list[int] = [0]
    previous_temporaries: list[str] = []
    previous_leftovers: list[str] = []
    pack_temporaries: list[str] = []
    pack_misses = 0
    began = time.monotonic()

    def look(folder: Path, number: int, stage: str) -> Check:
        nonlocal previous_temporaries, previous_leftovers
        found = check_folder(folder)
        now = snapshot(folder) if folder == run else None
        where = f"kill {number} ({stage})"
        violations.extend(f"{where}: {v}" for v in found.violations)
        violations.extend(f"{where}: partial file {p}" for p in found.partial)
        if now is not None:
            lost = seen_shards - now.shards
            violations.extend(f"{where}: shard {s} lost" for s in sorted(lost))
            violations.extend(f"{where}: record {r} lost" for r in sorted(seen_records - now.records))
            seen_shards.update(now.shards)
            seen_records.update(now.records)
            if now.step < steps[-1]:
                violations.append(f"{where}: step went back from {steps[-1]} to {now.step}")
            steps.append(now.step)
            started = stage in RUN_STAGES or stage == "checkpoint"  # the resumed run got past prepare()
            stale = set(previous_temporaries) & set(found.temporaries)
            if started:
                violations.extend(
                    f"{where}: temporary {t} of the previous kill not removed" for t in sorted(stale)
                )
            previous_temporaries = found.temporaries
            leftovers = tmpdir_leftovers(tmpdir)
            stale = set(previous_leftovers) & set(leftovers)
            if started:
                violations.extend(f"{where}: {t} of the previous kill left in TMPDIR" for t in sorted(stale))
            previous_leftovers = leftovers
            checkpoints = sorted(
                int(p.stem.split("-")[1]) for p in (folder / "checkpoints").glob("ckpt-*.pt")
            )
            for step in checkpoints[:-1]:  # the newest one's export may have been cut by this kill
                if not (folder / "networks" / f"net-{step:08d}.onnx").is_file():
                    violations.append(f"{where}: checkpoint {step} has no network net-{step:08d}.onnx")
        return found

    def aim_and_kill(child: Child, aimed: str) -> tuple[str, float]:
        """Wait a random moment, then until the stack is in ``aimed``; kill; the stage seen."""
        try:
            return aim(child, aimed)
        finally:
            child.close()

    def aim(child: Child, aimed: str) -> tuple[str, float]:
        while not child.ready():
            if child.proc.poll() is not None:
                return "exited", time.monotonic() - child.started
            time.sleep(0.02)
        if aimed == "pack":
            hit = child.kill_inside("pack_run", args.aim_seconds)
            return ("pack" if hit else "exited"), time.monotonic() - child.started
        time.sleep(rng.uniform(0.5, 4.0))
        deadline = time.monotonic() + args.aim_seconds
        stage = "other"
        while child.proc.poll() is None:
            stage = child.stage()
            if stage == aimed or time.monotonic() > deadline:
                break
            time.sleep(rng.uniform(0.0, 0.05))
        if child.proc.poll() is not None:
            return "exited", time.monotonic() - child.started
        seconds = time.monotonic() - child.started
        child.kill()
        return stage, seconds

    for number, aimed in enumerate(aims, 1):
        if aimed == "pack":
            if not (run / "networks" / "latest.onnx").is_file() or snapshot(run).step < args.steps:
                finish_run(run, args.steps, work, env, violations)
            before = snapshot(run)
            for _ in range(args.pack_tries):  # a small pack may finish before the stack shows it
                child = Child.start(pack_command(run, pack), work, env, "pack")
                stage, seconds = aim_and_kill(child, aimed)
                if stage != "exited":
                    break
                pack_misses += 1
                look(pack, number, "exited")  # a pack written to the end must be whole too
            found = look(pack, number, stage)
            stale = set(pack_temporaries) & set(found.temporaries)
            violations.extend(
                f"kill {number}: pack temporary {t} of the previous kill not removed" for t in stale
            )
            pack_temporaries = found.temporaries
            kills.append(
                Kill(
                    number,
                    aimed,
                    stage,
                    seconds,
                    before.step,
                    found.step,
                    len(before.shards),
                    found.shards,
                    found.records,
                    len(found.partial),
                    len(found.temporaries),
                    0,
                )
            )
        else:
            before = snapshot(run)
            child = Child.start(run_command(run, args.steps), work, env, "run")
            stage, seconds = aim_and_kill(child, aimed)
            at_kill = snapshot(run)
            if stage == "exited":
                violations.append(
                    f"kill {number}: the run ended before the kill (exit {child.proc.returncode})"
                )
                print(
                    f"-- kill {number}: the run's last output and stacks:\n{child.last_words()}", flush=True
                )
            found = look(run, number, stage)
            kills.append(
                Kill(
                    number,
                    aimed,
                    stage,
                    seconds,
                    before.step,
                    found.step,
                    len(at_kill.shards),
                    found.shards,
                    found.records,
                    len(found.partial),
                    len(found.temporaries),
                    len(tmpdir_leftovers(tmpdir)),
                )
            )
        print_kill(kills[-1], first=number == 1)
    if pack_kills == 0:
        finish_run(run, args.steps, work, env, violations)
    final = finish(run, pack, work, env, args.steps, violations, steps, seen_shards, tmpdir)
    final["packs that ended before their kill (started again)"] = str(pack_misses)
    summary(kills, steps, final, violations, time.monotonic() - began, args.kills)
    return 1 if violations else 0


def finish_run(run: Path, steps: int, work: Path, env: dict[str, str], violations: list[str]) -> None:
    """Resume the run with the same command and let it finish."""
    child = Child.start(run_command(run, steps), work, env, "run")
    try:
        code = child.proc.wait(1800)
    except subprocess.TimeoutExpired:
        child.kill()
        code = -1
    child.close()
    if code != 0:
        violations.append(f"the resumed run exited with {code} (see {work / 'run.out'})")


def finish(
    run: Path,
    pack: Path,
    work: Path,
    env: dict[str, str],
    steps: int,
    violations: list[str],
    step_sequence: list[int],
    seen_shards: set[str],
    tmpdir: Path,
) -> dict[str, str]:
    """The end: the pack written to completion, and the final checks."""
    from trainer.store.runfolder import RunFolder
    from trainer.store.shards import list_shards, read_shard_meta

    child = Child.start(pack_command(run, pack), work, env, "pack")
    if child.proc.wait(300) != 0:
        violations.append(f"the final pack exited with {child.proc.returncode}")
    child.close()
    result: dict[str, str] = {}
    found = check_folder(run)
    now = snapshot(run)
    step_sequence.append(now.step)
    if step_sequence != sorted(step_sequence):
        violations.append(f"the step went back: {step_sequence}")
    lost = seen_shards - now.shards
    violations.extend(f"end: shard {s} lost" for s in sorted(lost))
    violations.extend(f"end: partial file {p}" for p in found.partial)
    violations.extend(f"end: {v}" for v in found.violations)
    if found.temporaries:
        violations.append(f"end: temporaries left in the run: {found.temporaries}")
    if now.step != steps:
        violations.append(f"end: the run stopped at step {now.step}, not {steps}")
    latest = run / "networks" / "latest.onnx"
    latest_step = network_step(latest) if latest.is_file() else -1
    if latest_step != now.step:
        violations.append(
            f"end: latest.onnx is the network of step {latest_step}, the checkpoint's is {now.step}"
        )
    games = sum(int(read_shard_meta(p)["games"]) for p in list_shards(run / "shards"))
    stops = RunFolder(run).read_events("stop")
    logged = int(stops[-1]["games"]) if stops else -1
    if logged != games:
        violations.append(f"end: the log counts {logged} games, the shards hold {games}")
    packed = check_folder(pack)
    violations.extend(f"pack: partial file {p}" for p in packed.partial)
    if packed.temporaries:
        violations.append(f"pack: temporaries left: {packed.temporaries}")
    if packed.step != now.step:
        violations.append(f"pack: checkpoint of step {packed.step}, the run's is {now.step}")
    leftovers = tmpdir_leftovers(tmpdir)
    if leftovers:
        violations.append(
            f"end: {len(leftovers)} self-play temporary folders left in TMPDIR: {leftovers[:3]}"
        )
    played = engine_plays(pack / "networks" / "latest.onnx")
    if played.startswith("FAILED"):
        violations.append(f"engine: {played}")
    result["shards"] = str(len(now.shards))
    result["records"] = str(found.records)
    result["games (shards / log)"] = f"{games} / {logged}"
    result["final step"] = str(now.step)
    result["latest.onnx step"] = str(latest_step)
    result["pack"] = f"checkpoint {packed.step}, {packed.shards} shards, {len(packed.partial)} partial"
    result["engine (pack's latest.onnx, genmove b)"] = played
    return result


def print_kill(kill: Kill, first: bool) -> None:
    if first:
        print(
            f"{'kill':>4} {'aimed at':9} {'stage hit':10} {'at s':>6} {'step':>11} {'shards':>9} "
            f"{'records':>7} {'partial':>7} {'tmp':>4} {'TMPDIR':>6}"
        )
    print(
        f"{kill.number:4d} {kill.aimed:9} {kill.stage:10} {kill.seconds:6.1f} "
        f"{kill.step_before:5d}->{kill.step_after:<5d} {kill.shards_before:4d}/{kill.shards_after:<4d} "
        f"{kill.records_after:7d} {kill.partial:7d} {kill.temporaries:4d} {kill.tmpdir:6d}",
        flush=True,
    )


def summary(
    kills: list[Kill],
    steps: list[int],
    final: dict[str, str],
    violations: list[str],
    seconds: float,
    wanted: int,
) -> None:
    counts = Counter(k.stage for k in kills)
    print()
    print(
        "kills per stage: "
        + ", ".join(f"{s} {counts.get(s, 0)}" for s in (*STAGES, *sorted(set(counts) - set(STAGES))))
    )
    print(f"step sequence (newest checkpoint after each kill): {' '.join(map(str, steps))}")
    for key, value in final.items():
        print(f"{key}: {value}")
    if wanted >= len(STAGES):
        missing = [s for s in STAGES if counts.get(s, 0) == 0]
        if missing:
            violations.append(f"no kill landed in: {', '.join(missing)}")
    print(f"{len(kills)} kills in {seconds:.0f} s; violations: {len(violations)}")
    for v in violations:
        print(f"  VIOLATION {v}")


if __name__ == "__main__":
    sys.exit(main())
