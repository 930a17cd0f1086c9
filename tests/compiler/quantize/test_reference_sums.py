"""The int8 reference's convolution sums (compiler.quantize.reference.conv2d_acc) are exact: the
float32 path, the float64 path and the float32 slices of input channels all equal int64 sums."""

import numpy as np
import pytest

from compiler.quantize import reference


def int64_conv(x, w, stride, pad, fill):
    """The plain definition, in int64: every output a sum of products."""
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.full((n, c, h + 2 * pad, wd + 2 * pad), fill, np.int64)
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, o, oh, ow), np.int64)
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.int64))
    return out


@pytest.mark.parametrize("c,k,stride,fill,extreme", [(256, 3, 1, -128, True), (300, 3, 2, 0, True),
                                                     (64, 3, 1, -128, False), (1200, 1, 1, 5, True)])
def test_every_path_gives_the_int64_sum(c, k, stride, fill, extreme):
    rng = np.random.default_rng(c)
    shape = (2, c, 6, 6)
    if extreme:  # the largest products, all of one sign: the sums' worst case
        x, w = np.full(shape, -128, np.int8), np.full((8, c, k, k), -127, np.int8)
        x[0, :, ::2] = 127
    else:
        x, w = rng.integers(-128, 128, shape).astype(np.int8), rng.integers(-127, 128, (8, c, k, k)).astype(np.int8)
    pad = k // 2
    want = reference.wrap32(int64_conv(x, w, stride, pad, fill) + 3)
    got = reference.conv2d_acc(x, w, np.full(8, 3, np.int32), stride, pad, 1, fill)
    assert np.array_equal(got, want)
    if reference.exact_dtype(x, w, fill) is np.float64:
        assert 0 < reference.float32_channels(x, w, fill) < c  # this case takes the sliced path
