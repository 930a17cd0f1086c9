"""Plain numpy interpretation of a :class:`QGraph`: the definition of the quantized network.

Written independently of the accelerator and of the LLVM kernels; the executor's output must
equal it bit for bit. Accumulation is exact in int64 (float64 matmul of int8 values is exact
here) and wraps to int32 as the hardware does.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.float_ref import im2col
from compiler.quantize.qgraph import QGraph, QNode


def wrap32(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int64)


def requantize(acc: np.ndarray, shift: int, relu: bool) -> np.ndarray:
    return np.clip(acc >> shift, 0 if relu else -128, 127).astype(np.int8)


def quantize(x: np.ndarray, frac: int) -> np.ndarray:
    scaled = np.rint(np.nan_to_num(x.astype(np.float64), nan=0.0) * 2.0 ** frac)
    return np.clip(scaled, -128, 127).astype(np.int8)


def conv2d(x, weight, bias, stride, pad):
    """int32-wrapped (acc + bias) of an int8 NCHW conv; returns int64 values in int32 range."""
    o, _, kh, kw = weight.shape
    cols, (oh, ow) = im2col(x.astype(np.float64), kh, kw, stride, pad)
    acc = np.einsum("ok,nkp->nop", weight.reshape(o, -1).astype(np.float64), cols, optimize=True)
    acc = np.rint(acc).astype(np.int64).reshape(x.shape[0], o, oh, ow)
    return wrap32(acc + bias.astype(np.int64)[None, :, None, None])


def maxpool(x, kernel, stride, pad):
    cols, (oh, ow) = im2col(x.astype(np.int16), *kernel, stride, pad, fill=-1000)
    n, c = x.shape[:2]
    return cols.reshape(n, c, kernel[0] * kernel[1], oh * ow).max(axis=2).reshape(n, c, oh, ow).astype(np.int8)


def eval_node(node: QNode, args: list[np.ndarray]) -> np.ndarray:
    a = node.attrs
    if node.op == "quantize":
        return quantize(args[0], a["frac"])
    if node.op == "conv":
        return requantize(conv2d(args[0], a["weight"], a["bias"], a["stride"], a["pad"]), a["shift"], a["relu"])
    if node.op == "dense":
        acc = args[0].astype(np.int64) @ a["weight"].astype(np.int64).T + a["bias"].astype(np.int64)
        return requantize(wrap32(acc), a["shift"], a["relu"])
    if node.op == "add":
        total = (args[0].astype(np.int64) << a["a_shift"]) + (args[1].astype(np.int64) << a["b_shift"])
        return requantize(total, a["shift"], a["relu"])
    if node.op == "relu":
        return np.maximum(args[0], 0).astype(np.int8)
    if node.op == "maxpool":
        return maxpool(args[0], a["kernel"], a["stride"], a["pad"])
    if node.op == "avgpool":
        n, c, h, w = args[0].shape
        total = args[0].astype(np.int64).sum(axis=(2, 3))
        return np.floor_divide(total + (h * w) // 2, h * w).astype(np.int8).reshape(n, c, 1, 1)
    if node.op == "flatten":
        return args[0].reshape(args[0].shape[0], -1)
    raise ValueError(f"unknown quantized op {node.op}")


def run(graph: QGraph, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every value of the quantized network for float input ``x``."""
    values = {graph.input: np.asarray(x, dtype=np.float32)}
    for node in graph.nodes:
        values[node.output] = eval_node(node, [values[i] for i in node.inputs])
    return values


def forward(graph: QGraph, x: np.ndarray) -> np.ndarray:
    return run(graph, x)[graph.output]
