"""``tabula-train``: the trainer program.  Stages are added by the trainer modules."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def main() -> None:
    """Tabula's AlphaZero trainer: self-play, training, export, evaluation."""


@main.command("export")
@click.option("--game", "label", required=True, help="Game label: chess, shogi, go9, go19, go<N>.")
@click.option("--preset", default="small", show_default=True,
              help="Model size: tiny, small, medium, large, paper, or bBcF such as b6c64.")
@click.option("--random", "random_init", is_flag=True, help="Export a randomly initialised (untrained) network.")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="The .onnx file to write.")
@click.option("--seed", default=0, show_default=True, help="Seed of the random initialisation.")
@click.option("--wdl", is_flag=True, help="Add a win/draw/loss head.")
@click.option("--komi", type=float, default=None, help="Go: komi recorded in the metadata (default: the rules').")
def export_cmd(label: str, preset: str, random_init: bool, out: str, seed: int, wdl: bool, komi: float | None) -> None:
    """Write a network under the network contract (one ONNX file with Tabula metadata)."""
    import torch

    from engine.games import get_game
    from trainer.export import export_onnx
    from trainer.model import build_model

    if not random_init:
        raise click.UsageError("give --random (exporting a training checkpoint comes with --checkpoint)")
    game = get_game(label)
    info = game.info
    if info.name == "go" and komi is None:
        komi = getattr(getattr(game, "rules", None), "komi", None)
    torch.manual_seed(seed)
    model = build_model(info, preset, wdl=wdl)
    command = f"tabula-train export --game {label} --preset {preset} --random --seed {seed}"
    command += (" --wdl" if wdl else "") + (f" --komi {komi}" if info.name == "go" and komi is not None else "")
    command += f" --out {out}"
    meta = export_onnx(model, out, step=0, komi=komi, made_by=f"{command}; random init, untrained")
    size = Path(out).stat().st_size
    click.echo(f"wrote {out}: {meta.label} {meta.preset}, {size:,} bytes, random init (seed {seed}), untrained")
