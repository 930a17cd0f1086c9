"""The FP32 baseline kernels (TVM-style spatial pack and the other ResNet ops): the host JIT and
the Cortex-A9 build under qemu-arm against numpy."""

import numpy as np
import pytest

from compiler.cpu_fallback import host_jit
from compiler.cpu_fallback.arm import build_arm_library
from compiler.cpu_fallback.errors import KernelParamError
from compiler.cpu_fallback.fp32 import (Fp32Conv2dSpec, Fp32DenseSpec, Fp32EltwiseSpec, Fp32GlobalAvgPoolSpec,
                                        Fp32MaxPoolSpec, pack_conv_weights)
from compiler.cpu_fallback.qemu import build_harness, run_kernel_qemu

SPECS = [
    Fp32Conv2dSpec(n=1, c=3, h=13, w=11, oc=6, kh=3, kw=3, stride=2, pad=1, relu=True),   # edge tiles, oc % vc
    Fp32Conv2dSpec(n=2, c=5, h=7, w=7, oc=8, kh=1, kw=1, vh=2, vw=4, vc=4),
    Fp32Conv2dSpec(n=1, c=3, h=30, w=30, oc=16, kh=7, kw=7, stride=2, pad=3),           # the stem's form
    Fp32Conv2dSpec(n=1, c=16, h=7, w=7, oc=24, kh=3, kw=3, pad=1, relu=True, vc=12),
    Fp32MaxPoolSpec(n=1, c=3, h=13, w=12, k=3, stride=2, pad=1),
    Fp32MaxPoolSpec(n=2, c=2, h=5, w=5, k=2, stride=1),
    Fp32GlobalAvgPoolSpec(n=2, c=3, h=7, w=7),
    Fp32EltwiseSpec(size=37, relu=True),
    Fp32EltwiseSpec(size=100),
    Fp32EltwiseSpec(size=50, inputs=1, relu=True),
    Fp32DenseSpec(n=2, k=37, m=5),
    Fp32DenseSpec(n=1, k=64, m=10, relu=True),
]


def inputs_of(spec, rng):
    """Random inputs and the float64 numpy reference of ``spec``."""
    f = spec.family
    if f == "fp32_conv2d":
        x = rng.standard_normal((spec.n, spec.c, spec.h, spec.w)).astype(np.float32)
        w = rng.standard_normal((spec.oc, spec.c, spec.kh, spec.kw)).astype(np.float32)
        b = rng.standard_normal(spec.oc).astype(np.float32)
        s, p = spec.stride, spec.pad
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))).astype(np.float64)
        ref = np.zeros((spec.n, spec.oc, spec.oh, spec.ow)) + b[None, :, None, None]
        for i in range(spec.kh):
            for j in range(spec.kw):
                patch = xp[:, :, i:i + s * spec.oh:s, j:j + s * spec.ow:s]
                ref += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
        return [x, *pack_conv_weights(spec, w, b)], np.maximum(ref, 0) if spec.relu else ref
    if f == "fp32_maxpool2d":
        x = rng.standard_normal((spec.n, spec.c, spec.h, spec.w)).astype(np.float32)
        s, p = spec.stride, spec.pad
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
        windows = [xp[:, :, i:i + s * spec.oh:s, j:j + s * spec.ow:s][:, :, :spec.oh, :spec.ow]
                   for i in range(spec.k) for j in range(spec.k)]
        return [x], np.max(windows, axis=0)
    if f == "fp32_global_avgpool":
        x = rng.standard_normal((spec.n, spec.c, spec.h, spec.w)).astype(np.float32)
        return [x], x.astype(np.float64).mean(axis=(2, 3))
    if f == "fp32_eltwise":
        xs = [rng.standard_normal(spec.size).astype(np.float32) for _ in range(spec.inputs)]
        ref = sum(x.astype(np.float64) for x in xs)
        return xs, np.maximum(ref, 0) if spec.relu else ref
    x = rng.standard_normal((spec.n, spec.k)).astype(np.float32)
    w = rng.standard_normal((spec.m, spec.k)).astype(np.float32)
    b = rng.standard_normal(spec.m).astype(np.float32)
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    return [x, w, b], np.maximum(ref, 0) if spec.relu else ref


def ids(spec):
    return f"{spec.family}-{spec.symbol[-8:]}"


@pytest.fixture(scope="module")
def fp32_arm(tmp_path_factory):
    work = tmp_path_factory.mktemp("fp32_arm")
    return build_harness(work), build_arm_library(SPECS, work / "libvdla_fp32.so"), work


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_fp32_kernel_on_the_host_equals_numpy(spec):
    inputs, ref = inputs_of(spec, np.random.default_rng(3))
    out = host_jit().kernel(spec)(*inputs)
    assert out.dtype == np.float32 and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_fp32_kernel_on_the_a9_under_qemu_equals_numpy(fp32_arm, spec):
    harness, library, work = fp32_arm
    inputs, ref = inputs_of(spec, np.random.default_rng(4))
    arm = run_kernel_qemu(harness, library, spec, inputs, work)
    np.testing.assert_allclose(arm, ref, rtol=1e-4, atol=1e-4)


def test_the_conv_kernel_uses_float32x4_neon_on_the_a9():
    from compiler.cpu_fallback.cost.cpus import load_cpu
    from compiler.cpu_fallback.cost.target import generate

    asm = generate(SPECS[2], load_cpu("cortex-a9")).asm_text
    assert "vmul.f32\tq" in asm and "vadd.f32\tq" in asm


def test_bad_fp32_parameters_are_refused():
    with pytest.raises(KernelParamError, match="vc=6 must be a multiple of 4"):
        Fp32Conv2dSpec(n=1, c=1, h=4, w=4, oc=4, kh=3, kw=3, vc=6)
    with pytest.raises(KernelParamError, match="one input without relu"):
        Fp32EltwiseSpec(size=4, inputs=1)
