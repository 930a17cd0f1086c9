"""Float execution of a graph in plain numpy: the model the quantized network is measured against.

``run(graph, x)`` returns every value (name -> float32 array); ``forward`` just the output.
Convolutions are im2col + matmul in float32.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.graph import Graph, Node


def im2col(x: np.ndarray, kh: int, kw: int, stride: tuple[int, int], pad: tuple[int, int, int, int],
           fill: float = 0.0) -> np.ndarray:
    """(N, C*kh*kw, OH*OW) patches of NCHW ``x`` padded with ``fill`` (top, left, bottom, right)."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = pad
    sh, sw = stride
    padded = np.full((n, c, h + pt + pb, w + pl + pr), fill, dtype=x.dtype)
    padded[:, :, pt:pt + h, pl:pl + w] = x
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = padded[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw]
    return cols.reshape(n, c * kh * kw, oh * ow), (oh, ow)


def conv2d(x, weight, bias, stride, pad):
    o, _, kh, kw = weight.shape
    cols, (oh, ow) = im2col(x, kh, kw, stride, pad)
    out = np.einsum("ok,nkp->nop", weight.reshape(o, -1), cols, optimize=True)
    return (out + bias[None, :, None]).reshape(x.shape[0], o, oh, ow).astype(np.float32)


def maxpool(x, kernel, stride, pad):
    cols, (oh, ow) = im2col(x, *kernel, stride, pad, fill=-np.inf)
    n, c = x.shape[:2]
    return cols.reshape(n, c, kernel[0] * kernel[1], oh * ow).max(axis=2).reshape(n, c, oh, ow)


def eval_node(node: Node, args: list[np.ndarray]) -> np.ndarray:
    a = node.attrs
    if node.op == "conv":
        return conv2d(args[0], a["weight"], a["bias"], a["stride"], a["pad"])
    if node.op == "dense":
        return (args[0] @ a["weight"].T + a["bias"]).astype(np.float32)
    if node.op == "relu":
        return np.maximum(args[0], 0)
    if node.op == "add":
        return args[0] + args[1]
    if node.op == "maxpool":
        return maxpool(args[0], a["kernel"], a["stride"], a["pad"])
    if node.op == "avgpool":
        return args[0].mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(np.float32)
    if node.op == "flatten":
        return args[0].reshape(args[0].shape[0], -1)
    raise ValueError(f"unknown op {node.op}")


def run(graph: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    values = {graph.input: np.asarray(x, dtype=np.float32)}
    for node in graph.nodes:
        values[node.output] = eval_node(node, [values[i] for i in node.inputs])
    return values


def forward(graph: Graph, x: np.ndarray) -> np.ndarray:
    return run(graph, x)[graph.output]
