"""The numpy-level API: one function per CPU operator, run through the host JIT.

Each function checks its arrays (rank and dtype, with errors naming the operator), builds the
kernel spec for their shapes, takes the compiled kernel from the JIT cache (compiling it the
first time that shape is seen) and returns a fresh output array. Pass ``jit=`` to use a
specific ``HostJit`` instead of the process-wide one.
"""

import numpy as np

from .conv import Conv2dSpec
from .dense import DenseSpec
from .elementwise import AddSpec, DequantizeSpec, QuantizeSpec, ReluSpec
from .errors import KernelDtypeError, KernelShapeError
from .layout import PackSpec, UnpackSpec
from .pool import GlobalAvgPoolSpec, MaxPool2dSpec


def _check(op, name, array, dtypes, ndim=None):
    """Raise unless ``array`` is a numpy array of one of ``dtypes`` (and rank ``ndim``)."""
    if not isinstance(array, np.ndarray):
        raise KernelDtypeError(f"{op}: '{name}' must be a numpy array, got {type(array).__name__}")
    if array.dtype.name not in dtypes:
        raise KernelDtypeError(f"{op}: '{name}' must be {' or '.join(dtypes)}, got {array.dtype}")
    if ndim is not None and array.ndim != ndim:
        raise KernelShapeError(
            f"{op}: '{name}' must have {ndim} dimensions, got shape {tuple(array.shape)}")


def _run(spec, *inputs, jit=None):
    if jit is None:
        from .jit import host_jit  # llvmlite is imported on first use only (the board has none)

        jit = host_jit()
    return jit.kernel(spec)(*inputs)


def _pair(op, name, value):
    if isinstance(value, int):
        return value, value
    if isinstance(value, tuple) and len(value) == 2:
        return value
    raise KernelShapeError(f"{op}: {name} must be an int or a pair of ints, got {value!r}")


def conv2d(inp, wgt, bias, *, stride=1, pad=0, shift=0, relu=False, jit=None):
    """int8 NCHW conv with OIHW int8 weights and int32 bias, requantized to int8."""
    _check("conv2d", "inp", inp, ("int8",), 4)
    _check("conv2d", "wgt", wgt, ("int8",), 4)
    _check("conv2d", "bias", bias, ("int32",), 1)
    n, c, h, w = inp.shape
    oc, wc, kh, kw = wgt.shape
    if wc != c or bias.shape != (oc,):
        raise KernelShapeError(
            f"conv2d: input {inp.shape}, weights {wgt.shape} and bias {bias.shape} disagree "
            f"(weights must be (OC, {c}, KH, KW), bias (OC,))")
    spec = Conv2dSpec(n=n, c=c, h=h, w=w, oc=oc, kh=kh, kw=kw, stride=stride, pad=pad,
                      shift=shift, relu=relu)
    return _run(spec, inp, wgt, bias, jit=jit)


def max_pool2d(inp, *, kernel, stride=1, pad=0, jit=None):
    """int8 NCHW max pool with a ``kernel`` (int or (kh, kw)) window; padding ignored."""
    _check("maxpool2d", "inp", inp, ("int8",), 4)
    kh, kw = _pair("maxpool2d", "kernel", kernel)
    spec = MaxPool2dSpec(n=inp.shape[0], c=inp.shape[1], h=inp.shape[2], w=inp.shape[3],
                         kh=kh, kw=kw, stride=stride, pad=pad)
    return _run(spec, inp, jit=jit)


def global_avg_pool(inp, *, jit=None):
    """int8 NCHW -> (N, C) int8 mean over H x W, rounding half up."""
    _check("global_avgpool", "inp", inp, ("int8",), 4)
    n, c, h, w = inp.shape
    return _run(GlobalAvgPoolSpec(n=n, c=c, h=h, w=w), inp, jit=jit)


def add(a, b, *, a_shift=0, b_shift=0, shift=0, relu=False, a_mul=1, b_mul=1, offset=0, jit=None):
    """Saturating int8 residual add: clip(((a * a_mul << a_shift) + (b * b_mul << b_shift) + offset) >> shift, lo, 127)."""
    _check("add", "a", a, ("int8",))
    _check("add", "b", b, ("int8",))
    if a.shape != b.shape:
        raise KernelShapeError(
            f"add: operands must have the same shape, got {a.shape} and {b.shape}")
    spec = AddSpec(size=a.size, a_shift=a_shift, b_shift=b_shift, shift=shift, relu=relu, a_mul=a_mul, b_mul=b_mul,
                   offset=offset)
    return _run(spec, a.reshape(-1), b.reshape(-1), jit=jit).reshape(a.shape)


def relu(inp, *, jit=None):
    """int8 ReLU, any shape."""
    _check("relu", "inp", inp, ("int8",))
    return _run(ReluSpec(size=inp.size), inp.reshape(-1), jit=jit).reshape(inp.shape)


def dense(inp, wgt, bias, *, shift=0, relu=False, out_dtype="int8", jit=None):
    """int8 (N, K) x (M, K) weights + int32 bias -> (N, M) int8 (requantized) or int32."""
    _check("dense", "inp", inp, ("int8",), 2)
    _check("dense", "wgt", wgt, ("int8",), 2)
    _check("dense", "bias", bias, ("int32",), 1)
    n, k = inp.shape
    m = wgt.shape[0]
    if wgt.shape[1] != k or bias.shape != (m,):
        raise KernelShapeError(
            f"dense: input {inp.shape}, weights {wgt.shape} and bias {bias.shape} disagree "
            f"(weights must be (M, {k}), bias (M,))")
    spec = DenseSpec(n=n, k=k, m=m, shift=shift, relu=relu, out_dtype=out_dtype)
    return _run(spec, inp, wgt, bias, jit=jit)


def quantize(inp, *, frac, jit=None):
    """float32 -> int8 with scale 2**-frac, round half to even, saturating; NaN -> 0."""
    _check("quantize", "inp", inp, ("float32",))
    spec = QuantizeSpec(size=inp.size, frac=frac)
    return _run(spec, inp.reshape(-1), jit=jit).reshape(inp.shape)


def dequantize(inp, *, frac, jit=None):
    """int8 -> float32 with scale 2**-frac."""
    _check("dequantize", "inp", inp, ("int8",))
    spec = DequantizeSpec(size=inp.size, frac=frac)
    return _run(spec, inp.reshape(-1), jit=jit).reshape(inp.shape)


def pack(inp, *, batch, block, jit=None):
    """NCHW -> (N/batch, C/block, H, W, batch, block), zero-padding N and C; int8 or int32."""
    _check("pack", "inp", inp, ("int8", "int32"), 4)
    n, c, h, w = inp.shape
    spec = PackSpec(n=n, c=c, h=h, w=w, batch=batch, block=block, dtype=inp.dtype.name)
    return _run(spec, inp, jit=jit)


def unpack(inp, *, n, c, jit=None):
    """Blocked (N/batch, C/block, H, W, batch, block) -> NCHW (n, c, H, W), dropping padding."""
    _check("unpack", "inp", inp, ("int8", "int32"), 6)
    nbs, cbs, h, w, batch, block = inp.shape
    if not (0 < n <= nbs * batch and 0 < c <= cbs * block) or -(-n // batch) != nbs \
            or -(-c // block) != cbs:
        raise KernelShapeError(
            f"unpack: blocked shape {inp.shape} does not hold n={n}, c={c} "
            f"(expected ({-(-n // batch)}, {-(-c // block)}, H, W, {batch}, {block}))")
    spec = UnpackSpec(n=n, c=c, h=h, w=w, batch=batch, block=block, dtype=inp.dtype.name)
    return _run(spec, inp, jit=jit)
