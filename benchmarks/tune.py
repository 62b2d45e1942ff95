"""SPSA tuner for the search's PUCT constants, every game played by the real match client.

    python benchmarks/tune.py chess --params CPuct,FpuReduction --iterations 50 --games-per-iteration 2 \\
        --tc 10+0.1 --log runs/tune-chess.jsonl
    python benchmarks/tune.py shogi --params CPuct --iterations 2 --byoyomi 200 --log runs/tune-shogi.jsonl
    python benchmarks/tune.py go9 --params CPuct --iterations 2 --minutes 1 --log runs/tune-go9.jsonl
    python benchmarks/tune.py chess --params CPuct --iterations 0 --log runs/tune-chess.jsonl --confirm 100 \\
        --sprt 0,10

Simultaneous perturbation stochastic approximation (Spall; fishtest's and lc0's tuners): iteration ``k``
draws ``delta`` in ``{-1, +1}^p`` and plays ``theta + c_k delta`` against ``theta - c_k delta`` (Tabula
against Tabula, openings from ``trainer/evaluate/openings`` in colour-reversed pairs); with ``r`` the plus
engine's points less the minus engine's, per game (in ``[-1, 1]``), each parameter moves by
``a_k r / (2 c_k delta_i)`` and is clipped to its range.  Gains: ``a_k = a / (A + k + 1)^0.602`` and
``c_k = c / (k + 1)^0.101``; ``c`` is a twentieth of the parameter's range (``--c-fraction``) and ``a`` is set
so that at ``k = 0`` a whole-match win moves the parameter by ``c`` (``--a-scale`` multiplies it); ``A`` is a
tenth of ``--iterations`` (of the first run's, when a log is resumed).  The engines play the values rounded
to the options' units (hundredths; ``CPuctBase`` whole visits).

Openings: iteration ``k`` starts at suite index ``k * games_per_iteration / 2`` (modulo the suite's size)
and walks on, each opening played twice with colours reversed; the iteration's folder holds the suite
rotated to that start, in the order its client plays it (chess ``openings.pgn``, cutechess-cli
``order=sequential``; shogi ``openings.txt``, written so that cshogi.cli's ``--opening-seed 1`` shuffle
yields the rotation; Go ``openings/``, copies named in rotated order for gogui-twogtp, which plays files in
name order).  The confirm match walks through the suite the same way.

Clients: chess cutechess-cli (the values as ``option.CPuct=...``, hundredths but ``CPuctBase``), shogi
``python -m cshogi.cli`` with both engines behind ``benchmarks/usi_timer.py`` (``tabula --cpuct ... usi``),
Go gogui-twogtp with GNU Go as referee (``tabula --cpuct ... gtp``).  Commands, records and result parsing
are the strength ladder's (``benchmarks/ladder.py``).  In Go both programs answer ``name`` with Tabula, so
twogtp's error messages cannot tell whose error cut a game short: such games (and games the referee could
not score) are left out of ``r`` and logged under ``dropped``.

The log (``--log``) holds one JSON line per iteration, appended and flushed when the iteration's match has
ended: run the same command again and it resumes after the last whole line (a kill loses at most the
iteration in flight; a line cut short is ignored).  A log of other parameters or another game is refused,
and so is a resume with another ``--seed``, ``--c-fraction``, ``--a-scale`` or ``--games-per-iteration``.
``--confirm N`` then plays N games of the final theta against the defaults (``--sprt`` plays them a pair at
a time and stops on cutechess-style SPRT bounds) and prints W/D/L and Elo.  Smoke runs prove the tool, not
values: a real tuning run needs hundreds of games at the ladder's clocks on a quiet machine
(``docs/tuning.md``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks import ladder  # noqa: E402
from trainer.evaluate.elo import MatchResult  # noqa: E402
from trainer.evaluate.sprt import SprtSettings, SprtTracker  # noqa: E402

ALPHA = 0.602  # a_k's exponent (Spall)
GAMMA = 0.101  # c_k's exponent
GAMES = ("chess", "shogi", "go9")

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Param:
    """A tunable parameter: its option name, command-line flag, option units per unit, default and the
    range the tuner keeps it in (real values)."""

    name: str
    flag: str
    scale: int
    default: float
    low: float
    high: float

    def option_value(self, value: float) -> int:
        """The UCI/USI option's integer for a real value."""
        return round(value * self.scale)

    def played(self, value: float) -> float:
        """The real value the engine plays: ``value`` rounded to the option's units."""
        return self.option_value(value) / self.scale


#: The search's PUCT constants (``protocols/search_options.py``; defaults ``SearchConfig``'s), with the
#: ranges the tuner explores: narrower than the options accept, wide enough around the paper's values.
PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("CPuct", "--cpuct", 100, 1.25, 0.25, 5.0),
        Param("CPuctBase", "--cpuct-base", 1, 19652.0, 1000.0, 100_000.0),
        Param("FpuReduction", "--fpu-reduction", 100, 0.25, 0.0, 1.5),
        Param("FpuReductionRoot", "--fpu-reduction-root", 100, 0.25, 0.0, 1.5),
    )
}


# ---- SPSA arithmetic (pure) -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Gains:
    """SPSA's gain schedule for one parameter: ``a_k = a / (A + k + 1)^0.602``, ``c_k = c / (k + 1)^0.101``."""

    a: float
    c: float
    big_a: float

    def a_k(self, k: int) -> float:
        return self.a / float((self.big_a + k + 1) ** ALPHA)

    def c_k(self, k: int) -> float:
        return self.c / float((k + 1) ** GAMMA)


def default_gains(param: Param, iterations: int, c_fraction: float = 0.05, a_scale: float = 1.0) -> Gains:
    """``c``: ``c_fraction`` of the range; ``A``: a tenth of the iterations; ``a``: so that at ``k = 0`` a
    score difference of 1 moves the parameter by ``c`` (times ``a_scale``)."""
    c = c_fraction * (param.high - param.low)
    big_a = iterations / 10.0
    a = a_scale * 2.0 * c * c * (big_a + 1) ** ALPHA
    return Gains(a, c, big_a)


def clip(value: float, param: Param) -> float:
    """``value`` within the parameter's range."""
    return min(param.high, max(param.low, value))


def perturbation(rng: random.Random, count: int) -> list[int]:
    """A Rademacher vector: ``count`` independent signs ``-1`` / ``+1``."""
    return [rng.choice((-1, 1)) for _ in range(count)]


def perturbed(
    theta: Sequence[float], delta: Sequence[int], c: Sequence[float], params: Sequence[Param]
) -> tuple[list[float], list[float]]:
    """The pair of engines: ``theta + c delta`` and ``theta - c delta``, each clipped to the ranges."""
    plus = [clip(t + ck * d, p) for t, d, ck, p in zip(theta, delta, c, params, strict=True)]
    minus = [clip(t - ck * d, p) for t, d, ck, p in zip(theta, delta, c, params, strict=True)]
    return plus, minus


def score_difference(plus_points: float, games: int) -> float:
    """The plus engine's points less the minus engine's, per game (``[-1, 1]``; no games: 0)."""
    return (2.0 * plus_points - games) / games if games else 0.0


def spsa_update(
    theta: Sequence[float],
    delta: Sequence[int],
    r: float,
    a: Sequence[float],
    c: Sequence[float],
    params: Sequence[Param],
) -> list[float]:
    """``theta_i + a_i r / (2 c_i delta_i)``, clipped to each parameter's range."""
    return [
        clip(t + ak * r / (2.0 * ck * d), p)
        for t, d, ak, ck, p in zip(theta, delta, a, c, params, strict=True)
    ]


# ---- openings (pure but for the files written) ------------------------------------------------------


def opening_start(k: int, games_per_iteration: int, suite_size: int) -> int:
    """The suite index iteration ``k`` starts at: ``k * games_per_iteration / 2`` modulo the suite's size
    (each opening is played by a pair of games)."""
    return k * (games_per_iteration // 2) % suite_size if suite_size else 0


def rotated(items: Sequence[T], start: int) -> list[T]:
    """``items`` starting at index ``start`` (modulo their number) and wrapping round."""
    if not items:
        return []
    start %= len(items)
    return [*items[start:], *items[:start]]


def pgn_games(text: str) -> list[str]:
    """The games of a PGN file, each its tag lines and movetext (stripped)."""
    games: list[str] = []
    current: list[str] = []
    in_moves = False
    for line in text.splitlines():
        if line.startswith("[") and in_moves:  # a tag after movetext starts the next game
            games.append("\n".join(current).strip())
            current, in_moves = [], False
        if line.strip() and not line.startswith("["):
            in_moves = True
        current.append(line)
    if "\n".join(current).strip():
        games.append("\n".join(current).strip())
    return games


def cshogi_file_order(wanted: Sequence[str], seed: int = 1) -> list[str]:
    """The lines to write so that cshogi.cli, shuffling them with ``--opening-seed seed``, plays
    ``wanted`` in order: line ``P[j]`` holds ``wanted[j]`` where ``P`` is the shuffle's permutation."""
    permutation = [int(i) for i in ladder.cshogi_opening_order([str(i) for i in range(len(wanted))], seed)]
    lines = [""] * len(wanted)
    for j, source in enumerate(permutation):
        lines[source] = wanted[j]
    return lines


@dataclasses.dataclass(frozen=True)
class Book:
    """The openings one match plays: the file or folder its client reads and their names, in play order
    (game ``n``, counting from 0, plays ``names[n // 2]``, wrapping round)."""

    path: Path
    names: list[str]


def suite_size(game: str, go_size: int = 9) -> int:
    """How many openings the game's suite holds."""
    if game == "chess":
        return len(pgn_games((ladder.OPENINGS / "chess.pgn").read_text(encoding="utf-8")))
    if game == "shogi":
        return len(shogi_lines())
    return len(list((ladder.OPENINGS / f"go{go_size}").glob("*.sgf")))


def shogi_lines() -> list[str]:
    """The shogi suite's ``startpos moves ...`` lines."""
    text = (ladder.OPENINGS / "shogi.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def write_book(game: str, folder: Path, start: int, go_size: int = 9) -> Book:
    """Write the game's suite into ``folder``, rotated to start at index ``start``, as its client reads
    it; the openings' names in the order the client plays them."""
    if game == "chess":
        games = rotated(pgn_games((ladder.OPENINGS / "chess.pgn").read_text(encoding="utf-8")), start)
        path = folder / "openings.pgn"
        path.write_text("\n\n".join(games) + "\n", encoding="utf-8")
        return Book(path, ladder.pgn_opening_names(path))
    if game == "shogi":
        wanted = rotated(shogi_lines(), start)
        path = folder / "openings.txt"
        path.write_text("\n".join(cshogi_file_order(wanted)) + "\n", encoding="utf-8")
        played = ladder.cshogi_opening_order(path.read_text(encoding="utf-8").splitlines())
        assert played == wanted, "cshogi.cli's shuffle does not give the rotation"
        return Book(path, [" ".join(line.split()[2:]) for line in played])
    files = rotated(sorted((ladder.OPENINGS / f"go{go_size}").glob("*.sgf")), start)
    path = folder / "openings"
    path.mkdir()
    for j, source in enumerate(files):  # gogui-twogtp sorts the file names: the prefix gives the order
        shutil.copyfile(source, path / f"{j:03d}-{source.name}")
    return Book(path, [p.stem for p in files])


def match_openings(book: Book, games: int) -> list[str]:
    """The openings a match of ``games`` games plays, one per pair."""
    return [book.names[i % len(book.names)] for i in range((games + 1) // 2)] if book.names else []


# ---- the log ----------------------------------------------------------------------------------------


def read_log(path: Path) -> list[dict[str, Any]]:
    """The whole iteration records of a log; a last line cut short (a kill mid-write) is left out."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("k"), int) and "theta_after" in record:
            records.append(record)
    return records


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line in one write, flushed to disk; a line left cut short by an earlier kill is
    ended first so that the new record stays whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = ""
    if path.exists() and path.stat().st_size:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            prefix = "" if f.read(1) == b"\n" else "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(prefix + json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def resume_theta(
    records: Sequence[dict[str, Any]], names: Sequence[str], start: Sequence[float]
) -> list[float]:
    """Theta after the last logged iteration (``start`` with none); the log's parameters must be ours and
    its iterations numbered 0, 1, 2 ... in order."""
    if not records:
        return list(start)
    ks = [r["k"] for r in records]
    if ks != list(range(len(records))):
        raise SystemExit(
            f"the log's iterations are not 0 ... {len(records) - 1} in order: give another --log"
        )
    last = records[-1]["theta_after"]
    if sorted(last) != sorted(names):
        raise SystemExit(
            f"the log tunes {', '.join(sorted(last))}, not {', '.join(names)}: give another --log"
        )
    return [float(last[n]) for n in names]


#: The run settings a resumed log must share (the gain schedule's iterations come from the log).
RESUME_KEYS = ("game", "seed", "c_fraction", "a_scale", "games_per_iteration")


def resume_settings(records: Sequence[dict[str, Any]], settings: dict[str, Any], playing: bool) -> int:
    """The iterations the gain schedule was set for (the first run's ``--iterations``; ``settings``' own
    without a log); exits when the log is another game's or, with iterations still to play, another
    run's settings."""
    logged = records[-1].get("settings") if records else None
    if not isinstance(logged, dict):
        return int(settings["schedule_iterations"])
    if logged.get("game") != settings["game"]:
        raise SystemExit(f"the log tunes {logged.get('game')}, not {settings['game']}: give another --log")
    if playing:
        differ = [k for k in RESUME_KEYS if logged.get(k) != settings[k]]
        if differ:
            was = ", ".join(f"--{k.replace('_', '-')} {logged.get(k)}" for k in differ)
            raise SystemExit(f"the log was run with {was}: resume with the same or give another --log")
    return int(logged.get("schedule_iterations", settings["schedule_iterations"]))


# ---- matches on the real clients --------------------------------------------------------------------


@dataclasses.dataclass
class Match:
    """What one match needs: the game and its clocks (a ladder Settings)."""

    game: str
    settings: ladder.Settings


def engine_flags(values: dict[str, float]) -> list[str]:
    """Tabula's command-line flags for parameter values (real values, rounded to the options' units)."""
    return [w for name, v in values.items() for w in (PARAMS[name].flag, f"{PARAMS[name].played(v):g}")]


def engine_options(values: dict[str, float]) -> list[tuple[str, str]]:
    """The UCI/USI options for parameter values."""
    return [(name, str(PARAMS[name].option_value(v))) for name, v in values.items()]


def fresh_folder(parent: Path, name: str) -> Path:
    """A new, empty folder ``parent/name`` (``name-2``, ``name-3`` ... when it is taken)."""
    folder, n = parent / name, 1
    while folder.exists():
        n += 1
        folder = parent / f"{name}-{n}"
    folder.mkdir(parents=True)
    return folder


def unscored(game: str, g: ladder.Game) -> bool:
    """A game that says nothing about the engines: in Go an error that twogtp cannot lay on either Tabula
    (both are named Tabula) or a game the referee did not score."""
    return game == "go9" and g.fault == "error"


def play(
    match: Match, first: dict[str, float], second: dict[str, float], folder: Path, label: str, start: int
) -> tuple[list[ladder.Game], Book]:
    """Play ``first`` against ``second`` through the game's client from opening ``start`` on, in the new
    folder ``folder``; the games from ``first``'s side (``ladder.TABULA``) and the openings' book."""
    s = dataclasses.replace(match.settings, out=folder.parent)
    d = folder
    book = write_book(match.game, d, start, s.size)
    if match.game == "chess":
        cutechess = ladder.cutechess_cli()
        rung = ladder.Rung("second", "Tabula-second", (*s.tabula, "uci"), tuple(engine_options(second)))
        pgn = d / "games.pgn"
        command = ladder.cutechess_command(
            cutechess, s, rung, pgn, d / "tabula.stderr", book.path, engine_options(first)
        )

        def collect_chess() -> list[ladder.Game]:
            if not pgn.exists():
                return []
            return ladder.parse_cutechess_pgn(pgn.read_text(encoding="utf-8"), book.names)

        deadline = s.games * (2 * ladder.tc_seconds(s.tc) + 60) + 60
        client = ladder.client_version([cutechess], ladder.QT_ENV)
        result = ladder.play_rung(
            label, client, command, d, deadline, collect_chess, ("white", "black"), ladder.QT_ENV
        )
    elif match.game == "shogi":
        import importlib.metadata

        e1 = ladder.usi_wrapper(
            d / "first-usi", [*s.tabula, *engine_flags(first), "usi"], d / "tabula.times", d / "tabula.stderr"
        )
        e2 = ladder.usi_wrapper(
            d / "second-usi",
            [*s.tabula, *engine_flags(second), "usi"],
            d / "opponent.times",
            d / "opponent.stderr",
        )
        csa = d / "games.csa"
        command = ladder.cshogi_command(s, ladder.Rung("second", "Tabula-second", ()), e1, e2, csa, book.path)

        def collect_shogi() -> list[ladder.Game]:
            if not csa.exists():
                return []
            records = ladder.parse_csa(csa.read_text(encoding="utf-8"))
            t, o = ladder.read_move_times(d / "tabula.times"), ladder.read_move_times(d / "opponent.times")
            return ladder.shogi_games(records, t, o, s.byoyomi + s.margin, book.names)

        deadline = s.games * (s.max_moves * (s.byoyomi / 1000 + 0.5) + 60) + 60
        client = f"cshogi.cli {importlib.metadata.version('cshogi')}"
        result = ladder.play_rung(label, client, command, d, deadline, collect_shogi, ("sente", "gote"))
    else:
        twogtp = ladder.twogtp_command()
        referee = ladder.program("gnugo")
        s_first = dataclasses.replace(s, tabula=[*s.tabula, *engine_flags(first)])
        second_command = (*s.tabula, *engine_flags(second), "gtp")
        rung = ladder.Rung("second", "Tabula-second", second_command, label="Tabula-second")
        prefix = d / "games"
        command = ladder.twogtp_command_line(twogtp, s_first, rung, referee, prefix, book.path)

        def collect_go() -> list[ladder.Game]:
            dat = prefix.with_suffix(".dat")
            if not dat.exists():
                return []
            rows = ladder.parse_twogtp_dat(dat.read_text(encoding="utf-8"))
            return ladder.go_games(rows, 60 * s.minutes, "", book.names)

        deadline = s.games * (4 * 60 * s.minutes + 120) + 60
        client = ladder.client_version(twogtp)
        result = ladder.play_rung(
            label, client, command, d, deadline, collect_go, ("black", "white"), unit="moves"
        )
    return result.games, book


# ---- the tuner --------------------------------------------------------------------------------------


def fmt(names: Sequence[str], values: Sequence[float]) -> str:
    """``CPuct=1.25 CPuctBase=19652``."""
    return " ".join(f"{n}={v:.6g}" for n, v in zip(names, values, strict=True))


def run_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What a resumed log must share with this run (and the gain schedule's iterations)."""
    return {
        "game": args.game,
        "seed": args.seed,
        "c_fraction": args.c_fraction,
        "a_scale": args.a_scale,
        "games_per_iteration": args.games_per_iteration,
        "schedule_iterations": args.iterations,
    }


def tune(args: argparse.Namespace, match: Match, params: list[Param], log: Path) -> list[float]:
    """Run the SPSA iterations the log lacks; theta after the last one."""
    names = [p.name for p in params]
    records = read_log(log)
    theta = resume_theta(records, names, [p.default for p in params])
    settings = run_settings(args)
    schedule = resume_settings(records, settings, playing=len(records) < args.iterations)
    settings["schedule_iterations"] = schedule
    if records:
        print(f"-- resuming after iteration {records[-1]['k']} from {log}: {fmt(names, theta)}", flush=True)
        if schedule != args.iterations and len(records) < args.iterations:
            print(f"-- the gains keep the log's schedule (A for {schedule} iterations)", flush=True)
    gains = [default_gains(p, schedule, args.c_fraction, args.a_scale) for p in params]
    size = suite_size(match.game, match.settings.size)
    for k in range(len(records), args.iterations):
        rng = random.Random(f"{args.seed}:{k}")  # the same draw when an iteration is played again
        delta = perturbation(rng, len(params))
        a = [g.a_k(k) for g in gains]
        c = [g.c_k(k) for g in gains]
        plus, minus = perturbed(theta, delta, c, params)
        start = opening_start(k, args.games_per_iteration, size)
        folder = fresh_folder(log.parent / f"{log.stem}-games", f"iter{k:04d}-{time.strftime('%H%M%S')}")
        games, book = play(
            match,
            dict(zip(names, plus, strict=True)),
            dict(zip(names, minus, strict=True)),
            folder,
            f"iteration {k}: plus {fmt(names, plus)} vs minus {fmt(names, minus)}",
            start,
        )
        scored = [g for g in games if not unscored(match.game, g)]
        dropped = [f"game {g.number}: {g.how}" for g in games if unscored(match.game, g)]
        for line in dropped:
            print(f"  left out of r: {line}", flush=True)
        if not scored:  # nothing to learn from, and not logged: the same iteration is played next time
            raise SystemExit(f"iteration {k}: the client finished no scored game (see {folder}/client.log)")
        points = [g.points for g in scored]
        r = score_difference(sum(points), len(points))
        after = spsa_update(theta, delta, r, a, c, params)
        wins, draws = points.count(1.0), points.count(0.5)
        record = {
            "k": k,
            "theta": dict(zip(names, theta, strict=True)),
            "delta": dict(zip(names, delta, strict=True)),
            "a_k": dict(zip(names, a, strict=True)),
            "c_k": dict(zip(names, c, strict=True)),
            "plus": dict(zip(names, plus, strict=True)),
            "minus": dict(zip(names, minus, strict=True)),
            "opening_start": start,
            "openings": match_openings(book, args.games_per_iteration),
            "points": points,
            "plus_wdl": [wins, draws, len(points) - wins - draws],
            "dropped": dropped,
            "r": r,
            "theta_after": dict(zip(names, after, strict=True)),
            "games_dir": str(folder),
            "settings": settings,
        }
        append_record(log, record)
        print(
            f"iteration {k}: plus +{wins} ={draws} -{len(points) - wins - draws}, r {r:+.2f}; "
            f"theta {fmt(names, theta)} -> {fmt(names, after)}",
            flush=True,
        )
        theta = after
    return theta


def confirm(
    args: argparse.Namespace, match: Match, params: list[Param], theta: Sequence[float], log: Path
) -> None:
    """Play ``--confirm`` games of theta against the defaults, walking through the openings, and print
    W/D/L, Elo (pentanomial when the games pair up) and, with ``--sprt``, the test's verdict."""
    names = [p.name for p in params]
    tuned = dict(zip(names, theta, strict=True))
    defaults = {p.name: p.default for p in params}
    games = args.confirm
    settings = match.settings
    sprt = SprtTracker(SprtSettings.parse(args.sprt)) if args.sprt else None
    size = suite_size(match.game, settings.size)
    played: list[ladder.Game] = []
    batch = 2 if sprt else games  # with SPRT, one opening pair a match, stopping when it decides
    n = 0
    folder = log.parent
    try:
        while n * batch < games:
            count = min(batch, games - n * batch)
            match.settings = dataclasses.replace(settings, games=count)
            folder = fresh_folder(
                log.parent / f"{log.stem}-games", f"confirm{n:03d}-{time.strftime('%H%M%S')}"
            )
            got, _ = play(
                match,
                tuned,
                defaults,
                folder,
                f"confirm: tuned {fmt(names, theta)} vs defaults",
                opening_start(n, batch, size),
            )
            offset = n * batch  # batches are even: game numbers keep the pairs
            got = [dataclasses.replace(g, number=g.number + offset) for g in got]
            for g in got:
                if unscored(match.game, g):
                    print(f"  left out: game {g.number}: {g.how}", flush=True)
            got = [g for g in got if not unscored(match.game, g)]
            if sprt is not None:
                for g in got:
                    sprt.add_game((g.number - 1) // 2, g.points)
                print(f"  SPRT {sprt.status()}", flush=True)
            played += got
            n += 1
            if sprt is not None and sprt.decision is not None:
                break
            if not got:
                break  # the client played nothing: do not loop
    finally:
        match.settings = settings
    if not played:
        raise SystemExit(f"confirm: the client finished no scored game (see {folder}/client.log)")
    result = ladder.RungResult("confirm", "", "", played)
    m: MatchResult = result.match
    elo, lo, hi, how = result.elo()
    print(
        f"-- confirm: tuned {fmt(names, theta)} vs defaults {fmt(names, [p.default for p in params])}: "
        f"W/D/L {m.wins}/{m.draws}/{m.losses} over {m.games} games, Elo {elo:+.0f} [{lo:+.0f}, {hi:+.0f}] "
        f"(95%, {how})",
        flush=True,
    )
    if sprt is not None:
        print(f"-- {sprt.verdict(games).replace('--games', '--confirm')}", flush=True)


def parse_params(text: str) -> list[Param]:
    """``CPuct,FpuReduction`` -> their parameters (names as in ``PARAMS``, any case, each once)."""
    by_lower = {k.lower(): v for k, v in PARAMS.items()}
    chosen: list[Param] = []
    for word in (w.strip() for w in text.split(",") if w.strip()):
        if word.lower() not in by_lower:
            raise SystemExit(f"unknown parameter {word}; tunable: {', '.join(PARAMS)}")
        if by_lower[word.lower()] in chosen:
            raise SystemExit(f"--params names {by_lower[word.lower()].name} twice")
        chosen.append(by_lower[word.lower()])
    if not chosen:
        raise SystemExit("--params names no parameter")
    return chosen


def check_args(args: argparse.Namespace) -> None:
    """Exit with one line on a value the run cannot use (before any game is played)."""
    problems = []
    if args.iterations < 0:
        problems.append("--iterations must not be negative")
    if args.games_per_iteration < 2 or args.games_per_iteration % 2:
        problems.append("--games-per-iteration must be even and at least 2 (colour-reversed pairs)")
    if args.confirm < 0 or args.confirm % 2:
        problems.append("--confirm must be an even number of games (colour-reversed pairs)")
    if args.sprt and not args.confirm:
        problems.append("--sprt needs --confirm N (the most games the test may play)")
    if args.sprt:
        try:
            SprtSettings.parse(args.sprt)
        except ValueError as e:
            problems.append(f"--sprt: {e}")
    if not 0.0 < args.c_fraction <= 0.5:
        problems.append("--c-fraction must be in (0, 0.5]")
    if not args.a_scale > 0.0:
        problems.append("--a-scale must be positive")
    if args.byoyomi < 1 or args.margin < 0:
        problems.append("--byoyomi must be at least 1 ms and --margin not negative")
    if not (args.minutes >= 1 and float(args.minutes).is_integer()):
        problems.append("--minutes must be a whole number of minutes, at least 1 (gogui-twogtp's -time)")
    if args.concurrency < 1 or (args.concurrency > 1 and args.game != "chess"):
        problems.append("--concurrency must be at least 1, and above 1 only in chess (cutechess-cli)")
    if args.max_moves is not None and args.max_moves < 1:
        problems.append("--max-moves must be at least 1")
    try:
        if not ladder.tc_seconds(args.tc) > 0.0:
            raise ValueError
    except ValueError:
        problems.append(f"--tc {args.tc!r} is not a cutechess time control such as 10+0.1 or 40/60+1")
    if args.weights and not Path(args.weights).is_file():
        problems.append(f"--weights {args.weights}: no such file")
    if Path(args.log).is_dir():
        problems.append(f"--log {args.log} is a folder: give a file")
    if problems:
        raise SystemExit("; ".join(problems))


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("game", choices=GAMES)
    parser.add_argument("--params", default="CPuct", help=f"comma-separated, of {', '.join(PARAMS)}")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--games-per-iteration", type=int, default=2, help="even: opening pairs")
    parser.add_argument("--log", required=True, help="JSON lines, one per iteration (resumed from)")
    parser.add_argument("--seed", default="1", help="seeds the perturbations (iteration k: SEED:k)")
    parser.add_argument("--c-fraction", type=float, default=0.05, help="c as a fraction of each range")
    parser.add_argument("--a-scale", type=float, default=1.0, help="multiplies the default a")
    parser.add_argument("--weights", default=None, help="network for Tabula (default: its shipped network)")
    parser.add_argument(
        "--tabula-arg", action="append", metavar="ARG", help="one more word before the protocol"
    )
    parser.add_argument("--tc", default="10+0.1", help="chess: cutechess time control")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="chess: games cutechess-cli plays at once (with --tabula-arg=--threads --tabula-arg=1)",
    )
    parser.add_argument(
        "--adjudicate",
        action="store_true",
        help="chess: cutechess resign and draw adjudication (ladder.ADJUDICATION), as fishtest's",
    )
    parser.add_argument("--byoyomi", type=int, default=1000, help="shogi: byoyomi in milliseconds")
    parser.add_argument("--margin", type=int, default=0, help="shogi: ms a move may exceed the byoyomi")
    parser.add_argument(
        "--minutes", type=float, default=1.0, help="Go: twogtp -time, whole minutes sudden death"
    )
    parser.add_argument(
        "--max-moves", type=int, default=None, help="draw cap (chess 300 full moves, shogi 320)"
    )
    parser.add_argument(
        "--confirm", type=int, default=0, help="then play N games (even) of theta against the defaults"
    )
    parser.add_argument(
        "--sprt",
        default=None,
        help="with --confirm: SPRT bounds elo0,elo1[,alpha,beta], e.g. 0,10,0.05,0.05 (stops early)",
    )
    return parser


def main(argv: Iterable[str] | None = None) -> None:
    """Parse the command line, tune, print the final theta, and confirm it if asked."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    check_args(args)
    params = parse_params(args.params)
    log = Path(args.log).resolve()
    ladder_args = argparse.Namespace(
        game=args.game,
        games=args.games_per_iteration,
        weights=args.weights,
        tabula_arg=args.tabula_arg,
        out=str(log.parent),
        tc=args.tc,
        max_moves=args.max_moves,
        byoyomi=args.byoyomi,
        margin=args.margin,
        minutes=args.minutes,
        komi=7.5,
        no_openings=False,
        concurrency=args.concurrency,
    )
    settings = dataclasses.replace(ladder.settings_from(ladder_args), adjudicate=args.adjudicate)
    match = Match(args.game, settings)
    names = [p.name for p in params]
    print(
        f"-- SPSA {args.game}: {fmt(names, [p.default for p in params])} (defaults), {args.iterations} "
        f"iterations x {args.games_per_iteration} games, log {log}",
        flush=True,
    )
    theta = tune(args, match, params, log)
    print(f"-- final theta: {fmt(names, theta)}", flush=True)
    if args.confirm:
        confirm(args, match, params, theta, log)


if __name__ == "__main__":
    main()
