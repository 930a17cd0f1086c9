"""The element-wise ops of one input: one table, :data:`ELEMENTWISE`, holds each op's graph-IR
name, the ONNX ops imported as it, the parser of their attributes and its meaning (one function
for the float model and the int8 table).

Everything else is derived from it (docs/extending.md walks through adding an op):

- the graph IR's op lists (``compiler.frontend.graph.UNARY`` and ``OPS``),
- the importer's handlers of the ONNX ops named here (``compiler.frontend.onnx_import``),
- the float model (``compiler.frontend.float_ref.eval_node``),
- the quantization rule: every op here becomes a 256-entry int8 table (``lut``) of its function,
  or (a per-channel affine) a ``muladd`` (``compiler.quantize.rules``);
- the int8 reference, the CPU kernel and the placement are those of ``lut`` and ``muladd``
  (``compiler.quantize.reference``, ``compiler.network.cpu_ops``, ``compiler.network.partition``),
  which run any table: a new op needs none of them changed.

``fn(x, attrs, exp)`` takes float64 ``x``, the node's attributes and the exponential to use, and
returns the float values (float32 after the float model's cast). The float model passes numpy's
vectorised ``np.exp``; the tables pass :func:`scalar_exp` (the C library's, one value at a time),
because numpy's SIMD variants differ in the last bit between CPUs and the model build and
calibration must decide the same bits everywhere. So one function defines both and they cannot
disagree. (Another transcendental function would be written with ``exp`` or become a parameter
like it.) ``attrs(onnx_attrs)`` gives the graph attributes from the ONNX node's attributes; ops
reached by other importer rules (``clip`` from Clip's constant inputs, ``affine`` from
BatchNormalization and constant arithmetic) name no ONNX op here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


def affine(x, scale, offset):
    """x * scale + offset, the constants broadcasting as in numpy (and ONNX)."""
    return x.astype(np.float64) * np.asarray(scale, np.float64) + np.asarray(offset, np.float64)


def hardsigmoid(x, alpha=0.2, beta=0.5):
    return np.clip(alpha * x + beta, 0.0, 1.0)


def scalar_exp(x) -> np.ndarray:
    """exp of every element by the C library's ``exp`` (for the 256 entries of a table)."""
    x = np.asarray(x, dtype=np.float64)
    return np.array([math.exp(v) for v in x.reshape(-1)], dtype=np.float64).reshape(x.shape)


def _no_attrs(onnx_attrs: dict) -> dict:
    return {}


@dataclass(frozen=True)
class Elementwise:
    """One element-wise op (see the module docstring): ``name`` in the graph IR, the ``onnx`` op
    types imported as it, ``fn`` its meaning, ``attrs`` the parser of the ONNX node's attributes
    (its graph attributes are the ones ``fn`` reads)."""

    name: str
    onnx: tuple[str, ...]
    fn: Callable[[np.ndarray, dict, Callable], np.ndarray]
    attrs: Callable[[dict], dict] = _no_attrs

    def evaluate(self, x: np.ndarray, attrs: dict) -> np.ndarray:
        """The float model's values of float64 ``x``."""
        return self.fn(x, attrs, np.exp)

    def tabulate(self, x: np.ndarray, attrs: dict) -> np.ndarray:
        """The values of float64 ``x``, the inputs of an int8 table (the same bits on every CPU)."""
        return self.fn(x, attrs, scalar_exp)


ELEMENTWISE = (
    Elementwise("relu", ("Relu",), lambda x, a, exp: np.maximum(x, 0.0)),
    # lo, hi: floats, -inf/inf when a side is open
    Elementwise("clip", (), lambda x, a, exp: np.clip(x, a["lo"], a["hi"])),
    # scale, offset: each a scalar or one value per channel (axis 1), or per element
    Elementwise("affine", (), lambda x, a, exp: affine(x, a["scale"], a["offset"])),
    Elementwise("sigmoid", ("Sigmoid",), lambda x, a, exp: 1.0 / (1.0 + exp(-x))),
    Elementwise("hardsigmoid", ("HardSigmoid",), lambda x, a, exp: hardsigmoid(x, a["alpha"], a["beta"]),
                lambda a: {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}),
    Elementwise("hardswish", ("HardSwish",), lambda x, a, exp: x * hardsigmoid(x, 1.0 / 6.0, 0.5)),
)

BY_NAME = {op.name: op for op in ELEMENTWISE}
BY_ONNX = {onnx: op for op in ELEMENTWISE for onnx in op.onnx}
NAMES = tuple(op.name for op in ELEMENTWISE)

assert len(BY_NAME) == len(ELEMENTWISE), "element-wise op names must be distinct"
assert len(BY_ONNX) == sum(len(op.onnx) for op in ELEMENTWISE), "an ONNX op is imported as one element-wise op"
