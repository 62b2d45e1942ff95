"""Strength ladder: the installed `tabula` program against reference programs, every game played by the
match client a user would run, on that client's clock and with its referee.  Rungs go from weak to strong.

    python benchmarks/ladder.py chess --games 20 --summary      # cutechess-cli 1.3.1 against Stockfish
    python benchmarks/ladder.py shogi --games 20 --summary      # cshogi.cli against Fairy-Stockfish
    python benchmarks/ladder.py go9 --rungs gnugo1 --games 20 --summary   # gogui-twogtp 1.5.4, GNU Go referee
    python benchmarks/ladder.py chess --list                    # the rung keys for --rungs

Chess: cutechess-cli, ``tc=10+0.1`` game clocks for both, ``-recover``, no adjudication but a symmetric draw
at ``-maxmoves 300`` full moves; Stockfish 1 thread, 16 MB hash, weakened by ``Skill Level`` or
``UCI_LimitStrength``/``UCI_Elo``.  The result, the ending (the PGN's ``[Termination]`` or its last
comment) and losses on time or by illegal moves are read from cutechess's ``-pgnout`` file.

Shogi: ``python -m cshogi.cli`` against Fairy-Stockfish at ``Skill Level`` -20 ... 3, byoyomi only
(``--byoyomi 1000``; with ``--time`` Fairy-Stockfish 11.1 loses on time within five moves of every game).
cshogi.cli then enforces no clock, so both engines run behind ``benchmarks/usi_timer.py``, which logs the
wall time from each ``go`` to ``bestmove``; the first move over the byoyomi loses the game.  Results and
endings come from its ``--csa --multi-csa`` record.

Go: ``gogui-twogtp`` with Tabula as ``-black`` (``-alternate`` swaps colours), GNU Go as ``-white`` and
GNU Go as the ``-referee`` (Chinese rules, no ``--capture-all-dead``), ``-time 1`` (one minute sudden
death each; twogtp only passes it on, so a program whose genmove time over the game passes the limit
is counted here as losing on time).  Results come from the ``.dat`` file: the referee's count (RES_R),
games cut short by an error (ERR), and how often Tabula's own ``final_score`` (RES_B) named the
referee's winner.

Openings: every client starts from the suites in ``trainer/evaluate/openings`` (see its README), each opening
played twice with colours reversed.  Those pairs give the Elo and its 95% interval from pentanomial
statistics (``trainer.evaluate.elo.Pentanomial``); when some game lacks its partner the games are counted one
by one (trinomial).  Each rung prints every game and a summary line; ``--summary`` ends with one Markdown
table whose last column is the exact client command line.  Records and client logs go to ``--out``.

The clients are looked for in ``../shared/tools`` (next to this repository) and on the PATH.  Figures,
not assertions: the result depends on the machine and what else it runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.process import find_program, tabula_command  # noqa: E402
from trainer.evaluate.elo import MatchResult, Pentanomial  # noqa: E402
from trainer.evaluate.opening_suites import SUITES  # noqa: E402

TOOLS = REPO.parent / "shared" / "tools"
OPENINGS = SUITES
USI_TIMER = REPO / "benchmarks" / "usi_timer.py"
TABULA = "Tabula"  # Tabula's name in every client's records
QT_ENV = {"QT_QPA_PLATFORM": "offscreen"}

CUTECHESS_MISSING = (
    "cutechess-cli not found in ../shared/tools or on the PATH: build cutechess-cli 1.3.1 from tag v1.3.1 of "
    "cutechess/cutechess on GitHub (cmake -DCMAKE_BUILD_TYPE=Release -DWITH_TESTS=OFF, target cli; "
    "it needs apt-get install libqt5core5a) and copy it to ../shared/tools/"
)
TWOGTP_MISSING = (
    "gogui-twogtp.jar not found in ../shared/tools or on the PATH: build gogui-twogtp 1.5.4 from tag v1.5.4a "
    "of Remi-Coulom/gogui on GitHub (javac of net.sf.gogui.tools.twogtp; it needs apt-get install "
    "default-jre-headless) and copy gogui-twogtp.jar to ../shared/tools/"
)


# ---- finding the programs ----------------------------------------------------------------------------


def find_tool(name: str) -> str | None:
    """A match client in ../shared/tools, else on the PATH (a .jar is looked for in the PATH's folders)."""
    local = TOOLS / name
    if local.is_file():
        return str(local)
    if name.endswith(".jar"):
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            if folder and (Path(folder) / name).is_file():
                return str(Path(folder) / name)
        return None
    return shutil.which(name)


def program(name: str) -> str:
    """A reference program (PATH or /usr/games), or exit saying how to install it."""
    path = find_program(name)
    if path is None:
        raise SystemExit(f"{name} not found (apt-get install {name})")
    return path


def cutechess_cli() -> str:
    """cutechess-cli, checked to start; or exit with one line saying how to get it."""
    path = find_tool("cutechess-cli")
    if path is None:
        raise SystemExit(CUTECHESS_MISSING)
    run = subprocess.run(
        [path, "--version"], capture_output=True, text=True, env={**os.environ, **QT_ENV}, check=False
    )
    if run.returncode != 0:
        why = (run.stderr.strip().splitlines() or ["no output"])[0]
        raise SystemExit(f"{path} does not start ({why}): apt-get install libqt5core5a")
    return path


def twogtp_command() -> list[str]:
    """``java -jar gogui-twogtp.jar`` (or a ``gogui-twogtp`` launcher); or exit saying how to get it."""
    jar = find_tool("gogui-twogtp.jar")
    if jar is None:
        launcher = shutil.which("gogui-twogtp")
        if launcher is None:
            raise SystemExit(TWOGTP_MISSING)
        return [launcher]
    if shutil.which("java") is None:
        raise SystemExit("java not found, gogui-twogtp needs it: apt-get install default-jre-headless")
    return ["java", "-jar", jar]


def client_version(command: list[str], env: dict[str, str] | None = None) -> str:
    """The first line a client prints for ``-version`` (``--version`` for cutechess-cli)."""
    flag = "--version" if command[-1].endswith("cutechess-cli") else "-version"
    out = subprocess.run(
        [*command, flag], capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False
    )
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if lines else Path(command[-1]).name


# ---- games, rungs and results ------------------------------------------------------------------------


@dataclasses.dataclass
class Game:
    """One game from Tabula's side, as its client recorded it."""

    number: int  # 1-based, in the client's order; games 2k-1 and 2k share an opening
    tabula_first: bool  # Tabula had White (chess), sente (shogi) or Black (Go)
    points: float  # 1 win, 0.5 draw, 0 loss
    how: str
    length: int | None = None  # plies (chess, shogi) or moves (Go)
    opening: str | None = None
    fault: str | None = None  # "time" (a loss on time), or an error: "illegal", "crash", "error"
    faulty: str | None = None  # who: TABULA or "opponent"
    agree: bool | None = None  # Go: Tabula's final_score named the referee's winner (None: not counted)

    def line(self, colours: tuple[str, str], unit: str = "plies") -> str:
        """``game 3 (Sicilian, Najdorf), Tabula black: 0, White mates, 87 plies``."""
        side = colours[0] if self.tabula_first else colours[1]
        opening = f" ({self.opening})" if self.opening else ""
        length = f", {self.length} {unit}" if self.length else ""
        fault = f" [{self.fault}: {self.faulty}]" if self.fault else ""
        return f"  game {self.number}{opening}, Tabula {side}: {self.points:g}, {self.how}{length}{fault}"


@dataclasses.dataclass(frozen=True)
class Rung:
    """An opponent: its program, UCI/USI options, cutechess limits (``depth=1``) and GTP name."""

    key: str
    name: str
    command: tuple[str, ...]
    options: tuple[tuple[str, str], ...] = ()
    limits: tuple[str, ...] = ()
    label: str = ""  # Go: the program's GTP name, to tell whose error cut a game short


@dataclasses.dataclass
class RungResult:
    """A rung's games and how they were played."""

    title: str
    client: str
    command: str
    games: list[Game]
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def match(self) -> MatchResult:
        """Wins, draws and losses, game by game."""
        points = [g.points for g in self.games]
        return MatchResult(points.count(1.0), points.count(0.5), points.count(0.0))

    def pentanomial(self) -> Pentanomial | None:
        """The games as opening pairs, or None when some game lacks its partner (or there are none)."""
        by_number = {g.number: g.points for g in self.games}
        if not by_number or len(by_number) % 2:
            return None
        pairs = []
        for first in range(1, max(by_number) + 1, 2):
            if (first in by_number) != (first + 1 in by_number):
                return None
            if first in by_number:
                pairs.append(by_number[first] + by_number[first + 1])
        return Pentanomial.from_pair_points(pairs)

    def elo(self) -> tuple[float, float, float, str]:
        """Elo, its 95% interval, and which statistics gave them."""
        penta = self.pentanomial()
        if penta is not None:
            return (*penta.elo(), "pentanomial")
        return (*self.match.elo(), "trinomial")

    def faults(self, who: str) -> tuple[int, int]:
        """``who``'s errors (illegal moves, crashes, client errors) and losses on time."""
        mine = [g.fault for g in self.games if g.faulty == who]
        return sum(f != "time" for f in mine), mine.count("time")

    def faults_text(self) -> str:
        """``0 / 1 (opponent 0 / 0)``, and for Go how often Tabula's final_score agreed."""
        (te, tt), (oe, ot) = self.faults(TABULA), self.faults("opponent")
        text = f"{te} / {tt} (opponent {oe} / {ot})"
        counted = [g.agree for g in self.games if g.agree is not None]
        if counted:
            text += f"; final_score agreed {sum(counted)}/{len(counted)}"
        return text

    def line(self) -> str:
        """The rung's summary line: result, Elo and its statistics, errors and time losses."""
        m = self.match
        elo, lo, hi, how = self.elo()
        return (
            f"{self.title}: Tabula +{m.wins} ={m.draws} -{m.losses} ({100 * m.score:.1f}%) over {m.games} "
            f"games, Elo {elo:+.0f} [{lo:+.0f}, {hi:+.0f}] ({how}); errors / time losses: {self.faults_text()}"
        )

    def row(self) -> str:
        """The rung's row of the --summary table."""
        m = self.match
        elo, lo, hi, how = self.elo()
        return (
            f"| {self.title} | {self.client} | {m.games} | +{m.wins} ={m.draws} -{m.losses} | "
            f"{100 * m.score:.0f}% | {elo:+.0f} [{lo:+.0f}, {hi:+.0f}] {how} | {self.faults_text()} | "
            f"`{self.command}` |"
        )


SUMMARY_HEADER = [
    "| rung | client | games | +W =D -L | score | Elo [95%] | errors / time losses | command |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
]


@dataclasses.dataclass
class Settings:
    """What every rung of one ladder run shares."""

    games: int
    tabula: list[str]  # Tabula's command line before its protocol word
    out: Path
    tc: str = "10+0.1"  # chess, cutechess's tc=
    max_moves: int = 300  # chess full moves (-maxmoves), shogi moves (--draw)
    byoyomi: int = 1000  # shogi, milliseconds
    margin: int = 0  # shogi: milliseconds a move may run over the byoyomi
    minutes: float = 1.0  # Go: sudden death per side (twogtp -time)
    size: int = 9
    komi: float = 7.5
    openings: bool = True
    concurrency: int = 1  # chess: games cutechess-cli plays at once (-concurrency)
    adjudicate: bool = False  # chess: cutechess's resign and draw adjudication (ADJUDICATION)


def selected(rungs: dict[str, Rung], keys: list[str] | None) -> dict[str, Rung]:
    """The rungs named by ``--rungs`` (all by default), in ladder order."""
    if not keys:
        return rungs
    unknown = [k for k in keys if k not in rungs]
    if unknown:
        raise SystemExit(f"unknown rungs {', '.join(unknown)}; this ladder has {', '.join(rungs)}")
    return {k: v for k, v in rungs.items() if k in keys}


def rung_folder(out: Path, key: str) -> Path:
    """A new, empty folder for a rung's records: cutechess-cli and cshogi.cli append to old records and
    gogui-twogtp resumes an old table, so a folder that holds games is refused."""
    folder = out / key
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"{folder} already holds a rung's records: give another --out")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shell_line(command: Sequence[str], env: dict[str, str] | None = None) -> str:
    """The command as one shell line (``VAR=value`` first)."""
    prefix = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    return " ".join([*prefix, shlex.join(command)])


def run_client(
    command: list[str],
    log: Path,
    deadline: float,
    collect: Callable[[], list[Game]],
    show: Callable[[Game], None],
    env: dict[str, str] | None = None,
) -> list[str]:
    """Run a match client (its output to ``log``), printing each game as its record gains it; stop it after
    ``deadline`` seconds.  Returns notes on how it ended."""
    shown: set[int] = set()

    def show_new() -> None:
        try:
            games = collect()
        except (OSError, ValueError):
            return  # a record being written: read it next time
        for game in games:
            if game.number not in shown:
                shown.add(game.number)
                show(game)

    notes = []
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,  # its own process group: stopped with everything it started
        )
        start = time.monotonic()
        while proc.poll() is None:
            if time.monotonic() - start > deadline:
                notes.append(f"stopped after {deadline:.0f} s (see {log})")
                stop_group(proc)
                break
            time.sleep(2.0)
            show_new()
    if proc.returncode not in (0, None) and not notes:
        notes.append(f"client exited with status {proc.returncode} (see {log})")
    show_new()
    return notes


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a client started with ``start_new_session`` and whatever it started."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def play_rung(
    title: str,
    client: str,
    command: list[str],
    rung_dir: Path,
    deadline: float,
    collect: Callable[[], list[Game]],
    colours: tuple[str, str],
    env: dict[str, str] | None = None,
    unit: str = "plies",
) -> RungResult:
    """Play one rung through its client and print every game and the summary line."""
    line = shell_line(command, env)
    print(f"== {title} [{client}]\n   {line}", flush=True)
    notes = run_client(
        command,
        rung_dir / "client.log",
        deadline,
        collect,
        lambda g: print(g.line(colours, unit), flush=True),
        env,
    )
    result = RungResult(title, client, line, sorted(collect(), key=lambda g: g.number), notes)
    for note in notes:
        print(f"  note: {note}", flush=True)
    print(result.line(), flush=True)
    return result


# ---- chess: cutechess-cli ----------------------------------------------------------------------------


#: Stockfish's options in every chess rung: one thread, 16 MB hash.
STOCKFISH_BASE = (("Threads", "1"), ("Hash", "16"))


def stockfish_elo_rung(stockfish: str, elo: int) -> Rung:
    """Stockfish at ``UCI_LimitStrength`` ``UCI_Elo`` ``elo`` (the strength calibration's opponents too)."""
    options = (*STOCKFISH_BASE, ("UCI_LimitStrength", "true"), ("UCI_Elo", str(elo)))
    return Rung(f"sf-elo{elo}", f"Stockfish UCI_Elo {elo}", (stockfish,), options)


def chess_rungs(stockfish: str) -> dict[str, Rung]:
    """Stockfish, weakest first: Skill Level 0 searching one ply, Skill Level 0, then UCI_Elo 1350,
    Skill Level 1, UCI_Elo 1600 and 2000."""
    skill0 = (*STOCKFISH_BASE, ("Skill Level", "0"))
    rungs = [
        Rung("sf-skill0-d1", "Stockfish Skill Level 0, depth 1", (stockfish,), skill0, ("depth=1",)),
        Rung("sf-skill0", "Stockfish Skill Level 0", (stockfish,), skill0),
    ]
    rungs += [stockfish_elo_rung(stockfish, elo) for elo in (1350, 1600, 2000)]
    # Stockfish 15.1 plays UCI_Elo 1350 as Skill Level 0.02 and 1600 as 1.77: Skill Level 1 goes between.
    skill1 = Rung(
        "sf-skill1", "Stockfish Skill Level 1", (stockfish,), (*STOCKFISH_BASE, ("Skill Level", "1"))
    )
    rungs.insert(3, skill1)
    return {r.key: r for r in rungs}


def cutechess_command(
    cutechess: str,
    s: Settings,
    rung: Rung,
    pgn: Path,
    stderr: Path,
    openings: Path | None,
    tabula_options: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """cutechess-cli's command line for one rung: both on ``tc``, each opening twice with colours reversed;
    ``tabula_options``: UCI options cutechess sets in Tabula (``UCI_LimitStrength``, ``UCI_Elo``)."""
    tabula = [
        "-engine",
        f"name={TABULA}",
        f"cmd={s.tabula[0]}",
        *(f"arg={a}" for a in [*s.tabula[1:], "uci"]),
        *(f"option.{k}={v}" for k, v in tabula_options),
        f"stderr={stderr}",
    ]
    opponent = [
        "-engine",
        f"name={rung.name}",
        f"cmd={rung.command[0]}",
        *(f"arg={a}" for a in rung.command[1:]),
        *(f"option.{k}={v}" for k, v in rung.options),
        *rung.limits,
    ]
    book = ["-openings", f"file={openings}", "format=pgn", "order=sequential"] if openings else []
    rounds = (
        ["-games", "2", "-rounds", str(s.games // 2)]
        if s.games % 2 == 0
        else ["-games", "1", "-rounds", str(s.games)]
    )
    return [
        cutechess,
        *tabula,
        *opponent,
        "-each",
        "proto=uci",
        f"tc={s.tc}",
        *book,
        "-repeat",
        *rounds,
        *(["-concurrency", str(s.concurrency)] if s.concurrency > 1 else []),
        "-maxmoves",
        str(s.max_moves),
        *(ADJUDICATION if s.adjudicate else []),
        "-recover",
        "-pgnout",
        str(pgn),
    ]


#: cutechess-cli's adjudication for Tabula-against-Tabula matches (tuning, SPRTs), as fishtest's: a game
#: is resigned once both engines have scored it beyond 9 pawns for 4 moves running, drawn from move 40
#: once both have scored it within 0.1 pawn for 8 moves.  The ladder against Stockfish adjudicates nothing.
ADJUDICATION = [
    "-resign",
    "movecount=4",
    "score=900",
    "twosided=true",
    "-draw",
    "movenumber=40",
    "movecount=8",
    "score=10",
]


#: cutechess's [Termination] tags of a game lost by a fault, and what the ladder calls the fault.
CHESS_FAULTS = {
    "time forfeit": "time",
    "illegal move": "illegal",
    "abandoned": "crash",
    "stalled connection": "crash",
}


def parse_cutechess_pgn(text: str, openings: Sequence[str] = ()) -> list[Game]:
    """Tabula's games from cutechess's PGN output; unfinished games (``*``) are left out."""
    import io

    import chess.pgn

    games: list[Game] = []
    handle = io.StringIO(text)
    number = 0
    while (pgn := chess.pgn.read_game(handle)) is not None:
        number += 1
        h = pgn.headers
        result = h.get("Result", "*")
        if result not in ("1-0", "0-1", "1/2-1/2"):
            continue
        white = h.get("White") == TABULA
        white_points = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[result]
        points = white_points if white else 1.0 - white_points
        termination = h.get("Termination", "")
        # cutechess ends the last move's comment with the result: "+0.24/4 0.022s, Black loses on time"
        # (or "book, ..." when the game ends in the opening).
        comment = re.sub(r"^([^,]*\d+(\.\d+)?s|book)(, |$)", "", pgn.end().comment.strip())
        fault = CHESS_FAULTS.get(termination)
        faulty = (TABULA if points == 0.0 else "opponent") if fault else None
        plies = int(h["PlyCount"]) if h.get("PlyCount", "").isdigit() else pgn.end().ply()
        opening = openings[(number - 1) // 2 % len(openings)] if openings else None
        how = comment or termination or result
        if termination and termination not in how.lower():
            how = f"{termination}: {how}"
        games.append(Game(number, white, points, how, plies, opening, fault, faulty))
    return games


def pgn_opening_names(path: Path) -> list[str]:
    """The ``[Opening]`` names of an opening suite, in file order."""
    return re.findall(r'^\[Opening "(.*)"\]', path.read_text(encoding="utf-8"), flags=re.MULTILINE)


def tc_seconds(tc: str) -> float:
    """A generous bound on one side's time for a game at cutechess time control ``tc``."""
    base_inc = tc.split("/")[-1]
    base, _, inc = base_inc.partition("+")
    minutes, _, seconds = base.rpartition(":")
    total = float(seconds or 0) + 60 * float(minutes or 0)
    return total + 200 * float(inc or 0) if tc != "inf" else 3600.0


def chess_ladder(args: argparse.Namespace, s: Settings) -> list[RungResult]:
    """Play the chosen chess rungs through cutechess-cli."""
    cutechess = cutechess_cli()
    client = client_version([cutechess], QT_ENV)
    book = OPENINGS / "chess.pgn" if s.openings else None
    names = pgn_opening_names(book) if book else []
    results = []
    for key, rung in selected(chess_rungs(program("stockfish")), args.rungs).items():
        rung_dir = rung_folder(s.out, key)
        pgn = rung_dir / "games.pgn"
        command = cutechess_command(cutechess, s, rung, pgn, rung_dir / "tabula.stderr", book)

        def collect(pgn: Path = pgn) -> list[Game]:
            return parse_cutechess_pgn(pgn.read_text(encoding="utf-8"), names) if pgn.exists() else []

        deadline = s.games * (2 * tc_seconds(s.tc) + 60) + 60
        title = f"chess {s.tc} vs {rung.name} ({key})"
        results.append(
            play_rung(title, client, command, rung_dir, deadline, collect, ("white", "black"), QT_ENV)
        )
    return results


# ---- shogi: cshogi.cli -------------------------------------------------------------------------------


def shogi_rungs(fairy: str) -> dict[str, Rung]:
    """Fairy-Stockfish's Skill Levels -20 ... 3, weakest first; gpsusi when installed."""
    rungs = {}
    for skill in (-20, -15, -10, -5, -3, -1, 0, 1, 3):
        options = (("Skill Level", str(skill)), ("Threads", "1"), ("Hash", "16"))
        rungs[f"fairy{skill}"] = Rung(
            f"fairy{skill}", f"Fairy-Stockfish Skill Level {skill}", (fairy,), options
        )
    gps = find_program("gpsusi")
    if gps is not None:
        rungs["gpsusi"] = Rung("gpsusi", "gpsusi", (gps,))
    return rungs


def usi_wrapper(path: Path, engine: Sequence[str], times: Path, stderr: Path) -> Path:
    """An executable that starts ``engine`` behind the USI stopwatch: cshogi.cli starts an engine from one
    path with no arguments."""
    timer = [sys.executable, str(USI_TIMER), "--log", str(times), "--stderr", str(stderr), "--", *engine]
    path.write_text(f"#!/bin/sh\nexec {shlex.join(timer)}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def cshogi_command(
    s: Settings, rung: Rung, engine1: Path, engine2: Path, csa: Path, openings: Path | None
) -> list[str]:
    """cshogi.cli's command line: byoyomi only, colours swapped every game, openings in seeded order."""
    options2 = ",".join(f"{k}:{v}" for k, v in rung.options)
    book = ["--opening", str(openings), "--opening-seed", "1"] if openings else []
    return [
        sys.executable,
        "-m",
        "cshogi.cli",
        str(engine1),
        str(engine2),
        "--name1",
        TABULA,
        "--name2",
        rung.name,
        *(["--options2", options2] if options2 else []),
        "--games",
        str(s.games),
        "--byoyomi",
        str(s.byoyomi),
        "--draw",
        str(s.max_moves),
        *book,
        "--csa",
        str(csa),
        "--multi-csa",
    ]


def cshogi_opening_order(lines: Sequence[str], seed: int = 1) -> list[str]:
    """The openings in the order cshogi.cli plays them with ``--opening-seed seed``: it seeds the global
    ``random`` and shuffles the list; game ``n`` plays entry ``n // 2``."""
    order = list(lines)
    random.Random(seed).shuffle(order)
    return order


@dataclasses.dataclass
class CsaGame:
    """One game of a (multi-)CSA record."""

    names: tuple[str, str]  # sente, gote
    moves: list[str]
    endgame: str


def parse_csa(text: str) -> list[CsaGame]:
    """The finished games of a multi-CSA file (records separated by ``/``); a game still being written
    (no ending yet) is left out."""
    games = []
    for record in re.split(r"^/$", text, flags=re.MULTILINE):
        names = ["", ""]
        moves: list[str] = []
        endgame = ""
        for line in record.splitlines():
            if line.startswith("N+"):
                names[0] = line[2:]
            elif line.startswith("N-"):
                names[1] = line[2:]
            elif re.fullmatch(r"[+-]\d{4}[A-Z]{2}", line):
                moves.append(line)
            elif line.startswith("%") or line == "ILLEGAL_MOVE":
                endgame = line
        if endgame:
            games.append(CsaGame((names[0], names[1]), moves, endgame))
    return games


def csa_outcome(game: CsaGame) -> tuple[float, str]:
    """Sente's points and the ending in words, from the CSA ending and who was to move (cshogi.cli writes
    %TORYO for a resignation and for a mate, both lost by the side to move; the position tells which)."""
    sente_to_move = len(game.moves) % 2 == 0
    mover = 1.0 if sente_to_move else 0.0  # sente's points if the side to move wins
    end = game.endgame.lstrip("%")
    if end in ("SENNICHITE", "JISHOGI", "MAX_MOVES", "HIKIWAKE"):
        return 0.5, {"SENNICHITE": "draw by repetition"}.get(end, f"draw at the move limit ({end})")
    if end == "KACHI":
        return mover, "won by entering-king declaration"
    if end in ("+ILLEGAL_ACTION", "-ILLEGAL_ACTION"):
        return (0.0 if end[0] == "+" else 1.0), "perpetual check (illegal repetition)"
    if end == "TORYO":
        return 1.0 - mover, "checkmate" if is_mate(game.moves) else "resignation"
    if game.endgame == "ILLEGAL_MOVE":  # cshogi.cli's mark (no %) of a repetition lost by the side to move
        return 1.0 - mover, "lost by the repetition rule"
    words = {"TIME_UP": "loss on time (cshogi.cli's clock)", "ILLEGAL_MOVE": "illegal move"}
    return 1.0 - mover, words.get(end, end.lower())


def is_mate(moves: Sequence[str]) -> bool:
    """Whether the side to move after the CSA ``moves`` (``+7776FU`` ...) is checkmated."""
    import cshogi

    board = cshogi.Board()
    for move in moves:
        board.push_csa(move[1:])
    return bool(board.is_game_over())


def read_move_times(path: Path) -> list[list[tuple[int, float, str]]]:
    """Per game (split at ``newgame``), the stopwatch's ``(ply, ms, bestmove)``; a crash is logged as the
    move ``(-1, 0, "crash")``."""
    games: list[list[tuple[int, float, str]]] = []
    if not path.exists():
        return games
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if fields[0] == "newgame":
            games.append([])
        elif games and fields[0] == "move" and len(fields) >= 4:
            games[-1].append((int(fields[1]), float(fields[2]), fields[3]))
        elif games and fields[0] == "crash":
            games[-1].append((-1, 0.0, "crash"))
    return games


def first_overrun(moves: Sequence[tuple[int, float, str]], limit_ms: float) -> tuple[int, float] | None:
    """The first ``(ply, ms)`` over ``limit_ms``, or None."""
    for ply, ms, _ in moves:
        if ply >= 0 and ms > limit_ms:
            return ply, ms
    return None


def shogi_games(
    records: Sequence[CsaGame],
    tabula_times: Sequence[Sequence[tuple[int, float, str]]],
    opponent_times: Sequence[Sequence[tuple[int, float, str]]],
    limit_ms: float,
    openings: Sequence[str] = (),
) -> list[Game]:
    """Tabula's games from cshogi.cli's record, with the stopwatch's verdict: the first move over the
    byoyomi loses, and a crashed engine's game is its error."""
    games = []
    for i, record in enumerate(records):
        sente = record.names[0] == TABULA
        sente_points, how = csa_outcome(record)
        points = sente_points if sente else 1.0 - sente_points
        fault = faulty = None
        mine = tabula_times[i] if i < len(tabula_times) else []
        theirs = opponent_times[i] if i < len(opponent_times) else []
        over = {TABULA: first_overrun(mine, limit_ms), "opponent": first_overrun(theirs, limit_ms)}
        late = [(ply, ms, who) for who, o in over.items() if o is not None for ply, ms in [o]]
        if late:
            ply, ms, who = min(late)
            points = 0.0 if who == TABULA else 1.0
            fault, faulty = "time", who
            how = f"{who} lost on time: move {ply + 1} took {ms:.0f} ms (byoyomi {limit_ms:g} ms; cshogi.cli: {how})"
        elif record.endgame == "%ILLEGAL_MOVE":  # the side to move answered an illegal move
            tabula_moved = sente == (len(record.moves) % 2 == 0)
            fault, faulty = "illegal", TABULA if tabula_moved else "opponent"
        elif any(m[2] == "crash" for m in mine) or any(m[2] == "crash" for m in theirs):
            faulty = TABULA if any(m[2] == "crash" for m in mine) else "opponent"
            fault, how = "crash", f"{faulty} crashed ({how})"
        opening = openings[i // 2 % len(openings)] if openings else None
        games.append(Game(i + 1, sente, points, how, len(record.moves), opening, fault, faulty))
    return games


def shogi_ladder(args: argparse.Namespace, s: Settings) -> list[RungResult]:
    """Play the chosen shogi rungs through cshogi.cli, both engines behind the USI stopwatch."""
    fairy = program("fairy-stockfish")
    client = f"cshogi.cli {importlib.metadata.version('cshogi')}"
    book = OPENINGS / "shogi.txt" if s.openings else None
    names = cshogi_opening_order(book.read_text().splitlines()) if book else []
    names = [" ".join(n.split()[2:]) for n in names]  # the moves after "startpos moves"
    results = []
    for key, rung in selected(shogi_rungs(fairy), args.rungs).items():
        d = rung_folder(s.out, key)
        engine1 = usi_wrapper(d / "tabula-usi", [*s.tabula, "usi"], d / "tabula.times", d / "tabula.stderr")
        engine2 = usi_wrapper(d / "opponent-usi", rung.command, d / "opponent.times", d / "opponent.stderr")
        csa = d / "games.csa"
        command = cshogi_command(s, rung, engine1, engine2, csa, book)

        def collect(d: Path = d, csa: Path = csa) -> list[Game]:
            if not csa.exists():
                return []
            records = parse_csa(csa.read_text(encoding="utf-8"))
            t, o = read_move_times(d / "tabula.times"), read_move_times(d / "opponent.times")
            return shogi_games(records, t, o, s.byoyomi + s.margin, names)

        deadline = s.games * (s.max_moves * (s.byoyomi / 1000 + 0.5) + 60) + 60
        title = f"shogi byoyomi {s.byoyomi} ms vs {rung.name} ({key})"
        results.append(play_rung(title, client, command, d, deadline, collect, ("sente", "gote")))
    return results


# ---- Go: gogui-twogtp --------------------------------------------------------------------------------


def go_rungs(gnugo: str) -> dict[str, Rung]:
    """GNU Go levels 0, 1, 5 and 10, then Pachi (one thread) when installed."""
    rungs = {}
    for level in (0, 1, 5, 10):
        command = (gnugo, "--mode", "gtp", "--level", str(level), "--chinese-rules")
        rungs[f"gnugo{level}"] = Rung(f"gnugo{level}", f"GNU Go --level {level}", command, label="GNU Go")
    pachi = find_program("pachi")
    if pachi is not None:
        rungs["pachi"] = Rung("pachi", "Pachi (1 thread)", (pachi, "threads=1"), label="Pachi")
    return rungs


def gtp_program(command: Sequence[str]) -> str:
    """A program's command line as one twogtp argument (double quotes where a word has a space)."""
    return " ".join(f'"{w}"' if re.search(r"\s", w) else w for w in command)


def twogtp_command_line(
    twogtp: list[str], s: Settings, rung: Rung, referee: str, prefix: Path, openings: Path | None
) -> list[str]:
    """gogui-twogtp's command line: Tabula -black, colours alternating, GNU Go referee, sudden death."""
    book = ["-openings", str(openings)] if openings else []
    return [
        *twogtp,
        "-black",
        gtp_program([*s.tabula, "gtp"]),
        "-white",
        gtp_program(rung.command),
        "-referee",
        gtp_program([referee, "--mode", "gtp", "--chinese-rules"]),
        "-size",
        str(s.size),
        "-komi",
        f"{s.komi:g}",
        "-time",
        twogtp_time(s.minutes),
        "-alternate",
        "-games",
        str(s.games),
        *book,
        "-sgffile",
        str(prefix),
        "-auto",
    ]


def twogtp_time(minutes: float) -> str:
    """gogui-twogtp's ``-time`` for ``minutes`` sudden death: whole minutes as they are, else whole
    seconds with its ``s`` suffix (it refuses ``0.5``; ``30s`` is half a minute)."""
    if float(minutes).is_integer():
        return f"{minutes:g}"
    return f"{round(60 * minutes)}s"


def parse_twogtp_dat(text: str) -> list[dict[str, str]]:
    """The rows of gogui-twogtp's ``.dat`` table, by column name (``#`` lines are its header)."""
    columns: list[str] = []
    rows = []
    for line in text.splitlines():
        if line.startswith("#"):
            if line[1:].startswith("GAME\t"):
                columns = line[1:].split("\t")
            continue
        if columns and line.strip():
            values = line.split("\t")
            rows.append(dict(zip(columns, values + [""] * (len(columns) - len(values)), strict=False)))
    return rows


def go_winner(result: str) -> str | None:
    """``B``, ``W``, ``0`` (jigo) or None for a GTP score such as ``B+3.5``, ``W+R``, ``0`` or ``?``."""
    result = result.strip().upper()
    if result in ("0", "DRAW", "JIGO", "B+0", "W+0"):
        return "0"
    return result[0] if result[:2] in ("B+", "W+") else None


def go_result_words(result: str) -> str:
    """A twogtp result (from Tabula's side: B is Tabula) in words."""
    winner = go_winner(result)
    if winner == "0":
        return "jigo"
    if winner is None:
        return f"no result ({result or '?'})"
    who = TABULA if winner == "B" else "the opponent"
    margin = result.split("+", 1)[1]
    return f"{who} won by {'resignation' if margin.upper() == 'R' else margin + ' points'}"


def go_games(
    rows: Sequence[dict[str, str]], limit_s: float, opponent: str, openings: Sequence[str] = ()
) -> list[Game]:
    """Tabula's games from twogtp's ``.dat`` rows (Tabula is ``-black``: results from its side).  A game
    cut short by an error is lost by the program its message names (Tabula unless the opponent's); a
    program whose genmove time passed the sudden-death limit loses on time (if only one did)."""
    games = []
    for row in sorted(rows, key=lambda r: int(r["GAME"])):
        n = int(row["GAME"])
        referee, own = row.get("RES_R", "?"), row.get("RES_B", "?")
        time_t, time_o = float(row.get("TIME_B") or 0), float(row.get("TIME_W") or 0)
        fault = faulty = agree = None
        winner = go_winner(referee)
        if row.get("ERR") == "1":
            fault = "error"
            faulty = "opponent" if opponent and opponent.lower() in row.get("ERR_MSG", "").lower() else TABULA
            points = 1.0 if faulty == "opponent" else 0.0
            how = f"error: {row.get('ERR_MSG') or '?'}"
        elif (time_t > limit_s) != (time_o > limit_s):
            faulty = TABULA if time_t > limit_s else "opponent"
            fault, points = "time", (0.0 if faulty == TABULA else 1.0)
            how = f"{faulty} lost on time (twogtp: {go_result_words(referee)})"
        else:
            points = {"B": 1.0, "W": 0.0, "0": 0.5}.get(winner or "", 0.0)
            how = go_result_words(referee) + (" (referee)" if "+R" not in referee.upper() else "")
            if winner is None:
                fault, faulty = "error", "referee"
        if row.get("ERR") != "1" and winner is not None and "+R" not in referee.upper():
            agree = go_winner(own) == winner
            how += f"; Tabula's final_score {own or '?'}"
        how += f"; Tabula {time_t:.1f} s, opponent {time_o:.1f} s"
        length = int(row["LEN"]) if row.get("LEN", "").isdigit() else None
        opening = openings[n // 2 % len(openings)] if openings else None
        games.append(Game(n + 1, row.get("ALT") != "1", points, how, length, opening, fault, faulty, agree))
    return games


def go_ladder(args: argparse.Namespace, s: Settings) -> list[RungResult]:
    """Play the chosen Go rungs through gogui-twogtp with GNU Go as the referee."""
    twogtp = twogtp_command()
    client = client_version(twogtp)
    referee = program("gnugo")
    book = OPENINGS / f"go{s.size}" if s.openings and (OPENINGS / f"go{s.size}").is_dir() else None
    names = sorted(p.stem for p in book.glob("*.sgf")) if book else []  # twogtp sorts the file names
    results = []
    for key, rung in selected(go_rungs(referee), args.rungs).items():
        d = rung_folder(s.out, key)
        prefix = d / "games"
        command = twogtp_command_line(twogtp, s, rung, referee, prefix, book)

        def collect(prefix: Path = prefix, label: str = rung.label) -> list[Game]:
            dat = prefix.with_suffix(".dat")
            if not dat.exists():
                return []
            return go_games(parse_twogtp_dat(dat.read_text(encoding="utf-8")), 60 * s.minutes, label, names)

        deadline = s.games * (4 * 60 * s.minutes + 120) + 60
        title = f"go{s.size} {s.minutes:g} min vs {rung.name} ({key})"
        results.append(
            play_rung(title, client, command, d, deadline, collect, ("black", "white"), unit="moves")
        )
    return results


# ---- main --------------------------------------------------------------------------------------------


def settings_from(args: argparse.Namespace) -> Settings:
    """The run's settings from the command line: Tabula's command (the installed program, ``--weights``,
    ``--tabula-arg``), clocks and the records folder."""
    tabula = tabula_command()
    if args.weights:
        tabula += ["--weights", str(Path(args.weights).resolve())]
    tabula += args.tabula_arg or []
    size = 19 if args.game == "go19" else 9
    out = (
        Path(args.out)
        if args.out
        else REPO / "runs" / "ladder" / f"{args.game}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    default_moves = 300 if args.game == "chess" else 320
    return Settings(
        games=args.games,
        tabula=tabula,
        out=out.resolve(),
        tc=args.tc,
        max_moves=args.max_moves or default_moves,
        byoyomi=args.byoyomi,
        margin=args.margin,
        minutes=args.minutes,
        size=size,
        komi=args.komi,
        openings=not args.no_openings,
        concurrency=args.concurrency,
    )


def list_rungs(game: str) -> None:
    """Print the rung keys and names of a ladder (without needing the programs)."""
    rungs = {
        "chess": lambda: chess_rungs(find_program("stockfish") or "stockfish"),
        "shogi": lambda: shogi_rungs(find_program("fairy-stockfish") or "fairy-stockfish"),
    }.get(game, lambda: go_rungs(find_program("gnugo") or "gnugo"))()
    for key, rung in rungs.items():
        print(f"{key}\t{rung.name}")


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, play the rungs and print the results."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("game", choices=["chess", "shogi", "go9", "go19"])
    parser.add_argument("--games", type=int, default=20, help="games per rung (pairs: even numbers)")
    parser.add_argument("--weights", default=None, help="network for Tabula (default: its shipped network)")
    parser.add_argument(
        "--tabula-arg",
        action="append",
        metavar="ARG",
        help="one more word of Tabula's command line (repeatable), e.g. --tabula-arg=--threads --tabula-arg=1",
    )
    parser.add_argument("--tc", default="10+0.1", help="chess: cutechess time control (default 10+0.1)")
    parser.add_argument(
        "--concurrency", type=int, default=1, help="chess: games cutechess-cli plays at once (default 1)"
    )
    parser.add_argument("--byoyomi", type=int, default=1000, help="shogi: byoyomi in milliseconds")
    parser.add_argument("--margin", type=int, default=0, help="shogi: ms a move may exceed the byoyomi")
    parser.add_argument("--minutes", type=float, default=1.0, help="Go: twogtp -time, minutes sudden death")
    parser.add_argument("--komi", type=float, default=7.5)
    parser.add_argument(
        "--max-moves", type=int, default=None, help="draw cap: chess full moves (300), shogi moves (320)"
    )
    parser.add_argument(
        "--no-openings", action="store_true", help="start every game from the initial position"
    )
    parser.add_argument("--out", default=None, help="records and logs (default runs/ladder/GAME-DATE)")
    parser.add_argument(
        "--rungs", nargs="+", default=None, help="rung keys to play (default: all; see --list)"
    )
    parser.add_argument("--list", action="store_true", help="print the rung keys of this ladder and exit")
    parser.add_argument("--summary", action="store_true", help="end with one Markdown table of the rungs")
    args = parser.parse_args(argv)
    if args.list:
        list_rungs(args.game)
        return
    if args.games < 1:
        raise SystemExit("--games must be at least 1")
    s = settings_from(args)  # each rung makes its own folder under s.out
    print(f"-- {args.game} ladder: {s.games} games a rung, records in {s.out}", flush=True)
    start = time.time()
    ladders: dict[str, Callable[[argparse.Namespace, Settings], list[RungResult]]] = {
        "chess": chess_ladder,
        "shogi": shogi_ladder,
        "go9": go_ladder,
        "go19": go_ladder,
    }
    results = ladders[args.game](args, s)
    print(f"-- {args.game} ladder, {time.time() - start:.0f} s:")
    for result in results:
        print(result.line())
    if args.summary:
        print("\n".join([*SUMMARY_HEADER, *(r.row() for r in results)]))


if __name__ == "__main__":
    main()
