"""Exact rewrites of an imported graph (float semantics unchanged up to float32 rounding):

- a per-output-channel ``affine`` (BatchNormalization, Mul/Add/Sub/Div by a per-channel
  constant) whose input is a conv or dense used by nothing else is folded into its weights
  and bias;
- two ``affine`` nodes in a row become one;
- a ``gather`` whose input is a ``gather`` or ``reshape`` used by nothing else takes that
  node's input directly (index maps composed), so a chain of data-movement ops is one copy;
- nodes whose outputs do not reach the graph output are dropped.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.graph import Graph, Node


def _per_channel(value: np.ndarray, rank: int, channels: int, axis: int) -> np.ndarray | None:
    """``value`` (broadcastable, rank ``rank``) as one number per channel of ``axis``, or None."""
    v = np.asarray(value, dtype=np.float64)
    v = v.reshape((1,) * (rank - v.ndim) + v.shape)
    if any(d != 1 for i, d in enumerate(v.shape) if i != axis):
        return None
    return np.broadcast_to(v.reshape(-1), (channels,)) if v.size in (1, channels) else None


def _fold_affine(node: Node, producer: Node, rank: int) -> bool:
    w, b = producer.attrs["weight"], producer.attrs["bias"]
    axis = 1
    scale = _per_channel(node.attrs["scale"], rank, w.shape[0], axis)
    offset = _per_channel(node.attrs["offset"], rank, w.shape[0], axis)
    if scale is None or offset is None:
        return False
    shape = (-1,) + (1,) * (w.ndim - 1)
    producer.attrs["weight"] = (w.astype(np.float64) * scale.reshape(shape)).astype(np.float32)
    producer.attrs["bias"] = (b.astype(np.float64) * scale + offset).astype(np.float32)
    return True


def _compose(outer: Node, inner: Node, inner_shape) -> None:
    """Make ``outer`` (a gather) read ``inner``'s input directly."""
    index, fill = outer.attrs["index"], outer.attrs["fill"]
    if inner.op == "gather":
        inner_index, inner_fill = inner.attrs["index"], inner.attrs["fill"]
        picked = index >= 0
        safe = np.where(picked, index, 0)
        outer.attrs["index"] = np.where(picked, inner_index[safe], -1)
        outer.attrs["fill"] = np.where(picked, inner_fill[safe], fill).astype(np.float32)
    outer.inputs = list(inner.inputs)


def simplify(graph: Graph) -> Graph:
    nodes = list(graph.nodes)
    changed = True
    while changed:
        changed = False
        by_output = {n.output: n for n in nodes}
        uses: dict[str, int] = {}
        for n in nodes:
            for i in n.inputs:
                uses[i] = uses.get(i, 0) + 1
        for node in nodes:
            producer = by_output.get(node.inputs[0]) if node.inputs else None
            if producer is None or uses.get(producer.output, 0) != 1 or producer.output == graph.output:
                continue
            if node.op == "affine" and producer.op in ("conv", "dense") and \
                    _fold_affine(node, producer, len(graph.shapes[producer.output])):
                producer.output, producer.name = node.output, producer.name
                nodes.remove(node)
                changed = True
                break
            if node.op == "affine" and producer.op == "affine":
                scale = np.asarray(node.attrs["scale"], np.float64)
                producer.attrs["offset"] = np.asarray(producer.attrs["offset"], np.float64) * scale + node.attrs["offset"]
                producer.attrs["scale"] = np.asarray(producer.attrs["scale"], np.float64) * scale
                producer.output = node.output
                nodes.remove(node)
                changed = True
                break
            if node.op == "gather" and producer.op in ("gather", "reshape"):
                _compose(node, producer, graph.shapes[producer.inputs[0]])
                nodes.remove(producer)
                changed = True
                break
    live, needed = [], {graph.output}
    for node in reversed(nodes):
        if node.output in needed:
            live.append(node)
            needed.update(node.inputs)
    live.reverse()
    shapes = {k: v for k, v in graph.shapes.items() if k == graph.input or any(n.output == k for n in live)}
    return Graph(graph.name, graph.input, graph.output, live, shapes)
