"""Dense (classifier): host JIT vs plain numpy, on ResNet-18's fc and generated shapes."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import compiler.cpu_fallback as cf

from . import numpy_ref as ref


@pytest.mark.parametrize("out_dtype,shift,relu", [("int32", 0, False), ("int8", 9, False),
                                                  ("int8", 9, True)])
def test_dense_resnet18_fc_jit_vs_numpy(out_dtype, shift, relu):
    """ResNet-18's classifier: 512 -> 1000."""
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 512), dtype=np.int8)
    w = rng.integers(-128, 128, (1000, 512), dtype=np.int8)
    b = rng.integers(-50_000, 50_000, 1000, dtype=np.int32)
    got = cf.dense(x, w, b, shift=shift, relu=relu, out_dtype=out_dtype)
    assert got.dtype == np.dtype(out_dtype) and got.shape == (1, 1000)
    np.testing.assert_array_equal(got, ref.dense(x, w, b, shift=shift, relu=relu, out_dtype=out_dtype))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), k=st.integers(1, 70), m=st.integers(1, 20), shift=st.integers(0, 16),
       relu=st.booleans(), int32=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_dense_generated_shapes_jit_vs_numpy(n, k, m, shift, relu, int32, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, k), dtype=np.int8)
    w = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-2**31, 2**31, m, dtype=np.int64).astype(np.int32)
    if int32:
        shift, relu = 0, False
    out_dtype = "int32" if int32 else "int8"
    got = cf.dense(x, w, b, shift=shift, relu=relu, out_dtype=out_dtype)
    np.testing.assert_array_equal(got, ref.dense(x, w, b, shift=shift, relu=relu, out_dtype=out_dtype))


def test_dense_rejects_bad_input():
    x, w, b = np.zeros((1, 8), np.int8), np.zeros((4, 8), np.int8), np.zeros(4, np.int32)
    with pytest.raises(cf.KernelShapeError, match=r"dense: input \(1, 8\), weights \(4, 7\)"):
        cf.dense(x, w[:, :7], b)
    with pytest.raises(cf.KernelDtypeError, match="dense: 'bias' must be int32, got int64"):
        cf.dense(x, w, b.astype(np.int64))
    with pytest.raises(cf.KernelParamError, match="out_dtype must be one of"):
        cf.dense(x, w, b, out_dtype="float32")
    with pytest.raises(cf.KernelParamError, match="parameter hi=-5 is out of range"):
        cf.DenseSpec(n=1, k=8, m=4, lo=0, hi=-5)
