"""Plain numpy interpretation of a :class:`QGraph`: the definition of the quantized network.

This is the project's one numpy reference of quantized arithmetic: the accelerator compiler,
the LLVM CPU kernels and the whole network are tested against these functions, bit for bit.
Accumulation is exact (int8 products summed in float32 via ``float_ref.conv_taps`` while the
sums stay below 2**24, larger convs in float32 slices of their input channels whose integer sums
are added, grouped ones in float64, exact below 2**53: the same result in any summation order) and wraps to int32 once, with the bias, as the hardware's accumulator does; then
``requantize`` floors by the shift and clips.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.float_ref import _conv_out, conv_taps, outputs_of, pair, quad, run_graph, whole_plane, windows
from compiler.frontend.graph import only_output
from compiler.quantize.qgraph import QGraph, QNode

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(x) -> np.ndarray:
    """int64 values wrapped to int32's range (two's complement), kept as int64."""
    return (np.asarray(x, dtype=np.int64) - INT32_MIN) % (1 << 32) + INT32_MIN


def _channels(value, ndim: int) -> np.ndarray:
    """A scalar, or one value per channel (axis 1) shaped to broadcast over an ndim-D tensor."""
    v = np.asarray(value, dtype=np.int64)
    return v if v.ndim == 0 else v.reshape((1, -1) + (1,) * (ndim - 2))


def requantize(acc, shift=0, relu: bool = False, *, lo: int | None = None, hi: int | None = None,
               wide: bool = False):
    """clip(acc >> shift, lo, hi): int8, or int32 when ``wide``; ``shift`` an int or per channel.
    Default bounds: ``lo`` 0 with ``relu``, else the type's minimum; ``hi`` the type's maximum."""
    acc = np.asarray(acc, dtype=np.int64)
    if lo is None:
        lo = 0 if relu else (INT32_MIN if wide else -128)
    if hi is None:
        hi = INT32_MAX if wide else 127
    out = np.clip(acc >> _channels(shift, acc.ndim), lo, hi)
    return out.astype(np.int32 if wide else np.int8)


def round_shift(x, shift: int) -> np.ndarray:
    """x / 2**shift rounded half up (an arithmetic shift of x + 2**(shift-1)); int64."""
    x = np.asarray(x, dtype=np.int64)
    return (x + (1 << (shift - 1))) >> shift if shift > 0 else x


def quantize(x, frac: int) -> np.ndarray:
    """float -> int8 with scale 2**-frac: round half to even, saturate, NaN -> 0."""
    scaled = np.asarray(x, dtype=np.float32) * np.float32(2.0 ** frac)  # the one float32 temporary:
    scaled[np.isnan(scaled)] = 0                                          # the rest in place (issue 45)
    return np.clip(np.rint(scaled, out=scaled), -128, 127, out=scaled).astype(np.int8)


def dequantize(q, frac: int) -> np.ndarray:
    return np.asarray(q).astype(np.float32) * np.float32(2.0 ** -frac)


def _peak(a) -> int:
    return max(int(np.max(a)), -int(np.min(a))) if np.size(a) else 0


def exact_dtype(x, weight, fill: int = 0):
    """float32 where every partial sum of a convolution of integer ``x`` (padding ``fill``) with
    ``weight`` is an exact float32 integer (terms * max|x| * max|w| <= 2**24: int8 layers up to
    1024 products), else float64 (exact below 2**53)."""
    terms = int(np.prod(np.shape(weight)[1:]))
    return np.float32 if terms * max(_peak(x), abs(int(fill))) * _peak(weight) <= 1 << 24 else np.float64


def float32_channels(x, weight, fill: int = 0) -> int:
    """The most input channels whose convolution sums stay exact in float32 (the bound of
    :func:`exact_dtype` over kh * kw products per channel); 0 if not even one."""
    per_channel = int(np.prod(np.shape(weight)[2:])) * max(_peak(x), abs(int(fill)), 1) * max(_peak(weight), 1)
    return (1 << 24) // per_channel


def conv2d_acc(x, weight, bias, stride=1, pad=0, groups: int = 1, pad_value: int = 0) -> np.ndarray:
    """wrap32(bias + sum of int8 products) of a grouped NCHW conv whose padding holds
    ``pad_value``, as int64 in int32's range. Where the whole sum would not be exact in float32,
    an ungrouped conv sums slices of its input channels that are (float32 products, twice as fast
    as float64) and adds the slices' integers: the same exact sum."""
    stride, pad = pair(stride), quad(pad)
    dtype = exact_dtype(x, weight, pad_value)
    step = float32_channels(x, weight, pad_value) if dtype is np.float64 and groups == 1 else 0
    if step:
        acc = np.zeros((x.shape[0], weight.shape[0]) + _conv_out(x, weight.shape[2:], stride, pad), np.int64)
        step = -(-weight.shape[1] // -(-weight.shape[1] // step))  # equal slices, as few as fit
        for c in range(0, weight.shape[1], step):
            acc += np.rint(conv_taps(x[:, c:c + step], weight[:, c:c + step], stride, pad, 1, fill=pad_value,
                                     dtype=np.float32)).astype(np.int64)
    else:
        acc = np.rint(conv_taps(x, weight, stride, pad, groups, fill=pad_value, dtype=dtype)).astype(np.int64)
    return wrap32(acc + np.asarray(bias, dtype=np.int64)[None, :, None, None])


def conv2d(x, weight, bias, *, stride=1, pad=0, groups: int = 1, pad_value: int = 0, shift=0, relu: bool = False,
           lo: int | None = None, hi: int | None = None, wide: bool = False) -> np.ndarray:
    """int8 NCHW conv, OIHW int8 weights, int32 bias, requantized (see ``requantize``)."""
    return requantize(conv2d_acc(x, weight, bias, stride, pad, groups, pad_value), shift, relu, lo=lo, hi=hi,
                      wide=wide)


def dense(x, weight, bias, *, shift=0, relu: bool = False, lo: int | None = None, hi: int | None = None,
          wide: bool = False, out_dtype: str = "int8") -> np.ndarray:
    """(N, K) int8 x (M, K) int8 + int32 bias; ``out_dtype='int32'`` returns the raw accumulator."""
    acc = wrap32(np.asarray(x, np.int64) @ np.asarray(weight, np.int64).T + np.asarray(bias, np.int64))
    if out_dtype == "int32":
        return acc.astype(np.int32)
    return requantize(acc, shift, relu, lo=lo, hi=hi, wide=wide)


def add(a, b, a_shift=0, b_shift=0, shift=0, relu: bool = False, *, offset: int = 0, lo: int | None = None,
        hi: int | None = None, a_mul: int = 1, b_mul: int = 1) -> np.ndarray:
    """clip(((a * a_mul << a_shift) + (b * b_mul << b_shift) + offset) >> shift, lo, hi)."""
    total = (np.asarray(a, np.int64) * a_mul << a_shift) + (np.asarray(b, np.int64) * b_mul << b_shift) + int(offset)
    return requantize(total, shift, relu, lo=lo, hi=hi)


def mul(a, b, a_zp: int, b_zp: int, mul_: int, shift: int, zp: int, lo: int = -128, hi: int = 127) -> np.ndarray:
    """clip((((a - a_zp) * (b - b_zp) * mul + 2**(shift-1)) >> shift) + zp, lo, hi), numpy broadcasting
    (no rounding term when ``shift`` is 0). With int8 zero points, ``0 <= mul <= 2**14`` and
    ``shift <= 31`` every intermediate fits int32 (``compiler.cpu_fallback.product``)."""
    p = (np.asarray(a, np.int64) - int(a_zp)) * (np.asarray(b, np.int64) - int(b_zp))
    total = p * int(mul_) + ((1 << (shift - 1)) if shift else 0)
    return np.clip((total >> shift) + int(zp), lo, hi).astype(np.int8)


def matmul(a, b, add: int, shift: int, lo: int = -128, hi: int = 127, a_zp: int = 0) -> np.ndarray:
    """int8 (..., N, K) x (..., K, M), one product per index of the equal leading axes, each
    clip(wrap32(sum of (a - a_zp) * b + add) >> shift, lo, hi) (``b`` symmetric: no zero point)."""
    acc = np.matmul(np.asarray(a, np.int64) - int(a_zp), np.asarray(b, np.int64))
    return requantize(wrap32(acc + int(add)), int(shift), lo=lo, hi=hi)


def relu(x) -> np.ndarray:
    """int8 ReLU (the CPU kernel's definition; in graphs a ReLU is fused or a ``lut``)."""
    return np.maximum(x, 0).astype(np.int8)


def lut(x, table) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == np.int8:  # x + 128 as a one-byte index: an int64 one was twice a float32 tensor (issue 45)
        return np.asarray(table, dtype=np.int8)[x.view(np.uint8) ^ np.uint8(128)]
    return np.asarray(table, dtype=np.int8)[np.asarray(x, dtype=np.int64) + 128]


def muladd(x, mul, add_, shift: int, lo: int = -128, hi: int = 127) -> np.ndarray:
    """clip((x * mul + add) >> shift, lo, hi); ``mul``/``add`` broadcast over one sample (x[0])."""
    x = np.asarray(x, dtype=np.int64)
    total = wrap32(x * np.asarray(mul, np.int64) + np.asarray(add_, np.int64))
    return np.clip(total >> shift, lo, hi).astype(np.int8)


def max_pool2d(x, kh, kw=None, stride=1, pad=0, ceil=(0, 0)) -> np.ndarray:
    """int8 max pool; padded (and ceil-mode) positions never win."""
    if whole_plane(np.asarray(x), (kh, kw or kh), pad, ceil):
        return np.asarray(x).max(axis=(2, 3), keepdims=True).astype(np.int8)
    out = None
    for _, view in windows(np.asarray(x, np.int16), (kh, kw or kh), stride, pad, fill=-1000, ceil_extra=ceil):
        out = view.copy() if out is None else np.maximum(out, view)
    if out.min() < -128:
        raise ValueError("a pooling window saw only padding")
    return out.astype(np.int8)


def global_avg_pool(x, up: int = 0, add: int | None = None, lo: int = -128, hi: int = 127,
                    wide: bool = False) -> np.ndarray:
    """(N, C, H, W) -> (N, C) clip(floor(((sum << up) + add) / HW)); ``add`` defaults to HW // 2
    (rounding half up); ``wide`` keeps int32 without clipping."""
    area = x.shape[2] * x.shape[3]
    total = np.asarray(x, np.int64).sum(axis=(2, 3)) << up
    mean = (total + (area // 2 if add is None else int(add))) // area
    return mean.astype(np.int32) if wide else np.clip(mean, lo, hi).astype(np.int8)


def avg_pool2d(x, kernel, stride, pad, ceil, count, add, up: int = 0, pad_value: int = 0, lo: int = -128,
               hi: int = 127) -> np.ndarray:
    """Windowed clip(floor(((sum << up) + add) / count)), padding (and ceil extra) holding ``pad_value``."""
    total = None
    for _, view in windows(np.asarray(x, np.int64), kernel, stride, pad, fill=pad_value, ceil_extra=ceil):
        total = view.copy() if total is None else total + view
    count, add = np.asarray(count, np.int64), np.asarray(add, np.int64)
    return np.clip(((total << up) + add) // count, lo, hi).astype(np.int8)


def concat(arrays, axis: int, shifts, zps, zp: int) -> np.ndarray:
    """Each input re-expressed at the output's scale: round_shift(x - zp_i, shift_i) + zp, clipped."""
    parts = [np.clip(round_shift(np.asarray(a, np.int64) - z, s) + zp, -128, 127)
             for a, s, z in zip(arrays, shifts, zps)]
    return np.concatenate(parts, axis=axis).astype(np.int8)


def gather(x, index, fill, shape) -> np.ndarray:
    index = np.asarray(index, dtype=np.int64)
    flat = np.asarray(x).reshape(-1)
    return np.where(index >= 0, flat[np.maximum(index, 0)], fill).astype(np.int8).reshape(shape)


def resize(x, index, weight, frac: int, shape) -> np.ndarray:
    """Each output pixel of a plane: clip((sum of weight * x over its four input pixels
    + 2**(frac-1)) >> frac, -128, 127), in int32 (the CPU kernel's arithmetic)."""
    planes = np.asarray(x).reshape(x.shape[0] * x.shape[1], -1).astype(np.int64)
    acc = (planes[:, np.asarray(index, np.int64)] * np.asarray(weight, np.int64)).sum(axis=-1)
    acc = wrap32(acc + (1 << (frac - 1)))  # the kernel's int32 arithmetic
    return np.clip(acc >> frac, -128, 127).astype(np.int8).reshape(shape)


def softmax(x, axis: int, table, zp: int = 0, mask=None) -> np.ndarray:
    """Probabilities on the step ``2**-7`` with zero point 0 (codes 0..127), or, with ``zp`` -128,
    on ``2**-8`` (codes -128..127 for 0..255/256, TFLite's int8 softmax output). ``mask`` (bool,
    broadcast to ``x``; True: kept) restricts the maximum and the sum to the kept positions, and
    the masked ones get the lowest code (their term is 0); every row keeps one at least."""
    x = np.asarray(x, dtype=np.int64)
    keep = np.ones(x.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), x.shape)
    top = np.where(keep, x, -128).max(axis=axis, keepdims=True)
    e = np.where(keep, np.asarray(table, dtype=np.int64)[np.where(keep, x - top + 255, 255)], 0)
    s = e.sum(axis=axis, keepdims=True)
    one = 256 if zp else 128
    return (np.minimum((e * one + s // 2) // s, 127 - int(zp)) + int(zp)).astype(np.int8)


# int8 LayerNorm (compiler.cpu_fallback.layernorm, the kernel; rules._layernorm, the constants)
LN_ROOT_BITS = 52     # the square root's argument is scaled by 4**k to just below 2**52
LN_RECIP_BITS = 48    # r = floor(2**48 / st): the reciprocal of the row's scaled deviation
LN_Z_FRAC = 16        # the normalised value z has 16 fractional bits
LN_MIN_ROOT = 1 << 25  # st is at least this but for v = 0 (every d 0): r fits int32
LN_SQRT_STEPS = 8     # Newton steps of the integer square root (exact below 2**52 from the start below)


def bit_length(n) -> np.ndarray:
    """The number of bits of each non-negative int64 (0 for 0)."""
    n = np.asarray(n, np.int64)
    bits = np.zeros(n.shape, np.int64)
    for k in range(63):
        bits += (n >> k) > 0
    return bits


def isqrt_newton(n) -> np.ndarray:
    """max(floor(sqrt(n)), 1) of int64 ``n`` in [0, 2**52), by Newton's iteration as I-BERT's
    Algorithm 4 (Kim et al., ICML 2021): from ``x = 2**ceil(bits(n) / 2)`` (>= sqrt n),
    ``x <- max(min(x, (x + n // x) // 2), 1)``, a fixed :data:`LN_SQRT_STEPS` times (the kernel's loop)."""
    n = np.asarray(n, np.int64)
    x = np.left_shift(np.int64(1), (bit_length(n) + 1) >> 1)
    for _ in range(LN_SQRT_STEPS):
        x = np.maximum(np.minimum(x, (x + n // x) >> 1), 1)
    return x


def layernorm(x, mul, add, eps: int, shift: int) -> np.ndarray:
    """int8 LayerNorm over the last axis (C entries), integer only::

        s = sum q,  d = C q - s              (C times the deviation from the mean: no division)
        v = C sum q**2 - s**2 + eps         (C**2 times the variance, plus epsilon)
        k = (52 - bits(v)) // 2,  st = max(isqrt_newton(v << 2k), 2**25)   (2**k sqrt v)
        r = 2**48 // st,  z = (d r) >> (32 - k)                   (d / sqrt v, 16 fractional bits)
        out = clip((z mul + add) >> shift, -128, 127)   (gamma and beta, the output's scale and
                                                         zero point folded in, per channel)

    ``eps`` is ONNX's epsilon in units of C**2 input codes**2; ``mul`` int32 and ``add`` int64 per
    channel (``rules._layernorm``). The input's zero point cancels in ``d`` and in ``v``."""
    q = np.asarray(x, np.int64)
    c = q.shape[-1]
    s = q.sum(axis=-1, keepdims=True)
    d = c * q - s
    v = c * (q * q).sum(axis=-1, keepdims=True) - s * s + int(eps)
    k = (LN_ROOT_BITS - bit_length(v)) >> 1
    st = np.maximum(isqrt_newton(v << (2 * k)), LN_MIN_ROOT)
    z = (d * ((1 << LN_RECIP_BITS) // st)) >> (LN_RECIP_BITS - LN_Z_FRAC - k)
    acc = z * np.asarray(mul, np.int64) + np.asarray(add, np.int64)
    return np.clip(acc >> int(shift), -128, 127).astype(np.int8)


def _global_avg_pool(a, x) -> np.ndarray:
    n, c = x.shape[:2]
    return global_avg_pool(x, a["up"], a["add"], a["lo"], a["hi"], a["wide"]).reshape(n, c, 1, 1)


# quantized op (compiler.quantize.qgraph) -> f(attrs, inputs): its int8 (or wide int32) output
EVAL = {
    "quantize": lambda a, args: quantize(args[0], a["frac"]),
    "conv": lambda a, args: conv2d(args[0], a["weight"], a["bias"], stride=a["stride"], pad=a["pad"],
                                   groups=a["groups"], pad_value=a["pad_value"], shift=a["shift"], lo=a["lo"],
                                   hi=a["hi"], wide=a["wide"]),
    "dense": lambda a, args: dense(args[0], a["weight"], a["bias"], shift=a["shift"], lo=a["lo"], hi=a["hi"],
                                   wide=a["wide"]),
    "add": lambda a, args: add(args[0], args[1], a["a_shift"], a["b_shift"], a["shift"], offset=a["offset"],
                               lo=a["lo"], hi=a["hi"], a_mul=a.get("a_mul", 1), b_mul=a.get("b_mul", 1)),
    "mul": lambda a, args: mul(args[0], args[1], a["a_zp"], a["b_zp"], a["mul"], a["shift"], a["zp"], a["lo"],
                               a["hi"]),
    "matmul": lambda a, args: matmul(args[0], args[1], a["add"], a["shift"], a["lo"], a["hi"], a.get("a_zp", 0)),
    "relu": lambda a, args: relu(args[0]),
    "lut": lambda a, args: lut(args[0], a["table"]),
    "muladd": lambda a, args: muladd(args[0], a["mul"], a["add"], a["shift"], a["lo"], a["hi"]),
    "maxpool": lambda a, args: max_pool2d(args[0], *a["kernel"], a["stride"], a["pad"], a["ceil"]),
    "avgpool": lambda a, args: _global_avg_pool(a, args[0]),
    "avgpool2d": lambda a, args: avg_pool2d(args[0], a["kernel"], a["stride"], a["pad"], a["ceil"], a["count"],
                                            a["add"], a["up"], a["pad_value"], a["lo"], a["hi"]),
    "concat": lambda a, args: concat(args, a["axis"], a["shifts"], a["zps"], a["zp"]),
    "reshape": lambda a, args: args[0].reshape(a["shape"]),
    "gather": lambda a, args: gather(args[0], a["index"], a["fill"], a["shape"]),
    "resize": lambda a, args: resize(args[0], a["index"], a["weight"], a["frac"], a["shape"]),
    "softmax": lambda a, args: softmax(args[0], a["axis"], a["table"], a.get("zp", 0), a.get("mask")),
    "layernorm": lambda a, args: layernorm(args[0], a["mul"], a["add"], a["eps"], a["shift"]),
}


def eval_node(node: QNode, args: list[np.ndarray]) -> np.ndarray:
    if node.op not in EVAL:
        raise ValueError(f"unknown quantized op {node.op}")
    return EVAL[node.op](node.attrs, args)


def run(graph: QGraph, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every value of the quantized network for float input ``x`` (a multiple of its batch)."""
    return run_graph(graph, x, eval_node)


def forward(graph: QGraph, x: np.ndarray) -> np.ndarray:
    """The only output of a one-output network for ``x`` (each intermediate value freed after its
    last reader; :func:`forward_all` for any network)."""
    return only_output(graph.name, forward_all(graph, x))


def forward_all(graph: QGraph, x: np.ndarray) -> tuple[np.ndarray, ...]:
    """The network's outputs for ``x``, in ``graph.outputs``' order."""
    return outputs_of(graph, x, eval_node)
