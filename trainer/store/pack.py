"""A run's resumable core, small enough to keep in version control or copy to another machine.

``tabula-train pack --out runs/go9 --to training/go9`` copies what a run cannot rebuild: its settings,
its logs (the Elo curve), the newest checkpoint (weights and optimizer state), the first network (the
baseline of every "vs first" match), the network of the last evaluation (the next one plays against
it), the newest network and the plot.  Self-play data (shards, game records) and TensorBoard files
stay behind: they are large and the run regrows them.  Copy the pack
back to a run folder and ``tabula-train run --out FOLDER`` resumes from the packed step (self-play
refills the replay window before training continues).

A run whose games are slow to replay can carry its newest shards (``shards_bytes``, ``tabula-train pack
--shards-mb``): the resumed run loads them as its window and waits only for the positions they lack.
A few MB of shards can save a slow run (Go 19x19 on a CPU) hours of refilling
(docs/experiments.md, "The training section's figures (moved from the README)").  The resumed run
counts the positions and games its checkpoint saw or those its carried shards hold, whichever is more.

Files are written atomically; packing again replaces the older pack's checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainer.store.atomic import atomic_write_bytes, remove_stale_temporaries
from trainer.store.runfolder import RunFolder, list_checkpoints


def pack_run(run: str | os.PathLike[str], dest: str | os.PathLike[str], shards_bytes: int = 0) -> list[Path]:
    """Copy the resumable core of the run folder ``run`` into ``dest``; returns the files written.
    With ``shards_bytes`` the newest shards that fit in it come too (the pack's older ones go).

    Raises:
        FileNotFoundError: ``run`` is not a run folder or has no checkpoint yet.
    """
    source, target = RunFolder(run), RunFolder(dest)
    if Path(dest).resolve() == Path(run).resolve():
        raise ValueError("a run cannot be packed into its own folder")
    if not source.exists():
        raise FileNotFoundError(f"{run} is not a run folder (no config.toml)")
    checkpoints = list_checkpoints(source.checkpoints)
    if not checkpoints:
        raise FileNotFoundError(f"{run} has no checkpoint yet")
    _step, newest = checkpoints[-1]
    remove_stale_temporaries(target.root)  # a pack killed before left them (benchmarks/chaos.py)
    wanted = [
        source.config_path,
        source.log_jsonl,
        source.log_txt,
        newest,
        source.first_network,
        source.latest,
        source.plot,
    ]
    evaluations = source.read_events("evaluate")
    if evaluations:  # the next evaluation plays against it (the "vs previous" link of the Elo chain)
        wanted.append(source.network(int(evaluations[-1]["step"])))
    wanted += _newest_shards(source, shards_bytes)
    written = []
    for path in wanted:
        if not path.is_file():
            continue
        out = target.root / path.relative_to(source.root)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(out, path.read_bytes())
        written.append(out)
    for _step, old in list_checkpoints(target.checkpoints):
        if old.name != newest.name:
            old.unlink()
    kept = {p.name for p in written}
    for old_net in target.networks.glob("net-*.onnx"):
        if old_net.name not in kept:
            old_net.unlink()
    if target.shards.is_dir():
        for old_shard in target.shards.glob("*.npz"):
            if old_shard.name not in kept:
                old_shard.unlink()
    return written


def _newest_shards(source: RunFolder, limit: int) -> list[Path]:
    """The newest shards of ``source`` (names sort by time) whose sizes add up to at most ``limit`` bytes,
    oldest first."""
    if limit <= 0 or not source.shards.is_dir():
        return []
    chosen: list[Path] = []
    total = 0
    for shard in sorted(source.shards.glob("*.npz"), reverse=True):
        size = shard.stat().st_size
        if total + size > limit:
            break
        chosen.append(shard)
        total += size
    return chosen[::-1]
