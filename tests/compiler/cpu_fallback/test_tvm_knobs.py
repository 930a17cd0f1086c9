"""TVM's knobs: the FP32 and int8 spatial-pack and the FP32 Winograd kernels under several knob
settings against numpy (host JIT, and the Cortex-A9 build under qemu-arm), the defaults
unchanged, and the mapping of the PYNQ-Z1 board records to specs and modelled seconds."""

import dataclasses

import numpy as np
import pytest

from compiler.cpu_fallback import host_jit
from compiler.cpu_fallback.arm import build_arm_library
from compiler.cpu_fallback.errors import KernelParamError
from compiler.cpu_fallback.fp32 import Fp32Conv2dSpec
from compiler.cpu_fallback.int8_pack import Int8PackConv2dSpec, pack_int8_weights
from compiler.cpu_fallback.qemu import build_harness, run_kernel_qemu
from compiler.cpu_fallback.spatial_pack import REORDERS
from compiler.cpu_fallback.tvm_knobs import RecordError, cpu_spec_from_record, replay
from compiler.cpu_fallback.winograd import Fp32WinogradConv2dSpec, transform_weights
from compiler.paper import board_records

from .test_fp32 import inputs_of as fp32_inputs

A, B = REORDERS  # [.., kw, vh, vw, vc] and [.., kw, vc, vh, vw]
KNOBS = [  # (reorder, ann_reduce, ann_spatial): 'none' annotations, both orders, vc a loop or a vector
    (A, ("none", "unroll"), ("unroll", "unroll", "vec")),     # the defaults
    (B, ("none", "none"), ("none", "none", "vec")),
    (B, ("unroll", "none"), ("unroll", "none", "none")),
    (A, ("unroll", "unroll"), ("none", "unroll", "unroll")),
    (B, ("none", "unroll"), ("unroll", "unroll", "unroll")),
    (A, ("none", "none"), ("none", "none", "none")),
]
SHAPES = [dict(n=1, c=3, h=13, w=11, oc=6, kh=3, kw=3, stride=2, pad=1, vh=2, vw=3, vc=4),   # edge tiles, oc % vc
          dict(n=2, c=5, h=7, w=7, oc=8, kh=1, kw=1, vh=1, vw=7, vc=8)]                      # extent-1 axes
FP32 = [Fp32Conv2dSpec(**shape, relu=i % 2 == 0, reorder=r, ann_reduce=ar, ann_spatial=asp)
        for shape in SHAPES for i, (r, ar, asp) in enumerate(KNOBS)]
INT8 = [Int8PackConv2dSpec(**shape, reorder=r, ann_reduce=ar, ann_spatial=asp) for shape in SHAPES
        for r, ar, asp in KNOBS]
WINOGRAD = [Fp32WinogradConv2dSpec(c=4, h=h, w=w, oc=8, vp=vp, vk=vk, vci=vci, ann_reduce=ar, ann_spatial=asp)
            for (h, w, vp, vk, vci), ar, asp in [
                ((7, 7, 2, 4, 2), ("unroll",), ("vec", "unroll")),    # 7: edge tiles (r20's form)
                ((8, 8, 4, 8, 1), ("none",), ("vec", "none")),
                ((9, 6, 3, 4, 4), ("none",), ("none", "vec")),
                ((6, 9, 6, 2, 2), ("unroll",), ("unroll", "none")),
                ((7, 5, 2, 4, 2), ("none",), ("none", "none"))]]


def int8_inputs(spec, rng):
    """Random int8 inputs (packed weights) and the exact int64 numpy reference of ``spec``."""
    x = rng.integers(-128, 128, (spec.n, spec.c, spec.h, spec.w), dtype=np.int8)
    w = rng.integers(-128, 128, (spec.oc, spec.c, spec.kh, spec.kw), dtype=np.int8)
    s, p = spec.stride, spec.pad
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))).astype(np.int64)
    ref = np.zeros((spec.n, spec.oc, spec.oh, spec.ow), np.int64)
    for i in range(spec.kh):
        for j in range(spec.kw):
            patch = xp[:, :, i:i + s * spec.oh:s, j:j + s * spec.ow:s]
            ref += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.int64))
    return [x, pack_int8_weights(spec, w)], ref


def winograd_inputs(spec, rng):
    """Random inputs (transformed weights) and the float64 direct-conv reference of ``spec``."""
    x = rng.standard_normal((1, spec.c, spec.h, spec.w)).astype(np.float32)
    w = rng.standard_normal((spec.oc, spec.c, 3, 3)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).astype(np.float64)
    ref = np.zeros((1, spec.oc, spec.h, spec.w))
    for i in range(3):
        for j in range(3):
            ref += np.einsum("nchw,oc->nohw", xp[:, :, i:i + spec.h, j:j + spec.w], w[:, :, i, j])
    return [x, transform_weights(spec, w)], ref


def ids(spec):
    if spec.family == "fp32_winograd_conv2d":
        return f"winograd-{spec.h}x{spec.w}-{spec.vp}.{spec.vk}.{spec.vci}-{spec.ann_reduce[0]}-{'.'.join(spec.ann_spatial)}"
    return f"{spec.family}-{spec.vh}x{spec.vw}x{spec.vc}-{'B' if spec.reorder == B else 'A'}-" \
           f"{'.'.join(spec.ann_reduce)}-{'.'.join(spec.ann_spatial)}"


def check(spec, out, seed_inputs):
    inputs, ref = seed_inputs
    if spec.family == "fp32_conv2d":
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    elif spec.family == "fp32_winograd_conv2d":  # the transforms' rounding grows with their constants
        np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3)
    else:
        assert out.dtype == np.int32 and np.array_equal(out, ref)


def inputs_of(spec, seed):
    rng = np.random.default_rng(seed)
    if spec.family == "fp32_winograd_conv2d":
        return winograd_inputs(spec, rng)
    return fp32_inputs(spec, rng) if spec.family == "fp32_conv2d" else int8_inputs(spec, rng)


@pytest.fixture(scope="module")
def knobs_arm(tmp_path_factory):
    work = tmp_path_factory.mktemp("tvm_knobs_arm")
    return build_harness(work), build_arm_library(FP32 + INT8 + WINOGRAD, work / "libvdla_knobs.so"), work


@pytest.mark.parametrize("spec", FP32 + INT8 + WINOGRAD, ids=ids)
def test_knobbed_kernel_on_the_host_equals_numpy(spec):
    data = inputs_of(spec, 5)
    check(spec, host_jit().kernel(spec)(*data[0]), data)


@pytest.mark.slow  # qemu
@pytest.mark.parametrize("spec", FP32 + INT8 + WINOGRAD, ids=ids)
def test_knobbed_kernel_on_the_a9_under_qemu_equals_numpy(knobs_arm, spec):
    harness, library, work = knobs_arm
    data = inputs_of(spec, 6)
    check(spec, run_kernel_qemu(harness, library, spec, data[0], work), data)


def test_default_knobs_keep_the_kernel_and_its_symbol():
    spec = Fp32Conv2dSpec(n=1, c=16, h=7, w=7, oc=24, kh=3, kw=3, pad=1, relu=True, vc=12)
    same = dataclasses.replace(spec, reorder=A, ann_reduce=("none", "unroll"), ann_spatial=("unroll", "unroll", "vec"))
    assert same == spec and same.symbol == spec.symbol
    assert "reorder" not in spec.describe() and "ann_" not in spec.describe()
    other = dataclasses.replace(spec, reorder=B)
    assert other.symbol != spec.symbol and "reorder=(0, 1, 2, 3, 4, 5, 6, 9, 7, 8)" in other.describe()


@pytest.mark.parametrize("knobs, match", [
    (dict(reorder=(0, 1, 2, 3, 4, 5, 6, 8, 7, 9)), "not one of reorder_0's two candidates"),
    (dict(ann_reduce=("none", "vec")), r"ann_reduce=\('none', 'vec'\) must be a tuple of 2"),
    (dict(ann_spatial=("vec", "unroll", "none")), "only vc is vectorised here"),
    (dict(ann_spatial=["unroll", "unroll", "vec"]), "must be a tuple of 3"),
])
def test_knobs_outside_tvms_space_are_refused(knobs, match):
    for kind in (Fp32Conv2dSpec, Int8PackConv2dSpec):
        with pytest.raises(KernelParamError, match=match):
            kind(n=1, c=4, h=8, w=8, oc=8, kh=3, kw=3, vh=2, vw=2, vc=4, **knobs)


def test_bad_winograd_parameters_are_refused():
    with pytest.raises(KernelParamError, match="vp=3 must divide 4 and be at most 16"):
        Fp32WinogradConv2dSpec(c=4, h=7, w=7, oc=8, vp=3, vk=4, vci=2)
    with pytest.raises(KernelParamError, match="at most one vec"):
        Fp32WinogradConv2dSpec(c=4, h=7, w=7, oc=8, vp=2, vk=4, vci=2, ann_spatial=("vec", "vec"))


def test_every_winograd_record_maps_to_a_spec_with_its_knobs():
    winograd = [r for r in board_records("arm_cpu") if r["template"] == "winograd"]
    assert len(winograd) == 4
    for record in winograd:
        spec = cpu_spec_from_record(record)
        knobs = {name: value for name, _, value in record["knobs"]}
        assert isinstance(spec, Fp32WinogradConv2dSpec)
        assert (spec.tiles // spec.vp, spec.vp) == tuple(knobs["tile_p"])
        assert (spec.oc // spec.vk, spec.vk) == tuple(knobs["tile_k"])
        assert (spec.c // spec.vci, spec.vci) == tuple(knobs["tile_c"])
        assert list(spec.ann_reduce) == knobs["ann_reduce"] and list(spec.ann_spatial) == knobs["ann_spatial"]


def test_every_direct_record_maps_to_a_spec_with_its_knobs():
    records = board_records("arm_cpu")
    direct = [r for r in records if r["template"] == "direct"]
    assert len(records) == 22 and len(direct) == 18
    for record in direct:
        spec = cpu_spec_from_record(record)
        knobs = {name: value for name, _, value in record["knobs"]}
        assert isinstance(spec, Fp32Conv2dSpec if record["dtype"] == "float32" else Int8PackConv2dSpec)
        assert (spec.vc, spec.vh, spec.vw) == (knobs["tile_co"][1], knobs["tile_oh"][1], knobs["tile_ow"][1])
        assert list(spec.reorder) == knobs["reorder_0"] and list(spec.ann_spatial) == knobs["ann_spatial"]
        assert list(spec.ann_reduce) == knobs["ann_reduce"]
        assert (spec.c, spec.oc, spec.h, spec.kh, spec.stride, spec.pad) == \
            (record["IC"], record["OC"], record["H"], record["K"], record["stride"], record["pad"])


def test_bad_records_are_refused_in_one_line():
    records = {r["record"]: r for r in board_records("arm_cpu")}
    with pytest.raises(RecordError, match="record r17 .*template 'im2col' is not one of"):
        cpu_spec_from_record({**records["r17"], "template": "im2col"})
    with pytest.raises(RecordError, match=r"record r17 .*missing knobs \['tile_c'\]"):
        cpu_spec_from_record({**records["r17"], "knobs": [k for k in records["r17"]["knobs"] if k[0] != "tile_c"]})
    with pytest.raises(RecordError, match="winograd template is a float32 3x3 conv, stride 1"):
        cpu_spec_from_record({**records["r17"], "stride": 2})
    r11 = records["r11"]
    cases = [({**r11, "knobs": r11["knobs"] + [["auto_unroll_max_step", "ot", 16]]}, r"unknown knobs \['auto_unroll"),
             ({**r11, "knobs": r11["knobs"][1:]}, r"missing knobs \['tile_co'\]"),
             ({**r11, "knobs": [["tile_co", "sp", [8, 8]]] + r11["knobs"][1:]}, r"tile_co=\[8, 8\] does not split an axis of 128"),
             ({**r11, "dtype": "int16"}, "dtype 'int16' is not one of"),
             ({**r11, "knobs": r11["knobs"][:3] + [["reorder_0", "re", [0, 1, 2, 3, 4, 5, 6, 8, 7, 9]]] + r11["knobs"][4:]},
              "record r11 .*not one of reorder_0's two candidates")]
    for record, match in cases:
        with pytest.raises(RecordError, match=match) as info:
            cpu_spec_from_record(record)
        assert "\n" not in str(info.value)


def test_replay_gives_modelled_seconds_and_the_breakdown():
    record = {r["record"]: r for r in board_records("arm_cpu")}["r25"]
    out = replay(record)
    assert out["record"] == "r25" and out["dtype"] == "int8" and out["measured_s"] == record["measured_s"]
    assert out["modelled_s"] > 0 and out["parts"]["cores"] == 2 and out["parts"]["priced_by"] == ["int8_pack_conv2d"]
    one = replay(record, threads=1)
    assert one["parts"]["cores"] == 1 and one["modelled_s"] > out["modelled_s"]
    with pytest.raises(RecordError, match="missing knobs"):
        replay({**record, "template": "winograd"})
    assert replay({r["record"]: r for r in board_records("arm_cpu")}["r20"])["parts"]["priced_by"] == \
        ["fp32_winograd_conv2d"]


def test_stack_accumulators_are_accessed_at_their_elements_alignment():
    """vh or vw a loop: the tile's accumulators are a stack array of floats, read and written as
    VC vectors; those accesses state 4-byte alignment (the array has no more), or a rolled loop
    faults on the host's aligned vector moves."""
    from compiler.cpu_fallback.codegen import build_ir
    spec = Fp32Conv2dSpec(n=1, c=2, h=8, w=8, oc=8, kh=3, kw=3, pad=1, vh=2, vw=2, vc=8,
                          ann_spatial=("none", "none", "vec"))
    vector_accesses = [line for line in build_ir([spec]).splitlines()
                       if ("load <8 x float>, <8 x float>*" in line or "store <8 x float>" in line)]
    assert vector_accesses and all(line.rstrip().endswith("align 4") for line in vector_accesses)


def test_reduction_loops_annotated_none_stay_loops_without_spills():
    """r24 keeps kh and kw as loops ('none'): each stays one loop that LLVM may not unroll
    (llvm.loop.unroll.disable), so the A9 code is one tap of VW=7 vmla.i32 with the seven
    accumulators in registers and no NEON spill; 'unroll' unrolls them when the IR is built."""
    from compiler.cpu_fallback.arm import arm_assembly
    from compiler.cpu_fallback.codegen import build_ir
    spec = cpu_spec_from_record({r["record"]: r for r in board_records("arm_cpu")}["r24"])
    assert spec.ann_reduce == ("none", "none") and spec.vw == 7
    assert build_ir([spec]).count("llvm.loop.unroll.disable") == 1  # one node, shared by both loops' IDs
    assert build_ir([spec]).count("!llvm.loop") == 2
    asm = arm_assembly([spec])
    assert asm.count("vmla.i32") == 7 and "vstmia" not in asm and "vldmia" not in asm
    unrolled = dataclasses.replace(spec, ann_reduce=("unroll", "unroll"))
    assert "!llvm.loop" not in build_ir([unrolled])


def test_the_packed_window_is_tvms_dvshape():
    """data_vec holds VH*s + KH - 1 rows and VW*s + KW - 1 columns per tile and channel
    (topi arm_cpu _decl_spatial_pack): a 1x1 stride-2 tile of VW=2 packs 2 x 4 values."""
    spec = Fp32Conv2dSpec(n=1, c=64, h=56, w=56, oc=128, kh=1, kw=1, stride=2, vh=1, vw=2, vc=16)
    assert spec.window == (2, 4)
    assert spec.args()[-1].shape == (28 * 14 * 64 * 2 * 4,)
    assert Int8PackConv2dSpec(n=1, c=3, h=9, w=9, oc=4, kh=3, kw=3, pad=1, vh=3, vw=3, vc=4).window == (5, 5)
