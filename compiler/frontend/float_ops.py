"""The float meaning of every graph-IR op (``compiler.frontend.graph``), in plain numpy.

Convolutions and dense layers are summed exactly on a fixed-point grid and rounded to float32
once (``float_ref.conv2d``, ``float_ref.dense``): the same bits on every machine, within about
1e-5 of onnxruntime (the tests' oracle). The element-wise functions (:data:`UNARY_FUNCTIONS`)
are also what the quantizer tabulates into int8 lookup tables (:data:`TABLE_FUNCTIONS`: the
same functions with the exponential of the C library, one value at a time, instead of numpy's
vectorised one, whose SIMD variants differ in the last bit between CPUs), so the float model and
the int8 tables cannot disagree on what an op means.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend.float_ref import conv2d, dense, maxpool, windows
from compiler.frontend.graph import Node


def affine(x, scale, offset):
    """x * scale + offset, the constants broadcasting as in numpy (and ONNX)."""
    return x.astype(np.float64) * np.asarray(scale, np.float64) + np.asarray(offset, np.float64)


def hardsigmoid(x, alpha=0.2, beta=0.5):
    return np.clip(alpha * x + beta, 0.0, 1.0)


def scalar_exp(x) -> np.ndarray:
    """exp of every element by the C library's ``exp`` (for the 256 entries of a table)."""
    x = np.asarray(x, dtype=np.float64)
    return np.array([math.exp(v) for v in x.reshape(-1)], dtype=np.float64).reshape(x.shape)


UNARY_FUNCTIONS = {
    "relu": lambda x, a: np.maximum(x, 0.0),
    "clip": lambda x, a: np.clip(x, a["lo"], a["hi"]),
    "affine": lambda x, a: affine(x, a["scale"], a["offset"]),
    "sigmoid": lambda x, a: 1.0 / (1.0 + np.exp(-x)),
    "hardsigmoid": lambda x, a: hardsigmoid(x, a["alpha"], a["beta"]),
    "hardswish": lambda x, a: x * hardsigmoid(x, 1.0 / 6.0, 0.5),
}
TABLE_FUNCTIONS = {**UNARY_FUNCTIONS, "sigmoid": lambda x, a: 1.0 / (1.0 + scalar_exp(-x))}


def softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def avgpool_count(hw, kernel, stride, pad, ceil=(0, 0), count_pad=False) -> np.ndarray:
    """(OH, OW) divisor of each window: its real inputs, plus the zero padding when ``count_pad``
    (never the ceil-mode extra rows and columns, as in PyTorch and ONNX)."""
    h, w = hw
    pt, pl, pb, pr = pad
    weights = np.ones((1, 1, h, w))
    if count_pad:
        weights = np.pad(weights, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=1.0)
        pad = (0, 0, 0, 0)
    count = None
    for _, view in windows(weights, kernel, stride, pad, ceil_extra=ceil):
        count = view.copy() if count is None else count + view
    return count[0, 0]


def avgpool2d(x, kernel, stride, pad, ceil=(0, 0), count_pad=False):
    """Windowed mean with zero padding, divided by ``avgpool_count``."""
    total = None
    for _, view in windows(x.astype(np.float64), kernel, stride, pad, ceil_extra=ceil):
        total = view.copy() if total is None else total + view
    return total / avgpool_count(x.shape[2:], kernel, stride, pad, ceil, count_pad)


def gather(x, index, fill):
    """out.flat[i] = x.flat[index[i]], or ``fill[i]`` where ``index[i] < 0``."""
    flat = x.reshape(-1)
    picked = flat[np.maximum(index, 0)]
    return np.where(index >= 0, picked, fill)


def evaluate(node: Node, args: list[np.ndarray]) -> np.ndarray:
    """float32 output of ``node`` on float32 ``args``."""
    a, op, x = node.attrs, node.op, args[0]
    if op == "conv":
        out = conv2d(x, a["weight"], a["bias"], a["stride"], a["pad"], a.get("groups", 1))
    elif op == "dense":
        out = dense(x, a["weight"], a["bias"])
    elif op in UNARY_FUNCTIONS:
        out = UNARY_FUNCTIONS[op](x.astype(np.float64), a)
    elif op == "add":
        out = x + args[1]
    elif op == "softmax":
        out = softmax(x, a["axis"])
    elif op == "maxpool":
        out = maxpool(x, a["kernel"], a["stride"], a["pad"], a.get("ceil", (0, 0)))
    elif op == "avgpool":
        out = x.mean(axis=(2, 3), keepdims=True, dtype=np.float64)
    elif op == "avgpool2d":
        out = avgpool2d(x, a["kernel"], a["stride"], a["pad"], a.get("ceil", (0, 0)), a.get("count_pad", False))
    elif op == "concat":
        out = np.concatenate(args, axis=a["axis"])
    elif op == "reshape":
        out = x.reshape(a["shape"])
    elif op == "gather":
        out = gather(x, a["index"], a["fill"]).reshape(a["shape"])
    else:
        raise ValueError(f"unknown op {op}")
    return np.asarray(out, dtype=np.float32)
