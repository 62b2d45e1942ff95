"""uint8 in and out of an int8 network: the planes as the network would quantize them, written by the
encoder, and the policy logits before the network dequantizes them, read only where legal.

An int8 copy (``trainer/network/quantize.py``) starts with ``QuantizeLinear(planes, scale, zero_point)``: every
float of a batch's planes divided by the scale, rounded half to even, the zero point added, saturated
to 0..255.  For shogi that is 1.9 million floats a 64-leaf call, a tenth of the call
(``docs/design.md``, "Where an int8 network's CPU time goes").  A leaf encoder that writes only what
changed (``engine.games.shogi_kernel.encode_position_over``) can write the uint8 values instead, a few
a leaf, and the network run without that node (``OnnxEvaluator.accept_uint8_planes``): the same
integers reach the first convolution, so the same outputs come out.  uint8 planes are channels last,
``[B, H, W, C]``, the layout onnxruntime's int8 convolutions work in: their input's transpose cancels
the one the uint8-input model starts with (``trainer/network/uint8_planes.py``).  At the other end the network
ends with ``DequantizeLinear`` of 11,259 policy logits a position (shogi) of which the search reads
about 80; that model hands out the uint8 logits, and the masked softmax dequantizes the legal ones
(``engine.softmax_kernel``) with the same float32 arithmetic, so the same priors.

:class:`Uint8Quantization` is the arithmetic, here in numpy (the reference the tests hold the compiled
encoder and onnxruntime to); uint8 tensors always travel with the quantization they were made with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Uint8Quantization:
    """uint8 values ``q`` stand for the floats ``(q - zero_point) * scale``.

    Attributes:
        scale: the float32 scale (positive), as the network's ``QuantizeLinear`` holds it.
        zero_point: 0..255.
    """

    scale: float
    zero_point: int

    def __post_init__(self) -> None:
        if not (self.scale > 0.0 and np.isfinite(self.scale)):
            raise ValueError(f"scale must be positive and finite, not {self.scale}")
        if not 0 <= self.zero_point <= 255:
            raise ValueError(f"zero_point must be 0..255, not {self.zero_point}")

    @property
    def text(self) -> str:
        """``"SCALE ZERO_POINT"``, the scale as the shortest decimal that reads back to the same float
        (a network's metadata, :meth:`from_text`)."""
        return f"{self.scale!r} {self.zero_point}"

    @classmethod
    def from_text(cls, text: str) -> Uint8Quantization:
        """The quantization written by :attr:`text`.

        Raises:
            ValueError: not two numbers, or not a valid quantization.
        """
        words = text.split()
        if len(words) != 2:
            raise ValueError(f"a quantization is 'SCALE ZERO_POINT', not {text!r}")
        return cls(float(words[0]), int(words[1]))

    @property
    def kernel_args(self) -> npt.NDArray[np.float64]:
        """float64 ``[2]``: ``(scale, zero_point)`` for the compiled encoders (scale 0 there means float
        planes)."""
        return np.array([np.float32(self.scale), self.zero_point], np.float64)

    def quantize(self, planes: npt.NDArray[np.floating]) -> npt.NDArray[np.uint8]:
        """uint8 planes of float ``planes`` (any shape), as onnxruntime's ``QuantizeLinear`` makes them:
        float32 division by the scale, round half to even, plus the zero point, saturated."""
        x = np.asarray(planes, np.float32) / np.float32(self.scale)
        quantized: npt.NDArray[np.uint8] = np.clip(np.rint(x) + self.zero_point, 0, 255).astype(np.uint8)
        return quantized

    def dequantize(self, planes: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """float32 planes of uint8 ``planes``: ``(q - zero_point) * scale`` (``DequantizeLinear``)."""
        return (planes.astype(np.float32) - np.float32(self.zero_point)) * np.float32(self.scale)

    def dequantize_channels_last(self, planes: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """float32 planes ``[B, C, H, W]`` of uint8 channels-last ``planes`` ``[B, H, W, C]``."""
        return np.ascontiguousarray(self.dequantize(planes).transpose(0, 3, 1, 2))


#: What the compiled encoders take for float planes (no quantization).
FLOAT_PLANES = np.zeros(2, np.float64)
