"""Test helpers of the CPU fallback: the layout references (pack/unpack, plain reshapes) and
random kernel inputs. The arithmetic references are the project's one numpy reference,
``compiler.quantize.reference`` (re-exported here under the names the tests use).
"""

import numpy as np

from compiler.quantize.reference import (add, conv2d, dense, dequantize, global_avg_pool, max_pool2d,  # noqa: F401
                                        quantize, relu)


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


def _layernorm_add(spec, arg, rng):
    """Offsets within a few output steps (``2**shift``), and the kernel's limits at both ends."""
    from compiler.cpu_fallback.layernorm import add_limit

    add = rng.integers(-(1 << (spec.shift + 7)), (1 << (spec.shift + 7)) + 1, arg.shape, dtype=np.int64)
    add.reshape(-1)[:2] = [add_limit(spec.shift), -add_limit(spec.shift)][:add.size]
    return add


def _softmax_mask(shape, rng):
    """0s and 1s with one kept position (at least) in every row along axis 1."""
    mask = rng.integers(0, 2, shape).astype(np.int8)
    mask[:, 0, :] = 1
    return mask


def random_inputs(spec, rng, int32_range=(-50_000, 50_000), float_scale=60.0):
    """Random input arrays for ``spec`` (all non-output args, in order); buffers with a meaning
    (indices, divisors, shifts, tables) get values in their valid range."""
    special = {
        ("gather", "index"): lambda a: rng.integers(-1, spec.size_in, a.shape).astype(np.int32),
        ("resize", "index"): lambda a: rng.integers(0, spec.size_in, a.shape).astype(np.int32),
        ("resize", "weight"): lambda a: rng.integers(0, (1 << spec.frac) + 1, a.shape).astype(np.int32),
        ("avgpool2d", "count"): lambda a: rng.integers(1, spec.kh * spec.kw + 1, a.shape).astype(np.int32),
        ("avgpool2d", "add"): lambda a: rng.integers(-2000, 2000, a.shape).astype(np.int32),
        ("softmax", "table"): lambda a: np.rint(np.exp((np.arange(256) - 255) / 16.0) * 65536).astype(np.int32),
        ("softmax", "mask"): lambda a: _softmax_mask(a.shape, rng),
        ("layernorm", "mul"): lambda a: rng.integers(-(1 << 15), (1 << 15) + 1, a.shape).astype(np.int32),
        ("layernorm", "add"): lambda a: _layernorm_add(spec, a, rng),
        ("muladd", "mul"): lambda a: rng.integers(-30_000, 30_000, a.shape).astype(np.int32),
        ("conv2d", "shift"): lambda a: rng.integers(0, 16, a.shape).astype(np.int32),
        ("dense", "shift"): lambda a: rng.integers(0, 16, a.shape).astype(np.int32),
    }
    arrays = []
    for arg in spec.args():
        if not arg.is_input:
            continue
        make = special.get((spec.family, arg.name))
        if make is not None:
            arrays.append(make(arg))
        elif arg.dtype == "int8":
            arrays.append(rng.integers(-128, 128, arg.shape, dtype=np.int8))
        elif arg.dtype == "int32":
            arrays.append(rng.integers(*int32_range, arg.shape, dtype=np.int32))
        else:
            arrays.append((rng.standard_normal(arg.shape) * float_scale).astype(np.float32))
    return arrays
