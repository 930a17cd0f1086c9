"""Max pool and global average pool: host JIT vs plain numpy, ResNet-18 and generated shapes."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import compiler.cpu_fallback as cf

from . import numpy_ref as ref


def test_maxpool_resnet18_jit_vs_numpy():
    """ResNet-18's pool: 112x112x64, 3x3, stride 2, pad 1 -> 56x56."""
    x = np.random.default_rng(0).integers(-128, 128, (1, 64, 112, 112), dtype=np.int8)
    got = cf.max_pool2d(x, kernel=3, stride=2, pad=1)
    assert got.shape == (1, 64, 56, 56)
    np.testing.assert_array_equal(got, ref.max_pool2d(x, 3, 3, 2, 1))


def test_maxpool_all_minus128_jit_vs_numpy():
    """Padding must never win: an input of -128 everywhere pools to -128."""
    x = np.full((1, 2, 9, 9), -128, np.int8)
    np.testing.assert_array_equal(cf.max_pool2d(x, kernel=3, stride=2, pad=1),
                                  np.full((1, 2, 5, 5), -128, np.int8))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 4), h=st.integers(1, 15), w=st.integers(1, 15),
       kh=st.integers(1, 4), kw=st.integers(1, 4), stride=st.integers(1, 3), data=st.data())
def test_maxpool_generated_shapes_jit_vs_numpy(n, c, h, w, kh, kw, stride, data):
    pad = data.draw(st.integers(0, min(kh, kw) - 1))
    assume((h + 2 * pad - kh) // stride + 1 >= 1 and (w + 2 * pad - kw) // stride + 1 >= 1)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(-128, 128, (n, c, h, w), dtype=np.int8)
    got = cf.max_pool2d(x, kernel=(kh, kw), stride=stride, pad=pad)
    np.testing.assert_array_equal(got, ref.max_pool2d(x, kh, kw, stride, pad))


def test_global_avgpool_resnet18_jit_vs_numpy():
    """ResNet-18's final pool: 7x7x512 -> 512."""
    x = np.random.default_rng(1).integers(-128, 128, (1, 512, 7, 7), dtype=np.int8)
    got = cf.global_avg_pool(x)
    assert got.shape == (1, 512)
    np.testing.assert_array_equal(got, ref.global_avg_pool(x))


def test_global_avgpool_extremes_and_ties_jit_vs_numpy():
    x = np.stack([np.full((2, 2), v, np.int8) for v in (-128, 127, 0)])[None]
    np.testing.assert_array_equal(cf.global_avg_pool(x), [[-128, 127, 0]])
    ties = np.array([[[[-3, -2]], [[1, 2]], [[-1, 0]]]], np.int8)  # means -2.5, 1.5, -0.5
    np.testing.assert_array_equal(cf.global_avg_pool(ties), ref.global_avg_pool(ties))
    np.testing.assert_array_equal(cf.global_avg_pool(ties), [[-2, 2, 0]])


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 3), c=st.integers(1, 9), h=st.integers(1, 12), w=st.integers(1, 12),
       seed=st.integers(0, 2**32 - 1))
def test_global_avgpool_generated_shapes_jit_vs_numpy(n, c, h, w, seed):
    x = np.random.default_rng(seed).integers(-128, 128, (n, c, h, w), dtype=np.int8)
    np.testing.assert_array_equal(cf.global_avg_pool(x), ref.global_avg_pool(x))


def test_pools_reject_bad_input():
    with pytest.raises(cf.KernelDtypeError, match="maxpool2d: 'inp' must be int8"):
        cf.max_pool2d(np.zeros((1, 1, 4, 4), np.int32), kernel=2)
    with pytest.raises(cf.KernelShapeError, match="maxpool2d: 'inp' must have 4 dimensions"):
        cf.max_pool2d(np.zeros((4, 4), np.int8), kernel=2)
    with pytest.raises(cf.KernelParamError, match="maxpool2d: a window lies entirely in the padding"):
        cf.max_pool2d(np.zeros((1, 1, 4, 4), np.int8), kernel=2, pad=2)
    with pytest.raises(cf.KernelShapeError, match="global_avgpool"):
        cf.global_avg_pool(np.zeros((1, 4, 4), np.int8))
