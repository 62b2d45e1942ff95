"""Whole-game analysis through ``tabula analysis`` against the same positions one at a time through UCI / USI.

A game of ``--plies`` plies is made by sampling the shipped network's policy with a fixed seed; every
turn of it (0 .. plies) is then analysed at ``--visits`` visits twice, in one run:

* **one at a time**: ``tabula uci`` (chess) or ``tabula usi`` (shogi), for each turn ``ucinewgame`` /
  ``usinewgame`` (a fresh tree, as each analysis position gets), ``position startpos moves ...``,
  ``go nodes V``, waiting for ``bestmove``;
* **analysis**: ``tabula analysis`` with one query, ``analyzeTurns`` every turn, ``maxVisits`` V.

It prints both wall times (from the first query written to the last answer read; the engine's start-up
and network loading are outside both), their ratio, and how many turns got the same best move.  Both
engines use the default options (``Threads 0``, ``BatchSize 16``, int8 on the CPU)::

    python benchmarks/analysis.py --game chess --plies 80 --visits 200
    python benchmarks/analysis.py --game shogi --plies 100 --visits 200
    python benchmarks/analysis.py --terminate-latency    # terminate to final answer, Go 19x19
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.games import get_game  # noqa: E402
from engine.network_loading import load_evaluator  # noqa: E402
from engine.options import EngineOptions  # noqa: E402


def sampled_game(label: str, plies: int, seed: int) -> list[str]:
    """``plies`` moves (protocol notation) sampled from the shipped network's priors; a game that ends
    sooner is drawn again with the next seed."""
    game = get_game(label)
    evaluator, _ = load_evaluator(game, EngineOptions())
    while True:
        rng = np.random.default_rng(seed)
        state = game.new_state()
        moves: list[str] = []
        while len(moves) < plies and state.outcome() is None:
            legal, indices = state.legal_moves_and_indices()
            if not legal:
                break
            priors = np.asarray(evaluator.evaluate(state.encode()[None], [indices])[0].priors, np.float64)
            move = legal[int(rng.choice(len(legal), p=priors / priors.sum()))]
            moves.append(state.move_to_text(move))
            state.push(move)
        if len(moves) == plies:
            return moves
        seed += 1


def _engine(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "protocols", *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
    )


def _cpu_s(proc: subprocess.Popen[str]) -> float:
    """CPU seconds (user + system, all threads) the engine process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _send(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def _read_until(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the engine ended before '{prefix}'")
        if line.startswith(prefix):
            return line.strip()


def one_at_a_time(protocol: str, moves: list[str], visits: int) -> tuple[float, float, list[str]]:
    """Wall seconds, CPU seconds and the best move of every turn, through UCI / USI."""
    proc = _engine([protocol])
    _send(proc, protocol)
    _read_until(proc, f"{protocol}ok")
    _send(proc, "isready")
    _read_until(proc, "readyok")
    best = []
    cpu = _cpu_s(proc)
    started = time.perf_counter()
    for turn in range(len(moves) + 1):
        _send(proc, f"{protocol}newgame")
        line = "position startpos" + (" moves " + " ".join(moves[:turn]) if turn else "")
        _send(proc, line)
        _send(proc, f"go nodes {visits}")
        best.append(_read_until(proc, "bestmove").split()[1])
    seconds = time.perf_counter() - started
    cpu = _cpu_s(proc) - cpu
    _send(proc, "quit")
    proc.wait(30)
    return seconds, cpu, best


def analysed(game: str, moves: list[str], visits: int) -> tuple[float, float, list[str], dict[str, Any]]:
    """Wall seconds, CPU seconds, the best move of every turn and the last answer, through
    ``tabula analysis``."""
    proc = _engine(["analysis", "--game", game])
    _send(proc, json.dumps({"id": "warm", "moves": [], "maxVisits": 1}))  # loads the network first
    _read_until(proc, '{"id":"warm"')
    turns = list(range(len(moves) + 1))
    query = {"id": "game", "moves": moves, "analyzeTurns": turns, "maxVisits": visits}
    cpu = _cpu_s(proc)
    started = time.perf_counter()
    _send(proc, json.dumps(query))
    best: dict[int, str] = {}
    last: dict[str, Any] = {}
    assert proc.stdout is not None
    while len(best) < len(turns):
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the analysis engine ended early")
        answer = json.loads(line)
        if answer.get("id") != "game" or "turnNumber" not in answer or answer.get("isDuringSearch"):
            continue
        infos = answer.get("moveInfos") or []
        best[answer["turnNumber"]] = infos[0]["move"] if infos else "(none)"
        last = answer
    seconds = time.perf_counter() - started
    cpu = _cpu_s(proc) - cpu
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(30)
    return seconds, cpu, [best[t] for t in turns], last


def terminate_latency(trials: int) -> list[tuple[float, int]]:
    """Milliseconds from a ``terminate`` written to the final answer of a long Go 19x19 search (1.5 s
    into it), and the visits it answered with, ``trials`` times."""
    proc = _engine(["analysis"])
    go19 = {"rules": "chinese", "boardXSize": 19, "boardYSize": 19}
    _send(proc, json.dumps({"id": "warm", "moves": [], "maxVisits": 1, **go19}))
    _read_until(proc, '{"id":"warm"')
    assert proc.stdout is not None
    out = []
    for trial in range(trials):
        qid = f"long{trial}"
        _send(proc, json.dumps({"id": qid, "moves": [["B", "Q16"]], "maxVisits": 10_000_000, **go19}))
        time.sleep(1.5)
        sent = time.perf_counter()
        _send(proc, json.dumps({"id": f"stop{trial}", "action": "terminate", "terminateId": qid}))
        while True:
            answer = json.loads(proc.stdout.readline())
            if answer.get("id") == qid and not answer.get("isDuringSearch"):
                out.append(((time.perf_counter() - sent) * 1000.0, int(answer["rootInfo"]["visits"])))
                break
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", choices=["chess", "shogi"], default="chess")
    parser.add_argument("--plies", type=int, default=80)
    parser.add_argument("--visits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--terminate-latency", action="store_true", help="Instead: time terminate on Go 19x19 searches."
    )
    args = parser.parse_args()
    if args.terminate_latency:
        for ms, visits in terminate_latency(3):
            print(f"terminate -> final answer: {ms:6.1f} ms ({visits} visits)")
        return
    moves = sampled_game(args.game, args.plies, args.seed)
    protocol = "uci" if args.game == "chess" else "usi"
    serial_s, serial_cpu, serial_best = one_at_a_time(protocol, moves, args.visits)
    batch_s, batch_cpu, batch_best, _ = analysed(args.game, moves, args.visits)
    same = sum(a == b for a, b in zip(serial_best, batch_best, strict=True))
    turns = len(moves) + 1
    print(f"{args.game}: {args.plies} plies, {turns} turns at {args.visits} visits (seed {args.seed})")
    print(f"  one at a time ({protocol}, go nodes): {serial_s:7.2f} s wall {serial_cpu:7.2f} s CPU")
    print(
        f"  tabula analysis (analyzeTurns):   {batch_s:7.2f} s wall {batch_cpu:7.2f} s CPU"
        f"   {serial_s / batch_s:.2f}x wall, {serial_cpu / batch_cpu:.2f}x CPU"
    )
    print(f"  same best move: {same}/{turns}")
    for turn, (a, b) in enumerate(zip(serial_best, batch_best, strict=True)):
        if a != b:
            print(f"    turn {turn}: {protocol} {a}, analysis {b}")


if __name__ == "__main__":
    main()
