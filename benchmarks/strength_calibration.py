"""Strength calibration: measure Tabula's weakened settings on Stockfish's own ``UCI_Elo`` scale and write the
table that ``UCI_LimitStrength`` / ``UCI_Elo`` read (``weights/strength-chess.json``; docs/strength.md).

    python benchmarks/strength_calibration.py                    # the default plan, 20 games a point
    python benchmarks/strength_calibration.py --dry-run          # print the cutechess-cli commands only
    python benchmarks/strength_calibration.py --check 1350,1450,1550 --games 20   # the acceptance check

Calibration: every point of the plan is one Tabula setting (``--weakening NODES,TEMPERATURE,MARGIN``, or the
engine at full strength) against Stockfish 15.1 at ``UCI_LimitStrength`` ``UCI_Elo`` E, played by
cutechess-cli exactly as the strength ladder plays (``benchmarks/ladder.py``: its command builder, the
opening suite ``trainer/evaluate/openings/chess.pgn`` with each opening twice and colours reversed, its PGN
reader).  The setting's Elo is ``E + elo_from_score(score)`` with the 95% interval of the pentanomial
statistics (``trainer.evaluate.elo``).  The Elos, in node-cap order, are fitted monotone (weighted by games;
``engine.strength.monotone_fit``); a point the fit ties with a stronger one is dropped.  The table holds
for the time control it was played at (both sides on ``--tc``, default ``5+0.05``) and on that machine.

Stockfish 15.1's ``UCI_Elo`` goes no lower than 1350 (Stockfish 16: 1320; the runner reads the installed
program's range): a setting weaker than that is measured against the lowest opponent, so Tabula's scale
extends below Stockfish's only through such measured points, never by extrapolation.

Check (``--check E1,E2,E3``): Tabula with ``option.UCI_LimitStrength=true option.UCI_Elo=E`` (the table it
reads: the shipped one, or ``--table``) against Stockfish at ``UCI_Elo`` E (its lowest when E is below it).
It passes when Tabula's score lies within the score interval the calibration implies at E against that
opponent (the table's 95% Elo interval at E, through the logistic).

Plan entries (``--point``, repeatable, replacing the default plan): ``NODES,TEMPERATURE,MARGIN@OPPONENT_ELO``
or ``full@OPPONENT_ELO``.  Records go to ``--out`` (default ``runs/strength/chess-DATE``).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.ladder import (  # noqa: E402
    OPENINGS,
    QT_ENV,
    Game,
    RungResult,
    Settings,
    client_version,
    cutechess_cli,
    cutechess_command,
    parse_cutechess_pgn,
    pgn_opening_names,
    play_rung,
    program,
    rung_folder,
    shell_line,
    stockfish_elo_rung,
    tc_seconds,
)
from engine.strength import CalibrationPoint, StrengthTable, Weakening, monotone_fit  # noqa: E402
from tests.process import tabula_command  # noqa: E402
from trainer.evaluate.elo import score_from_elo  # noqa: E402

#: The clock of the default plan and its check, for both sides (cutechess's tc=).
DEFAULT_TC = "5+0.05"
#: The node count that anchors the full-strength point's interpolation: about what a move searches at
#: ``DEFAULT_TC`` on a 2-core CPU (the engine's chess moves in the 2026-11-28 calibration took 0.094 s
#: on average, at about 33,000 nodes a second: docs/strength.md); the full point itself is played
#: without any cap.
FULL_ANCHOR_NODES = 3072


@dataclasses.dataclass(frozen=True)
class PlanPoint:
    """One setting to measure and its opponent.

    Attributes:
        weakening: the setting (``None``: full strength, no cap).
        opponent_elo: Stockfish's ``UCI_Elo``.
    """

    weakening: Weakening | None
    opponent_elo: int

    @property
    def key(self) -> str:
        """The records folder's name: ``n64-t0.6-m0.15-sf1350`` or ``full-sf1500``."""
        w = self.weakening
        setting = "full" if w is None else f"n{w.nodes}-t{w.temperature:g}-m{w.q_margin:g}"
        return f"{setting}-sf{self.opponent_elo}"

    @classmethod
    def parse(cls, text: str) -> PlanPoint:
        """``NODES,TEMPERATURE,MARGIN@ELO`` or ``full@ELO``.  Raises ``ValueError``."""
        setting, sep, elo = text.partition("@")
        if not sep or not elo.strip().isdigit():
            raise ValueError(f"a plan point is SETTING@OPPONENT_ELO, not {text!r}")
        weakening = None if setting.strip() == "full" else Weakening.parse(setting)
        return cls(weakening, int(elo))


#: The default plan: four node caps, weakest first, and full strength (about 15 minutes at 20 games a point
#: and 5+0.05 on 2 cores; docs/strength.md).  Lower caps play hotter and with a wider Q margin.
DEFAULT_PLAN = (
    PlanPoint(Weakening(128, 0.3, 0.1), 1350),
    PlanPoint(Weakening(384, 0.15, 0.05), 1350),
    PlanPoint(Weakening(900, 0.0, 0.0), 1350),
    PlanPoint(Weakening(1800, 0.0, 0.0), 1350),
    PlanPoint(None, 1500),
)


def check_plan(plan: Sequence[PlanPoint]) -> None:
    """The plan's node caps rise and full strength comes last (the table's order).  Raises ``ValueError``."""
    caps = [p.weakening.nodes for p in plan if p.weakening is not None]
    if sum(p.weakening is None for p in plan) != 1 or plan[-1].weakening is not None:
        raise ValueError("the plan needs exactly one full@ELO point, last")
    if not caps:
        raise ValueError("the plan needs at least one weakened setting")
    if any(a >= b for a, b in itertools.pairwise(caps)):
        raise ValueError(f"the plan's node caps must rise: {caps}")
    if caps and caps[-1] >= FULL_ANCHOR_NODES:
        raise ValueError(f"node caps must stay below the full-strength anchor {FULL_ANCHOR_NODES}")


def stockfish_elo_range(stockfish: str) -> tuple[int, int]:
    """The installed Stockfish's ``UCI_Elo`` range, from its ``uci`` answer."""
    out = subprocess.run(
        [stockfish], input="uci\nquit\n", capture_output=True, text=True, timeout=30, check=False
    )
    m = re.search(r"option name UCI_Elo type spin default \d+ min (\d+) max (\d+)", out.stdout)
    if m is None:
        raise SystemExit(f"{stockfish} declares no UCI_Elo option")
    return int(m.group(1)), int(m.group(2))


# ---- command lines -----------------------------------------------------------------------------------


def point_settings(s: Settings, point: PlanPoint) -> Settings:
    """The run's settings with Tabula's command line fixed at ``point``'s weakening (none at full strength)."""
    if point.weakening is None:
        return s
    return dataclasses.replace(s, tabula=[*s.tabula, "--weakening", point.weakening.text()])


def point_command(
    cutechess: str, s: Settings, point: PlanPoint, stockfish: str, folder: Path, book: Path | None
) -> list[str]:
    """cutechess-cli's command line for one calibration point (the ladder's builder)."""
    rung = stockfish_elo_rung(stockfish, point.opponent_elo)
    return cutechess_command(
        cutechess, point_settings(s, point), rung, folder / "games.pgn", folder / "tabula.stderr", book
    )


def check_command(
    cutechess: str, s: Settings, elo: int, opponent_elo: int, stockfish: str, folder: Path, book: Path | None
) -> list[str]:
    """cutechess-cli's command line for the check at ``elo``: Tabula with ``UCI_LimitStrength`` and
    ``UCI_Elo`` set by cutechess (as a GUI sets them) against Stockfish at ``opponent_elo``."""
    rung = stockfish_elo_rung(stockfish, opponent_elo)
    options = (("UCI_LimitStrength", "true"), ("UCI_Elo", str(elo)))
    return cutechess_command(
        cutechess, s, rung, folder / "games.pgn", folder / "tabula.stderr", book, tabula_options=options
    )


# ---- results -----------------------------------------------------------------------------------------


def measured_point(point: PlanPoint, result: RungResult, date: str) -> CalibrationPoint:
    """A plan point's measurement: Elo = opponent's + the match's Elo difference, with its 95% interval."""
    diff, low, high, how = result.elo()
    opp = point.opponent_elo
    weakening = point.weakening or Weakening(FULL_ANCHOR_NODES)
    return CalibrationPoint(
        weakening,
        opp + diff,
        None if math.isinf(low) else opp + low,
        None if math.isinf(high) else opp + high,
        opp + diff,
        result.match.games,
        f"Stockfish UCI_Elo {opp} ({how})",
        result.command,
        date,
        full=point.weakening is None,
    )


def fitted_table(points: Sequence[CalibrationPoint], tc: str, scale: str, note: str) -> StrengthTable:
    """The table of measured points (in node-cap order, full last), their Elos fitted monotone; a point the
    fit ties with the next is dropped (the stronger setting of a tie is kept, so full strength always).
    Raises ``ValueError`` when nothing is left to interpolate (every setting scored alike)."""
    fit = monotone_fit([p.measured_elo for p in points], [max(1, p.games) for p in points])
    kept: list[CalibrationPoint] = []
    for k, (point, elo) in enumerate(zip(points, fit, strict=True)):
        if k + 1 < len(points) and fit[k + 1] <= elo:
            continue
        kept.append(dataclasses.replace(point, elo=elo))
    if len(kept) < 2:
        raise ValueError("every setting scored alike after the monotone fit: widen the plan's node caps")
    return StrengthTable("chess", tuple(kept), "measured", tc, scale, note)


@dataclasses.dataclass(frozen=True)
class CheckVerdict:
    """One check: the score Tabula made at ``UCI_Elo`` ``elo`` and the interval the table implies."""

    elo: int
    opponent_elo: int
    score: float
    games: int
    low_score: float
    high_score: float

    @property
    def passed(self) -> bool:
        return self.games > 0 and self.low_score <= self.score <= self.high_score

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return (
            f"check UCI_Elo {self.elo} vs Stockfish UCI_Elo {self.opponent_elo}: score {100 * self.score:.1f}% "
            f"over {self.games} games; the calibration implies {100 * self.low_score:.1f}%.."
            f"{100 * self.high_score:.1f}%: {verdict}"
        )


def check_verdict(table: StrengthTable, elo: int, opponent_elo: int, games: Sequence[Game]) -> CheckVerdict:
    """Whether the games at ``UCI_Elo`` ``elo`` scored within the table's interval there (as a score
    against ``opponent_elo``; an unbounded side of the interval is 0% or 100%)."""
    played = table.resolve(elo).elo
    low, high = table.interval_at(played)
    low_score = 0.0 if math.isinf(low) else score_from_elo(low - opponent_elo)
    high_score = 1.0 if math.isinf(high) else score_from_elo(high - opponent_elo)
    points = [g.points for g in games]
    score = sum(points) / len(points) if points else 0.0
    return CheckVerdict(elo, opponent_elo, score, len(points), low_score, high_score)


# ---- running -----------------------------------------------------------------------------------------


def play(
    command: list[str], title: str, folder: Path, games: int, tc: str, names: Sequence[str], client: str
) -> RungResult:
    """Play one match through cutechess-cli (the ladder's runner: prints the command and every game)."""
    pgn = folder / "games.pgn"

    def collect() -> list[Game]:
        return parse_cutechess_pgn(pgn.read_text(encoding="utf-8"), names) if pgn.exists() else []

    deadline = games * (2 * tc_seconds(tc) + 60) + 60
    return play_rung(title, client, command, folder, deadline, collect, ("white", "black"), QT_ENV)


def pooled_result(
    title: str, command: str, runs: Sequence[str], point: PlanPoint, names: Sequence[str]
) -> RungResult:
    """A point's games from earlier calibration runs' records (``RUN/<point key>/games.pgn``), pooled:
    the same setting against the same opponent on the same clock, each run's games numbered after the
    previous runs' so that every opening pair stays a pair."""
    games: list[Game] = []
    used = []
    for run in runs:
        pgn = Path(run) / point.key / "games.pgn"
        if not pgn.is_file():
            continue
        offset = 2 * ((len(games) + 1) // 2)
        games += [
            dataclasses.replace(g, number=g.number + offset)
            for g in parse_cutechess_pgn(pgn.read_text(encoding="utf-8"), names)
        ]
        used.append(run)
    if not games:
        raise SystemExit(f"no records of {point.key} in {', '.join(runs)}")
    print(f"{title}: {len(games)} games pooled from {', '.join(used)}")
    return RungResult(title, "cutechess-cli (records)", f"{command} (pooled from {', '.join(used)})", games)


def calibrate(args: argparse.Namespace, s: Settings, plan: Sequence[PlanPoint]) -> None:
    """Play every plan point, then write the fitted table to ``--write``."""
    stockfish = program("stockfish")
    low, _ = stockfish_elo_range(stockfish)
    if any(p.opponent_elo < low for p in plan):
        raise SystemExit(f"this Stockfish's UCI_Elo starts at {low}: every opponent must be at least that")
    cutechess = "cutechess-cli" if args.dry_run else cutechess_cli()
    book = OPENINGS / "chess.pgn"
    names = pgn_opening_names(book)
    date = time.strftime("%Y-%m-%d")
    measured = []
    for point in plan:
        folder = s.out / point.key if args.dry_run else rung_folder(s.out, point.key)
        command = point_command(cutechess, s, point, stockfish, folder, book)
        if args.dry_run:
            print(shell_line(command, QT_ENV))
            continue
        title = f"chess {s.tc} Tabula {point.key}"
        if args.from_records:
            result = pooled_result(title, shell_line(command, QT_ENV), args.from_records, point, names)
        else:
            result = play(command, title, folder, s.games, s.tc, names, client_version([cutechess], QT_ENV))
        measured.append(measured_point(point, result, date))
    if args.dry_run:
        return
    for p in measured:
        setting = "full" if p.full else p.weakening.text()
        print(f"{setting}: Elo {p.measured_elo:.0f} [{p.low}, {p.high}] ({p.games} games, {p.opponent})")
    note = (
        f"{'the games of ' + ', '.join(args.from_records) if args.from_records else str(s.games) + ' games'} a point at tc={s.tc} for both sides, cutechess-cli, openings trainer/evaluate/openings/chess.pgn "
        f"(python benchmarks/strength_calibration.py; docs/strength.md)"
        + ("; a first table: 10 games a point, wide intervals" if s.games <= 10 else "")
    )
    try:
        table = fitted_table(measured, s.tc, f"Stockfish {stockfish_version(stockfish)} UCI_Elo", note)
    except ValueError as exc:
        raise SystemExit(f"no table written: {exc}") from None
    table.write(args.write)
    print(f"wrote {args.write}: Elo {table.min_elo}..{table.max_elo}")


def check(args: argparse.Namespace, s: Settings, elos: Sequence[int]) -> bool:
    """Play Tabula at ``UCI_Elo`` E against Stockfish at E (its lowest when E is below it) for each E;
    print each verdict; True when all pass."""
    stockfish = program("stockfish")
    low, _ = stockfish_elo_range(stockfish)
    table = StrengthTable.load(args.table)
    if Path(args.table).resolve() != DEFAULT_TABLE.resolve():
        s = dataclasses.replace(s, tabula=[*s.tabula, "--strength-table", str(Path(args.table).resolve())])
    cutechess = "cutechess-cli" if args.dry_run else cutechess_cli()
    book = OPENINGS / "chess.pgn"
    names = pgn_opening_names(book)
    verdicts = []
    for elo in elos:
        opponent = max(elo, low)
        key = f"check-elo{elo}-sf{opponent}"
        folder = s.out / key if args.dry_run else rung_folder(s.out, key)
        command = check_command(cutechess, s, elo, opponent, stockfish, folder, book)
        if args.dry_run:
            print(shell_line(command, QT_ENV))
            continue
        title = f"chess {s.tc} Tabula UCI_Elo {elo} vs Stockfish UCI_Elo {opponent}"
        result = play(command, title, folder, s.games, s.tc, names, client_version([cutechess], QT_ENV))
        verdicts.append(check_verdict(table, elo, opponent, result.games))
    for verdict in verdicts:
        print(verdict.line())
    return all(v.passed for v in verdicts)


def stockfish_version(stockfish: str) -> str:
    """``15.1`` from the program's ``id name Stockfish 15.1``."""
    out = subprocess.run(
        [stockfish], input="uci\nquit\n", capture_output=True, text=True, timeout=30, check=False
    )
    m = re.search(r"id name Stockfish (\S+)", out.stdout)
    return m.group(1) if m else "?"


DEFAULT_TABLE = REPO / "weights" / "strength-chess.json"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=20, help="games a point (pairs: even numbers)")
    parser.add_argument(
        "--tc", default=DEFAULT_TC, help=f"cutechess time control for both (default {DEFAULT_TC})"
    )
    parser.add_argument(
        "--point",
        action="append",
        default=None,
        help="plan point NODES,TEMP,MARGIN@ELO or full@ELO (repeatable)",
    )
    parser.add_argument(
        "--from-records",
        action="append",
        default=[],
        metavar="RUN",
        help="fit the table from earlier runs' records (repeatable: their games pooled), playing nothing",
    )
    parser.add_argument("--check", default=None, metavar="E1,E2,...", help="check UCI_Elo values instead")
    parser.add_argument("--table", default=str(DEFAULT_TABLE), help="the table --check reads")
    parser.add_argument("--write", default=str(DEFAULT_TABLE), help="where calibration writes the table")
    parser.add_argument("--weights", default=None, help="network for Tabula (default: its shipped network)")
    parser.add_argument("--out", default=None, help="records and logs (default runs/strength/chess-DATE)")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the cutechess-cli commands, play nothing"
    )
    args = parser.parse_args(argv)
    if args.games < 1:
        raise SystemExit("--games must be at least 1")
    tabula = tabula_command()
    if args.weights:
        tabula += ["--weights", str(Path(args.weights).resolve())]
    out = (
        Path(args.out) if args.out else REPO / "runs" / "strength" / f"chess-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    s = Settings(games=args.games, tabula=tabula, out=out.resolve(), tc=args.tc)
    if args.check:
        try:
            elos = [int(e) for e in args.check.split(",")]
        except ValueError:
            raise SystemExit(f"--check takes comma-separated integers, not {args.check!r}") from None
        passed = check(args, s, elos)
        if not args.dry_run:
            raise SystemExit(0 if passed else 1)
        return
    try:
        plan = [PlanPoint.parse(p) for p in args.point] if args.point else list(DEFAULT_PLAN)
        check_plan(plan)
    except ValueError as exc:
        raise SystemExit(f"bad plan: {exc}") from None
    print(
        f"-- strength calibration: {len(plan)} points, {s.games} games each at tc={s.tc}; records in {s.out}"
    )
    calibrate(args, s, plan)


if __name__ == "__main__":
    main()
