"""The element-wise ops of one input: one table, :data:`ELEMENTWISE`, holds each op's graph-IR
name, the ONNX ops imported as it, their attributes, its float meaning and its table function.

Everything else is derived from it (docs/extending.md walks through adding an op):

- the graph IR's op lists (``compiler.frontend.graph.UNARY`` and ``OPS``),
- the importer's handlers of the ONNX ops named here (``compiler.frontend.onnx_import``),
- the float model (``compiler.frontend.float_ref.eval_node``),
- the quantization rule: every op here becomes a 256-entry int8 table (``lut``) computed by its
  table function, or (a per-channel affine) a ``muladd`` (``compiler.quantize.rules``);
- the int8 reference, the CPU kernel and the placement are those of ``lut`` and ``muladd``
  (``compiler.quantize.reference``, ``compiler.network.cpu_ops``, ``compiler.network.partition``),
  which run any table: a new op needs none of them changed.

``fn(x, attrs)`` takes float64 ``x`` and the node's attributes and returns the float values
(float32 after the float model's cast). ``table`` is the same function for the 256 entries of an
int8 table when ``fn`` uses numpy's vectorised exponential, whose SIMD variants differ in the
last bit between CPUs: it calls :func:`scalar_exp` (the C library's, one value at a time), so the
model build and calibration decide the same bits everywhere. ``attrs(onnx_attrs)`` gives the
graph attributes from the ONNX node's attributes (ops reached by other importer rules, such as
``clip`` from Clip's constant inputs or ``affine`` from BatchNormalization and constant
arithmetic, name no ONNX op here).
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
    types imported as it, ``fn`` its float meaning, ``table`` its table function (``fn`` if None),
    ``attrs`` the ONNX attributes' parser, ``doc`` its attributes (the graph IR's op table)."""

    name: str
    onnx: tuple[str, ...]
    fn: Callable[[np.ndarray, dict], np.ndarray]
    doc: str = "--"
    table: Callable[[np.ndarray, dict], np.ndarray] | None = None
    attrs: Callable[[dict], dict] = _no_attrs

    def tabulate(self, x: np.ndarray, attrs: dict) -> np.ndarray:
        """The op's values on the float64 inputs ``x`` of an int8 table."""
        return (self.table or self.fn)(x, attrs)


ELEMENTWISE = (
    Elementwise("relu", ("Relu",), lambda x, a: np.maximum(x, 0.0)),
    Elementwise("clip", (), lambda x, a: np.clip(x, a["lo"], a["hi"]),
                "lo, hi (floats; -inf/inf when a side is open)"),
    Elementwise("affine", (), lambda x, a: affine(x, a["scale"], a["offset"]),
                "scale, offset: x * scale + offset, each a scalar or one value per channel (axis 1)"),
    Elementwise("sigmoid", ("Sigmoid",), lambda x, a: 1.0 / (1.0 + np.exp(-x)),
                table=lambda x, a: 1.0 / (1.0 + scalar_exp(-x))),
    Elementwise("hardsigmoid", ("HardSigmoid",), lambda x, a: hardsigmoid(x, a["alpha"], a["beta"]),
                "alpha, beta: clip(alpha * x + beta, 0, 1)",
                attrs=lambda a: {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}),
    Elementwise("hardswish", ("HardSwish",), lambda x, a: x * hardsigmoid(x, 1.0 / 6.0, 0.5),
                "--  x * hardsigmoid(x) with alpha 1/6, beta 1/2"),
)

BY_NAME = {op.name: op for op in ELEMENTWISE}
BY_ONNX = {onnx: op for op in ELEMENTWISE for onnx in op.onnx}
NAMES = tuple(op.name for op in ELEMENTWISE)

assert len(BY_NAME) == len(ELEMENTWISE), "element-wise op names must be distinct"
assert len(BY_ONNX) == sum(len(op.onnx) for op in ELEMENTWISE), "an ONNX op is imported as one element-wise op"
