"""``tabula-train``: the trainer program.  Stages are added by the trainer modules."""

from __future__ import annotations

import click


@click.group()
def main() -> None:
    """Tabula's AlphaZero trainer: self-play, training, export, evaluation."""
