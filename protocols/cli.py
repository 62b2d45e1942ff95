"""``tabula``: the engine program.  Subcommands are added by the protocol and engine-core modules."""

from __future__ import annotations

import click


@click.group(invoke_without_command=True)
@click.pass_context
def main(ctx: click.Context) -> None:
    """Tabula, an AlphaZero engine: UCI (chess), USI (shogi) and GTP (Go) on stdin/stdout."""
    if ctx.invoked_subcommand is None:
        click.echo("protocol loop not implemented yet", err=True)


@main.group()
def bench() -> None:
    """Benchmarks that print figures."""


@bench.command("rules")
@click.option("--games", default="chess,shogi,go9,go19", show_default=True, help="Comma-separated labels.")
@click.option("--seconds", default=3.0, show_default=True, help="Seconds per measurement.")
def bench_rules_cmd(games: str, seconds: float) -> None:
    """Random-play plies/s and encode() calls/s per game, beside the bare rules library."""
    from engine.bench import bench_rules

    click.echo(f"{'game':<7}{'plies/s':>12}{'encodes/s':>12}{'games':>8}{'bare lib plies/s':>18}{'ratio':>8}")
    for label in games.split(","):
        f = bench_rules(label.strip(), seconds)
        base = f"{f.baseline_plies_per_s:18,.0f}{f.plies_per_s / f.baseline_plies_per_s:8.2f}" if f.baseline_plies_per_s else ""
        click.echo(f"{f.label:<7}{f.plies_per_s:12,.0f}{f.encodes_per_s:12,.0f}{f.games:8d}{base}")
