"""``tabula``: the engine program.  Subcommands are added by the protocol and engine-core modules.

The engine modules (numpy, onnxruntime, the rules) are imported inside the commands that use them, so
``tabula --help`` and a mistyped flag answer at once.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from protocols.search_options import SEARCH_PARAMETERS, config_from_flags

if TYPE_CHECKING:
    from engine.inference import Backend
    from protocols.loop import Handler, LineSource, Output
    from protocols.settings import ProtocolSettings

#: A click command function (the decorators keep its type).
Command = TypeVar("Command", bound=Callable[..., Any])


#: The execution providers to ask for (``engine.inference.BACKENDS``, not imported here: startup time).
BACKEND_CHOICES = ("auto", "cpu", "cuda", "tensorrt")


def shown_option(
    *decls: str, default: Any, value_type: click.ParamType[Any] | None = None, help_text: str | None = None
) -> Callable[[Command], Command]:
    """An option whose ``--help`` shows its default (the engine's options all do)."""
    return click.option(*decls, default=default, show_default=True, type=value_type, help=help_text)


def backend_option(help_text: str | None = None) -> Callable[[Command], Command]:
    """``--backend``: the execution provider, as the engine's ``Backend`` option."""
    return shown_option(
        "--backend", default="auto", value_type=click.Choice(BACKEND_CHOICES), help_text=help_text
    )


def precision_option(help_text: str) -> Callable[[Command], Command]:
    """``--precision``: which copy of the network runs, as the engine's ``Precision`` option."""
    return shown_option(
        "--precision", default="auto", value_type=click.Choice(["auto", "fp32", "int8"]), help_text=help_text
    )


def batch_size_option(help_text: str | None = None) -> Callable[[Command], Command]:
    """``--batch-size``: leaves per network call, as the engine's option."""
    return shown_option("--batch-size", default=16, value_type=click.IntRange(1, 1024), help_text=help_text)


def threads_option(help_text: str) -> Callable[[Command], Command]:
    """``--threads``: inference threads (0: every core, as calls in flight), as the engine's option."""
    return shown_option("--threads", default=0, value_type=click.IntRange(0, 256), help_text=help_text)


#: The Go board sizes the engine plays (``protocols.gtp``'s MIN_SIZE..MAX_SIZE; not imported here).
GO_SIZES = click.IntRange(2, 19)


def _finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A float flag that must be finite (click's ``float`` accepts ``nan`` and ``inf``)."""
    if not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number")
    return value


def _log_file(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--log``: a file the engine can create (its folder exists, it is not a folder)."""
    if value is not None:
        if os.path.isdir(value):
            raise click.BadParameter(f"{value} is a folder")
        if not os.path.isdir(os.path.dirname(os.path.abspath(value))):
            raise click.BadParameter(f"no such folder: {os.path.dirname(value)}")
    return value


def checked_by(check: Callable[[str], object]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback: the value as given (``None``: not given) once ``check(value)`` takes it; the
    ``ValueError`` it raises for a bad one is click's one-line ``Error: Invalid value`` and exit status 2
    (no traceback).  The checks import the engine when called, not at startup."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            try:
                check(value)
            except ValueError as exc:
                raise click.BadParameter(str(exc)) from None
        return value

    return callback


def strength_table_file(value: str) -> None:
    """``--strength-table``: a table that loads (monotone, with its full-strength point); else a
    ``CalibrationError`` (a ``ValueError``)."""
    from engine.strength import StrengthTable

    StrengthTable.load(value)


def weakening_text(value: str) -> None:
    """``--weakening``: ``NODES[,TEMPERATURE[,MARGIN]]`` that parses (checked here, used by
    :func:`_settings`); else a ``ValueError``."""
    from engine.strength import Weakening

    Weakening.parse(value)


def network_file(value: str) -> None:
    """``--weights`` and ``--net``: an ONNX file whose top level and Tabula metadata read (a cut or
    random file is refused here; whether it fits the game is said when it is loaded); else a
    ``NetworkError`` (a ``ValueError``) naming the file and the fault."""
    from engine.network import read_metadata

    try:
        read_metadata(value)
    except OSError as exc:
        raise ValueError(f"{value}: cannot read it ({exc.strerror or exc})") from None


#: ``--weights`` and ``--net``: a network file that exists (a broken one is reported when loaded).
NETWORK_FILE = click.Path(exists=True, dir_okay=False)

ENGINE_FLAGS = [
    click.option(
        "--weights",
        "weights",
        default=None,
        type=NETWORK_FILE,
        callback=checked_by(network_file),
        help="Network file (.onnx) instead of the shipped default.",
    ),
    backend_option(),
    precision_option("auto: a network's int8 copy (NAME.int8.onnx) when it runs on the CPU."),
    batch_size_option("Leaves per network call."),
    threads_option("Inference threads (0: every core, one call in flight per core)."),
    shown_option(
        "--hash",
        "hash_mb",
        default=256,
        value_type=click.IntRange(1, 65536),
        help_text="Search tree memory in MB.",
    ),
    shown_option(
        "--move-overhead",
        default=100,
        value_type=click.IntRange(0, 10_000),
        help_text="Milliseconds kept back per move.",
    ),
    shown_option(
        "--policy-temperature",
        default=None,
        value_type=click.FloatRange(0.1, 10.0),
        help_text="Divide the network's policy logits by this before the softmax (default: the game's).",
    ),
    *(
        shown_option(
            p.flag,
            default=None,
            value_type=click.FloatRange(*p.flag_range),
            help_text=f"Search: {p.meaning} (default: {p.default}).",
        )
        for p in SEARCH_PARAMETERS
    ),
    shown_option(
        "--resign-threshold",
        default=0.95,
        value_type=click.FloatRange(0.0, 1.0),
        help_text="GTP: resign below -threshold (0: never).",
    ),
    click.option(
        "--boardsize", default=19, show_default=True, type=GO_SIZES, help="GTP: board size at start."
    ),
    click.option("--komi", default=7.5, show_default=True, callback=_finite, help="GTP: komi at start."),
    click.option(
        "--scoring",
        type=click.Choice(["area", "tromp-taylor"]),
        default="area",
        show_default=True,
        help="GTP: count with dead stones removed (area) or every stone alive (tromp-taylor).",
    ),
    click.option(
        "--keep-eyes/--fill-eyes",
        "keep_eyes",
        default=True,
        show_default=True,
        help="GTP: never play into one's own true single-point eye (genmove).",
    ),
    click.option(
        "--elo",
        default=None,
        type=click.IntRange(min=0),
        help="Limit the strength to this Elo (UCI/USI: UCI_LimitStrength and UCI_Elo; docs/strength.md).",
    ),
    click.option(
        "--strength-table",
        default=None,
        type=click.Path(exists=True, dir_okay=False),
        callback=checked_by(strength_table_file),
        help="Strength calibration table (JSON) instead of the shipped weights/strength-GAME.json.",
    ),
    click.option(
        "--weakening",
        default=None,
        metavar="NODES[,TEMPERATURE[,MARGIN]]",
        callback=checked_by(weakening_text),
        help="Play at this fixed weakening, no table (the strength calibration measures settings so).",
    ),
    click.option(
        "--log",
        "log_file",
        default=None,
        callback=_log_file,
        help="Write a debug log (protocol traffic) to this file.",
    ),
]


def engine_flags(func: Command) -> Command:
    """Add the engine flags (:data:`ENGINE_FLAGS`) to a command."""
    for option in reversed(ENGINE_FLAGS):
        func = option(func)
    return func


def _settings(flags: dict[str, Any]) -> ProtocolSettings:
    """The settings of the engine flags (click has checked and typed each value)."""
    from engine.options import EngineOptions, engine_search
    from engine.strength import Weakening
    from protocols.settings import ProtocolSettings

    weakening = flags.get("weakening")
    elo = flags.get("elo")
    engine = EngineOptions(
        hash_mb=int(flags["hash_mb"]),
        threads=int(flags["threads"]),
        batch_size=int(flags["batch_size"]),
        backend=flags["backend"],
        precision=flags["precision"],
        weights_file=str(flags["weights"]) if flags["weights"] else None,
        move_overhead_ms=int(flags["move_overhead"]),
        **(
            {}
            if flags.get("policy_temperature") is None
            else {"policy_temperature": flags["policy_temperature"]}
        ),
        limit_strength=elo is not None,
        elo=None if elo is None else int(elo),
        strength_table=flags.get("strength_table"),
        weakening=Weakening.parse(weakening) if weakening else None,
        search=config_from_flags(engine_search(), flags),
    )
    return ProtocolSettings(
        engine=engine,
        resign_threshold=float(flags["resign_threshold"]),
        go_board_size=int(flags["boardsize"]),
        go_komi=float(flags["komi"]),
        go_scoring=str(flags["scoring"]),
        go_keep_eyes=bool(flags["keep_eyes"]),
    )


def game_labels(value: str) -> None:
    """``--games``: each comma-separated label must name a game; else a ``ValueError``."""
    from engine.games import get_game

    for label in value.split(","):
        get_game(label.strip())


#: ``--games`` of the bench commands: comma-separated labels, each checked (:func:`game_labels`).
games_option = click.option(
    "--games",
    default="chess,shogi,go9,go19",
    show_default=True,
    callback=checked_by(game_labels),
    help="Comma-separated labels.",
)


def _setup_logging(log_file: str | None) -> None:
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler()
    )  # stderr
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if log_file else logging.WARNING)


def _quiet_garbage_collector() -> None:
    """Search trees are large and acyclic (nodes point only to their children), so reference counting
    frees them; full cyclic collections over hundreds of thousands of nodes only add pauses to `stop`
    and `isready` answers.  Collect young objects rarely and old ones almost never."""
    gc.collect()
    gc.freeze()  # what exists at start-up is never scanned again
    gc.set_threshold(50_000, 50, 1000)


def run_protocol(protocol: str, flags: dict[str, Any]) -> None:
    """Serve one protocol on stdin/stdout (``auto``: decided by the first line)."""
    from protocols.loop import LineSource, Output, detect_protocol, serve

    _setup_logging(flags.get("log_file"))
    _quiet_garbage_collector()
    settings = _settings(flags)
    source = LineSource()
    output = Output()
    first: str | None = None
    if protocol == "auto":
        protocol, first = detect_protocol(source)
    serve(_handler_class(protocol)(output, source, settings), source, first)
    _exit_now_if_still_compiling()


def _exit_now_if_still_compiling() -> None:
    """After ``quit``: while the kernels still compile in the background (a first run, a binary without
    numba's cache), end the process now, as an engine should on ``quit``, instead of finalizing the
    interpreter under a thread inside numba's compiler, which can end the process with SIGABRT
    (docs/benchmarks.md, "Costs behind the code's design").  The compile helpers are killed and the output
    flushed first."""
    from engine.kernel_loading import COMPILE_THREAD
    from engine.search.kernel_build import kill_helpers

    if not any(t.name == COMPILE_THREAD and t.is_alive() for t in threading.enumerate()):
        return

    kill_helpers()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the GUI may have gone
            stream.flush()
    os._exit(0)


def _handler_class(protocol: str) -> Callable[[Output, LineSource, ProtocolSettings], Handler]:
    """The handler of ``uci``, ``usi`` or (anything else) ``gtp``."""
    if protocol == "uci":
        from protocols.uci import UciHandler

        return UciHandler
    if protocol == "usi":
        from protocols.usi import UsiHandler

        return UsiHandler
    from protocols.gtp import GtpHandler

    return GtpHandler


@click.group(invoke_without_command=True)
@engine_flags
@click.pass_context
def main(ctx: click.Context, /, **flags: Any) -> None:
    """Tabula, an AlphaZero engine: UCI (chess), USI (shogi) and GTP (Go) on stdin/stdout.

    With no command, the first input line decides the protocol: `uci`, `usi`, anything else is GTP.
    """
    ctx.obj = flags
    if ctx.invoked_subcommand is None:
        run_protocol("auto", flags)


def _merged_flags(ctx: click.Context, sub_flags: dict[str, Any]) -> dict[str, Any]:
    """Flags given before the subcommand (``tabula --weights X uci``) or after it (``tabula uci
    --weights X``); the later, explicitly given ones win."""
    merged = dict(ctx.obj or {})
    for name, value in sub_flags.items():
        if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT or name not in merged:
            merged[name] = value
    return merged


@main.command()
@engine_flags
@click.pass_context
def uci(ctx: click.Context, /, **flags: Any) -> None:
    """Speak UCI (chess; shogi through `setoption name UCI_Variant value shogi`)."""
    run_protocol("uci", _merged_flags(ctx, flags))


@main.command()
@engine_flags
@click.pass_context
def usi(ctx: click.Context, /, **flags: Any) -> None:
    """Speak USI (shogi)."""
    run_protocol("usi", _merged_flags(ctx, flags))


@main.command()
@engine_flags
@click.pass_context
def gtp(ctx: click.Context, /, **flags: Any) -> None:
    """Speak GTP v2 (Go)."""
    run_protocol("gtp", _merged_flags(ctx, flags))


@main.command("analysis")
@engine_flags
@click.option(
    "--game",
    "analysis_game",
    default="go",
    show_default=True,
    type=click.Choice(["go", "chess", "shogi"]),
    help="The game of a query without a 'game' field.",
)
@click.option(
    "--visits", default=None, type=click.IntRange(1, 100_000_000), help="maxVisits of a query that sets none."
)
@click.option(
    "--analysis-threads",
    "-analysis-threads",
    "analysis_threads",
    default=None,
    type=click.IntRange(1, 1024),
    help="Positions searched at once (their network calls shared) [default: 16].",
)
@click.option(
    "-model", "katago_model", default=None, help="KataGo's flag: an .onnx file is used as --weights."
)
@click.option(
    "-config",
    "katago_config",
    default=None,
    help="KataGo's analysis config file (keys read: docs/analysis.md).",
)
@click.option("-override-config", "katago_override", default=None, help="KataGo's 'key=value,...' overrides.")
@click.option("-human-model", "katago_human_model", default=None, hidden=True)
@click.option(
    "--quit-without-waiting",
    "-quit-without-waiting",
    "quit_without_waiting",
    is_flag=True,
    help="At EOF stop the searches instead of finishing the queued queries.",
)
@click.pass_context
def analysis(ctx: click.Context, /, **flags: Any) -> None:
    """Speak KataGo's JSON analysis protocol (Go, chess, shogi; KaTrain's engine): docs/analysis.md."""
    from protocols.analysis.cli_settings import analysis_settings

    merged = _merged_flags(ctx, flags)
    _setup_logging(merged.get("log_file"))
    _quiet_garbage_collector()
    try:
        settings = analysis_settings(_settings, merged)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    from protocols.analysis.server import serve_analysis

    serve_analysis(settings)
    _exit_now_if_still_compiling()


@main.group(invoke_without_command=True)
@games_option
@click.option(
    "--nodes", default=800, show_default=True, type=click.IntRange(min=1), help="Playouts per fixed position."
)
@click.option(
    "--repeat",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Searches of each position; the fastest counts (as timeit: other load only adds time).",
)
@click.option(
    "--evaluator", "evaluator_kind", default="onnx", show_default=True, type=click.Choice(["onnx", "uniform"])
)
@click.option(
    "--net",
    default=None,
    type=NETWORK_FILE,
    callback=checked_by(network_file),
    help="Network file (default: the shipped network of each game).",
)
@batch_size_option()
@threads_option("Inference threads (0: as the engine, one call in flight per core).")
@precision_option("Which copy of the network runs, as the engine's option (auto: int8 on the CPU).")
@backend_option("Execution provider, as the engine's option (auto: TensorRT, then CUDA, then CPU).")
@click.pass_context
def bench(
    ctx: click.Context,
    games: str,
    nodes: int,
    repeat: int,
    evaluator_kind: str,
    net: str | None,
    batch_size: int,
    threads: int,
    precision: str,
    backend: str,
) -> None:
    """Search benchmark (like Stockfish's bench): fixed positions, fixed nodes; `bench rules` for the rules."""
    if ctx.invoked_subcommand is not None:
        return
    from engine.bench import bench_search
    from engine.inference import Precision

    click.echo(
        f"{'game':<7}{'nodes':>8}{'time s':>8}{'nodes/s':>9}{'evals/s':>9}{'ort default':>12}{'ratio':>6}"
        f"{'machine best':>13}{'share':>6}  evaluator"
    )
    for label in games.split(","):
        f = bench_search(
            label.strip(),
            nodes,
            evaluator_kind,
            net,
            batch_size,
            threads,
            precision=cast("Precision", precision),
            backend=cast("Backend", backend),
            repeat=repeat,
        )
        machine = (
            f"{f.alone.default_session:12,.0f}{f.of_default_session:6.2f}{f.alone.best:13,.0f}{f.share:6.2f}"
            if f.alone and f.of_default_session is not None and f.share is not None
            else f"{'-':>12}{'-':>6}{'-':>13}{'-':>6}"
        )
        click.echo(
            f"{f.label:<7}{f.nodes:8d}{f.seconds:8.2f}{f.nodes_per_s:9,.0f}{f.evals_per_s:9,.0f}{machine}  {f.evaluator}"
        )


@bench.command("rules")
@games_option
@click.option(
    "--seconds",
    default=3.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds per measurement.",
)
def bench_rules_cmd(games: str, seconds: float) -> None:
    """Random-play plies/s and encode() calls/s per game, beside the bare rules library."""
    from engine.bench import bench_rules

    click.echo(f"{'game':<7}{'plies/s':>12}{'encodes/s':>12}{'games':>8}{'bare lib plies/s':>18}{'ratio':>8}")
    for label in games.split(","):
        f = bench_rules(label.strip(), seconds)
        base = (
            f"{f.baseline_plies_per_s:18,.0f}{f.plies_per_s / f.baseline_plies_per_s:8.2f}"
            if f.baseline_plies_per_s
            else ""
        )
        click.echo(f"{f.label:<7}{f.plies_per_s:12,.0f}{f.encodes_per_s:12,.0f}{f.games:8d}{base}")


@main.command("info")
@click.argument("network", type=click.Path(exists=True, dir_okay=False))
@backend_option("Execution provider to try when loading the network.")
def info_cmd(network: str, backend: str) -> None:
    """Print a network's metadata, inputs and outputs, and the execution providers that work."""
    import onnxruntime as ort

    from engine.inference import InferenceSettings, create_session
    from engine.network import NetworkError, check_compatible, read_metadata, read_metadata_props

    try:
        props = read_metadata_props(network)
    except NetworkError as exc:
        raise click.ClickException(str(exc)) from None
    rows: list[tuple[str, str]] = [("file", f"{network} ({os.path.getsize(network):,} bytes)")]
    rows += sorted(props.items())
    try:
        meta = read_metadata(network)
    except NetworkError as exc:
        for key, value in rows:
            click.echo(f"{key:<26}{value}")
        raise click.ClickException(str(exc)) from None
    session, provider, probe_log = create_session(
        network,
        InferenceSettings(backend=cast("Backend", backend)),  # click.Choice has checked it
        (meta.planes, meta.board_size, meta.board_size),
    )
    for arg in session.get_inputs():
        rows.append((f"input {arg.name}", f"{arg.type} {arg.shape}"))
    for arg in session.get_outputs():
        rows.append((f"output {arg.name}", f"{arg.type} {arg.shape}"))
    try:
        from engine.games import get_game

        game_info = get_game(meta.label).info
        check_compatible(meta, game_info, source=os.path.basename(network))
        rows.append(("compatible", f"yes: {meta.label}, encoding v{game_info.encoding_version}"))
    except NetworkError as exc:
        rows.append(("compatible", f"NO: {exc}"))
    except (ImportError, ValueError) as exc:
        rows.append(("compatible", f"unknown (no rules for {meta.label}: {exc})"))
    rows.append(("providers listed", ", ".join(ort.get_available_providers())))
    rows.append((f"provider ({backend})", provider))
    if probe_log:
        reasons = re.findall(r"with error: ([^\n\x1b]*)", probe_log)
        why = f": {reasons[0].strip()}" if reasons else ""
        rows.append(
            (
                "probe",
                f"GPU providers tried and not usable here{why} (onnxruntime's messages kept off stdout)",
            )
        )
    for key, value in rows:
        click.echo(f"{key:<26}{value}")
