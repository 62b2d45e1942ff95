"""Engine settings, the same in every protocol: what a UCI/USI option or a GTP flag sets, passed to a
:class:`~engine.session.Session` (which re-exports it) and read by the network and kernel loaders."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from engine.chess_tablebase import MAX_PIECES
from engine.inference import Backend, Precision
from engine.search.config import SearchConfig
from engine.search.time_manager import TimeConfig
from engine.strength import Weakening

if TYPE_CHECKING:
    from engine.games.base import Game

__all__ = ["GAME_DEFAULT", "EngineOptions"]

#: ``EngineOptions.search``'s ``lcb_ratio`` until an option sets it: the game's default
#: (``PlayProfile.lcb_visit_share``), read by :meth:`EngineOptions.search_config`.
GAME_DEFAULT = -1.0


def engine_search() -> SearchConfig:
    """The engine's search settings before any option: the paper's, the LCB share the game's."""
    return SearchConfig(lcb_ratio=GAME_DEFAULT)


@dataclasses.dataclass(frozen=True)
class EngineOptions:
    """Engine settings, the same in every protocol (UCI/USI options, GTP flags).

    Attributes:
        hash_mb: memory for the search tree, in MB (the search config's memory budget: the tree's
            arrays' bytes).
        threads: onnxruntime intra-op threads of one network call at a time; 0: every core, as several
            one-thread calls in flight (:func:`~engine.network_loading.inference_plan`).
        batch_size: leaves per network call.
        backend: ``auto``, ``cpu``, ``cuda`` or ``tensorrt``.
        weights_file: the network to load; ``None`` for the shipped default of the game.
        move_overhead_ms: subtracted from every time allocation.
        multipv: lines reported.
        ponder: pondering allowed (UCI ``Ponder`` / USI ``USI_Ponder``; informational).
        chess960: Chess960 castling notation (UCI ``UCI_Chess960``).
        info_interval_s: seconds between progress reports.
        precision: ``auto`` runs a network's int8 sibling (``NAME.int8.onnx``) when the network runs on
            the CPU and the sibling exists, ``int8`` asks for it on any provider, ``fp32`` never uses it.
        limit_strength: play at ``elo`` (UCI ``UCI_LimitStrength``; :mod:`engine.strength`).
        elo: the strength asked for (UCI ``UCI_Elo``); ``None``: the calibration table's lowest.
        strength_table: the calibration table file; ``None`` for the shipped ``weights/strength-GAME.json``.
        weakening: a fixed weakening that overrides the table (calibration runs measure settings so).
        syzygy_path: folders of Syzygy tablebases for chess (``os.pathsep`` between them; empty: none),
            probed at the root (:mod:`engine.chess_tablebase`).
        syzygy_probe_limit: the most pieces a probed position may have (0 turns probing off).
        own_book: play chess openings from ``book_file`` (:mod:`engine.chess_book`).
        book_file: a Polyglot opening book (empty: none).
        policy_temperature: the network's policy logits are divided by this before the softmax that
            makes the priors (:class:`~engine.inference.InferenceSettings`; UCI/USI
            ``PolicyTemperature`` in hundredths); ``None``: the game's default
            (:func:`~engine.network_loading.policy_temperature_for`).
        mate_threat_nodes: shogi: before each search, every root move after which the opponent has a
            mate that cshogi's df-pn proves in this many nodes becomes a proven loss
            (:mod:`engine.search.mate_threats`; 0 turns it off).
        search: PUCT settings (batch size and node budget are filled from the fields above; an
            ``lcb_ratio`` of :data:`GAME_DEFAULT` is the game's).
    """

    hash_mb: int = 256
    threads: int = 0
    batch_size: int = 16
    backend: Backend = "auto"
    weights_file: str | None = None
    move_overhead_ms: int = 100
    multipv: int = 1
    ponder: bool = False
    chess960: bool = False
    info_interval_s: float = 1.0
    precision: Precision = "auto"
    limit_strength: bool = False
    elo: int | None = None
    strength_table: str | None = None
    weakening: Weakening | None = None
    syzygy_path: str = ""
    syzygy_probe_limit: int = MAX_PIECES
    own_book: bool = False
    book_file: str = ""
    mate_threat_nodes: int = 1000
    policy_temperature: float | None = None
    search: SearchConfig = dataclasses.field(default_factory=engine_search)

    def search_config(self, game: Game | None = None) -> SearchConfig:
        """The search settings of a search of ``game``: ``search`` with the batch, the memory budget and,
        unless an option set it, the game's LCB share (none without a game, nor while the strength is
        limited: the calibration tables were measured without it, docs/strength.md)."""
        config = dataclasses.replace(
            self.search, batch_size=max(1, self.batch_size), memory_budget_bytes=self.hash_mb * 1024 * 1024
        )
        if config.lcb_ratio < 0.0:
            share = game.profile.lcb_visit_share if game is not None and not self.limit_strength else 0.0
            config = dataclasses.replace(config, lcb_ratio=share)
        return config

    def time_config(self) -> TimeConfig:
        return TimeConfig(move_overhead_ms=float(self.move_overhead_ms))
