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

``fn(x, attrs, m)`` takes float64 ``x``, the node's attributes and the math functions to use
(:class:`Math`: ``m.exp``, ``m.tanh``, ``m.log1p``), and returns the float values (float32 after
the float model's cast). The float model passes numpy's vectorised functions (:data:`VECTOR`);
the tables pass the C library's, one value at a time (:data:`SCALAR`), because numpy's SIMD
variants differ in the last bit between CPUs and the model build and calibration must decide the
same bits everywhere. So one function defines both and they cannot disagree. (Another
transcendental function becomes a field of :class:`Math`, in both.) ``attrs(onnx_attrs)`` gives
the graph attributes from the ONNX node's attributes; ops reached by other importer rules
(``clip`` from Clip's constant inputs, ``affine`` from BatchNormalization and constant
arithmetic) name no ONNX op here.
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


def softplus(x, m: Math):
    """log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|))."""
    return np.maximum(x, 0.0) + m.log1p(m.exp(-np.abs(x)))


def gelu(x, approximate: str, m: Math):
    """GELU (Hendrycks and Gimpel 2016; ONNX Gelu, opset 20): ``x * Phi(x)`` with the normal CDF
    ``Phi(x) = (1 + erf(x / sqrt 2)) / 2``, or with ``approximate="tanh"`` the paper's
    ``(1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2``."""
    if approximate == "tanh":
        return 0.5 * x * (1.0 + m.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + m.erf(x / math.sqrt(2.0)))


def _gelu_attrs(a: dict) -> dict:
    approximate = a.get("approximate", "none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else str(approximate)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"Gelu approximate={approximate!r}: expected 'none' or 'tanh'")
    return {"approximate": approximate}


def _scalar(f: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """``f`` (a C library function of ``math``) applied to every element, one at a time; an
    overflow (``math.exp`` of more than about 709) is infinite, as numpy's."""
    def one(v: float) -> float:
        try:
            return f(v)
        except OverflowError:
            return math.inf

    def apply(x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return np.array([one(v) for v in x.reshape(-1).tolist()], dtype=np.float64).reshape(x.shape)
    apply.__name__ = f"scalar_{f.__name__}"
    return apply


@dataclass(frozen=True)
class Math:
    """The transcendental functions an op's ``fn`` may call (elementwise on float64 arrays)."""

    exp: Callable[[np.ndarray], np.ndarray]
    tanh: Callable[[np.ndarray], np.ndarray]
    log1p: Callable[[np.ndarray], np.ndarray]
    erf: Callable[[np.ndarray], np.ndarray]


# numpy has no erf: both models take the C library's, one value at a time
VECTOR = Math(exp=np.exp, tanh=np.tanh, log1p=np.log1p, erf=_scalar(math.erf))  # the float model's
SCALAR = Math(exp=_scalar(math.exp), tanh=_scalar(math.tanh), log1p=_scalar(math.log1p), erf=_scalar(math.erf))  # the tables'


def _no_attrs(onnx_attrs: dict) -> dict:
    return {}


def floats(**defaults: float) -> Callable[[dict], dict]:
    """The parser of an op's float attributes, each defaulting to ONNX's default (a float32, as
    the ONNX schema stores it: LeakyRelu's 0.01 is 0.009999999776...)."""
    return lambda a: {name: float(a.get(name, np.float32(value))) for name, value in defaults.items()}


@dataclass(frozen=True)
class Elementwise:
    """One element-wise op (see the module docstring): ``name`` in the graph IR, the ``onnx`` op
    types imported as it, ``fn`` its meaning, ``attrs`` the parser of the ONNX node's attributes
    (its graph attributes are the ones ``fn`` reads)."""

    name: str
    onnx: tuple[str, ...]
    fn: Callable[[np.ndarray, dict, Math], np.ndarray]
    attrs: Callable[[dict], dict] = _no_attrs

    def evaluate(self, x: np.ndarray, attrs: dict) -> np.ndarray:
        """The float model's values of float64 ``x``."""
        return self.fn(x, attrs, VECTOR)

    def tabulate(self, x: np.ndarray, attrs: dict) -> np.ndarray:
        """The values of float64 ``x``, the inputs of an int8 table (the same bits on every CPU)."""
        return self.fn(x, attrs, SCALAR)


ELEMENTWISE = (
    Elementwise("relu", ("Relu",), lambda x, a, m: np.maximum(x, 0.0)),
    # lo, hi: floats, -inf/inf when a side is open
    Elementwise("clip", (), lambda x, a, m: np.clip(x, a["lo"], a["hi"])),
    # scale, offset: each a scalar or one value per channel (axis 1), or per element
    Elementwise("affine", (), lambda x, a, m: affine(x, a["scale"], a["offset"])),
    Elementwise("sigmoid", ("Sigmoid",), lambda x, a, m: 1.0 / (1.0 + m.exp(-x))),
    Elementwise("hardsigmoid", ("HardSigmoid",), lambda x, a, m: hardsigmoid(x, a["alpha"], a["beta"]),
                lambda a: {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}),
    Elementwise("hardswish", ("HardSwish",), lambda x, a, m: x * hardsigmoid(x, 1.0 / 6.0, 0.5)),
    Elementwise("leakyrelu", ("LeakyRelu",), lambda x, a, m: np.where(x >= 0, x, a["alpha"] * x), floats(alpha=0.01)),
    # exp(min(x, 0)): the exponential of the positive inputs, which np.where drops, cannot overflow
    Elementwise("elu", ("Elu",), lambda x, a, m: np.where(x >= 0, x, a["alpha"] * (m.exp(np.minimum(x, 0.0)) - 1.0)),
                floats(alpha=1.0)),
    Elementwise("selu", ("Selu",),
                lambda x, a, m: a["gamma"] * np.where(x > 0, x, a["alpha"] * (m.exp(np.minimum(x, 0.0)) - 1.0)),
                floats(alpha=1.67326319217681884765625, gamma=1.05070102214813232421875)),
    Elementwise("tanh", ("Tanh",), lambda x, a, m: m.tanh(x)),
    Elementwise("softplus", ("Softplus",), lambda x, a, m: softplus(x, m)),
    Elementwise("mish", ("Mish",), lambda x, a, m: x * m.tanh(softplus(x, m))),
    Elementwise("softsign", ("Softsign",), lambda x, a, m: x / (1.0 + np.abs(x))),
    # torch's nn.GELU as exported before opset 20 (Div, Erf, Add, Mul, Mul) becomes Gelu first
    # (compiler/frontend/patterns.py); an Erf alone is not imported
    Elementwise("gelu", ("Gelu",), lambda x, a, m: gelu(x, a["approximate"], m), _gelu_attrs),
)

BY_NAME = {op.name: op for op in ELEMENTWISE}
BY_ONNX = {onnx: op for op in ELEMENTWISE for onnx in op.onnx}
NAMES = tuple(op.name for op in ELEMENTWISE)

assert len(BY_NAME) == len(ELEMENTWISE), "element-wise op names must be distinct"
assert len(BY_ONNX) == sum(len(op.onnx) for op in ELEMENTWISE), "an ONNX op is imported as one element-wise op"
