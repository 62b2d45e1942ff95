"""Self-play throughput: network evaluations per second during self-play against the raw throughput of
the same network at the same batch size, plus positions/s and games/hour, per game.

    python benchmarks/selfplay.py                          # go9, go19, chess, shogi; 6x64 network
    python benchmarks/selfplay.py --games go9 --seconds 30 --pipeline
    python benchmarks/selfplay.py --preset tiny --games go7 --simulations 16
    python benchmarks/selfplay.py --network shipped --games chess go9 --precision both   # int8 vs fp32
    python benchmarks/selfplay.py --network shipped --games go9 --root-search gumbel   # Gumbel's cost

For each game a randomly initialised network of ``--preset`` (default ``small`` = b6c64) is exported
to a temporary folder, or with ``--network shipped`` the game's network in ``weights/`` is used; it runs
with onnxruntime on ``--threads`` intra-op threads (1 by default: the setting of a self-play worker).
``--precision int8`` plays the network's int8 copy (the shipped ``NAME.int8.onnx``, or one quantized
here), ``both`` the two one after the other, with their ratio.

* raw: ``engine.inference.raw_throughput`` (network + masked softmax) at the mean batch size of the
  self-play network calls (at most ``games * leaves``; collisions and finished searches make some
  calls smaller), measured right after the self-play window;
* self-play: :class:`trainer.selfplay.player.SelfPlayer` for ``--seconds`` (after a warm-up): network
  evaluations / wall time, and the ratio to raw (goal >= 0.85: the search costs little beside the
  network).  ``--pipeline`` overlaps tree work with the network calls (two halves of the games; needs a
  second core).
* positions/s: recorded training positions per second; bound: the positions per second the network
  calls alone allow (positions / the calls' seconds), what a search that cost nothing would reach; pos/cpu-s:
  recorded positions per CPU second of the process (all its threads: the figure that stays
  comparable when the machine is shared); games/hour: finished games per hour when games
  finished in the window, else estimated from the plies per second and the mean game length of the
  games that did finish (marked ``~``).

The window starts with every game at its first move: a short one measures openings only.  In shogi the
middlegame costs more a position (more moves, more checks for the root's mate search), so a window
that covers whole games (``--seconds 150`` in shogi at the defaults) gives the figure a training run
sees.  ``--root-search gumbel`` searches the full searches' roots with Gumbel's sequential halving
(``selfplay.root_search``).  ``--root-mate-nodes`` sets the root mate search's budget (``selfplay.root_mate_nodes``; 5000 was
self-play's before it had its own setting).

Figures, not assertions: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_GAMES = ("go9", "go19", "chess", "shogi")


def measure(
    label: str,
    preset: str,
    seconds: float,
    games_in_parallel: int,
    leaves: int,
    simulations: int,
    threads: int,
    pipeline: bool,
    folder: Path,
    network: str = "random",
    precision: str = "fp32",
    root_mate_nodes: int | None = None,
    root_search: str = "puct",
    gumbel_considered: int = 16,
) -> dict[str, float | str]:
    import torch

    from engine.inference import InferenceSettings, OnnxEvaluator, raw_throughput
    from trainer.config import SelfPlaySettings, make_game, preset_config
    from trainer.network.export import export_onnx
    from trainer.network.model import build_model
    from trainer.selfplay.player import SelfPlayer
    from weights import default_network

    config = preset_config("small", label)
    game = make_game(config.game)
    info = game.info
    shipped = default_network(label) if network == "shipped" else None
    if network == "shipped" and shipped is None:
        raise SystemExit(f"no shipped network for {label} in weights/")
    path = shipped or folder / f"{label}.onnx"
    if shipped is None and not path.exists():
        torch.manual_seed(0)
        export_onnx(build_model(info, preset), path, komi=config.game.effective_komi(), verify=False)
    if precision == "int8":
        path = _int8_copy(path, game, folder)
    settings = InferenceSettings(backend="cpu", threads=threads, batch_size=games_in_parallel * leaves)
    sp = SelfPlaySettings(
        games_in_parallel=games_in_parallel,
        leaves_per_tree=leaves,
        simulations=simulations,
        sample_plies=config.selfplay.sample_plies,
        resign_threshold=None,
        pipeline=pipeline,
        root_search=root_search,
        gumbel_considered=gumbel_considered,
        **({} if root_mate_nodes is None else {"root_mate_nodes": root_mate_nodes}),
    )
    player = SelfPlayer(game, sp, OnnxEvaluator(path, info, settings), seed=1)
    for _ in range(3):  # warm-up: first expansions, allocator, the compiled kernels (numba's cache)
        player.step()
    player.stats = type(player.stats)()
    finished = []
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    while time.perf_counter() - t0 < seconds:
        finished.extend(player.step())
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    player.close()
    st = player.stats
    evals = st.evaluations / wall
    # the raw network at the batch size self-play really used (collisions and finished searches make
    # some batches smaller than games * leaves)
    batch = max(1, round(st.evaluations / max(1, st.calls)))
    raw = raw_throughput(OnnxEvaluator(path, info, settings), batch, seconds=min(5.0, seconds / 2))
    moves_per_s = st.moves / wall
    if finished:
        mean_plies = sum(g.plies for g in finished) / len(finished)
        games_h = f"{3600 * len(finished) / wall:.0f}"
    else:
        mean_plies = float(config.game.max_plies or (2 * info.board_size**2 if info.name == "go" else 512))
        games_h = f"~{3600 * moves_per_s / mean_plies:.0f}"
    return {
        "game": label,
        "trees": "compiled" + ("/int8" if precision == "int8" else ""),
        "batch": batch,
        "raw_evals_s": raw,
        "selfplay_evals_s": evals,
        "ratio": evals / raw,
        "network_share": st.eval_seconds / wall,
        "positions_s": st.positions / wall,
        "positions_cpu_s": st.positions / max(cpu, 1e-9),
        # the positions a second if the search cost nothing: the network calls' time alone
        "bound_s": st.positions / max(st.eval_seconds, 1e-9),
        "moves_s": moves_per_s,
        "games_h": games_h,
        "finished": len(finished),
        "mean_plies": mean_plies,
    }


def _int8_copy(path: Path, game: Any, folder: Path) -> Path:
    """``path``'s int8 sibling when it exists (the shipped networks), else one quantized into ``folder``
    on the network's own games."""
    from engine.network import int8_sibling
    from trainer.network.quantize import calibration_planes_from_play, quantize_network

    sibling = int8_sibling(path)
    if sibling.is_file():
        return sibling
    out = folder / sibling.name
    if not out.exists():
        quantize_network(path, out, calibration_planes_from_play(path, game), "benchmarks/selfplay.py")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--games", nargs="+", default=list(DEFAULT_GAMES), help="game labels (go9 go19 chess shogi ...)"
    )
    parser.add_argument("--preset", default="small", help="network size (small = b6c64)")
    parser.add_argument("--seconds", type=float, default=20.0, help="self-play measuring time per game")
    parser.add_argument("--parallel", type=int, default=32, help="games played at once")
    parser.add_argument("--leaves", type=int, default=2, help="leaves per game and step")
    parser.add_argument("--simulations", type=int, default=100, help="visits per move")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    parser.add_argument("--pipeline", action="store_true", help="overlap tree work and network calls")
    parser.add_argument(
        "--root-mate-nodes",
        type=int,
        default=None,
        help="the mate search's node budget at every root (default: self-play's, selfplay.root_mate_nodes)",
    )
    parser.add_argument(
        "--root-search", choices=("puct", "gumbel"), default="puct", help="selfplay.root_search"
    )
    parser.add_argument(
        "--gumbel-considered",
        type=int,
        default=16,
        help="selfplay.gumbel_considered (m, with --root-search gumbel)",
    )
    parser.add_argument(
        "--network", choices=("random", "shipped"), default="random", help="a random --preset or weights/"
    )
    parser.add_argument(
        "--precision", choices=("fp32", "int8", "both"), default="fp32", help="the network or its int8 copy"
    )
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(1)
    print(
        f"self-play throughput, {args.preset} network, {args.parallel} games x {args.leaves} leaves, "
        f"{args.simulations} visits, onnxruntime {args.threads} thread(s), pipeline {'on' if args.pipeline else 'off'}, "
        f"network {args.network}, root search {args.root_search}"
        + (f" (m = {args.gumbel_considered})" if args.root_search == "gumbel" else "")
    )
    header = (
        f"{'game':7s} {'trees':8s} {'batch':>5s} {'raw ev/s':>9s} {'sp ev/s':>9s} {'ratio':>6s} {'net%':>5s} "
        f"{'pos/s':>7s} {'pos/cpu-s':>9s} {'bound':>7s} {'games/h':>8s} {'plies':>6s}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for label in args.games:
            precisions = ("fp32", "int8") if args.precision == "both" else (args.precision,)
            rates = []
            for precision in precisions:
                r = measure(
                    label,
                    args.preset,
                    args.seconds,
                    args.parallel,
                    args.leaves,
                    args.simulations,
                    args.threads,
                    args.pipeline,
                    Path(tmp),
                    args.network,
                    precision,
                    args.root_mate_nodes,
                    args.root_search,
                    args.gumbel_considered,
                )
                rates.append(float(r["positions_s"]))
                print(
                    f"{r['game']:7s} {r['trees']:8s} {r['batch']:5d} {r['raw_evals_s']:9.0f} "
                    f"{r['selfplay_evals_s']:9.0f} {r['ratio']:6.2f} {100 * r['network_share']:5.0f} "
                    f"{r['positions_s']:7.1f} {r['positions_cpu_s']:9.2f} {r['bound_s']:7.1f} {r['games_h']:>8s} {r['mean_plies']:6.0f}",
                    flush=True,
                )
            if args.precision == "both":
                print(f"{label:7s} int8 / fp32 positions per second: {rates[1] / max(rates[0], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
