"""Scales between layers that are not powers of two, at no cost to the hardware.

The accelerator and the CPU kernels requantize by shifting, so every activation's step is a
power of two; the step whose 256 codes span a value's window (e.g. 6/255 for a ReLU6 output)
usually is not. Where a conv or dense layer's output (after its fused ReLU/Clip) reaches only
other conv or dense layers (directly or through max/average pooling, reshapes and data movement
such as a Transpose, which commute with a positive factor), the output is multiplied by ``s`` in (1/2, 1] and the consumers' weights
by ``1/s``. Residual adds on the CPU requantize with integer multipliers (``rules._add_mul``),
so they take part too: as producers (their output's ``s`` goes into their multipliers) and as
consumers (their multipliers undo their inputs' ``s``; the rewritten float graph then equals the
original once each such add's output is multiplied by its ``s``). The network computes the same
function, the producer's weights, bias and clip bounds absorb ``s`` before they are quantized,
and the value's power-of-two step ``2**-frac`` then means ``2**-frac / s`` = the window's step
(:func:`free_step`). ``scales`` records ``s`` per value so that reports and dequantization still
speak in the original model's units.

Element-wise tables and products (:data:`ABSORBING`: ``lut``/``muladd`` and ``mul``, on the CPU)
take part the same way, in every mode: a table is computed at any input and output step (each
entry the function of its code's real value, rounded once to the output's step), and a muladd's
or a product's integer multiplier holds the factors (``rules._unary``, ``rules._mul``). So a
conv before a hard-swish, the hard-swish after it, a squeeze-excitation gate and its product get
free steps too, where each had a power-of-two step with a clipped MSE window before. A LayerNorm
(``rules._layernorm``) absorbs its output's factor into its per-channel multiplier and offset, and
its input's does not change it (a normalisation), but for epsilon, which it carries in the input's
units.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.graph import UNARY, Graph, Node
from compiler.quantize.exact import floor_log2
from compiler.quantize.rules import fuse_activations
from compiler.quantize.scales import sample, value_range

TRANSPARENT = ("maxpool", "avgpool", "avgpool2d", "reshape", "resize")  # commute with a positive factor


def _transparent(node: Node) -> bool:
    """Whether ``node`` commutes with a positive factor: pooling, reshapes, and a ``gather`` (a
    Transpose, Slice, ...) unless it fills positions with a nonzero constant (a Pad of 1.0)."""
    if node.op == "gather":
        a = node.attrs
        return not np.any(a["fill"]) or not np.any(np.asarray(a["index"]) < 0)
    return node.op in TRANSPARENT
ABSORBING = ("mul", "layernorm") + UNARY  # producers and consumers whose int8 form holds any factor (no weights to fold it into)
FREE_WINDOW = {"mse": "minmax", "minmax": "minmax", "percentile": "percentile"}  # window of a free step


def free_step(values: np.ndarray, method: str) -> float | None:
    """The step of 256 codes over the window ``FREE_WINDOW[method]`` of ``values`` (the whole
    calibration range; the percentile method's range), a hair wider so that the power-of-two
    step it is scaled to still holds it; None for a constant zero."""
    low, high = value_range(sample(values), FREE_WINDOW[method])
    return (high - low) / 255 * (1 + 1e-6) if high > low else None


def _reach(graph: Graph, value: str, layer_ops: tuple[str, ...]):
    """(values scaled along, consumer layers) if everything reading ``value`` is transparent or one
    of ``layer_ops`` (conv/dense reading it as its input; adds; tables and products); else None."""
    scaled, layers, todo = [value], [], [value]
    while todo:
        for user in graph.consumers(todo.pop()):
            if _transparent(user) and user.output not in graph.outputs:
                scaled.append(user.output)
                todo.append(user.output)
            elif user.op in layer_ops:
                layers.append(user)
            else:
                return None
    return (scaled, layers) if layers else None


def equalize(graph: Graph, values: dict, through_adds: bool = False, method: str = "mse") -> tuple[Graph, dict]:
    """(rewritten graph, value -> scale). ``values`` (float calibration values) are rescaled in
    place; the given graph is not changed (its nodes' attributes are copied where rewritten).
    ``through_adds``: adds (which then requantize with multipliers, ``rules._add_mul``) count as
    producers and consumers that absorb any factor, so residual streams get their steps too."""
    graph = Graph(graph.name, graph.input, graph.outputs,
                  [Node(n.name, n.op, list(n.inputs), n.output, dict(n.attrs)) for n in graph.nodes],
                  dict(graph.shapes))
    fused = {node.name: act for node, act in fuse_activations(graph)}
    folded = {act.name for act in fused.values() if act is not None}  # part of their producer's int8 op
    scales: dict[str, float] = {}
    layer_ops = (("conv", "dense", "add") if through_adds else ("conv", "dense")) + ABSORBING
    for node in graph.nodes:
        if node.op not in layer_ops or node.name in folded:
            continue
        act = fused.get(node.name)
        out = act.output if act is not None else node.output
        if out in graph.outputs or out in scales:
            continue
        reach = _reach(graph, out, layer_ops)
        if reach is None:
            continue
        step = free_step(values[out], method)
        if step is None:
            continue
        s = float(2.0 ** floor_log2(step) / step)  # in (1/2, 1]
        scaled, layers = reach
        if node.op in ("conv", "dense"):  # an add's, a product's multipliers and a table absorb s
            node.attrs["weight"] = (node.attrs["weight"] * s).astype(np.float32)
            node.attrs["bias"] = (node.attrs["bias"] * s).astype(np.float32)
        if act is not None and act.op == "clip":
            act.attrs = {**act.attrs, "lo": act.attrs["lo"] * s, "hi": act.attrs["hi"] * s}
        for layer in layers:
            if layer.op in ("conv", "dense"):
                layer.attrs["weight"] = (layer.attrs["weight"] / s).astype(np.float32)
        for name in dict.fromkeys((node.output, out, *scaled)):  # in a fixed order (not a set's, which
            # changes with the process's string hashing): the quantized graph pickles the same everywhere
            scales[name] = s
            values[name] = values[name] * np.float32(s)
    return graph, scales
