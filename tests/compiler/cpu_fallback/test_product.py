"""The product kernel (``MulSpec``, the quantized ``mul``): host JIT against the numpy reference
on every broadcast it takes, at the extremes of its int32 intermediate, and its parameter checks."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.errors import KernelParamError
from compiler.cpu_fallback.product import MAX_MUL, collapse
from compiler.quantize import reference as ref

from .spec_reference import reference_of


def _run(spec, a, b):
    return cf.host_jit().kernel(spec)(a.reshape(-1), b.reshape(-1))


def test_the_int32_intermediate_cannot_overflow_at_its_extremes():
    """|x - zp| <= 255 for int8 codes and zero points, so |p| <= 65025; with mul = 2**14 and
    shift 31 (rounding term 2**30), p * mul + 2**30 = 2139111424 < 2**31: kernel, reference and
    exact integer arithmetic agree on the largest products of either sign."""
    assert 255 * 255 * MAX_MUL + (1 << 30) < 2**31 and -255 * 255 * MAX_MUL > -2**31
    codes = np.array([-128, 127, -128, 127, 0, -1], np.int8)
    for a_zp, b_zp in ((127, 127), (-128, -128), (127, -128), (-128, 127)):
        for shift in (31, 30, 17, 0):
            mul = MAX_MUL if shift else 1
            spec = cf.MulSpec(n=1, c=6, inner=6, b_ext=(1, 6, 1), a_zp=a_zp, b_zp=b_zp, mul=mul, shift=shift, zp=0)
            a = np.tile(codes, 6).astype(np.int8)
            got = _run(spec, a, codes)
            exact = [min(127, max(-128, ((int(x) - a_zp) * (int(y) - b_zp) * mul + ((1 << shift) >> 1)) >> shift))
                     for x, y in zip(a.reshape(6, 6), codes) for x in x]
            np.testing.assert_array_equal(got, np.array(exact, np.int8))
            np.testing.assert_array_equal(got, reference_of(spec, [a, codes]))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), c=st.integers(1, 9), inner=st.integers(1, 40), a_bcast=st.tuples(*[st.booleans()] * 3),
       b_bcast=st.tuples(*[st.booleans()] * 3), zps=st.tuples(*[st.integers(-128, 127)] * 3),
       mul=st.integers(0, MAX_MUL), shift=st.integers(0, 31), data=st.data())
def test_every_broadcast_jit_vs_numpy(n, c, inner, a_bcast, b_bcast, zps, mul, shift, data):
    full = (n, c, inner)
    a_ext, b_ext = (tuple(1 if bc else f for bc, f in zip(bcast, full)) for bcast in (a_bcast, b_bcast))
    lo = data.draw(st.integers(-128, 127))
    spec = cf.MulSpec(n=n, c=c, inner=inner, a_ext=a_ext, b_ext=b_ext, a_zp=zps[0], b_zp=zps[1], zp=zps[2], mul=mul,
                      shift=shift, lo=lo, hi=data.draw(st.integers(lo, 127)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    a, b = (rng.integers(-128, 128, arg.shape, dtype=np.int8) for arg in spec.args()[:2])
    np.testing.assert_array_equal(_run(spec, a, b), reference_of(spec, [a, b]))


def test_collapse_merges_axes_that_broadcast_alike():
    assert collapse((1, 16, 49), (1, 16, 49), (1, 16, 1)) == ((1, 16, 49), (1, 16, 49), (1, 16, 1))
    assert collapse((2, 16, 49), (2, 16, 49), (2, 16, 1)) == ((1, 32, 49), (1, 32, 49), (1, 32, 1))
    assert collapse((1, 16, 49), (1, 16, 49), (1, 16, 49)) == ((1, 1, 784), (1, 1, 784), (1, 1, 784))
    assert collapse((2, 16, 49), (2, 16, 49), (1, 16, 1)) == ((2, 16, 49), (2, 16, 49), (1, 16, 1))
    assert collapse((1, 1, 30), (1, 1, 30), (1, 1, 1)) == ((1, 1, 30), (1, 1, 30), (1, 1, 1))


@pytest.mark.parametrize("fields, message", [
    ({"mul": MAX_MUL + 1}, "mul=16385 is out of range [0, 16384]"),
    ({"shift": 32}, "shift=32 is out of range [0, 31]"),
    ({"a_zp": 128}, "a_zp=128 is out of range [-128, 127]"),
    ({"b_ext": (1, 3, 2)}, "b_ext=(1, 3, 2) must be 3 ints, each 1 or the output's extent (1, 3, 5)"),
    ({"a_ext": (1, 3)}, "a_ext=(1, 3) must be 3 ints"),
    ({"lo": 5, "hi": 4}, "hi=4 is out of range [5, 127]"),
])
def test_parameters_are_checked(fields, message):
    with pytest.raises(KernelParamError, match=re.escape(message)):
        cf.MulSpec(**{"n": 1, "c": 3, "inner": 5, **fields})
