"""``tabula-train status`` and ``tabula-train plot``: read a run folder's log and files."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from trainer.store.runfolder import RunFolder, list_checkpoints
from trainer.store.shards import list_shards


def _ago(t: float) -> str:
    s = max(0, time.time() - t)
    if s < 120:
        return f"{s:.0f}s ago"
    if s < 7200:
        return f"{s / 60:.0f} min ago"
    return f"{s / 3600:.1f} h ago"


def _running(folder: RunFolder) -> str:
    """Is a driver holding the run lock?"""
    path = folder.root / "run.lock"
    if not path.is_file():
        return "no"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            return f"yes (pid {f.read().strip() or '?'})"
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    return "no"


def run_status(root: str | os.PathLike[str]) -> str:
    """A few lines on where the run stands."""
    folder = RunFolder(root)
    if not folder.exists():
        return f"{root}: not a run folder (no config.toml)"
    config = folder.read_config()
    lines = [
        f"run        {folder.root}  ({config.game.label}, preset {config.preset}, model {config.model.preset})",
        f"running    {_running(folder)}",
    ]
    ckpts = list_checkpoints(folder.checkpoints)
    lines.append(
        f"checkpoint {('step ' + str(ckpts[-1][0])) if ckpts else 'none'} of {config.train.total_steps}"
    )
    nets = folder.network_steps()
    lines.append(f"networks   {len(nets)} (newest step {nets[-1] if nets else '-'})")
    shards = list_shards(folder.shards)
    lines.append(f"shards     {len(shards)}")
    trains = folder.read_events("train")
    if trains:
        t = trains[-1]
        lines.append(
            f"data       {t.get('games', 0)} games, {t.get('positions', 0)} positions "
            f"({t.get('positions_per_s', 0):.1f} positions/s, {t.get('games_per_hour', 0):.0f} games/h)"
        )
        if "loss" in t:
            lines.append(
                f"losses     total {t['loss']:.4f}, value {t['value_loss']:.4f}, policy {t['policy_loss']:.4f}, "
                f"entropy {t.get('policy_entropy', float('nan')):.3f} at step {t['step']} ({_ago(t['time'])})"
            )
        rate = t.get("resign_false_positive_rate")
        if rate is not None:
            lines.append(
                f"resign     false positives {100 * rate:.1f}% of {t.get('resign_would', 0)} played-out games"
            )
    evals = folder.read_events("evaluate")
    if evals:
        e = evals[-1]
        lines.append(f"elo        {e.get('elo_chain', 0):+.0f} (chain of generations) at step {e['step']}")
        for name in ("previous", "first", "best"):
            r = e.get(f"vs_{name}")
            if r:
                lines.append(
                    f"  vs {name:8s} step {r['opponent_step']}: +{r['wins']} ={r['draws']} -{r['losses']} "
                    f"({100 * r['score']:.1f}%), Elo {r['elo']:+.0f} [{r['low']:+.0f}, {r['high']:+.0f}]"
                )
    stops = folder.read_events("stop")
    starts = folder.read_events("start")
    if starts:
        lines.append(f"started    {_ago(starts[-1]['time'])}; {len(starts)} start(s)")
    if stops and (not starts or stops[-1]["time"] >= starts[-1]["time"]):
        lines.append(f"stopped    {_ago(stops[-1]['time'])}: {stops[-1].get('reason', '')}")
    return "\n".join(lines)


def elo_by_cpu_hours(events: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """``(CPU hours, chained Elo)`` of every evaluation logged after the run began logging CPU time
    (the CPU hours of the newest event before it)."""
    points: list[tuple[float, float]] = []
    hours: float | None = None
    for event in events:
        if "cpu_hours" in event:
            hours = float(event["cpu_hours"])
        elif event.get("kind") == "evaluate" and hours is not None and "elo_chain" in event:
            points.append((hours, float(event["elo_chain"])))
    return points


def plot_run(root: str | os.PathLike[str], png: str | os.PathLike[str] | None = None) -> Path:
    """Elo (chain and vs the first network) and losses against training steps, and, once the run logs
    its CPU time, the Elo chain against CPU hours (the learning curve per CPU-hour), one PNG."""
    import matplotlib  # heavy, and only `plot` needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = RunFolder(root)
    out = Path(png) if png is not None else folder.plot
    by_cpu = elo_by_cpu_hours(folder.read_events())
    rows = 3 if by_cpu else 2
    fig, axes = plt.subplots(rows, 1, figsize=(8, 3.5 * rows))
    axes[1].sharex(axes[0])
    label = folder.read_config().game.label if folder.exists() else str(root)
    axes[0].set_title(f"{label}: {folder.root.name}")
    _plot_elo(axes[0], folder.read_events("evaluate"))
    _plot_losses(axes[1], [e for e in folder.read_events("train") if "loss" in e])
    if by_cpu:
        _plot_elo_by_cpu(axes[2], by_cpu)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _plot_elo(ax: Any, evals: list[dict[str, Any]]) -> None:
    """The Elo chain and the Elo against the first network (95% bars) by training step."""
    if evals:
        steps = [e["step"] for e in evals]
        ax.plot(steps, [e.get("elo_chain", 0) for e in evals], marker="o", label="chain of generations")
        first = [(e["step"], e["vs_first"]) for e in evals if e.get("vs_first")]
        if first:
            cap = 400.0  # an infinite bound (perfect score) is drawn as an open bar of this length

            def bar(x: float) -> float:
                return x if np.isfinite(x) else cap

            ax.errorbar(
                [s for s, _ in first],
                [r["elo"] for _, r in first],
                yerr=[
                    [bar(r["elo"] - r["low"]) for _, r in first],
                    [bar(r["high"] - r["elo"]) for _, r in first],
                ],
                fmt="s",
                capsize=3,
                label="vs the first network (95%; open bars: infinite)",
            )
        ax.legend()
    ax.set_ylabel("Elo")
    ax.grid(alpha=0.3)


def _plot_losses(ax: Any, trains: list[dict[str, Any]]) -> None:
    """The training losses (and Go's auxiliary ones, when logged) by step."""
    if trains:
        steps = [e["step"] for e in trains]
        for key in ("loss", "value_loss", "policy_loss", "ownership_loss", "score_loss"):
            if all(key in e for e in trains):
                ax.plot(steps, [e[key] for e in trains], label=key)
        ax.legend()
    ax.set_xlabel("training step")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)


def _plot_elo_by_cpu(ax: Any, by_cpu: list[tuple[float, float]]) -> None:
    ax.plot([h for h, _ in by_cpu], [e for _, e in by_cpu], marker="o")
    ax.set_xlabel("CPU hours (self-play and training, all invocations)")
    ax.set_ylabel("Elo (chain)")
    ax.grid(alpha=0.3)
