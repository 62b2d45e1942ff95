"""Soak: a long match on the real client, Tabula's process read after every game.

    python benchmarks/soak.py chess --games 300 --tc 2+0.05          # cutechess-cli against Stockfish
    python benchmarks/soak.py shogi --games 150 --byoyomi 300        # cshogi.cli against Fairy-Stockfish
    python benchmarks/soak.py go9 --games 150 --minutes 0.5          # gogui-twogtp against GNU Go, GNU Go referee

The match is one rung of the strength ladder (``benchmarks/ladder.py``: the same clients, clocks,
openings and records; ``--rung`` picks it), played by a thread of this script while the main thread
watches the records.  Each time a record gains a game, Tabula's engine process (found in ``/proc`` by its
command line) is read: its resident memory (``VmRSS``), open file descriptors and threads.  A process that
is replaced between games (a crash, a client's restart) shows as a new pid.  Every process is also read
twice a second while it lives, so its last reading is its memory at the end of its life: cshogi.cli
starts a new engine for every game (its ``main`` sends ``quit`` after each game unless
``--keep-process``, which keeps it for a pair of games only), and there the memory compared is the end
of life of the process that played game 10 against that of the process that played the last game.  The script ends with the rung's faults and time losses
(as the ladder counts them), the memory after the last game against after the tenth and the engines
left running after the match; it exits 1 when a game was lost by a fault or on time, the memory grew by
more than ``--memory-tolerance`` (10 %), or an engine process outlived the match.  Linux only
(``/proc``).
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
    """``pid``'s resident memory, descriptors and threads (``None`` when it has exited, reaped or not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if "VmRSS" not in fields:  # a zombie: exited, not yet reaped by its client
        return None
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


@dataclasses.dataclass
class Watched:
    """What :func:`watch` saw: a reading after every game, each process's last reading, the most at once."""

    after_games: list[Reading] = dataclasses.field(default_factory=list)
    last_of: dict[int, Reading] = dataclasses.field(default_factory=dict)
    most_alive: int = 0


def watch(game: str, folder: Path, program: str, running: Callable[[], bool], poll_s: float = 0.5) -> Watched:
    """Read Tabula's processes every ``poll_s`` and after every game, until ``running()`` turns false."""
    seen = Watched()
    games = 0
    while running():
        time.sleep(poll_s)
        count = finished_games(game, folder)
        pids = engine_pids(program, PROTOCOL[game])
        seen.most_alive = max(seen.most_alive, len(pids))
        for pid in pids:
            reading = read_process(pid, max(count, games))
            if reading is None:
                continue
            seen.last_of[pid] = reading
            if count > games:
                seen.after_games.append(reading)
                print(
                    f"  after game {count}: pid {pid}, {reading.rss_mb:.1f} MB resident, "
                    f"{reading.fds} fds, {reading.threads} threads",
                    flush=True,
                )
        games = max(games, count)
    return seen


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
    left_running: int = 0

    @property
    def growth(self) -> float | None:
        """Memory after the last game over memory after the tenth, less 1."""
        if self.rss_tenth_mb is None or self.rss_last_mb is None:
            return None
        return self.rss_last_mb / self.rss_tenth_mb - 1.0

    @property
    def ok(self) -> bool:
        growth = self.growth
        return (
            self.faults == 0
            and self.time_losses == 0
            and (growth is None or growth <= self.tolerance)
            and self.left_running == 0
        )

    def line(self) -> str:
        growth = "n/a (fewer than 10 games)" if self.growth is None else f"{100 * self.growth:+.1f}%"
        tenth = "n/a" if self.rss_tenth_mb is None else f"{self.rss_tenth_mb:.1f}"
        last = "n/a" if self.rss_last_mb is None else f"{self.rss_last_mb:.1f}"
        return (
            f"games {self.games}, faults {self.faults}, time losses {self.time_losses}, engine processes "
            f"{self.pids}, memory after game 10 {tenth} MB, after the last {last} MB ({growth}), fds "
            f"{self.fds[0]}..{self.fds[1]}, threads {self.threads[0]}..{self.threads[1]}, left running "
            f"{self.left_running}: " + ("ok" if self.ok else "FAILED")
        )


def memory_tenth_and_last(seen: Watched) -> tuple[float | None, float | None]:
    """Resident MB after game 10 and after the last game (``None`` before ten games).

    One process that played from game 10 to the end is read after those games; when the client started
    new processes on the way, each is taken at its last reading (the end of its life): the first that
    lived to see nine games finished played game 10, the one read last played the last game.
    """
    if not seen.after_games:
        return None, None
    pid = seen.after_games[-1].pid
    same = [r for r in seen.after_games if r.pid == pid]
    tenth = next((r.rss_mb for r in same if r.games >= 10), None)
    if tenth is not None and same[0].games <= 10:
        return tenth, same[-1].rss_mb
    ends = sorted(seen.last_of.values(), key=lambda r: (r.games, r.pid))
    tenth = next((r.rss_mb for r in ends if r.games >= 9), None)
    if tenth is None or ends[-1].games < 10:
        return None, None
    return tenth, ends[-1].rss_mb


def verdict(result: ladder.RungResult, seen: Watched, tolerance: float, left_running: int = 0) -> Verdict:
    """The soak's figures from the rung's games, the process readings and the engines left running."""
    faults, time_losses = result.faults(ladder.TABULA)
    readings = seen.after_games + list(seen.last_of.values())
    tenth, last = memory_tenth_and_last(seen)
    return Verdict(
        games=len(result.games),
        faults=faults,
        time_losses=time_losses,
        pids=len({r.pid for r in readings}),
        rss_tenth_mb=tenth,
        rss_last_mb=last,
        fds=(min((r.fds for r in readings), default=0), max((r.fds for r in readings), default=0)),
        threads=(
            min((r.threads for r in readings), default=0),
            max((r.threads for r in readings), default=0),
        ),
        tolerance=tolerance,
        left_running=left_running,
    )


def engines_left(program: str, protocol: str, grace_s: float = 10.0) -> list[int]:
    """Tabula's processes still running ``grace_s`` after the match ended (none when all quit)."""
    deadline = time.monotonic() + grace_s
    while (pids := engine_pids(program, protocol)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pids


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
    seen = watch(args.game, settings.out / largs.rungs[0], settings.tabula[0], thread.is_alive)
    thread.join()
    left = engines_left(settings.tabula[0], PROTOCOL[args.game])
    if not results:
        print("the match did not run", file=sys.stderr)
        return 1
    result = results[0]
    print(f"-- soak {args.game}, {time.time() - started:.0f} s")
    print(result.line())
    print(f"engine processes: {len(seen.last_of)}, at most {seen.most_alive} at once, left running {left}")
    outcome = verdict(result, seen, args.memory_tolerance, len(left))
    print(outcome.line())
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
