"""Plain numpy references of the CPU fallback operators, written independently of the kernels.

Each follows the operator's definition directly (padded arrays, one slice per window tap,
int64 arithmetic wrapped to int32 where the definition says int32), not the kernels' loop
nests. Slow on purpose is fine; obvious is the point.
"""

import numpy as np


def wrap_int32(values):
    """int64 -> int32 with two's-complement wrap-around."""
    return ((np.asarray(values, dtype=np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def requant(acc, shift, relu):
    return np.clip(acc.astype(np.int64) >> shift, 0 if relu else -128, 127).astype(np.int8)


def conv2d(inp, wgt, bias, stride, pad, shift, relu):
    n, c, h, w = inp.shape
    oc, _, kh, kw = wgt.shape
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (w + 2 * pad - kw) // stride + 1
    padded = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dtype=np.int64)
    padded[:, :, pad:pad + h, pad:pad + w] = inp
    acc = np.zeros((n, oc, oh, ow), dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            window = padded[:, :, i:i + stride * (oh - 1) + 1:stride,
                            j:j + stride * (ow - 1) + 1:stride]
            acc += np.einsum("nchw,oc->nohw", window, wgt[:, :, i, j].astype(np.int64))
    acc = wrap_int32(acc + bias.astype(np.int64)[None, :, None, None])
    return requant(acc, shift, relu)


def max_pool2d(inp, kh, kw, stride, pad):
    n, c, h, w = inp.shape
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (w + 2 * pad - kw) // stride + 1
    padded = np.full((n, c, h + 2 * pad, w + 2 * pad), -1000, dtype=np.int64)
    padded[:, :, pad:pad + h, pad:pad + w] = inp
    out = np.full((n, c, oh, ow), -1000, dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            window = padded[:, :, i:i + stride * (oh - 1) + 1:stride,
                            j:j + stride * (ow - 1) + 1:stride]
            out = np.maximum(out, window)
    assert out.min() >= -128, "a window saw only padding"
    return out.astype(np.int8)


def global_avg_pool(inp):
    area = inp.shape[2] * inp.shape[3]
    total = inp.astype(np.int64).sum(axis=(2, 3))
    return ((total + area // 2) // area).astype(np.int8)


def add(a, b, a_shift, b_shift, shift, relu):
    total = (a.astype(np.int64) << a_shift) + (b.astype(np.int64) << b_shift)
    return requant(total, shift, relu)


def relu(x):
    return np.where(x > 0, x, 0).astype(np.int8)


def dense(inp, wgt, bias, shift, relu, out_dtype):
    acc = wrap_int32(inp.astype(np.int64) @ wgt.astype(np.int64).T + bias.astype(np.int64))
    return acc if out_dtype == "int32" else requant(acc, shift, relu)


def quantize(x, frac):
    scaled = x.astype(np.float32) * np.float32(2.0 ** frac)
    scaled = np.where(np.isnan(scaled), np.float32(0), scaled)
    return np.clip(np.rint(scaled), -128, 127).astype(np.int8)


def dequantize(q, frac):
    return q.astype(np.float32) * np.float32(2.0 ** -frac)


def pack(x, batch, block):
    n, c, h, w = x.shape
    nb, cb = -(-n // batch), -(-c // block)
    padded = np.zeros((nb * batch, cb * block, h, w), dtype=x.dtype)
    padded[:n, :c] = x
    return padded.reshape(nb, batch, cb, block, h, w).transpose(0, 2, 4, 5, 1, 3).copy()


def unpack(blocked, n, c):
    nb, cb, h, w, batch, block = blocked.shape
    full = blocked.transpose(0, 4, 1, 5, 2, 3).reshape(nb * batch, cb * block, h, w)
    return full[:n, :c].copy()


def random_inputs(spec, rng, int32_range=(-50_000, 50_000), float_scale=60.0):
    """Random input arrays for ``spec`` (all non-output args, in order)."""
    arrays = []
    for arg in spec.args():
        if not arg.is_input:
            continue
        if arg.dtype == "int8":
            arrays.append(rng.integers(-128, 128, arg.shape, dtype=np.int8))
        elif arg.dtype == "int32":
            arrays.append(rng.integers(*int32_range, arg.shape, dtype=np.int32))
        else:
            arrays.append((rng.standard_normal(arg.shape) * float_scale).astype(np.float32))
    return arrays
