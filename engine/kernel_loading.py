"""Loading what a session's searches run on before they need it: the rules' first-use loading
(:func:`warm_up_rules`), the compiled tree's kernels on a background thread (:class:`KernelLoader`) or
at once (:func:`warm_up_search`), the compiled tree's memory (:func:`reserve_search_memory`), and
taking what was loaded out of the cyclic collector's sight (:func:`freeze_loaded_objects`)."""

from __future__ import annotations

import gc
import importlib
import logging
import threading
from typing import TYPE_CHECKING, Any

from engine.games import Game, GameState
from engine.search.kernel_build import load_kernels
from engine.search.tree_factory import COMPILED_TREES

if TYPE_CHECKING:
    from engine.options import EngineOptions

log = logging.getLogger("tabula.session")


def warm_up_rules(game: Game) -> None:
    """Encode one position and list its moves, so that what a ruleset loads on first use (shogi's numba
    kernels: numba's import and its cache, a second or two) is loaded before ``readyok``, not inside the
    first search's clock."""
    game.warm_up()


def warm_up_search(game: Game) -> None:
    """Load the compiled search's kernels of ``game`` now (a benchmark does this before its clock starts;
    the session loads them in the background, :class:`KernelLoader`)."""
    load_kernels(COMPILED_TREES[game.info.name])


def reserve_search_memory(game: Game, state: GameState[Any], options: EngineOptions) -> bool:
    """Claim and touch the compiled tree's memory for searches of ``state``'s game up to ``Hash``
    (``options.hash_mb``) now, as Stockfish allocates and clears its hash table before the first
    search: the first search on fresh memory otherwise pays a page fault per 4 KB it reaches
    (docs/benchmarks.md, "Costs behind the code's design").  The arrays stay in the pool (``compiled_tree.POOL``) for every later tree, so only the
    first call costs.  Returns whether new memory was touched."""
    module = importlib.import_module(COMPILED_TREES[game.info.name])
    return bool(module.reserve(state, options.search_config(), options.hash_mb * 1024 * 1024))


#: The name of the thread that loads (or, on a first run, compiles) the compiled search's kernels.
COMPILE_THREAD = "tabula-compile"


class KernelLoader:
    """Loads the kernels of one game's compiled tree (``game``: a key of :data:`COMPILED_TREES`) once,
    on a background thread.

    numba loads them from its cache in about a second (its import included), but compiles them on a
    first run with an empty cache, on every core (:func:`~engine.search.kernel_build.load_kernels`:
    tens of seconds a game, about a third less than on one core).
    :meth:`Session.ensure_ready` starts the loading with the network's (``isready``, GTP's start-up)
    and waits for it as long as the protocol allows (``compiled_wait_s``); a search waits for what is
    left (``Session._await_kernels``).
    """

    def __init__(self, game: str) -> None:
        self._game = game
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed = False
        self._frozen = False

    @property
    def ready(self) -> bool:
        """The kernels are loaded and work."""
        return self._done.is_set() and not self._failed

    @property
    def done(self) -> bool:
        """The loading has ended (loaded, or failed)."""
        return self._done.is_set()

    def start(self) -> None:
        """Start loading (once; later calls do nothing)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name=COMPILE_THREAD, daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the loading to end; ``True`` once it has (``False``: not started, or still running)."""
        return self._thread is not None and self._done.wait(timeout)

    def freeze_once_loaded(self) -> bool:
        """Once the kernels are loaded, :func:`freeze_loaded_objects` (once); whether it froze now.  The
        session calls this while no search runs: the collection before the freeze holds the GIL for
        0.1-0.25 s, which a search's deadline cannot absorb, so the loading thread never does it."""
        if self.ready and not self._frozen:
            self._frozen = True
            freeze_loaded_objects()
            return True
        return False

    def _load(self) -> None:
        try:
            load_kernels(COMPILED_TREES[self._game])
        except Exception:  # the searches play the network's first choice: say why, once
            log.exception("the compiled search is unavailable; playing the network's first choice")
            self._failed = True
        finally:
            self._done.set()


def freeze_loaded_objects() -> None:
    """Move what loading made (a network session, numba's dispatchers and modules: tens of thousands
    of objects) out of the cyclic collector's sight (``gc.freeze``): they live as long as the program,
    and the full collection after each search (:meth:`Session._run_search`) scanned them every move
    with the GIL held, while the next `go` waited unread
    (docs/benchmarks.md, "Costs behind the code's design").  Reference counting still frees any of them
    that is dropped."""
    gc.collect()
    gc.freeze()
