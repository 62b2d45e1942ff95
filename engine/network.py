"""The network contract: what every Tabula network file is, for the engine, the trainer and the shipped
weights alike.  This docstring is the written contract; ``README.md`` (section "Network contract")
summarises it.

Contract version 1
==================

File
    One ONNX file (``*.onnx``), **no external data** (every initializer inside the file), opset >= 17.

Input
    ``planes``: float32 ``[batch, C, H, W]``.  ``batch`` is a dynamic axis (any size >= 1);
    ``(C, H, W) == GameInfo.input_shape`` -- the exact output of ``GameState.encode()`` stacked on a
    new leading axis: Go 17 x N x N, chess 119 x 8 x 8, shogi 362 x 9 x 9 (paper, Table S1), oriented
    to the side to move.

Outputs (by name; their order in the file does not matter)
    ``policy``: float32 ``[batch, P]`` **logits** (not probabilities) in the game's policy-index order,
        ``P == GameInfo.policy_size`` (chess 4,672 = 73 x 8 x 8, shogi 11,259 = 139 x 9 x 9, Go N*N+1).
        For chess and shogi ``index = plane * H * W + square`` with ``square = row * W + col``
        (plane-major, Table S2); for Go ``index = row * N + col`` and pass ``= N * N``.  The consumer
        masks illegal moves and applies the softmax over the legal indices only.
    ``value``: float32 ``[batch, 1]`` in [-1, 1]: expected outcome for the **side to move**
        (+1 win, -1 loss).
    ``wdl`` (optional): float32 ``[batch, 3]`` probabilities (softmax already applied) of win, draw,
        loss for the side to move; each row sums to 1.
    ``ownership`` (optional, Go): float32 ``[batch, N*N]`` in [-1, 1]: each point's expected final
        owner from the **side to move** (+1 its own, -1 the opponent's), points row-major as the
        policy's.
    ``score`` (optional, Go): float32 ``[batch, 1]``: the expected final area-score margin in points
        for the side to move, komi included.

    Outputs beyond these are allowed and ignored; a consumer asks for the ones it uses by name, so
    networks with and without the optional outputs run in the same engine.

Metadata (ONNX ``metadata_props``, all values are strings)
    ==========================  ========================================================  ==========
    key                         meaning                                                   required
    ==========================  ========================================================  ==========
    ``tabula.contract_version`` this contract's version, ``1``                            yes
    ``tabula.game``             ``chess``, ``shogi`` or ``go`` (``GameInfo.name``)         yes
    ``tabula.board_size``       N (8, 9, Go board size)                                   yes
    ``tabula.planes``           C                                                         yes
    ``tabula.policy_size``      P                                                         yes
    ``tabula.encoding_version`` ``ENCODING_VERSION`` of the game module it was trained on yes
    ``tabula.preset``           model size, KataGo style ``b6c64`` (blocks, channels)     no
    ``tabula.step``             training steps behind the weights (0 = untrained)         no
    ``tabula.komi``             Go: the komi of the games it learned from                 no
    ``tabula.made_by``          how it was made: the command, "random init, untrained"   no
    ``tabula.precision``        ``int8`` for a quantized network (absent: float32)        no
    ==========================  ========================================================  ==========

Int8 siblings
    A network ``NAME.onnx`` may have a quantized copy ``NAME.int8.onnx`` beside it (:func:`int8_sibling`;
    made by ``tabula-train quantize``, :mod:`trainer.network.quantize`): the same contract and metadata (plus
    ``tabula.precision``), int8 weights and activations in onnxruntime's QDQ form.  The engine runs it
    on the CPU execution provider (about three times the float32 throughput with AVX-512 VNNI).

A network is **compatible** with a game when game, board size, planes, policy size and encoding
version all agree and its contract version is one this engine reads (:func:`check_compatible`);
anything else is refused with :class:`NetworkMismatchError` instead of playing garbage.

This module imports neither torch nor onnx: :func:`read_metadata` parses the few protobuf fields it
needs straight from the file (the graph is skipped with a seek, never read).
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from engine.games.base import GameInfo, game_label

#: Version of this contract; bumped when names, shapes or meanings change.
CONTRACT_VERSION = 1
#: Lowest ONNX opset a network may use.
MIN_OPSET = 17

INPUT_NAME = "planes"
POLICY_NAME = "policy"
VALUE_NAME = "value"
WDL_NAME = "wdl"
OWNERSHIP_NAME = "ownership"
SCORE_NAME = "score"

KEY_PREFIX = "tabula."
KEY_CONTRACT_VERSION = "tabula.contract_version"
KEY_GAME = "tabula.game"
KEY_BOARD_SIZE = "tabula.board_size"
KEY_PLANES = "tabula.planes"
KEY_POLICY_SIZE = "tabula.policy_size"
KEY_ENCODING_VERSION = "tabula.encoding_version"
KEY_PRESET = "tabula.preset"
KEY_STEP = "tabula.step"
KEY_KOMI = "tabula.komi"
KEY_MADE_BY = "tabula.made_by"
KEY_PRECISION = "tabula.precision"
#: ``tabula.precision`` of a quantized network.
PRECISION_INT8 = "int8"
#: How an int8 sibling's file name ends (``go9.onnx`` -> ``go9.int8.onnx``).
INT8_SUFFIX = ".int8.onnx"
#: How the name of an int8 copy's uint8-planes model ends (``shogi.int8.onnx`` ->
#: ``shogi.int8.uint8-planes.onnx``: :func:`uint8_planes_sibling`).
UINT8_PLANES_SUFFIX = ".uint8-planes.onnx"
#: Metadata of a uint8-planes model: what its uint8 input planes and (when its policy comes out as uint8)
#: its policy logits stand for, ``"SCALE ZERO_POINT"`` (``engine/uint8_io.py``).
KEY_PLANES_QUANTIZATION = "tabula.planes_quantization"
KEY_POLICY_QUANTIZATION = "tabula.policy_quantization"
#: Metadata of a uint8-planes model: the sha256 of the int8 copy it was made from (a stale one is not used).
KEY_UINT8_PLANES_OF = "tabula.uint8_planes_of"

REQUIRED_KEYS: tuple[str, ...] = (
    KEY_CONTRACT_VERSION,
    KEY_GAME,
    KEY_BOARD_SIZE,
    KEY_PLANES,
    KEY_POLICY_SIZE,
    KEY_ENCODING_VERSION,
)


class NetworkError(ValueError):
    """A network file that cannot be used."""


class NetworkFormatError(NetworkError):
    """Not an ONNX file, or an ONNX file without the Tabula metadata of this contract."""


class NetworkMismatchError(NetworkError):
    """A valid network made for another game, board size, encoding or contract version."""


@dataclasses.dataclass(frozen=True)
class NetworkMetadata:
    """The Tabula metadata of one network file (see the module docstring for each key).

    Attributes:
        game: ``chess``, ``shogi`` or ``go``.
        board_size: N.
        planes: C, input planes.
        policy_size: P, policy logits.
        encoding_version: the game module's ``ENCODING_VERSION`` the network was made for.
        contract_version: the network contract version (:data:`CONTRACT_VERSION`).
        preset: model size name such as ``b6c64`` ("" if unknown).
        step: training steps behind the weights (0 = untrained / unknown).
        komi: Go komi of the training games, or ``None``.
        made_by: how the file was made (a command line, "random init, untrained").
        extra: any other ``metadata_props`` entries, sorted ``(key, value)`` pairs.
    """

    game: str
    board_size: int
    planes: int
    policy_size: int
    encoding_version: int
    contract_version: int = CONTRACT_VERSION
    preset: str = ""
    step: int = 0
    komi: float | None = None
    made_by: str = ""
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """``chess``, ``shogi``, ``go9``, ``go19``: the same labels as ``GameInfo.label``."""
        return game_label(self.game, self.board_size)

    @property
    def precision(self) -> str:
        """``int8`` for a quantized network, else ``fp32``."""
        return dict(self.extra).get(KEY_PRECISION, "fp32")

    @classmethod
    def for_game(
        cls,
        info: GameInfo,
        *,
        preset: str = "",
        step: int = 0,
        komi: float | None = None,
        made_by: str = "",
    ) -> NetworkMetadata:
        """The metadata of a network made for ``info`` under the current contract."""
        return cls(
            game=info.name,
            board_size=info.board_size,
            planes=info.planes,
            policy_size=info.policy_size,
            encoding_version=info.encoding_version,
            preset=preset,
            step=step,
            komi=komi,
            made_by=made_by,
        )

    def to_props(self) -> dict[str, str]:
        """The ``metadata_props`` entries (string to string) to write into the ONNX file."""
        props = dict(self.extra)
        props.update(
            {
                KEY_CONTRACT_VERSION: str(self.contract_version),
                KEY_GAME: self.game,
                KEY_BOARD_SIZE: str(self.board_size),
                KEY_PLANES: str(self.planes),
                KEY_POLICY_SIZE: str(self.policy_size),
                KEY_ENCODING_VERSION: str(self.encoding_version),
                KEY_PRESET: self.preset,
                KEY_STEP: str(self.step),
                KEY_MADE_BY: self.made_by,
            }
        )
        if self.komi is not None:
            props[KEY_KOMI] = repr(float(self.komi))
        return props

    @classmethod
    def from_props(cls, props: Mapping[str, str], source: str = "network") -> NetworkMetadata:
        """Parse ``metadata_props``.  Raises :class:`NetworkFormatError` naming ``source`` when a
        required key is missing or a number does not parse."""
        missing = [k for k in REQUIRED_KEYS if k not in props]
        if missing:
            raise NetworkFormatError(
                f"{source} is not a Tabula network: its ONNX metadata lacks {', '.join(missing)} "
                f"(export it with `tabula-train export`)"
            )

        def integer(key: str, default: int | None = None) -> int:
            text = props.get(key)
            if text is None or (text == "" and default is not None):
                assert default is not None
                return default
            try:
                return int(text)
            except ValueError:
                raise NetworkFormatError(f"{source}: metadata {key}={text!r} is not an integer") from None

        komi_text = props.get(KEY_KOMI, "")
        try:
            komi = float(komi_text) if komi_text else None
        except ValueError:
            raise NetworkFormatError(f"{source}: metadata {KEY_KOMI}={komi_text!r} is not a number") from None
        known = set(REQUIRED_KEYS) | {KEY_PRESET, KEY_STEP, KEY_KOMI, KEY_MADE_BY}
        return cls(
            game=props[KEY_GAME],
            board_size=integer(KEY_BOARD_SIZE),
            planes=integer(KEY_PLANES),
            policy_size=integer(KEY_POLICY_SIZE),
            encoding_version=integer(KEY_ENCODING_VERSION),
            contract_version=integer(KEY_CONTRACT_VERSION),
            preset=props.get(KEY_PRESET, ""),
            step=integer(KEY_STEP, 0),
            komi=komi,
            made_by=props.get(KEY_MADE_BY, ""),
            extra=tuple(sorted((k, v) for k, v in props.items() if k not in known)),
        )

    def describe(self) -> str:
        """One line for logs: ``go 9x9, 17 planes, policy 82, encoding v1``."""
        return (
            f"{self.game} {self.board_size}x{self.board_size}, {self.planes} planes, "
            f"policy {self.policy_size}, encoding v{self.encoding_version}"
        )


def _describe_info(info: GameInfo) -> str:
    return (
        f"{info.name} {info.board_size}x{info.board_size}, {info.planes} planes, "
        f"policy {info.policy_size}, encoding v{info.encoding_version}"
    )


def check_compatible(meta: NetworkMetadata, info: GameInfo, source: str = "the network") -> None:
    """Refuse a network made for something else than ``info``.

    Raises:
        NetworkMismatchError: with a message naming every field that differs, e.g.
            ``the network go9.onnx is for go 9x9 (...) but the game is go 19x19 (...): board size 9 != 19``.
    """
    problems: list[str] = []
    if meta.contract_version > CONTRACT_VERSION or meta.contract_version < 1:
        problems.append(
            f"network contract version {meta.contract_version} (this engine reads version {CONTRACT_VERSION})"
        )
    if meta.game != info.name:
        problems.append(f"game {meta.game!r} != {info.name!r}")
    if meta.board_size != info.board_size:
        problems.append(f"board size {meta.board_size} != {info.board_size}")
    if meta.planes != info.planes:
        problems.append(f"input planes {meta.planes} != {info.planes}")
    if meta.policy_size != info.policy_size:
        problems.append(f"policy size {meta.policy_size} != {info.policy_size}")
    if meta.encoding_version != info.encoding_version:
        problems.append(
            f"encoding version {meta.encoding_version} != {info.encoding_version} "
            f"(the {info.name} input planes or move order changed since the network was made)"
        )
    if problems:
        raise NetworkMismatchError(
            f"{source} is for {meta.describe()} but the game is {_describe_info(info)}: "
            + "; ".join(problems)
        )


# ---- a minimal protobuf reader for ModelProto.metadata_props ----------------------------------------
# ModelProto (onnx.proto3): field 14 = repeated StringStringEntryProto metadata_props, whose fields are
# 1 = key, 2 = value.  Every other field is skipped (the graph with a seek).

_MODEL_METADATA_FIELD = 14
_WIRE_VARINT, _WIRE_I64, _WIRE_LEN, _WIRE_I32 = 0, 1, 2, 5


def _read_varint(f: BinaryIO) -> int | None:
    """The next varint, or ``None`` at a clean end of file."""
    result = shift = 0
    while True:
        b = f.read(1)
        if not b:
            if shift == 0:
                return None
            raise NetworkFormatError("truncated varint")
        result |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return result
        shift += 7
        if shift > 63:
            raise NetworkFormatError("varint too long")


def _parse_entry(data: bytes) -> tuple[str, str]:
    """A ``StringStringEntryProto`` (field 1 key, field 2 value, both length-delimited): ``(key, value)``."""
    key = value = b""
    f = io.BytesIO(data)
    while (tag := _read_varint(f)) is not None:
        field, wire = tag >> 3, tag & 7
        length = _read_varint(f)
        if wire != _WIRE_LEN or length is None:
            raise NetworkFormatError("unexpected field in metadata entry")
        chunk = f.read(length)
        if len(chunk) != length:
            raise NetworkFormatError("truncated metadata entry")
        if field == 1:
            key = chunk
        elif field == 2:
            value = chunk
    return key.decode("utf-8"), value.decode("utf-8")


def read_metadata_props(path: str | os.PathLike[str]) -> dict[str, str]:
    """All ``metadata_props`` of an ONNX file, read without onnx or onnxruntime.

    Raises:
        FileNotFoundError: no such file.
        NetworkFormatError: the file is not a well-formed ONNX protobuf.
    """
    props: dict[str, str] = {}
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        try:
            while True:
                tag = _read_varint(f)
                if tag is None:
                    break
                field, wire = tag >> 3, tag & 7
                if field == 0:
                    raise NetworkFormatError("field number 0")
                if wire == _WIRE_VARINT:
                    if _read_varint(f) is None:
                        raise NetworkFormatError("truncated")
                elif wire == _WIRE_I64:
                    f.seek(8, os.SEEK_CUR)
                elif wire == _WIRE_I32:
                    f.seek(4, os.SEEK_CUR)
                elif wire == _WIRE_LEN:
                    length = _read_varint(f)
                    if length is None or f.tell() + length > size:
                        raise NetworkFormatError("truncated length-delimited field")
                    if field == _MODEL_METADATA_FIELD:
                        key, value = _parse_entry(f.read(length))
                        props[key] = value
                    else:
                        f.seek(length, os.SEEK_CUR)
                else:
                    raise NetworkFormatError(f"unknown wire type {wire}")
                if f.tell() > size:
                    raise NetworkFormatError("truncated")
        except (NetworkFormatError, IndexError, UnicodeDecodeError) as e:
            raise NetworkFormatError(f"{os.fspath(path)} is not a valid ONNX file ({e})") from None
    return props


def read_metadata(path: str | os.PathLike[str]) -> NetworkMetadata:
    """The :class:`NetworkMetadata` of a network file (cheap: the graph is never loaded).

    Raises:
        FileNotFoundError: no such file.
        NetworkFormatError: not an ONNX file, or no Tabula metadata in it.
    """
    return NetworkMetadata.from_props(read_metadata_props(path), source=Path(path).name)


def uint8_planes_sibling(path: str | os.PathLike[str]) -> Path:
    """Where the uint8-planes model of the int8 copy at ``path`` lives (``shogi.int8.onnx`` ->
    ``shogi.int8.uint8-planes.onnx``): the same network taking uint8 planes, channels last, and handing
    out uint8 policy logits (``trainer/network/uint8_planes.py`` makes it; the engine cannot, as that needs
    ``onnx``)."""
    p = Path(path)
    return p.with_name(p.name.removesuffix(".onnx") + UINT8_PLANES_SUFFIX)


def int8_sibling(path: str | os.PathLike[str]) -> Path:
    """The int8 copy's path of the network at ``path`` (``go9.onnx`` -> ``go9.int8.onnx``; an int8 file is
    its own sibling)."""
    p = Path(path)
    if p.name.endswith(INT8_SUFFIX):
        return p
    return p.with_name(p.name.removesuffix(".onnx") + INT8_SUFFIX)
