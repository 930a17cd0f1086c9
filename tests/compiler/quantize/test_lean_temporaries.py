"""The references' element-wise steps computed with small temporaries give the whole-array bits
(issue 45: a 5792 x 5792 Relu's run peaked at 2.1 GB, float64 and int64 copies of whole tensors
among the causes)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from compiler.frontend import float_ref
from compiler.frontend.graph import Node
from compiler.quantize import reference
from compiler.quantize.qgraph import QGraph


def _peak(fn, *args) -> int:
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_dequantize_in_chunks_is_the_whole_float64_formula():
    rng = np.random.default_rng(0)
    shape = (3, float_ref.CHUNK + 77)
    for dtype, zp, frac, scale in [(np.int8, -128, 5, 1.0), (np.int32, 0, 11, 1.37), (np.int8, 3, -2, 0.3)]:
        q = QGraph("g", "x", ("v",), [], {"v": shape}, {"v": frac}, {"v": zp}, {"v": scale})
        info = np.iinfo(dtype)
        codes = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
        want = ((codes.astype(np.float64) - zp) * 2.0 ** -frac / scale).astype(np.float32)
        assert np.array_equal(q.dequantize("v", codes), want)
    codes = np.zeros((1 << 20,), np.int8)
    assert _peak(q.dequantize, "v", codes) < 6 * codes.size  # the float32 result and chunks (was 12 x)


def test_quantize_and_lut_keep_their_values():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(100_000) * 100).astype(np.float32)
    x[::7], x[::11], x[::13] = np.nan, np.inf, -np.inf
    for frac in (-3, 0, 5):
        scaled = x * np.float32(2.0 ** frac)
        want = np.clip(np.rint(np.where(np.isnan(scaled), np.float32(0), scaled)), -128, 127).astype(np.int8)
        assert np.array_equal(reference.quantize(x, frac), want)
    table = rng.integers(-128, 128, 256).astype(np.int8)
    codes = rng.integers(-128, 128, (64, 1000)).astype(np.int8)
    assert np.array_equal(reference.lut(codes, table), table[codes.astype(np.int64) + 128])
    assert _peak(reference.lut, codes, table) < 4 * codes.size  # one-byte index, result, buffers (was 9 x)


def test_an_elementwise_float_op_is_computed_in_chunks():
    x = np.random.default_rng(2).standard_normal((1, 1, 1024, 1024)).astype(np.float32)
    node = Node("r", "relu", ["x"], "y")
    out = float_ref.eval_node(node, [x])
    assert np.array_equal(out, np.maximum(x.astype(np.float64), 0.0).astype(np.float32))
    assert _peak(float_ref.eval_node, node, [x]) < 1.5 * x.nbytes  # the result and chunks (was 4 x)
