"""Attention's matrix products in the float graph: a scalar scale folded into a ``matmul``.

Exporters scale attention's scores by ``1/sqrt(d)`` in one of three places: on the product
(``MatMul`` then ``Div``/``Mul``), on Q before it, or, as torch's ``scaled_dot_product_attention``
does, by ``sqrt(1/sqrt(d))`` on Q and on K^T both. A product is bilinear, so each such scalar
``affine`` (one scale for every element, no offset) that only the ``matmul`` reads, or that
alone reads the ``matmul``, multiplies its ``alpha`` instead: one node, and in int8 one
requantization that holds the scale (``compiler.quantize.rules``) where the affine would have
been a table of its own, rounding once more.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.graph import Graph, Node


def scalar_scale(node: Node) -> float | None:
    """The scale of an ``affine`` that multiplies every element by one number and adds nothing, else None."""
    if node.op != "affine":
        return None
    scale, offset = np.asarray(node.attrs["scale"]), np.asarray(node.attrs["offset"])
    if scale.size != 1 or np.any(offset != 0):
        return None
    return float(scale.reshape(-1)[0])


def fold_matmul_scales(graph: Graph) -> list[Node]:
    """``graph``'s nodes with every scalar affine on a ``matmul``'s operand (read by that matmul
    alone) or on its product (the product's only reader) folded into the matmul's ``alpha``; the
    graph's outputs keep their nodes. One pass over the nodes."""
    by_output = {n.output: n for n in graph.nodes}
    readers: dict[str, list[Node]] = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    gone = set()

    def only_reader(value: str, node: Node) -> bool:
        return value not in graph.outputs and [id(r) for r in readers.get(value, [])] == [id(node)]

    for node in graph.nodes:
        if node.op != "matmul":
            continue
        alpha = float(node.attrs["alpha"])
        for k in range(2):
            while True:
                producer = by_output.get(node.inputs[k])
                scale = None if producer is None else scalar_scale(producer)
                if scale is None or not only_reader(producer.output, node):
                    break
                alpha *= scale
                node.inputs[k] = producer.inputs[0]
                readers[producer.inputs[0]] = [node if r is producer else r for r in readers[producer.inputs[0]]]
                gone.add(id(producer))
        while True:
            after = readers.get(node.output, [])
            scale = scalar_scale(after[0]) if len(after) == 1 else None
            if scale is None or node.output in graph.outputs:
                break
            alpha *= scale
            gone.add(id(after[0]))
            node.output = after[0].output
            by_output[node.output] = node
        node.attrs = {**node.attrs, "alpha": alpha}
    return [n for n in graph.nodes if id(n) not in gone]
