"""Which CPU kernel runs a quantized op: ``cpu_kernel(node, args)`` -> (kernel spec, the
kernel's inputs, output shape) or None for a free reshape.

One table, :data:`PLANS` (one planner per op), maps the quantized graph's ops
(``compiler.quantize.qgraph``) onto the LLVM kernel specs (``compiler.cpu_fallback``); the
executor runs them, the deployment builds the ARM library from them, and the Cortex-A9 model
times them.

A graph may come from outside (a deployment package), so every attribute is checked here before
it becomes a kernel parameter or buffer: its type (ints are ints, tuples have their length),
the shapes and dtypes of constant arrays, the values of those the code uses as indices, divisors,
shifts or table entries (``KernelSpec.check_values``; no silent wrapping casts), and the arity and
ranks of the inputs. :func:`check_graph` does this for a whole graph from its declared shapes,
without running anything, and checks that every op's kernel writes exactly its declared output
and that every CPU op is within the kernels' work and memory limits. Every refusal is a
:class:`NodeError` naming the node, the field and the value.
"""

from __future__ import annotations

import numpy as np

from compiler.cpu_fallback import (AddSpec, AvgPool2dSpec, ConcatSpec, Conv2dSpec, DenseSpec, GatherSpec,
                                   GlobalAvgPoolSpec, LutSpec, MatMulSpec, MaxPool2dSpec, MulAddSpec, MulSpec, QuantizeSpec, ReluSpec,
                                   ResizeSpec, SoftmaxSpec)
from compiler.cpu_fallback.layernorm import LayerNormSpec
from compiler.cpu_fallback.errors import KernelError, KernelValueError
from compiler.cpu_fallback.product import collapse
from compiler.frontend.graph import mul_extents, out_extents
from compiler.quantize.qgraph import QGraph, QNode
from vdla_hw.errors import VdlaError
from vdla_hw.files import printable

RESHAPES = ("reshape",)
# inputs each op takes (concat: any number, at least one)
ARITY = {"add": 2, "mul": 2, "matmul": 2, "concat": None}


class NodeError(VdlaError):
    """A node of a quantized graph has a field (attribute, input, declared shape) that its CPU
    kernel cannot take; the message names the node, its op, the field and the value."""

    def __init__(self, node: QNode, field: str, why: str):
        self.node, self.field, self.why = node.name, field, why
        super().__init__(f"node '{printable(node.name, 60)}' ({printable(node.op, 20)}): {field}: {why}")


def _show(value) -> str:
    return printable(repr(value), 60)


def _attr(node: QNode, key: str, default=KeyError):
    if key in node.attrs:
        return node.attrs[key]
    if default is KeyError:
        raise NodeError(node, key, "missing")
    return default


def _int(node: QNode, key: str, default=KeyError) -> int:
    value = _attr(node, key, default)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise NodeError(node, key, f"{_show(value)} is not an integer")
    return int(value)


def _bool(node: QNode, key: str) -> bool:
    value = _attr(node, key)
    if not isinstance(value, (bool, np.bool_)):
        raise NodeError(node, key, f"{_show(value)} is not a boolean")
    return bool(value)


def _ints(node: QNode, key: str, count: int | None, default=KeyError) -> tuple:
    """A tuple of ``count`` ints (any length if None)."""
    value = _attr(node, key, default)
    if not isinstance(value, (tuple, list)) or (count is not None and len(value) != count) or \
            any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in value):
        raise NodeError(node, key, f"{_show(value)} is not {count if count is not None else 'a tuple of'} integers")
    return tuple(int(v) for v in value)


def _array(node: QNode, key: str, dtype: str | None = None, lo: int | None = None, hi: int | None = None,
           cast: str | None = None) -> np.ndarray:
    """Attribute ``key`` as an integer array: of exactly ``dtype`` if given, else any integer dtype
    whose values are in [lo, hi], cast to ``cast`` (so the cast never wraps)."""
    value = _attr(node, key)
    if not isinstance(value, np.ndarray):
        raise NodeError(node, key, f"{type(value).__name__} is not an array")
    if dtype is not None and value.dtype != np.dtype(dtype):
        raise NodeError(node, key, f"an array of {value.dtype}, not {dtype}")
    if value.dtype.kind not in "iu":
        raise NodeError(node, key, f"an array of {value.dtype}, not of integers")
    if lo is not None and value.size:
        low, high = int(value.min()), int(value.max())
        if low < lo or high > hi:
            bad = low if low < lo else high
            raise NodeError(node, key, f"holds {bad}, outside [{lo}, {hi}]")
    out = value.astype(cast or value.dtype, copy=False)  # (np.ascontiguousarray would make a 0-D array 1-D)
    return out if out.flags.c_contiguous else out.copy()


def _shift(node: QNode):
    """(shift int, per-channel int32 array or None) of a conv/dense node."""
    shift = _attr(node, "shift")
    if isinstance(shift, np.ndarray):
        return 0, _array(node, "shift", lo=0, hi=31, cast="int32").reshape(-1)
    return _int(node, "shift"), None


def _with_ceil(node: QNode) -> tuple:
    (pt, pl, pb, pr), (ch, cw) = _ints(node, "pad", 4), _ints(node, "ceil", 2, (0, 0))
    return (pt, pl, pb + ch, pr + cw)


def _axis(node: QNode, shape: tuple) -> int:
    axis = _int(node, "axis")
    if not 0 <= axis < len(shape):
        raise NodeError(node, "axis", f"{axis} is not an axis of its {len(shape)}-D input")
    return axis


def _rank(node: QNode, shape: tuple, rank: int) -> tuple:
    if len(shape) != rank:
        raise NodeError(node, "input", f"shape {shape} is not {rank}-D")
    return shape


def _size(shape) -> int:
    return int(np.prod(shape, dtype=object))


def _plan_quantize(node: QNode, shapes: list[tuple]):
    return QuantizeSpec(size=_size(shapes[0]), frac=_int(node, "frac")), [], shapes[0]


def _plan_gemm(node: QNode, shapes: list[tuple]):
    """conv and dense."""
    x = shapes[0]
    weight = _array(node, "weight", "int8")
    bias = _array(node, "bias", "int32")
    shift, per_channel = _shift(node)
    lo, hi = _int(node, "lo"), _int(node, "hi")
    if node.op == "conv":
        n, c, h, w = _rank(node, x, 4)
        if weight.ndim != 4:
            raise NodeError(node, "weight", f"shape {weight.shape} is not (O, I/groups, kh, kw)")
        oc, _, kh, kw = weight.shape
        spec = Conv2dSpec(n=n, c=c, h=h, w=w, oc=oc, kh=kh, kw=kw, stride=_ints(node, "stride", 2),
                          pad=_ints(node, "pad", 4), groups=_int(node, "groups"),
                          pad_value=_int(node, "pad_value"), shift=shift, per_channel=per_channel is not None,
                          lo=lo, hi=hi, wide=_bool(node, "wide"))
    else:
        n, k = _rank(node, x, 2)
        if weight.ndim != 2:
            raise NodeError(node, "weight", f"shape {weight.shape} is not (M, K)")
        spec = DenseSpec(n=n, k=k, m=weight.shape[0], shift=shift, per_channel=per_channel is not None, lo=lo,
                         hi=hi, out_dtype="int32" if _bool(node, "wide") else "int8")
    out = next(a for a in spec.args() if a.output).shape  # (n, oc, oh, ow) or (n, m)
    return spec, [weight, bias] + ([] if per_channel is None else [per_channel]), out


def _plan_add(node: QNode, shapes: list[tuple]):
    spec = AddSpec(size=_size(shapes[0]), a_shift=_int(node, "a_shift"), b_shift=_int(node, "b_shift"),
                   shift=_int(node, "shift"), offset=_int(node, "offset"), lo=_int(node, "lo"),
                   hi=_int(node, "hi"), a_mul=_int(node, "a_mul", 1), b_mul=_int(node, "b_mul", 1))
    return spec, [], shapes[0]


def _plan_mul(node: QNode, shapes: list[tuple]):
    """The product's output is its larger input's shape; the other broadcasts by batch, channels
    or all the rest at once (``graph.mul_extents``, what the reference's numpy broadcasting then agrees with)."""
    out = max(shapes, key=_size)
    exts = [mul_extents(shape, out) for shape in shapes]
    for i, (shape, ext) in enumerate(zip(shapes, exts)):
        if ext is None:
            raise NodeError(node, f"input {i}", f"shape {shape} does not broadcast to {out} by batch, channels "
                            "or all the rest")
    (n, c, inner), a_ext, b_ext = collapse(out_extents(out), *exts)
    spec = MulSpec(n=n, c=c, inner=inner, a_ext=a_ext, b_ext=b_ext, a_zp=_int(node, "a_zp"), b_zp=_int(node, "b_zp"),
                   mul=_int(node, "mul"), shift=_int(node, "shift"), zp=_int(node, "zp"), lo=_int(node, "lo"),
                   hi=_int(node, "hi"))
    return spec, [], out


def _plan_matmul(node: QNode, shapes: list[tuple]):
    """(..., N, K) x (..., K, M) with equal leading axes: one product per index of them."""
    a, b = shapes
    if len(a) < 2 or len(a) != len(b) or a[:-2] != b[:-2] or a[-1] != b[-2]:
        raise NodeError(node, "inputs", f"shapes {a} and {b} are not (..., N, K) and (..., K, M) with equal "
                        "leading axes")
    spec = MatMulSpec(g=_size(a[:-2]), n=a[-2], k=a[-1], m=b[-1], add=_int(node, "add"), shift=_int(node, "shift"),
                      lo=_int(node, "lo"), hi=_int(node, "hi"), a_zp=_int(node, "a_zp", 0))
    return spec, [], a[:-1] + (b[-1],)


def _plan_lut(node: QNode, shapes: list[tuple]):
    return LutSpec(size=_size(shapes[0])), [_array(node, "table", "int8")], shapes[0]


def _plan_muladd(node: QNode, shapes: list[tuple]):
    x = shapes[0]
    n = x[0] if x else 0
    spec = MulAddSpec(n=n, size=_size(x) // max(n, 1), shift=_int(node, "shift"), lo=_int(node, "lo"),
                      hi=_int(node, "hi"))
    consts = [_array(node, key, "int32") for key in ("mul", "add")]
    for key, array in zip(("mul", "add"), consts):
        if array.shape != x[1:]:  # one sample's shape: what the reference broadcasts over the batch
            raise NodeError(node, key, f"shape {array.shape} is not one sample's {x[1:]}")
    return spec, [a.reshape(-1) for a in consts], x


def _plan_relu(node: QNode, shapes: list[tuple]):
    return ReluSpec(size=_size(shapes[0])), [], shapes[0]


def _plan_maxpool(node: QNode, shapes: list[tuple]):
    n, c, h, w = _rank(node, shapes[0], 4)
    kh, kw = _ints(node, "kernel", 2)
    spec = MaxPool2dSpec(n=n, c=c, h=h, w=w, kh=kh, kw=kw, stride=_ints(node, "stride", 2), pad=_with_ceil(node))
    return spec, [], (n, c, spec.oh, spec.ow)


def _plan_avgpool(node: QNode, shapes: list[tuple]):
    n, c, h, w = _rank(node, shapes[0], 4)
    spec = GlobalAvgPoolSpec(n=n, c=c, h=h, w=w, up=_int(node, "up"), add=_int(node, "add"), lo=_int(node, "lo"),
                             hi=_int(node, "hi"), out_dtype="int32" if _bool(node, "wide") else "int8")
    return spec, [], (n, c, 1, 1)


def _plan_avgpool2d(node: QNode, shapes: list[tuple]):
    n, c, h, w = _rank(node, shapes[0], 4)
    kh, kw = _ints(node, "kernel", 2)
    spec = AvgPool2dSpec(n=n, c=c, h=h, w=w, kh=kh, kw=kw, stride=_ints(node, "stride", 2), pad=_with_ceil(node),
                         pad_value=_int(node, "pad_value"), up=_int(node, "up"), lo=_int(node, "lo"),
                         hi=_int(node, "hi"))
    int32 = (-2**31, 2**31 - 1)
    return spec, [_array(node, "count", None, *int32, cast="int32"),
                  _array(node, "add", None, *int32, cast="int32")], (n, c, spec.oh, spec.ow)


def _plan_concat(node: QNode, shapes: list[tuple]):
    x = shapes[0]
    axis = _axis(node, x)
    for i, shape in enumerate(shapes):
        if len(shape) != len(x) or shape[:axis] != x[:axis] or shape[axis + 1:] != x[axis + 1:]:
            raise NodeError(node, f"input {i}", f"shape {shape} does not concatenate with {x} along axis {axis}")
    outer, inner = _size(x[:axis]), _size(x[axis + 1:])
    spec = ConcatSpec(outer=outer, inner=inner, parts=tuple(s[axis] for s in shapes),
                      shifts=_ints(node, "shifts", len(shapes)), zps=_ints(node, "zps", len(shapes)),
                      zp=_int(node, "zp"))
    return spec, [], x[:axis] + (sum(spec.parts),) + x[axis + 1:]


def _plan_gather(node: QNode, shapes: list[tuple]):
    shape = _ints(node, "shape", None)
    spec = GatherSpec(n=1, size_in=_size(shapes[0]), size_out=_size(shape))
    consts = [_array(node, "index", None, -2**31, 2**31 - 1, cast="int32"),
              _array(node, "fill", None, -128, 127, cast="int8")]
    for key, array in zip(("index", "fill"), consts):
        if array.ndim != 1:  # flat, one per output element
            raise NodeError(node, key, f"shape {array.shape} is not one-dimensional")
    return spec, consts, shape


def _plan_resize(node: QNode, shapes: list[tuple]):
    x, shape = shapes[0], _ints(node, "shape", 4)
    if len(x) != 4 or tuple(shape[:2]) != tuple(x[:2]):
        raise NodeError(node, "shape", f"{tuple(shape)} does not resize the planes of an input of shape {x}")
    spec = ResizeSpec(planes=x[0] * x[1], size_in=x[2] * x[3], size_out=shape[2] * shape[3], frac=_int(node, "frac"))
    consts = [_array(node, key, None, -2**31, 2**31 - 1, cast="int32") for key in ("index", "weight")]
    for key, array in zip(("index", "weight"), consts):
        if array.shape != (spec.size_out, 4):  # four taps per output pixel of a plane
            raise NodeError(node, key, f"shape {array.shape} is not ({spec.size_out}, 4)")
    return spec, consts, shape


def _plan_softmax(node: QNode, shapes: list[tuple]):
    x = shapes[0]
    axis = _axis(node, x)
    outer, inner = _size(x[:axis]), _size(x[axis + 1:])
    table = _array(node, "table", None, -2**31, 2**31 - 1, cast="int32")
    mask = node.attrs.get("mask")
    if mask is None:
        return SoftmaxSpec(outer=outer, axis=x[axis], inner=inner, zp=_int(node, "zp", 0)), [table], x
    try:
        full = np.broadcast_to(np.asarray(mask), x).astype(np.int8).reshape(outer, x[axis], inner)
    except ValueError:
        raise NodeError(node, "mask", f"shape {np.shape(mask)} does not broadcast to the input's {x}") from None
    # the fewest rows that repeat over the outer ones (a mask broadcast over batch and heads)
    rows = next(p for p in (_size(x[k:axis]) for k in range(axis, -1, -1))
                if np.array_equal(full, np.tile(full[:p], (outer // p, 1, 1))))
    spec = SoftmaxSpec(outer=outer, axis=x[axis], inner=inner, zp=_int(node, "zp", 0), mask_rows=rows)
    return spec, [table, np.ascontiguousarray(full[:rows])], x


def _plan_layernorm(node: QNode, shapes: list[tuple]):
    """Over the last axis: (rows, channels) with a multiplier (int32) and an offset (int64) per channel."""
    x = shapes[0]
    if len(x) < 1:
        raise NodeError(node, "input", f"shape {x} has no axis to normalise")
    spec = LayerNormSpec(rows=_size(x[:-1]), channels=int(x[-1]), eps=_int(node, "eps"), shift=_int(node, "shift"))
    consts = [_array(node, "mul", None, -2**31, 2**31 - 1, cast="int32"),
              _array(node, "add", None, -2**63, 2**63 - 1, cast="int64")]
    for key, array in zip(("mul", "add"), consts):
        if array.shape != (spec.channels,):
            raise NodeError(node, key, f"shape {array.shape} is not ({spec.channels},)")
    return spec, consts, x


# quantized op -> its planner: (spec, constant inputs, output shape) from the node and its inputs'
# shapes (the output shape the numpy reference gives); the kernel's inputs are the activations
# (reshaped to the spec's first arguments), then these constants. RESHAPES have no kernel.
PLANS = {"quantize": _plan_quantize, "conv": _plan_gemm, "dense": _plan_gemm, "add": _plan_add, "mul": _plan_mul,
         "matmul": _plan_matmul, "lut": _plan_lut,
         "muladd": _plan_muladd, "relu": _plan_relu, "maxpool": _plan_maxpool, "avgpool": _plan_avgpool,
         "avgpool2d": _plan_avgpool2d, "concat": _plan_concat, "gather": _plan_gather, "resize": _plan_resize,
         "softmax": _plan_softmax, "layernorm": _plan_layernorm}


def _plan(node: QNode, shapes: list[tuple]):
    """(spec, constant inputs, output shape) of a CPU op whose inputs have ``shapes`` (:data:`PLANS`)."""
    if node.op not in PLANS:
        raise NodeError(node, "op", f"no CPU kernel for op {printable(node.op, 40)!r}")
    return PLANS[node.op](node, shapes)


def kernel_plan(node: QNode, shapes: list[tuple]):
    """(spec, constant inputs, output shape) of a CPU op (None for a free reshape), after
    checking its attributes, the constants' shapes, dtypes and values and its inputs' sizes."""
    if node.op in RESHAPES:
        return None
    arity = ARITY.get(node.op, 1)
    if (len(shapes) != arity) if arity is not None else not shapes:
        raise NodeError(node, "inputs", f"{len(shapes)} inputs, the op takes {arity or 'one or more'}")
    try:
        spec, consts, shape = _plan(node, [tuple(int(d) for d in s) for s in shapes])
    except KernelError as err:
        raise NodeError(node, "attributes", str(err)) from None
    wanted = [a for a in spec.args() if a.is_input]
    for shape_in, arg in zip(shapes, wanted):  # the activations
        if _size(shape_in) != _size(arg.shape):
            raise NodeError(node, f"input {arg.name!r}", f"shape {tuple(shape_in)} does not have the "
                            f"{_size(arg.shape)} elements the kernel takes")
    for array, arg in zip(consts, wanted[len(shapes):]):
        if tuple(array.shape) != tuple(arg.shape) or array.dtype != np.dtype(arg.dtype):
            raise NodeError(node, arg.name, f"{array.dtype} {tuple(array.shape)}, the kernel takes {arg.dtype} "
                            f"{tuple(arg.shape)}")
    try:
        spec.check_values({arg.name: array for array, arg in zip(consts, wanted[len(shapes):])})
    except KernelValueError as err:
        raise NodeError(node, err.buffer, err.why) from None
    return spec, consts, shape


def cpu_kernel(node: QNode, args: list[np.ndarray]):
    """(kernel spec, kernel inputs, output shape) of a CPU op, or None for a free reshape."""
    plan = kernel_plan(node, [a.shape for a in args])
    if plan is None:
        return None
    spec, consts, shape = plan
    wanted = [a for a in spec.args() if a.is_input]
    return spec, [x.reshape(arg.shape) for x, arg in zip(args, wanted)] + consts, shape


def check_graph(q: QGraph, cpu_nodes) -> None:
    """Refuse (NodeError) a graph in which some op's attributes, constants or input shapes do not
    make a kernel, whose kernel does not write exactly the node's declared output shape, or (ops in
    ``cpu_nodes``, the names placed on the CPU) whose kernel's work or memory is beyond the limits;
    from the declared shapes, before anything runs."""
    for node in q.nodes:
        shapes = [q.shapes[i] for i in node.inputs]
        declared = tuple(q.shapes[node.output])
        plan = kernel_plan(node, shapes)
        if plan is None:
            if len(shapes) != 1 or _size(shapes[0]) != _size(declared):
                raise NodeError(node, "shape", f"reshapes {shapes} to {declared}: not one input of as many elements")
            if node.op == "reshape" and _ints(node, "shape", None) != declared:  # the reference reshapes to it
                raise NodeError(node, "shape", f"{_show(node.attrs['shape'])} is not the declared output {declared}")
            continue
        spec, _, shape = plan
        out = next(a for a in spec.args() if a.output)
        if tuple(shape) != declared or _size(out.shape) != _size(declared):
            raise NodeError(node, "output", f"its kernel writes {tuple(shape)}, the graph declares {declared}")
        if node.name in cpu_nodes:
            try:
                spec.check_limits()
            except KernelError as err:
                raise NodeError(node, "work", str(err)) from None


def layout_specs(config: Config, tensors: list[tuple], cls) -> list:
    """Pack (or unpack) kernel specs of (shape, dtype) activations: NCHW, or (N, C) as N x C x 1 x 1."""
    specs = []
    for shape, dtype in tensors:
        n, c, h, w = shape if len(shape) == 4 else (shape[0], shape[1], 1, 1)
        specs.append(cls(n=n, c=c, h=h, w=w, batch=config.batch, block=config.block_in, dtype=dtype))
    return specs
