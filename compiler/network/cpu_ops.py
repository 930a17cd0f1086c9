"""Which CPU kernel runs a quantized op: ``cpu_kernel(node, args)`` -> (kernel spec, the
kernel's inputs, output shape) or None for a free reshape.

One place maps the quantized graph's ops (``compiler.quantize.qgraph``) onto the LLVM kernel
specs (``compiler.cpu_fallback``); the executor runs them, the deployment builds the ARM
library from them, and the Cortex-A9 model times them.
"""

from __future__ import annotations

import numpy as np

from compiler.cpu_fallback import (AddSpec, AvgPool2dSpec, ConcatSpec, Conv2dSpec, DenseSpec, GatherSpec,
                                   GlobalAvgPoolSpec, LutSpec, MaxPool2dSpec, MulAddSpec, QuantizeSpec, ReluSpec,
                                   SoftmaxSpec)
from compiler.quantize.qgraph import QNode
from vdla_hw.errors import VdlaError


def _shift(a: dict):
    """(shift int, per-channel array or None) of a conv/dense node."""
    shift = a["shift"]
    if np.ndim(shift):
        return 0, np.ascontiguousarray(shift, dtype=np.int32)
    return int(shift), None


def _with_ceil(a: dict) -> tuple:
    (pt, pl, pb, pr), (ch, cw) = a["pad"], a.get("ceil", (0, 0))
    return (pt, pl, pb + ch, pr + cw)


def cpu_kernel(node: QNode, args: list[np.ndarray]):
    """(kernel spec, kernel inputs, output shape or None) of a CPU op, or None for a free reshape."""
    a, op = node.attrs, node.op
    x = args[0]
    if op == "quantize":
        return QuantizeSpec(size=x.size, frac=int(a["frac"])), [x.reshape(-1)], x.shape
    if op == "conv":
        n, c, h, w = x.shape
        oc, _, kh, kw = a["weight"].shape
        shift, per_channel = _shift(a)
        spec = Conv2dSpec(n=n, c=c, h=h, w=w, oc=oc, kh=kh, kw=kw, stride=a["stride"], pad=a["pad"],
                          groups=int(a["groups"]), pad_value=int(a["pad_value"]), shift=shift,
                          per_channel=per_channel is not None, lo=int(a["lo"]), hi=int(a["hi"]), wide=bool(a["wide"]))
        extra = [] if per_channel is None else [per_channel]
        return spec, [x, a["weight"], a["bias"], *extra], None
    if op == "dense":
        shift, per_channel = _shift(a)
        spec = DenseSpec(n=x.shape[0], k=x.shape[1], m=a["weight"].shape[0], shift=shift,
                         per_channel=per_channel is not None, lo=int(a["lo"]), hi=int(a["hi"]),
                         out_dtype="int32" if a["wide"] else "int8")
        extra = [] if per_channel is None else [per_channel]
        return spec, [x, a["weight"], a["bias"], *extra], None
    if op == "add":
        spec = AddSpec(size=x.size, a_shift=int(a["a_shift"]), b_shift=int(a["b_shift"]), shift=int(a["shift"]),
                       offset=int(a["offset"]), lo=int(a["lo"]), hi=int(a["hi"]),
                       a_mul=int(a.get("a_mul", 1)), b_mul=int(a.get("b_mul", 1)))
        return spec, [x.reshape(-1), args[1].reshape(-1)], x.shape
    if op == "lut":
        return LutSpec(size=x.size), [x.reshape(-1), a["table"]], x.shape
    if op == "muladd":
        n = x.shape[0]
        spec = MulAddSpec(n=n, size=x.size // n, shift=int(a["shift"]), lo=int(a["lo"]), hi=int(a["hi"]))
        return spec, [x.reshape(n, -1), a["mul"].reshape(-1), a["add"].reshape(-1)], x.shape
    if op == "relu":
        return ReluSpec(size=x.size), [x.reshape(-1)], x.shape
    if op == "maxpool":
        n, c, h, w = x.shape
        spec = MaxPool2dSpec(n=n, c=c, h=h, w=w, kh=a["kernel"][0], kw=a["kernel"][1], stride=a["stride"],
                             pad=_with_ceil(a))
        return spec, [x], None
    if op == "avgpool":
        n, c, h, w = x.shape
        spec = GlobalAvgPoolSpec(n=n, c=c, h=h, w=w, up=int(a["up"]), add=int(a["add"]), lo=int(a["lo"]),
                                 hi=int(a["hi"]), out_dtype="int32" if a["wide"] else "int8")
        return spec, [x], (n, c, 1, 1)
    if op == "avgpool2d":
        n, c, h, w = x.shape
        spec = AvgPool2dSpec(n=n, c=c, h=h, w=w, kh=a["kernel"][0], kw=a["kernel"][1], stride=a["stride"],
                             pad=_with_ceil(a), pad_value=int(a["pad_value"]), up=int(a["up"]), lo=int(a["lo"]),
                             hi=int(a["hi"]))
        return spec, [x, a["count"].astype(np.int32), a["add"].astype(np.int32)], None
    if op == "concat":
        axis = int(a["axis"])
        outer, inner = int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis + 1:]))
        spec = ConcatSpec(outer=outer, inner=inner, parts=tuple(int(v.shape[axis]) for v in args),
                          shifts=tuple(a["shifts"]), zps=tuple(a["zps"]), zp=int(a["zp"]))
        return spec, [v.reshape(outer, -1) for v in args], None
    if op == "gather":
        spec = GatherSpec(n=1, size_in=x.size, size_out=int(np.prod(a["shape"])))
        return spec, [x.reshape(1, -1), a["index"].astype(np.int32), a["fill"].astype(np.int8)], tuple(a["shape"])
    if op == "softmax":
        axis = int(a["axis"])
        spec = SoftmaxSpec(outer=int(np.prod(x.shape[:axis])), axis=int(x.shape[axis]),
                           inner=int(np.prod(x.shape[axis + 1:])))
        return spec, [x.reshape(spec.outer, spec.axis, spec.inner), a["table"].astype(np.int32)], x.shape
    if op in ("reshape", "flatten"):
        return None
    raise VdlaError(f"node {node.name!r}: no CPU kernel for op {op}")
