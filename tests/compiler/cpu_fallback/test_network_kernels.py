"""The kernels the network executor adds (grouped and depthwise convs with zero-point padding,
per-channel shifts, int32 outputs, tables, multiply-adds, windowed average pools, concatenation,
gathers, softmax, LayerNorm): host JIT against the numpy reference, on fixed network shapes and generated
ones."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.spec import out_size
from compiler.frontend.float_ref import avgpool_count
from compiler.frontend.graph import ceil_extra
from compiler.quantize import reference as ref

from . import numpy_ref
from .arm_cases import _network_kernels, case_id
from .spec_reference import reference_of


@pytest.mark.parametrize("spec", _network_kernels(), ids=case_id)
def test_network_kernels_jit_vs_numpy(spec):
    inputs = numpy_ref.random_inputs(spec, np.random.default_rng(3))
    got = cf.host_jit().kernel(spec)(*inputs)
    want = reference_of(spec, inputs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@settings(max_examples=30, deadline=None)
@given(groups=st.integers(1, 3), cg=st.integers(1, 3), og=st.integers(1, 3), kh=st.integers(1, 4),
       kw=st.integers(1, 4), sh=st.integers(1, 2), sw=st.integers(1, 2), data=st.data())
def test_grouped_conv_with_zero_point_padding_jit_vs_numpy(groups, cg, og, kh, kw, sh, sw, data):
    pads = tuple(data.draw(st.integers(0, max(kh, kw) - 1)) for _ in range(4))
    h, w = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    assume(out_size(h, kh, sh, pads[0], pads[2]) >= 1 and out_size(w, kw, sw, pads[1], pads[3]) >= 1)
    spec = cf.Conv2dSpec(n=1, c=groups * cg, h=h, w=w, oc=groups * og, kh=kh, kw=kw, stride=(sh, sw), pad=pads,
                         groups=groups, pad_value=data.draw(st.sampled_from([0, -128, 7])),
                         per_channel=data.draw(st.booleans()), shift=3, wide=data.draw(st.booleans()))
    inputs = numpy_ref.random_inputs(spec, np.random.default_rng(data.draw(st.integers(0, 2**31))))
    np.testing.assert_array_equal(cf.host_jit().kernel(spec)(*inputs), reference_of(spec, inputs))


@settings(max_examples=30, deadline=None)
@given(k=st.integers(1, 3), s=st.integers(1, 3), h=st.integers(3, 12), w=st.integers(3, 12), ceil=st.booleans(),
       count_pad=st.booleans(), up=st.integers(0, 4), data=st.data())
def test_average_pool_of_the_graph_jit_vs_numpy(k, s, h, w, ceil, count_pad, up, data):
    """The counts and constant terms the quantizer computes (ceil mode, padding counted or not)."""
    pads = tuple(data.draw(st.integers(0, k - 1)) for _ in range(4))
    assume(out_size(h, k, s, pads[0], pads[2]) >= 1 and out_size(w, k, s, pads[1], pads[3]) >= 1)
    extra = (ceil_extra(h, k, s, pads[0], pads[2]), ceil_extra(w, k, s, pads[1], pads[3])) if ceil else (0, 0)
    zp = data.draw(st.sampled_from([0, -128]))
    count = avgpool_count((h, w), (k, k), (s, s), pads, extra, count_pad).astype(np.int64)
    add = count // 2 - ((k * k * zp) << up) - 128 * count
    spec = cf.AvgPool2dSpec(n=1, c=2, h=h, w=w, kh=k, kw=k, stride=s, pad=(pads[0], pads[1], pads[2] + extra[0],
                                                                          pads[3] + extra[1]), pad_value=zp, up=up)
    x = np.random.default_rng(1).integers(-128, 128, (1, 2, h, w), dtype=np.int8)
    got = cf.host_jit().kernel(spec)(x, count.astype(np.int32), add.astype(np.int32))
    np.testing.assert_array_equal(got, ref.avg_pool2d(x, (k, k), (s, s), pads, extra, count, add, up, zp))


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 6), channels=st.sampled_from([1, 2, 3, 7, 16, 33, 768, 1 << 14]),
       eps=st.sampled_from([0, 1, 2304, 1 << 40, 1 << 50]), shift=st.integers(0, 46), spread=st.integers(0, 127),
       seed=st.integers(0, 2**31))
def test_layernorm_of_any_rows_jit_vs_numpy(rows, channels, eps, shift, spread, seed):
    """Rows of any spread (0: every value equal, a zero variance), any epsilon and shift the kernel takes."""
    spec = cf.LayerNormSpec(rows=rows, channels=channels, eps=eps, shift=shift)
    rng = np.random.default_rng(seed)
    inputs = numpy_ref.random_inputs(spec, rng)
    centre = int(rng.integers(-128 + spread, 128 - spread)) if spread < 128 else 0
    inputs[0] = rng.integers(centre - spread, centre + spread + 1, (rows, channels)).astype(np.int8)
    np.testing.assert_array_equal(cf.host_jit().kernel(spec)(*inputs), reference_of(spec, inputs))
