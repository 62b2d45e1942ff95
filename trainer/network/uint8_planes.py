"""An int8 network that takes its planes as uint8: the input's ``QuantizeLinear`` cut off, so self-play's
leaf encoders, which write only what changed, quantize a few values a leaf instead of onnxruntime
quantizing 1.9 million floats a call (``engine/uint8_io.py``;
``docs/design.md``, "Where an int8 network's CPU time goes").

Here because it needs ``onnx`` (a trainer dependency; the engine reads networks without it).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

from engine.inference import OnnxEvaluator
from engine.network import (
    INPUT_NAME,
    KEY_PLANES_QUANTIZATION,
    KEY_POLICY_QUANTIZATION,
    KEY_UINT8_PLANES_OF,
    POLICY_NAME,
    uint8_planes_sibling,
)
from engine.uint8_io import Uint8Quantization
from trainer.store.atomic import atomic_write_bytes

log = logging.getLogger(__name__)


def uint8_input_model(
    path: str | Path, quantization: Uint8Quantization | None = None
) -> tuple[bytes, Uint8Quantization, Uint8Quantization | None] | None:
    """The network at ``path`` with uint8 planes in: its ``QuantizeLinear`` of ``planes`` removed and the
    graph input made uint8 ``[B, H, W, C]`` (channels last, the layout of the encoders' uint8 rows and
    of onnxruntime's int8 convolutions), turned to the graph's channels first by a ``Transpose``.

    Args:
        path: an int8 copy (``trainer/network/quantize.py``): ``planes`` read by one ``QuantizeLinear`` with a
            scalar float scale and uint8 zero point (initializers), whose output only
            ``DequantizeLinear`` nodes read.
        quantization: the planes' quantization when it must be another than the network's own (a
            self-play run whose trees write one quantization for every network it loads): the
            ``DequantizeLinear`` nodes then read the planes with it.  With the network's own (or
            ``None``) the same integers reach the first convolution as through the float input, so
            the outputs are the same.

    Returns:
        ``(model bytes, the planes' quantization, the policy's)``, or ``None`` when the network does not
        start so (a float network).  The policy's is not ``None`` when the network ended with a
        ``DequantizeLinear`` of the ``policy`` output (scalar scale and zero point): the model then
        hands out its uint8 input as ``policy`` (:mod:`engine.uint8_io`).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    found = _quantized_end(graph, INPUT_NAME, "QuantizeLinear", is_input=True)
    if found is None:
        return None
    planes, quantize, own = found
    if list(quantize.input).index(INPUT_NAME) != 0:
        return None
    quantized = quantize.output[0]
    dequantizers = [n for n in graph.node if quantized in n.input]
    if quantized in {o.name for o in graph.output} or any(
        n.op_type != "DequantizeLinear" or list(n.input).index(quantized) != 0 for n in dequantizers
    ):
        return None
    wanted = quantization or own
    names = (quantize.input[1], quantize.input[2])
    if wanted != own:
        names = (f"{INPUT_NAME}_uint8_scale", f"{INPUT_NAME}_uint8_zero_point")
        graph.initializer.extend(
            [
                numpy_helper.from_array(np.array(wanted.scale, np.float32), names[0]),
                numpy_helper.from_array(np.array(wanted.zero_point, np.uint8), names[1]),
            ]
        )
    # the planes come channels last: one Transpose to the graph's layout, which onnxruntime cancels
    # against the one it puts before its channels-last int8 convolutions
    first = f"{INPUT_NAME}_channels_first"
    for node in dequantizers:
        node.input[0] = first
        node.input[1], node.input[2] = names
    position = list(graph.node).index(quantize)
    graph.node.remove(quantize)
    graph.node.insert(position, helper.make_node("Transpose", [INPUT_NAME], [first], perm=[0, 3, 1, 2]))
    dims = planes.type.tensor_type.shape.dim
    batch, c, h, w = (d.dim_param or d.dim_value for d in dims)
    graph.input.remove(planes)
    graph.input.insert(0, helper.make_tensor_value_info(INPUT_NAME, TensorProto.UINT8, [batch, h, w, c]))
    policy = _cut_policy_dequantize(model)
    return model.SerializeToString(), wanted, policy


def _cut_policy_dequantize(model: onnx.ModelProto) -> Uint8Quantization | None:
    """Make ``model``'s ``policy`` output the uint8 logits its final ``DequantizeLinear`` reads (in place)
    and return their quantization; ``None`` (nothing changed) when the output is made otherwise."""
    from onnx import TensorProto

    graph = model.graph
    found = _quantized_end(graph, POLICY_NAME, "DequantizeLinear", is_input=False)
    if found is None:
        return None
    policy, dequantize, quantization = found
    logits = dequantize.input[0]
    if logits in {i.name for i in graph.input}:
        return None
    for node in graph.node:  # the uint8 logits take the output's name wherever they appear
        for i, name in enumerate(node.input):
            if name == logits:
                node.input[i] = POLICY_NAME
        for i, name in enumerate(node.output):
            if name == logits:
                node.output[i] = POLICY_NAME
    graph.node.remove(dequantize)
    policy.type.tensor_type.elem_type = TensorProto.UINT8
    return quantization


def _quantized_end(
    graph: onnx.GraphProto, name: str, op_type: str, *, is_input: bool
) -> tuple[onnx.ValueInfoProto, onnx.NodeProto, Uint8Quantization] | None:
    """The graph input (``is_input``) or output ``name``, the one node that reads that input or makes that
    output when it is an ``op_type``, and the node's scalar quantization (:func:`_node_quantization`);
    ``None`` when the graph is not made so (the planes' ``QuantizeLinear``, the policy's
    ``DequantizeLinear``)."""
    found = [end for end in (graph.input if is_input else graph.output) if end.name == name]
    nodes = [n for n in graph.node if name in (n.input if is_input else n.output)]
    if len(found) != 1 or len(nodes) != 1 or nodes[0].op_type != op_type:
        return None
    quantization = _node_quantization(graph, nodes[0])
    if quantization is None:
        return None
    return found[0], nodes[0], quantization


def _node_quantization(graph: onnx.GraphProto, node: onnx.NodeProto) -> Uint8Quantization | None:
    """The quantization of a ``QuantizeLinear`` or ``DequantizeLinear`` node whose scale and zero point are
    scalar initializers (float32, uint8); ``None`` otherwise."""
    from onnx import numpy_helper

    initializers = {t.name: t for t in graph.initializer}
    if len(node.input) != 3 or any(name not in initializers for name in node.input[1:]):
        return None
    scale = numpy_helper.to_array(initializers[node.input[1]])
    zero = numpy_helper.to_array(initializers[node.input[2]])
    if scale.shape != () or zero.shape != () or scale.dtype != np.float32 or zero.dtype != np.uint8:
        return None
    return Uint8Quantization(float(scale), int(zero))


def write_uint8_planes_model(path: str | Path, to: str | Path | None = None) -> Path | None:
    """Write the uint8-planes model of the int8 copy at ``path`` (:func:`uint8_input_model` with the
    network's own quantization) to ``to`` (default :func:`~engine.network.uint8_planes_sibling`), with the
    copy's metadata plus what its uint8 planes and policy stand for (``tabula.planes_quantization``,
    ``tabula.policy_quantization``: ``"SCALE ZERO_POINT"``) and the copy's sha256
    (``tabula.uint8_planes_of``: a model left behind by a new copy is not used), so that the engine, which reads networks
    without ``onnx``, can run it (``OnnxEvaluator.accept_uint8_planes_file``).  Written whole or not at
    all; returns where, or ``None`` when the network does not start with a ``QuantizeLinear`` of its
    planes (a float network)."""
    import onnx

    made = uint8_input_model(path)
    if made is None:
        return None
    data, planes, policy = made
    model = onnx.load_from_string(data)
    props = {p.key: p.value for p in model.metadata_props}
    props[KEY_PLANES_QUANTIZATION] = planes.text
    props[KEY_UINT8_PLANES_OF] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if policy is not None:
        props[KEY_POLICY_QUANTIZATION] = policy.text
    else:
        props.pop(KEY_POLICY_QUANTIZATION, None)
    onnx.helper.set_model_props(model, props)
    out = Path(to) if to is not None else uint8_planes_sibling(path)
    atomic_write_bytes(out, model.SerializeToString())
    return out


def attach_uint8_planes(
    evaluator: object, quantization: Uint8Quantization | None = None
) -> Uint8Quantization | None:
    """Let ``evaluator`` take uint8 planes (``OnnxEvaluator.accept_uint8_planes``) when it is an int8
    network on the CPU; returns their quantization, or ``None`` (not an ``OnnxEvaluator``, a float
    network, a GPU provider), then only float planes go to it.

    With ``quantization`` (the one a self-play run's trees write) the evaluator takes those planes
    whatever network it runs: through a uint8-input model read with that quantization, or, for a
    network without one, dequantized before the float input."""
    if not isinstance(evaluator, OnnxEvaluator):
        return None
    made = None
    if evaluator.provider.startswith("CPU"):
        try:
            made = uint8_input_model(evaluator.path, quantization)
        except Exception as e:  # a file gone or unreadable: self-play goes on, without the speed-up
            log.warning("%s: no uint8-input model (%s)", evaluator.path.name, e)
    if made is not None:
        model, planes, policy = made
        try:
            evaluator.accept_uint8_planes(planes, model, policy)
        except Exception as e:
            log.warning("%s: the uint8-input model does not load (%s)", evaluator.path.name, e)
            made = None
    if made is None:
        if quantization is not None:
            evaluator.accept_uint8_planes(quantization)
        return quantization
    log.debug(
        "%s takes uint8 planes (scale %g, zero point %d)",
        evaluator.path.name,
        planes.scale,
        planes.zero_point,
    )
    return planes
