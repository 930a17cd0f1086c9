"""Residual add, ReLU, quantize, dequantize: host JIT vs plain numpy."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import compiler.cpu_fallback as cf

from . import numpy_ref as ref

RESNET_ADD_SHAPES = [(1, 64, 56, 56), (1, 128, 28, 28), (1, 256, 14, 14), (1, 512, 7, 7)]


@pytest.mark.parametrize("shape", RESNET_ADD_SHAPES)
def test_add_resnet18_jit_vs_numpy(shape):
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, shape, dtype=np.int8)
    b = rng.integers(-128, 128, shape, dtype=np.int8)
    got = cf.add(a, b, a_shift=1, shift=1, relu=True)
    assert got.shape == shape
    np.testing.assert_array_equal(got, ref.add(a, b, 1, 0, 1, True))


def test_add_saturates_jit_vs_numpy():
    a = np.array([127, -128, 100, -100, 5], np.int8)
    b = np.array([127, -128, 100, -100, -7], np.int8)
    np.testing.assert_array_equal(cf.add(a, b), [127, -128, 127, -128, -2])
    np.testing.assert_array_equal(cf.add(a, b, relu=True), [127, 0, 127, 0, 0])


@settings(max_examples=30, deadline=None)
@given(a=hnp.arrays(np.int8, hnp.array_shapes(max_dims=4, max_side=9)),
       a_shift=st.integers(0, 16), b_shift=st.integers(0, 16), shift=st.integers(0, 31),
       relu=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_add_generated_jit_vs_numpy(a, a_shift, b_shift, shift, relu, seed):
    b = np.random.default_rng(seed).integers(-128, 128, a.shape, dtype=np.int8)
    got = cf.add(a, b, a_shift=a_shift, b_shift=b_shift, shift=shift, relu=relu)
    np.testing.assert_array_equal(got, ref.add(a, b, a_shift, b_shift, shift, relu))


@settings(max_examples=30, deadline=None)
@given(a=hnp.arrays(np.int8, hnp.array_shapes(max_dims=2, max_side=40)), a_mul=st.integers(0, 2**15),
       b_mul=st.integers(0, 2**15), shift=st.integers(0, 31), offset=st.integers(-2**30, 2**30),
       relu=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_add_with_multipliers_generated_jit_vs_numpy(a, a_mul, b_mul, shift, offset, relu, seed):
    b = np.random.default_rng(seed).integers(-128, 128, a.shape, dtype=np.int8)
    got = cf.add(a, b, a_mul=a_mul, b_mul=b_mul, shift=shift, offset=offset, relu=relu)
    np.testing.assert_array_equal(got, ref.add(a, b, 0, 0, shift, relu, offset=offset, a_mul=a_mul, b_mul=b_mul))


def test_add_refuses_a_scaled_input_that_could_overflow():
    with pytest.raises(cf.KernelParamError, match="a_mul << a_shift"):
        cf.AddSpec(size=4, a_mul=3, a_shift=15)
    with pytest.raises(cf.KernelParamError, match="b_mul"):
        cf.AddSpec(size=4, b_mul=2**15 + 1)


@settings(max_examples=15, deadline=None)
@given(x=hnp.arrays(np.int8, hnp.array_shapes(max_dims=4, max_side=20)))
def test_relu_generated_jit_vs_numpy(x):
    np.testing.assert_array_equal(cf.relu(x), ref.relu(x))


def test_relu_resnet18_jit_vs_numpy():
    x = np.random.default_rng(1).integers(-128, 128, (1, 64, 112, 112), dtype=np.int8)
    np.testing.assert_array_equal(cf.relu(x), ref.relu(x))


def test_quantize_rounding_and_specials_jit_vs_numpy():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 127.5, -128.5, 1e30, -1e30,
                  np.inf, -np.inf, np.nan, -0.0, 1e-40], np.float32)
    got = cf.quantize(x, frac=0)
    np.testing.assert_array_equal(got, ref.quantize(x, 0))
    np.testing.assert_array_equal(got[:6], [0, 2, 2, 0, -2, -2])  # half to even
    assert got[13] == 0  # NaN -> 0


@settings(max_examples=30, deadline=None)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=12),
                    elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=True)),
       frac=st.integers(-30, 30))
def test_quantize_generated_jit_vs_numpy(x, frac):
    np.testing.assert_array_equal(cf.quantize(x, frac=frac), ref.quantize(x, frac))


@settings(max_examples=20, deadline=None)
@given(q=hnp.arrays(np.int8, hnp.array_shapes(max_dims=3, max_side=12)), frac=st.integers(-30, 30))
def test_dequantize_generated_jit_vs_numpy(q, frac):
    np.testing.assert_array_equal(cf.dequantize(q, frac=frac), ref.dequantize(q, frac))


@settings(max_examples=20, deadline=None)
@given(q=hnp.arrays(np.int8, st.integers(1, 300)), frac=st.integers(-6, 20))
def test_quantize_dequantize_round_trip(q, frac):
    """quantize(dequantize(q)) == q for every int8 q at the same scale."""
    np.testing.assert_array_equal(cf.quantize(cf.dequantize(q, frac=frac), frac=frac), q)


def test_elementwise_reject_bad_input():
    a = np.zeros(4, np.int8)
    with pytest.raises(cf.KernelShapeError, match="add: operands must have the same shape"):
        cf.add(a, np.zeros(5, np.int8))
    with pytest.raises(cf.KernelParamError, match="add: parameter shift=32"):
        cf.add(a, a, shift=32)
    with pytest.raises(cf.KernelDtypeError, match="quantize: 'inp' must be float32, got float64"):
        cf.quantize(np.zeros(3), frac=2)
    with pytest.raises(cf.KernelParamError, match="dequantize: parameter frac=31"):
        cf.dequantize(a, frac=31)
    with pytest.raises(cf.KernelDtypeError, match="relu"):
        cf.relu(np.zeros(3, np.uint8))
