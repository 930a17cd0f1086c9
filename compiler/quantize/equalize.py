"""Scales between layers that are not powers of two, at no cost to the hardware.

The accelerator and the CPU kernels requantize by shifting, so every activation's step is a
power of two; the best step for a value (its MSE-optimal step, e.g. 6/255 for a ReLU6 output)
usually is not. Where a conv or dense layer's output (after its fused ReLU/Clip) reaches only
other conv or dense layers (directly or through max/average pooling and reshapes, which commute
with a positive factor), the output is multiplied by ``s`` in (1/2, 1] and the consumers' weights
by ``1/s``: the network computes the same function, the producer's weights, bias and clip bounds
absorb ``s`` before they are quantized, and the value's power-of-two step ``2**-frac`` then means
``2**-frac / s`` = the optimal step. ``scales`` records ``s`` per value so that reports and
dequantization still speak in the original model's units.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.graph import Graph, Node

TRANSPARENT = ("maxpool", "avgpool", "avgpool2d", "reshape")  # commute with a positive factor
STEPS = np.linspace(-1.0, 1.0, 17)  # log2 of the steps tried around the best power of two
SAMPLE = 1 << 17


def best_step(values: np.ndarray, frac: int) -> float:
    """The real quantization step (256 codes, window holding 0) with the least squared error,
    searched within a factor of two of ``2**-frac`` (the best power-of-two step)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size > SAMPLE:
        v = v[np.random.default_rng(0).choice(v.size, SAMPLE, replace=False)]
    low, high = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
    best = None
    for step in 2.0 ** (-frac + STEPS):
        lo_code = max(np.floor(low / step), -255) if high > 0 else -255
        start = min(lo_code, max(0.0, np.ceil(high / step) - 255)) if low < 0 else 0.0
        q = np.clip(np.rint(v / step), start, start + 255) * step
        error = float(((q - v) ** 2).mean())
        best = (error, step) if best is None or error < best[0] else best
    return best[1]


def _reach(graph: Graph, value: str):
    """(values scaled along, consumer layers) if everything reading ``value`` is transparent or a
    conv/dense reading it as its input; else None."""
    scaled, layers, todo = [value], [], [value]
    while todo:
        for user in graph.consumers(todo.pop()):
            if user.op in TRANSPARENT and user.output != graph.output:
                scaled.append(user.output)
                todo.append(user.output)
            elif user.op in ("conv", "dense"):
                layers.append(user)
            else:
                return None
    return (scaled, layers) if layers else None


def equalize(graph: Graph, values: dict) -> tuple[Graph, dict]:
    """(rewritten graph, value -> scale). ``values`` (float calibration values) are rescaled in
    place; the given graph is not changed (its nodes' attributes are copied where rewritten)."""
    from compiler.quantize.calibrate import choose_scale, fuse_activations

    graph = Graph(graph.name, graph.input, graph.output,
                  [Node(n.name, n.op, list(n.inputs), n.output, dict(n.attrs)) for n in graph.nodes],
                  dict(graph.shapes))
    fused = {node.name: act for node, act in fuse_activations(graph)}
    scales: dict[str, float] = {}
    for node in graph.nodes:
        if node.op not in ("conv", "dense"):
            continue
        act = fused.get(node.name)
        out = act.output if act is not None else node.output
        if out == graph.output or out in scales:
            continue
        reach = _reach(graph, out)
        if reach is None:
            continue
        step = best_step(values[out], choose_scale(values[out])[0])
        s = float(2.0 ** np.floor(np.log2(step)) / step)  # in (1/2, 1]
        if s == 1.0:
            continue
        scaled, layers = reach
        node.attrs["weight"] = (node.attrs["weight"] * s).astype(np.float32)
        node.attrs["bias"] = (node.attrs["bias"] * s).astype(np.float32)
        if act is not None and act.op == "clip":
            act.attrs = {**act.attrs, "lo": act.attrs["lo"] * s, "hi": act.attrs["hi"] * s}
        for layer in layers:
            layer.attrs["weight"] = (layer.attrs["weight"] / s).astype(np.float32)
        for name in {node.output, out, *scaled}:
            scales[name] = s
            values[name] = values[name] * np.float32(s)
    return graph, scales
