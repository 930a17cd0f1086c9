"""The product kernel of two computed tensors (``MatMulSpec``, the quantized ``matmul``: attention's
Q.K^T and P.V): host JIT against the numpy reference on generated shapes and at the extremes of
its int32 sums, and its parameter checks."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.errors import KernelParamError

from .spec_reference import reference_of


def _run(spec, a, b):
    return cf.host_jit().kernel(spec)(a, b)


@settings(max_examples=25, deadline=None)
@given(g=st.integers(1, 4), n=st.integers(1, 9), k=st.integers(1, 40), m=st.integers(1, 9),
       shift=st.integers(0, 31), add=st.integers(-2**20, 2**20), a_zp=st.sampled_from([0, -128, 5]), data=st.data())
def test_generated_products_jit_vs_numpy(g, n, k, m, shift, add, a_zp, data):
    lo = data.draw(st.integers(-128, 127))
    spec = cf.MatMulSpec(g=g, n=n, k=k, m=m, add=add, shift=shift, lo=lo, hi=data.draw(st.integers(lo, 127)),
                         a_zp=a_zp)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    a, b = (rng.integers(-128, 128, arg.shape, dtype=np.int8) for arg in spec.args()[:2])
    np.testing.assert_array_equal(_run(spec, a, b), reference_of(spec, [a, b]))


def test_the_largest_sums_of_either_sign():
    """k = 1024 products of -128 * -128 (2**24) and of -128 * 127: kernel and reference agree with
    exact integer arithmetic, the rows of each head reading that head's matrices only."""
    a = np.full((2, 3, 1024), -128, np.int8)
    b = np.stack([np.full((1024, 2), -128, np.int8), np.full((1024, 2), 127, np.int8)])
    spec = cf.MatMulSpec(g=2, n=3, k=1024, m=2, add=1 << 16, shift=17)
    got = _run(spec, a, b)
    exact = [min(127, max(-128, (1024 * -128 * w + (1 << 16)) >> 17)) for w in (-128, 127)]
    np.testing.assert_array_equal(got, np.array(exact, np.int8)[:, None, None] * np.ones((2, 3, 2), np.int8))
    np.testing.assert_array_equal(got, reference_of(spec, [a, b]))


@pytest.mark.parametrize("params, field", [(dict(g=0, n=1, k=1, m=1), "g"), (dict(g=1, n=1, k=1, m=1, shift=32), "shift"),
                                           (dict(g=1, n=1, k=1, m=1, add=2**31), "add"),
                                           (dict(g=1, n=1, k=1, m=1, a_zp=128), "a_zp")])
def test_parameters_out_of_range_are_refused(params, field):
    with pytest.raises(KernelParamError, match=field):
        cf.MatMulSpec(**params)
