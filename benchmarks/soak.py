"""Soak: a long match on the real client, Tabula's process read after every game.

    python benchmarks/soak.py chess --games 300 --tc 2+0.05          # cutechess-cli against Stockfish
    python benchmarks/soak.py shogi --games 150 --byoyomi 300        # cshogi.cli against Fairy-Stockfish
    python benchmarks/soak.py go9 --games 150 --minutes 0.5          # gogui-twogtp against GNU Go, GNU Go referee

The match is one rung of the strength ladder (``benchmarks/ladder.py``: the same clients, clocks,
openings and records; ``--rung`` picks it), played by a thread of this script while the main thread
watches the records.  Each time a record gains a game, Tabula's engine process (found in ``/proc`` by its
command line) is read: its resident memory (``VmRSS``), open file descriptors and threads.  A process that
is replaced between games (a crash, a client's restart) shows as a new pid.  The script ends with the
table of readings, the rung's faults and time losses (as the ladder counts them), and the memory after
the last game against after the tenth; it exits 1 when a game was lost by a fault or on time, or the
memory grew by more than ``--memory-tolerance`` (10 %).  Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import ladder

#: The protocol word Tabula is started with under each game's client.
PROTOCOL = {"chess": "uci", "shogi": "usi", "go9": "gtp"}
#: Each game's default opponent (a ladder rung Tabula plays even games against).
DEFAULT_RUNG = {"chess": "sf-elo1600", "shogi": "fairy1", "go9": "gnugo5"}


@dataclasses.dataclass(frozen=True)
class Reading:
    """Tabula's engine process after one game."""

    games: int
    pid: int
    rss_mb: float
    fds: int
    threads: int


def engine_pids(program: str, protocol: str) -> list[int]:
    """The processes whose command line runs ``program`` (its file name) with the word ``protocol``."""
    name = Path(program).name
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        text = [w.decode("utf-8", "replace") for w in words if w]
        if protocol in text and any(Path(w).name == name for w in text[:3]):
            found.append(int(entry))
    return sorted(found)


def read_process(pid: int, games: int) -> Reading | None:
    """``pid``'s resident memory, descriptors and threads (``None`` when it has exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss_kb = float(fields["VmRSS"].split()[0])
    return Reading(games, pid, rss_kb / 1024.0, fds, int(fields["Threads"]))


def finished_games(game: str, folder: Path) -> int:
    """How many games the rung's record holds (the ladder's own record readers)."""
    try:
        if game == "chess":
            pgn = folder / "games.pgn"
            return len(ladder.parse_cutechess_pgn(pgn.read_text(encoding="utf-8"))) if pgn.exists() else 0
        if game == "shogi":
            csa = folder / "games.csa"
            return len(ladder.parse_csa(csa.read_text(encoding="utf-8"))) if csa.exists() else 0
        dat = folder / "games.dat"
        return len(ladder.parse_twogtp_dat(dat.read_text(encoding="utf-8"))) if dat.exists() else 0
    except (OSError, ValueError, KeyError, IndexError):
        return -1  # a record being written: read it again next time


def watch(
    game: str, folder: Path, program: str, running: Callable[[], bool], poll_s: float = 0.5
) -> list[Reading]:
    """Read Tabula's process each time the record gains a game, until ``running()`` turns false."""
    readings: list[Reading] = []
    seen = 0
    while running():
        time.sleep(poll_s)
        count = finished_games(game, folder)
        if count <= seen:
            continue
        seen = count
        for pid in engine_pids(program, PROTOCOL[game]):
            reading = read_process(pid, count)
            if reading is not None:
                readings.append(reading)
                print(
                    f"  after game {count}: pid {pid}, {reading.rss_mb:.1f} MB resident, "
                    f"{reading.fds} fds, {reading.threads} threads",
                    flush=True,
                )
    return readings


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The soak's figures and whether they hold."""

    games: int
    faults: int
    time_losses: int
    pids: int
    rss_tenth_mb: float | None
    rss_last_mb: float | None
    fds: tuple[int, int]
    threads: tuple[int, int]
    tolerance: float

    @property
    def growth(self) -> float | None:
        """Memory after the last game over memory after the tenth, less 1."""
        if self.rss_tenth_mb is None or self.rss_last_mb is None:
            return None
        return self.rss_last_mb / self.rss_tenth_mb - 1.0

    @property
    def ok(self) -> bool:
        growth = self.growth
        return self.faults == 0 and self.time_losses == 0 and (growth is None or growth <= self.tolerance)

    def line(self) -> str:
        growth = "n/a (fewer than 10 games)" if self.growth is None else f"{100 * self.growth:+.1f}%"
        tenth = "n/a" if self.rss_tenth_mb is None else f"{self.rss_tenth_mb:.1f}"
        last = "n/a" if self.rss_last_mb is None else f"{self.rss_last_mb:.1f}"
        return (
            f"games {self.games}, faults {self.faults}, time losses {self.time_losses}, engine processes "
            f"{self.pids}, memory after game 10 {tenth} MB, after the last {last} MB ({growth}), fds "
            f"{self.fds[0]}..{self.fds[1]}, threads {self.threads[0]}..{self.threads[1]}: "
            + ("ok" if self.ok else "FAILED")
        )


def verdict(result: ladder.RungResult, readings: list[Reading], tolerance: float) -> Verdict:
    """The soak's figures from the rung's games and the process readings."""
    faults, time_losses = result.faults(ladder.TABULA)
    pid = readings[-1].pid if readings else None
    same = [r for r in readings if r.pid == pid]  # the process that played the last game
    tenth = next((r.rss_mb for r in same if r.games >= 10), None)
    return Verdict(
        games=len(result.games),
        faults=faults,
        time_losses=time_losses,
        pids=len({r.pid for r in readings}),
        rss_tenth_mb=tenth,
        rss_last_mb=same[-1].rss_mb if same and tenth is not None else None,
        fds=(min((r.fds for r in readings), default=0), max((r.fds for r in readings), default=0)),
        threads=(
            min((r.threads for r in readings), default=0),
            max((r.threads for r in readings), default=0),
        ),
        tolerance=tolerance,
    )


def ladder_args(args: argparse.Namespace) -> argparse.Namespace:
    """The ladder's command line for one rung of this soak."""
    return argparse.Namespace(
        game=args.game,
        games=args.games,
        weights=args.weights,
        tabula_arg=args.tabula_arg,
        tc=args.tc,
        byoyomi=args.byoyomi,
        margin=0,
        minutes=args.minutes,
        komi=7.5,
        max_moves=None,
        no_openings=False,
        out=args.out,
        rungs=[args.rung or DEFAULT_RUNG[args.game]],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("game", choices=sorted(PROTOCOL))
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument(
        "--rung", default=None, help="the ladder rung to play (default: " + str(DEFAULT_RUNG) + ")"
    )
    parser.add_argument("--tc", default="2+0.05", help="chess: cutechess time control")
    parser.add_argument("--byoyomi", type=int, default=300, help="shogi: byoyomi in milliseconds")
    parser.add_argument("--minutes", type=float, default=0.5, help="Go: minutes sudden death a side")
    parser.add_argument("--weights", default=None)
    parser.add_argument("--tabula-arg", action="append", metavar="ARG")
    parser.add_argument("--memory-tolerance", type=float, default=0.10)
    parser.add_argument("--out", default=None, help="records (default runs/soak/GAME-DATE)")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = str(ladder.REPO / "runs" / "soak" / f"{args.game}-{time.strftime('%Y%m%d-%H%M%S')}")
    largs = ladder_args(args)
    settings = ladder.settings_from(largs)
    play = {"chess": ladder.chess_ladder, "shogi": ladder.shogi_ladder, "go9": ladder.go_ladder}[args.game]
    results: list[ladder.RungResult] = []
    thread = threading.Thread(target=lambda: results.extend(play(largs, settings)), name="soak-match")
    print(f"-- soak {args.game}: {args.games} games, records in {settings.out}", flush=True)
    started = time.time()
    thread.start()
    readings = watch(args.game, settings.out / largs.rungs[0], settings.tabula[0], thread.is_alive)
    thread.join()
    if not results:
        print("the match did not run", file=sys.stderr)
        return 1
    result = results[0]
    print(f"-- soak {args.game}, {time.time() - started:.0f} s")
    print(result.line())
    outcome = verdict(result, readings, args.memory_tolerance)
    print(outcome.line())
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
