"""Fill numba's cache with every kernel the engine loads before a game's first search, without a network
and without searching: ``python -m engine.precompile [GAME ...]``.

A package build runs it (``build_hooks/tabula_build_backend.py`` for ``pip install .``'s wheel,
``build.spec`` for the PyInstaller bundle) so that the cache ships in the package
(:mod:`engine.kernel_cache`: ``engine/_kernels/``) and a user's first game neither waits for numba nor
plays its first moves without a search while it compiles.  Per game it loads what the engine loads at
``isready`` (:mod:`engine.session`), for exactly the argument types the engine calls them with: the
ruleset's kernels (``warm_up_rules``: one encoding and one move list), the compiled tree's
(``warm_up_search``: the tree module's ``warm_up``, its parts compiled on every core when nothing is
cached, :func:`~engine.search.kernel_build.load_kernels`) and the tree memory's reservation
(``reserve_search_memory``, here of 1 MB).  Go's kernels serve every board size (the size is a value,
not a type).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from engine.games.registry import GAME_NAMES, get_game
from engine.kernel_loading import reserve_search_memory, warm_up_rules, warm_up_search
from engine.options import EngineOptions

__all__ = ["main", "precompile_game"]


def precompile_game(name: str) -> float:
    """Load (compiling what the cache lacks) the kernels the engine loads for ``name`` (a game in
    :data:`~engine.games.registry.GAME_NAMES`) before its first search; the seconds it took."""
    started = time.monotonic()
    game = get_game(name)
    options = EngineOptions(hash_mb=1)  # the engine's settings; a 1 MB tree reservation compiles its kernel
    warm_up_rules(game)
    warm_up_search(game)
    reserve_search_memory(game, game.new_state(), options)
    return time.monotonic() - started


def main(argv: Sequence[str] | None = None) -> int:
    """Precompile the games named in ``argv`` (default: all), printing each one's time."""
    parser = argparse.ArgumentParser(prog="python -m engine.precompile", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "games", nargs="*", metavar="GAME", help=f"any of {', '.join(GAME_NAMES)} (default: all)"
    )
    args = parser.parse_args(argv)
    unknown = [g for g in args.games if g not in GAME_NAMES]
    if unknown:
        parser.error(f"unknown game {unknown[0]!r}: expected one of {', '.join(GAME_NAMES)}")
    for name in args.games or GAME_NAMES:
        print(f"{name}: kernels ready in {precompile_game(name):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
