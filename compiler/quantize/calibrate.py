"""Calibrate a float graph on a few inputs and build its power-of-two int8 :class:`QGraph`.

Every value v gets the frac that minimises the mean squared quantization error (rounding and
clipping) of its calibration values, searched from ``floor(log2(127 / max|v|))`` (no clipping
at all) upward over a few bits, then clamped so every shift stays in range. Weights get their
own per-layer frac, chosen the same way; biases are int32 at the accumulator's scale ``frac(x) + frac(w)``;
the output shift is ``frac(x) + frac(w) - frac(y)``. A ReLU that directly and solely consumes
a conv, dense or add is fused into it (``relu`` flag: the clip's lower bound becomes 0).
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend import float_ref
from compiler.frontend.graph import Graph, ModelError, Node
from compiler.quantize.qgraph import QGraph, QNode

FRAC_MIN, FRAC_MAX = -8, 20
MAX_SHIFT, MAX_ADD_SHIFT = 31, 16


def frac_for(maxabs: float) -> int:
    """The largest frac with round(maxabs * 2**frac) <= 127 (7 for an all-zero value)."""
    if not np.isfinite(maxabs):
        raise ValueError("non-finite calibration value")
    if maxabs <= 0:
        return 7
    return int(np.clip(math.floor(math.log2(127.0 / maxabs)), FRAC_MIN, FRAC_MAX))


SEARCH_BITS = 4
SAMPLE = 1 << 18


def choose_frac(values: np.ndarray) -> int:
    """The frac in [frac_for(max|v|), +SEARCH_BITS] with the least int8 quantization MSE on ``values``."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    low = frac_for(float(np.abs(v).max()) if v.size else 0.0)
    if v.size > SAMPLE:
        v = v[np.random.default_rng(0).choice(v.size, SAMPLE, replace=False)]
    errors = []
    for frac in range(low, min(low + SEARCH_BITS, FRAC_MAX) + 1):
        q = np.clip(np.rint(v * 2.0 ** frac), -128, 127) * 2.0 ** -frac
        errors.append((float(((q - v) ** 2).mean()), frac))
    return min(errors)[1]


def fuse_relus(graph: Graph) -> list[tuple[Node, Node | None]]:
    """(node, fused relu or None) pairs; a fused relu disappears as a node of its own."""
    fused, skip = [], set()
    for node in graph.nodes:
        if node.name in skip:
            continue
        users = graph.consumers(node.output)
        relu = users[0] if len(users) == 1 and users[0].op == "relu" and node.op in ("conv", "dense", "add") \
            and node.output != graph.output else None
        if relu is not None:
            skip.add(relu.name)
        fused.append((node, relu))
    return fused


def quantize_graph(graph: Graph, calibration: np.ndarray) -> QGraph:
    """The int8 graph of ``graph`` calibrated on ``calibration`` (N, C, H, W float inputs)."""
    calibration = np.asarray(calibration, dtype=np.float32)
    if calibration.ndim != 4 or calibration.shape[1:] != graph.shapes[graph.input][1:]:
        raise ModelError(graph.name, f"calibration inputs of shape {calibration.shape} do not match the model "
                         f"input {graph.shapes[graph.input]}")
    values = float_ref.run(graph, calibration)
    best = {name: choose_frac(v) for name, v in values.items()}
    fracs: dict[str, int] = {}
    q_input = f"{graph.input}_q"
    fracs[q_input] = best[graph.input]
    nodes = [QNode(f"{graph.input}.quantize", "quantize", [graph.input], q_input, {"frac": fracs[q_input]})]
    rename = {graph.input: q_input}
    shapes = {graph.input: graph.shapes[graph.input], q_input: graph.shapes[graph.input]}
    for node, relu in fuse_relus(graph):
        out = relu.output if relu else node.output
        inputs = [rename[i] for i in node.inputs]
        rename[node.output] = rename[out] = out
        shapes[out] = graph.shapes[node.output]
        attrs = _quantize_node(node, relu is not None, inputs, fracs, best[out], graph)
        fracs[out] = attrs.pop("out_frac")
        nodes.append(QNode(node.name, node.op, inputs, out, attrs))
    return QGraph(graph.name, graph.input, rename[graph.output], nodes, shapes, fracs)


def _quantize_node(node: Node, relu: bool, inputs: list[str], fracs: dict, want: int, graph: Graph) -> dict:
    a = node.attrs
    if node.op in ("conv", "dense"):
        fx = fracs[inputs[0]]
        w = a["weight"]
        fw = choose_frac(w)
        acc_frac = fx + fw
        fy = int(np.clip(want, acc_frac - MAX_SHIFT, acc_frac))
        weight = np.clip(np.rint(w * 2.0 ** fw), -127, 127).astype(np.int8)
        # The requantization shift floors; half an output step folded into the bias makes it
        # round to nearest, so the error of each layer has no systematic bias.
        half = (1 << (acc_frac - fy - 1)) if acc_frac > fy else 0
        bias = np.clip(np.rint(a["bias"].astype(np.float64) * 2.0 ** acc_frac) + half, -(2 ** 31), 2 ** 31 - 1).astype(np.int32)
        attrs = {"weight": weight, "bias": bias, "shift": acc_frac - fy, "relu": relu, "out_frac": fy,
                 "w_frac": fw}
        out_shape = graph.shapes[node.output]
        if node.op == "conv":
            attrs.update(stride=tuple(a["stride"]), pad=tuple(a["pad"]))
            attrs["macs"] = int(np.prod(out_shape)) * int(np.prod(weight.shape[1:]))
        else:
            attrs["macs"] = int(np.prod(out_shape)) * weight.shape[1]
        return attrs
    if node.op == "add":
        fa, fb = fracs[inputs[0]], fracs[inputs[1]]
        fm = max(fa, fb)
        if fm - min(fa, fb) > MAX_ADD_SHIFT:
            raise ModelError(graph.name, f"inputs' scales differ by {fm - min(fa, fb)} bits (> {MAX_ADD_SHIFT})",
                             node.name, "Add")
        fy = int(np.clip(want, fm - MAX_SHIFT, fm))
        return {"a_shift": fm - fa, "b_shift": fm - fb, "shift": fm - fy, "relu": relu, "out_frac": fy}
    if node.op in ("maxpool",):
        return {"kernel": tuple(a["kernel"]), "stride": tuple(a["stride"]), "pad": tuple(a["pad"]),
                "out_frac": fracs[inputs[0]]}
    if node.op in ("relu", "avgpool", "flatten"):
        return {"out_frac": fracs[inputs[0]]}
    raise ModelError(graph.name, f"no quantization rule for op {node.op}", node.name, node.op)
