"""The float model's numerics (compiler/frontend/float_ref.py): exact sums on the fixed-point grid
(no dependence on the order a BLAS library adds in), its precision against plain float64, and the
graph runner that frees each value after its last reader."""

import gc
import weakref

import numpy as np
import pytest

from compiler.frontend import float_ref, from_model
from compiler.frontend.resnet import build_resnet


def conv64(x, w, stride, pad):
    """Plain float64 convolution (no grid), the precision yardstick."""
    return float_ref.conv_taps(x.astype(np.float64), w.astype(np.float64), stride, pad)


@pytest.mark.parametrize("shape", [(2, 3, 17, 7, 2, 3), (3, 64, 9, 3, 1, 1), (1, 512, 4, 3, 1, 1), (2, 40, 6, 1, 2, 0)],
                         ids=["stem-like", "3x3", "k4608", "1x1s2"])
def test_conv2d_sums_exactly_so_no_order_changes_a_bit(shape):
    """Permuting the input channels (of x and w alike) reorders every BLAS sum; a float32 or
    plain float64 GEMM then changes in the last bits, the grid's exact sums do not. A sample's
    result does not depend on the batch it runs in either."""
    n, c, h, k, stride, pad = shape
    rng = np.random.default_rng(c)
    x = (rng.standard_normal((n, c, h, h)) * np.exp(rng.standard_normal((n, c, 1, 1)))).astype(np.float32)
    w = (rng.standard_normal((16, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    y = float_ref.conv2d(x, w, b, stride, pad)
    perm = rng.permutation(c)
    assert np.array_equal(y, float_ref.conv2d(x[:, perm], w[:, perm], b, stride, pad))
    assert np.array_equal(y[-1:], float_ref.conv2d(x[-1:], w, b, stride, pad))
    # the grid's precision: within 2**-17 of the peak output of plain float64 (about 2**-21 per operand)
    want = conv64(x, w, stride, pad) + b[None, :, None, None]
    assert np.abs(y - want).max() <= 2.0 ** -17 * np.abs(want).max()


def test_dense_sums_exactly():
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 700), (10, 700), (10,)))
    perm = rng.permutation(700)
    y = float_ref.dense(x, w, b)
    assert np.array_equal(y, float_ref.dense(x[:, perm], w[:, perm], b))
    want = x.astype(np.float64) @ w.T.astype(np.float64) + b
    assert np.abs(y - want).max() <= 2.0 ** -17 * np.abs(want).max()


def test_grid_bits_keep_every_partial_sum_exact():
    for terms in (1, 2, 147, 576, 1024, 1025, 4608, 1 << 16):
        bx, bw = float_ref.grid_bits(terms)
        assert terms * 2 ** (bx + bw) <= 2 ** 53 and bx + bw >= 53 - terms.bit_length() - 1
    ints, exps = float_ref.on_grid(np.array([[0.75, -3.0], [0.0, 0.0], [1e-30, 2e-30]]), 20)
    peaks = np.abs(ints).max(axis=1)
    assert 2 ** 19 <= peaks[0] < 2 ** 20 and 2 ** 19 <= peaks[2] < 2 ** 20 and peaks[1] == 0 and exps[1] == 0
    assert ints[0].tolist() == [0.75 * 2 ** 18, -3 * 2 ** 18]  # a power-of-two scale: exact


@pytest.fixture(scope="module")
def small_resnet():
    return from_model(build_resnet(18, 32), "resnet18")


def test_iter_graph_frees_each_value_after_its_last_reader(small_resnet):
    graph = small_resnet
    x = np.random.default_rng(0).standard_normal(graph.shapes[graph.input]).astype(np.float32)
    last = float_ref.last_readers(graph)
    refs, position = {}, {n.output: k for k, n in enumerate(graph.nodes)}
    viewed = {n.inputs[0] for n in graph.nodes if n.op == "reshape"}  # a reshape's output is a view of it
    for name, value in float_ref.iter_graph(graph, x, float_ref.eval_node):
        refs[name] = weakref.ref(value)
        del value
        gc.collect()
        k = position.get(name, -1)
        alive = {v for v, r in refs.items() if r() is not None} - {graph.input} - viewed  # x is the caller's
        # only the values some later node still reads (and the one just yielded) are alive
        assert alive <= {v for v in refs if last.get(v, -1) > k} | {name}, name
    everything = float_ref.run(graph, x)
    assert set(everything) == {graph.input} | {n.output for n in graph.nodes}
    np.testing.assert_array_equal(float_ref.forward(graph, x), everything[graph.output])
    kept = float_ref.run_graph(graph, np.concatenate([x, x]), float_ref.eval_node, keep={"layer1.0_out"})
    assert set(kept) == {"layer1.0_out"} and len(kept["layer1.0_out"]) == 2


def test_conv_taps_skips_the_zero_taps_of_a_dilated_kernel(monkeypatch):
    """A 3x3 kernel at dilation 8 is 17x17 with zeros between its 9 taps (onnx_import): the
    references multiply only the 9 (issue 45, finding 2: every zero tap was computed), and the
    sum is the same exact integers as the taps added one by one."""
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 4, 20, 20)).astype(np.float64)
    taps = rng.integers(-128, 128, (5, 4, 3, 3)).astype(np.float64)
    kernel = np.zeros((5, 4, 17, 17))
    kernel[:, :, ::8, ::8] = taps
    widths = []
    real = np.matmul
    monkeypatch.setattr(np, "matmul", lambda a, b, *args, **kw: widths.append(a.shape[-1]) or real(a, b, *args, **kw))
    got = float_ref.conv_taps(x, kernel, 1, 8)
    assert widths == [4 * 9]
    xp = np.pad(x, ((0, 0), (0, 0), (8, 8), (8, 8)))
    want = sum(np.einsum("oc,nchw->nohw", taps[:, :, i, j], xp[:, :, 8 * i:8 * i + 20, 8 * j:8 * j + 20])
               for i in range(3) for j in range(3))
    np.testing.assert_array_equal(got, want)


def test_a_global_max_pool_is_one_reduction_in_both_references(monkeypatch):
    """GlobalMaxPool (a maxpool whose window is the whole plane) was a Python step per tap: 18 s
    of CPU for a 2048 x 2048 plane before the CPU kernel refused it. Now one reduction, the same
    values as the taps' loop."""
    from compiler.quantize import reference

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    q = rng.integers(-128, 128, (2, 3, 5, 7)).astype(np.int8)
    loop = None
    for _, view in float_ref.windows(x, (5, 7), 1, 0, fill=-np.inf):
        loop = view.copy() if loop is None else np.maximum(loop, view)
    monkeypatch.setattr(float_ref, "windows", None)  # not called for a whole plane
    monkeypatch.setattr(reference, "windows", None)
    np.testing.assert_array_equal(float_ref.maxpool(x, (5, 7), (1, 1), (0, 0, 0, 0)), loop)
    got = reference.max_pool2d(q, 5, 7, 1, 0)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, q.max(axis=(2, 3), keepdims=True))
