"""conv2d: host JIT vs the plain numpy convolution, on ResNet-18 layers and generated shapes."""

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import compiler.cpu_fallback as cf
from compiler.cpu_fallback import resnet18

from . import numpy_ref as ref

RESNET_CONVS = [r for r in resnet18.layer_table() if r["name"] != "fc"]


def run_both(spec, rng, **bias_range):
    inp, wgt, bias = ref.random_inputs(spec, rng, **bias_range)
    got = cf.conv2d(inp, wgt, bias, stride=spec.stride, pad=spec.pad, shift=spec.shift,
                    relu=spec.relu)
    want = ref.conv2d(inp, wgt, bias, stride=spec.stride, pad=spec.pad, shift=spec.shift, relu=spec.relu)
    return got, want


@pytest.mark.parametrize("relu", [True, False])
def test_conv2d_stem_full_size_jit_vs_numpy(relu):
    spec = dataclasses.replace(resnet18.stem_spec(), relu=relu)
    got, want = run_both(spec, np.random.default_rng(1))
    assert got.shape == (1, 64, 112, 112)
    np.testing.assert_array_equal(got, want)
    # The test is only meaningful if requantization does not saturate everything.
    assert 0.05 < np.mean((got > -128) & (got < 127)) <= 1


@pytest.mark.parametrize("row", RESNET_CONVS[1:], ids=[r["name"] for r in RESNET_CONVS[1:]])
def test_conv2d_resnet18_layers_jit_vs_numpy(row):
    spec = dataclasses.replace(resnet18.conv_spec(row), shift=11)
    got, want = run_both(spec, np.random.default_rng(2))
    np.testing.assert_array_equal(got, want)


@settings(max_examples=25, deadline=None)
@given(c=st.integers(1, 5), oc=st.integers(1, 6), h=st.integers(1, 13), w=st.integers(1, 13),
       kh=st.integers(1, 5), kw=st.integers(1, 5), stride=st.integers(1, 3), data=st.data())
def test_conv2d_generated_shapes_jit_vs_numpy(c, oc, h, w, kh, kw, stride, data):
    pad = data.draw(st.integers(0, max(kh, kw) - 1))
    assume((h + 2 * pad - kh) // stride + 1 >= 1 and (w + 2 * pad - kw) // stride + 1 >= 1)
    spec = cf.Conv2dSpec(n=data.draw(st.integers(1, 2)), c=c, h=h, w=w, oc=oc, kh=kh, kw=kw,
                         stride=stride, pad=pad, shift=data.draw(st.integers(0, 12)),
                         relu=data.draw(st.booleans()))
    got, want = run_both(spec, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))))
    np.testing.assert_array_equal(got, want)


def test_conv2d_int32_wraparound_jit_vs_numpy():
    """acc + bias wraps in int32 like the accelerator (bias near the int32 limits)."""
    spec = cf.Conv2dSpec(n=1, c=2, h=5, w=5, oc=3, kh=3, kw=3, pad=1, shift=20)
    got, want = run_both(spec, np.random.default_rng(3), int32_range=(2**31 - 3000, 2**31 - 1))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("value", [-128, 127])
def test_conv2d_extreme_values_jit_vs_numpy(value):
    """Products of -128 x -128 summed over 576 taps: exact in int32 (int16 is only a factor)."""
    spec = cf.Conv2dSpec(n=1, c=64, h=9, w=19, oc=6, kh=3, kw=3, pad=1, shift=12)
    inp = np.full((1, 64, 9, 19), value, np.int8)
    inp[0, ::3, ::2] = -128
    wgt = np.full((6, 64, 3, 3), -128, np.int8)
    bias = np.array([0, 1, -1, 2**31 - 1, -2**31, 12345], np.int32)
    got = cf.conv2d(inp, wgt, bias, pad=1, shift=12)
    np.testing.assert_array_equal(got, ref.conv2d(inp, wgt, bias, stride=1, pad=1, shift=12))
    assert spec.args()[-1].scratch


def test_conv2d_rejects_bad_shapes_and_params():
    x = np.zeros((1, 3, 8, 8), np.int8)
    w = np.zeros((4, 3, 3, 3), np.int8)
    b = np.zeros(4, np.int32)
    with pytest.raises(cf.KernelDtypeError, match="conv2d: 'inp' must be int8, got float32"):
        cf.conv2d(x.astype(np.float32), w, b)
    with pytest.raises(cf.KernelShapeError, match="conv2d: input .* disagree"):
        cf.conv2d(x, w[:, :2], b)
    with pytest.raises(cf.KernelParamError, match="conv2d: parameter shift=40"):
        cf.conv2d(x, w, b, shift=40)
    with pytest.raises(cf.KernelParamError, match="does not fit"):
        cf.conv2d(x[:, :, :2, :2], w, b)
    with pytest.raises(ValueError):
        cf.conv2d(x, w, b, stride=0)


def test_conv2d_taps_that_see_only_padding_jit_vs_reference():
    """A tap whose every position is padding (pad left 2 of a 1-wide input under a 1x3 kernel):
    its valid column range is empty and its padding is the whole row. The row kernel used to add
    the pad value to columns past the row's end (a stack write out of bounds, found by
    tests/fuzz/test_fuzz_kernels.py) and return garbage."""
    from compiler.cpu_fallback.jit import host_jit
    from compiler.quantize import reference

    rng, jit = np.random.default_rng(5), host_jit()
    cases = [(1, 3, (0, 2, 0, 0), 1, 1), (3, 3, (2, 2, 0, 0), 2, 1), (3, 1, (0, 0, 2, 0), 1, 2),
             (3, 3, (2, 0, 0, 2), 1, 1), (1, 3, (0, 2, 0, 2), 1, 1)]
    for kh, kw, pad, h, w in cases:
        for pad_value, wide in [(-128, False), (5, True), (0, False)]:
            x = rng.integers(-128, 128, (1, 2, h, w)).astype(np.int8)
            weight = rng.integers(-128, 128, (3, 2, kh, kw)).astype(np.int8)
            bias, shift = np.array([7, -9, 1000], np.int32), np.array([0, 1, 3], np.int32)
            lo, hi = (-2**31, 2**31 - 1) if wide else (-128, 127)
            spec = cf.Conv2dSpec(n=1, c=2, h=h, w=w, oc=3, kh=kh, kw=kw, pad=pad, pad_value=pad_value,
                                 per_channel=True, lo=lo, hi=hi, wide=wide)
            got = jit.kernel(spec)(x, weight, bias, shift)
            want = reference.conv2d(x, weight, bias, pad=pad, pad_value=pad_value, shift=shift, lo=lo, hi=hi,
                                    wide=wide)
            np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"{kh}x{kw} pad {pad} {pad_value}")
