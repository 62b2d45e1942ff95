"""Self-play of this checkout against another (an older commit's worktree) on the same fixed workload:
the first ``--moves`` moves of the same ``--parallel`` games from one seed, with the same network.

    git worktree add /tmp/old 885ea98                                   # the commit to compare with
    python benchmarks/selfplay_versus.py --against /tmp/old              # shogi, 3,000 moves, mate 1000 and 5000
    python benchmarks/selfplay_versus.py --against /tmp/old --game chess --mate-nodes 0

A time window (``benchmarks/selfplay.py``) is the wrong measure between two programs of different speed
when a game's positions cost more as it goes on (shogi's middlegame: more moves, more checks for the
root's mate search): in the same seconds the faster one reaches the dearer plies.  Here both play the
same moves of the same games (self-play is deterministic from its seed; the printed hash of the games'
moves says whether they did), so the ratio of the wall times is the ratio of positions per second on
the same positions.

Each run is a fresh process with the other checkout's code first on ``sys.path``.  It first plays eight
moves of two other games (seed 2), not timed, so that neither checkout's figure holds what a worker pays
once at its start (numba's cache loaded, or compiled when the cache is stale; onnxruntime's first calls;
imports): self-play runs for hours.  The timed run: ``SelfPlayer`` with
``--parallel`` games x ``--leaves`` leaves, ``--simulations`` visits, no resignation, no network cache,
onnxruntime on one thread, the network ``--network`` (default: this checkout's ``weights/GAME.int8.onnx``,
the same file for both) and the root mate search's node budget set on both checkouts' search settings
(``SearchConfig.root_mate_nodes``; older self-play had no setting of its own); every other setting
each checkout's default (this one's shogi trees hand an int8 network uint8 planes,
``selfplay.uint8_planes``: the same evaluations, so still the same games).  The checkouts run in
turns, ``--rounds`` times; printed per run: wall and process CPU time (one thread does all the work, so
the CPU time leaves out what the VM's neighbours take: on this project's VM the wall time of the same
run varied by a quarter), network, the rules' mate search and the rest, and the ratios of
the medians.  The mate column counts ``GameState.find_mate`` (shogi's df-pn at every root);
the compiled chess tree searches its root mates in its kernel, which the column does not see.  Pause
other work on the machine for figures you report.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

#: The run in the child process: argv = checkout, game, moves, mate nodes, network, parallel, leaves,
#: simulations; prints one JSON line.
CHILD = r"""
import dataclasses, hashlib, json, os, sys, time
os.environ.setdefault("OMP_NUM_THREADS", "1")
repo, label, moves, mate, network, parallel, leaves, simulations = sys.argv[1:9]
sys.path.insert(0, repo)
from engine.inference import InferenceSettings, OnnxEvaluator
from trainer.config import SelfPlaySettings, make_game, preset_config
from trainer.selfplay.player import SelfPlayer
config = preset_config("small", label)
game = make_game(config.game)
mate_time = [0.0]
state_type = type(game.new_state())
if hasattr(state_type, "find_mate"):
    plain = state_type.find_mate
    def timed(self, *args):
        t = time.perf_counter()
        try:
            return plain(self, *args)
        finally:
            mate_time[0] += time.perf_counter() - t
    state_type.find_mate = timed
kw = dict(games_in_parallel=int(parallel), leaves_per_tree=int(leaves), simulations=int(simulations),
          sample_plies=config.selfplay.sample_plies, resign_threshold=None)
fields = {f.name for f in dataclasses.fields(SelfPlaySettings)}
kw = {k: v for k, v in kw.items() if k in fields}
if "root_mate_nodes" in fields:
    kw["root_mate_nodes"] = int(mate)
settings = InferenceSettings(backend="cpu", threads=1, batch_size=int(parallel) * int(leaves))
evaluator = OnnxEvaluator(network, game.info, settings)
import inspect
no_cache = {"cache": None} if "cache" in inspect.signature(SelfPlayer).parameters else {}  # older commits
def make_player(seed, **changes):
    player = SelfPlayer(game, SelfPlaySettings(**{**kw, **changes}), evaluator, seed=seed, **no_cache)
    player.full_config = dataclasses.replace(player.full_config, root_mate_nodes=int(mate))
    player.fast_config = dataclasses.replace(player.fast_config, root_mate_nodes=int(mate))
    return player
warm = make_player(2, games_in_parallel=2)  # not timed: compiled code loaded, the network's first calls
while warm.stats.moves < 8:
    warm.step()
del warm
player = make_player(1)
finished = []
c0 = time.process_time()
t0 = time.perf_counter()
while player.stats.moves < int(moves):
    finished.extend(player.step())
wall = time.perf_counter() - t0
cpu = time.process_time() - c0
st = player.stats
games = [g.moves for g in finished] + [s.moves for s in player.slots if s is not None]
print(json.dumps({"wall": wall, "cpu": cpu, "network": st.eval_seconds, "mate": mate_time[0], "moves": st.moves,
                  "positions": st.positions, "evaluations": st.evaluations,
                  "games": hashlib.sha1(repr(games).encode()).hexdigest()[:12]}))
"""


def run(checkout: Path, args: argparse.Namespace, mate: int, network: Path) -> dict[str, float | str]:
    """One run in a fresh process on ``checkout``'s code."""
    argv = [str(checkout), args.game, str(args.moves), str(mate), str(network)]
    argv += [str(args.parallel), str(args.leaves), str(args.simulations)]
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], check=True, capture_output=True, text=True, cwd=checkout
    )
    result: dict[str, float | str] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", type=Path, required=True, help="the other checkout (a git worktree)")
    parser.add_argument("--game", default="shogi", help="game label (shogi, chess, go9 ...)")
    parser.add_argument("--moves", type=int, default=3000, help="moves played in all games together")
    parser.add_argument("--mate-nodes", type=int, nargs="+", default=[1000, 5000], help="root mate budgets")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each checkout, in turns")
    parser.add_argument("--parallel", type=int, default=32, help="games played at once")
    parser.add_argument("--leaves", type=int, default=2, help="leaves per game and step")
    parser.add_argument("--simulations", type=int, default=100, help="visits per move")
    parser.add_argument("--network", type=Path, default=None, help="default: weights/GAME.int8.onnx here")
    args = parser.parse_args()
    network = (args.network or HERE / "weights" / f"{args.game}.int8.onnx").resolve()
    checkouts = {"this": HERE, "other": args.against.resolve()}
    print(
        f"self-play {args.game}: the first {args.moves} moves of {args.parallel} games from seed 1, "
        f"{args.leaves} leaves a game and step, {args.simulations} visits, one onnxruntime thread, "
        f"{network.name}; other = {checkouts['other']}"
    )
    print(
        f"{'mate':>5s} {'run':5s} {'wall s':>7s} {'cpu s':>7s} {'network':>8s} {'mate s':>7s} {'rest':>6s} {'pos/s':>6s} games"
    )
    for mate in args.mate_nodes:
        walls: dict[str, list[float]] = {"this": [], "other": []}
        cpus: dict[str, list[float]] = {"this": [], "other": []}
        hashes = set()
        for _ in range(args.rounds):
            for name in ("other", "this"):
                r = run(checkouts[name], args, mate, network)
                wall, net, mate_s = float(r["wall"]), float(r["network"]), float(r["mate"])
                walls[name].append(wall)
                cpus[name].append(float(r["cpu"]))
                hashes.add(r["games"])
                print(
                    f"{mate:5d} {name:5s} {wall:7.1f} {float(r['cpu']):7.1f} {net:8.1f} {mate_s:7.1f} {wall - net - mate_s:6.1f} "
                    f"{float(r['positions']) / wall:6.1f} {r['games']}",
                    flush=True,
                )
        ratio = statistics.median(walls["other"]) / statistics.median(walls["this"])
        cpu_ratio = statistics.median(cpus["other"]) / statistics.median(cpus["this"])
        same = "the same games" if len(hashes) == 1 else "DIFFERENT games: the ratio compares different work"
        print(
            f"mate {mate}: this / other positions per second: {ratio:.2f}x by median wall time, "
            f"{cpu_ratio:.2f}x per CPU-second ({same})"
        )


if __name__ == "__main__":
    main()
