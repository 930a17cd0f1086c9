"""Bounds checks of the kernels themselves (issue 22, item 2): values of index-like buffers are
checked before the native code reads them, the gather code cannot read outside its input even
when called directly, what the code generator unrolls and what a kernel keeps on the stack are
bounded, and one call's work and memory are within vdla_hw.limits."""

import ctypes

import numpy as np
import pytest

import compiler.cpu_fallback as cf
import compiler.cpu_fallback.spec as kernel_spec
from compiler.cpu_fallback import resnet18
from compiler.cpu_fallback.spec import MAX_STACK_ROW, MAX_UNROLL
from tests.fuzz.harness import outcome
from vdla_hw.errors import LimitError, VdlaError
from vdla_hw.limits import RESNET_MAX_RESOLUTION


def test_gather_refuses_an_index_past_its_input():
    """Issue 22: indices 16..4111 on a 16-byte input returned 4 KB of the heap."""
    kernel = cf.host_jit().kernel(cf.GatherSpec(n=1, size_in=16, size_out=4096))
    x = np.arange(16, dtype=np.int8).reshape(1, 16)
    fill = np.zeros(4096, np.int8)
    for index in (np.arange(16, 4112, dtype=np.int32), np.full(4096, 2**31 - 1, np.int32)):
        with pytest.raises(cf.KernelValueError) as info:
            kernel(x, index, fill)
        assert info.value.buffer == "index" and isinstance(info.value, VdlaError)
    within = np.arange(-4080, 16, dtype=np.int32)
    assert kernel(x, within, fill)[0, -16:].tolist() == list(range(16))


def test_the_gather_code_itself_reads_only_inside_its_input():
    """Called without the checks (the raw function), an index at or past size_in takes fill.
    (Only a few bytes past the input: the old code read them, without crashing the test.)"""
    spec = cf.GatherSpec(n=1, size_in=16, size_out=64)
    kernel = cf.host_jit().kernel(spec)
    x = np.arange(16, dtype=np.int8).reshape(1, 16)
    index = np.concatenate([np.arange(16, 64), np.arange(-16, 0)]).astype(np.int32)
    fill = np.full(64, 99, np.int8)
    out = np.zeros((1, 64), np.int8)
    kernel._fn(*(ctypes.c_void_p(a.ctypes.data) for a in (x, index, fill, out)))
    assert (out == 99).all()


def test_the_resize_code_itself_reads_only_inside_its_input():
    """Called without the checks, an index at or past size_in (or negative) reads pixel 0."""
    spec = cf.ResizeSpec(planes=1, size_in=4, size_out=3, frac=2)
    kernel = cf.host_jit().kernel(spec)
    x = np.array([[9, 1, 1, 1]], np.int8)
    index = np.array([[4, 5, 2**31 - 1, -1], [0, 0, 0, 0], [1, 2, 3, 1]], np.int32)
    weight = np.ones((3, 4), np.int32)
    out = np.zeros((1, 3), np.int8)
    kernel._fn(*(ctypes.c_void_p(a.ctypes.data) for a in (x, index, weight, out)))
    assert out.tolist() == [[9, 9, 1]]


@pytest.mark.parametrize("spec, buffer, value", [
    (cf.AvgPool2dSpec(n=1, c=1, h=4, w=4, kh=2, kw=2, stride=2), "count", 0),
    (cf.AvgPool2dSpec(n=1, c=1, h=4, w=4, kh=2, kw=2, stride=2), "count", 5),
    (cf.AvgPool2dSpec(n=1, c=1, h=4, w=4, kh=2, kw=2, stride=2), "add", -2**30),
    (cf.SoftmaxSpec(outer=1, axis=4), "table", 2**17),
    (cf.SoftmaxSpec(outer=1, axis=4), "table", -1),
    (cf.Conv2dSpec(n=1, c=1, h=3, w=3, oc=2, kh=1, kw=1, per_channel=True), "shift", 32),
    (cf.DenseSpec(n=1, k=3, m=2, per_channel=True), "shift", -1),
    (cf.ResizeSpec(planes=1, size_in=4, size_out=2, frac=14), "index", 4),
    (cf.ResizeSpec(planes=1, size_in=4, size_out=2, frac=14), "index", -1),
    (cf.ResizeSpec(planes=1, size_in=4, size_out=2, frac=14), "weight", (1 << 14) + 1),
])
def test_index_like_buffers_are_checked_before_the_call(spec, buffer, value):
    inputs = [np.zeros(a.shape, a.dtype) for a in spec.args() if a.is_input]
    names = [a.name for a in spec.args() if a.is_input]
    if "count" in names:
        inputs[names.index("count")][:] = 1
    if spec.family == "softmax":
        inputs[names.index("table")][:] = 1
    inputs[names.index(buffer)].flat[0] = value
    with pytest.raises(cf.KernelValueError, match=f"buffer '{buffer}' holds {value} at element 0"):
        cf.host_jit().kernel(spec)(*inputs)


def test_softmax_refuses_a_table_whose_sum_can_be_zero():
    spec = cf.SoftmaxSpec(outer=1, axis=4)
    with pytest.raises(cf.KernelValueError, match=r"last entry \(exp\(0\)\), below 1"):
        cf.host_jit().kernel(spec)(np.zeros((1, 4, 1), np.int8), np.zeros(256, np.int32))


def test_softmax_on_all_256_codes_saturates_at_255_of_256_and_takes_no_other_zero_point():
    """zp -128: a certain maximum's probability 1 is code 127 (255/256), the others code -128 (0),
    equal halves 0 (128/256); a zero point other than 0 and -128 is refused."""
    spec = cf.SoftmaxSpec(outer=2, axis=4, zp=-128)
    table = np.zeros(256, np.int32)
    table[-1], table[0] = 1 << 16, 1
    x = np.array([[127, -128, -128, -128], [127, 127, -128, -128]], np.int8).reshape(2, 4, 1)
    got = cf.host_jit().kernel(spec)(x, table).reshape(2, 4)
    assert got.tolist() == [[127, -128, -128, -128], [0, 0, -128, -128]]
    with pytest.raises(cf.KernelParamError, match="zp=5 is neither 0 nor -128"):
        cf.SoftmaxSpec(outer=1, axis=4, zp=5)


@pytest.mark.parametrize("make", [
    lambda: cf.Conv2dSpec(n=1, c=1, h=1, w=MAX_UNROLL + 1, oc=1, kh=1, kw=MAX_UNROLL + 1),
    lambda: cf.Conv2dSpec(n=1, c=1, h=1, w=200, oc=1, kh=1, kw=1, stride=MAX_UNROLL + 1),
    lambda: cf.MaxPool2dSpec(n=1, c=1, h=1, w=MAX_UNROLL + 1, kh=1, kw=MAX_UNROLL + 1),
    lambda: cf.AvgPool2dSpec(n=1, c=1, h=1, w=MAX_UNROLL + 1, kh=1, kw=MAX_UNROLL + 1),
    lambda: cf.ConcatSpec(outer=1, inner=1, parts=(1,) * 257),
    lambda: cf.Conv2dSpec(n=1, c=1, h=1, w=MAX_STACK_ROW + 1, oc=1, kh=1, kw=1, wide=True),
    lambda: cf.AvgPool2dSpec(n=1, c=1, h=1, w=MAX_STACK_ROW + 1, kh=1, kw=1),
])
def test_code_size_and_stack_rows_are_bounded(make):
    """Each would take seconds to minutes of code generation, or a stack row past any thread's."""
    with pytest.raises(cf.KernelParamError, match="unrolls|takes|stack"):
        make()


def test_a_maxpool_window_check_does_not_scan_every_row():
    """kh 65536 over 65536 output rows: the old check scanned rows x window rows (4e9 steps)."""
    kind, spec = outcome(cf.MaxPool2dSpec, n=1, c=1, h=1, w=1, kh=65536, kw=1, pad=(65535, 0, 65535, 0),
                         seconds=5)
    assert kind == "ok" and spec.oh == 65536


@pytest.mark.parametrize("h, kh, sh, pt, pb", [(h, kh, sh, pt, pb) for h in (1, 3, 5) for kh in (1, 2, 4)
                                                for sh in (1, 2, 3) for pt in range(5) for pb in range(5)])
def test_the_maxpool_window_check_is_the_row_by_row_one(h, kh, sh, pt, pb):
    oh = (h + pt + pb - kh) // sh + 1
    if oh < 1:
        return
    some_row_empty = any(not any(0 <= y * sh + i - pt < h for i in range(kh)) for y in range(oh))
    try:
        cf.MaxPool2dSpec(n=1, c=1, h=h, w=1, kh=kh, kw=1, stride=(sh, 1), pad=(pt, 0, pb, 0))
        refused = False
    except cf.KernelParamError as err:
        refused = "entirely in the padding" in str(err)
    assert refused == some_row_empty


def test_work_and_memory_limits_are_checked_before_the_first_call(monkeypatch):
    kernel = cf.host_jit().kernel(cf.ReluSpec(size=100))
    monkeypatch.setattr(kernel_spec, "MAX_CPU_KERNEL_OPS", 10)
    with pytest.raises(cf.KernelLimitError, match="relu: one call does 25 operations, more than the 10") as info:
        kernel(np.zeros(100, np.int8))
    assert isinstance(info.value, LimitError)
    monkeypatch.setattr(kernel_spec, "MAX_CPU_KERNEL_OPS", 1 << 33)
    monkeypatch.setattr(kernel_spec, "MAX_CPU_KERNEL_BYTES", 150)
    with pytest.raises(cf.KernelLimitError, match="its buffers take 0.00 MiB, more than the 0.00 MiB"):
        kernel(np.zeros(100, np.int8))


def test_the_work_bound_admits_the_largest_builtin_kernels():
    """ResNet's stem and 3x3 convs at the largest resolution the tensor limit admits pass; a conv
    of 39 G MACs does not."""
    scale = RESNET_MAX_RESOLUTION // 32
    for row in resnet18.layer_table():
        if row["name"] == "fc":
            continue
        r = {**row, "H_in": row["H_in"] // 7 * scale, "W_in": row["W_in"] // 7 * scale}
        resnet18.conv_spec(r).check_limits()
    with pytest.raises(cf.KernelLimitError, match="operations"):
        cf.Conv2dSpec(n=1, c=256, h=256, w=256, oc=256, kh=3, kw=3, pad=1).check_limits()


def test_concat_parameters_must_be_ints():
    """Found by the fuzz target: parts of 1.5 were truncated to 1, None raised a TypeError."""
    for parts in ((1.5, 2), (None,), "12"):
        with pytest.raises(cf.KernelParamError, match="parameter parts must be a tuple of ints"):
            cf.ConcatSpec(outer=1, inner=1, parts=parts)


def test_a_masked_softmax_skips_masked_positions_and_refuses_a_mask_without_a_kept_one():
    """The mask's rows repeat over the outer rows; a masked position, however large its score,
    neither sets the maximum nor adds to the sum, and gets the lowest code. A mask value other
    than 0 and 1, a row with none kept, or mask rows that do not divide the outer ones are refused."""
    spec = cf.SoftmaxSpec(outer=4, axis=4, zp=-128, mask_rows=2)
    table = np.zeros(256, np.int32)
    table[-1], table[0] = 1 << 16, 1
    mask = np.array([[1, 0, 0, 0], [1, 1, 0, 0]], np.int8).reshape(2, 4, 1)
    x = np.array([[-5, 127, 127, 127], [-5, -5, 127, 127]] * 2, np.int8).reshape(4, 4, 1)
    got = cf.host_jit().kernel(spec)(x, table, mask).reshape(4, 4)
    assert got.tolist() == [[127, -128, -128, -128], [0, 0, -128, -128]] * 2
    for bad, words in [(2, "buffer 'mask' holds 2 at element 0"), (0, "masks every position of a row")]:
        wrong = mask.copy()
        wrong[0, 0, 0] = bad
        with pytest.raises(cf.KernelValueError, match=words):
            cf.host_jit().kernel(spec)(x, table, wrong)
    with pytest.raises(cf.KernelParamError, match="mask_rows=3 does not divide outer=4"):
        cf.SoftmaxSpec(outer=4, axis=4, mask_rows=3)
