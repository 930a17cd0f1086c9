"""The Cortex-A9 build of every kernel under qemu-arm returns the host JIT's bytes."""

import numpy as np
import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.qemu import run_kernel_qemu

from . import numpy_ref as ref
from .arm_cases import arm_specs, case_id
from .spec_reference import reference_of

SPECS = arm_specs()


def _by_family(*families):
    specs = [s for s in SPECS if s.family in families]
    assert specs, families
    return pytest.mark.parametrize("spec", specs, ids=case_id)


def _check_arm_vs_host(arm_build, spec, seed=0):
    harness, library, work = arm_build
    rng = np.random.default_rng(seed)
    inputs = ref.random_inputs(spec, rng)
    if spec.family == "quantize":  # include the special values
        inputs[0][:4] = [np.nan, np.inf, -np.inf, 2.5 * 2.0 ** -spec.frac]
    arm = run_kernel_qemu(harness, library, spec, inputs, work)
    host = cf.host_jit().kernel(spec)(*inputs)
    assert arm.dtype == host.dtype and arm.shape == host.shape
    assert arm.tobytes() == host.tobytes(), f"{spec.describe()}: ARM and host outputs differ"


@_by_family("conv2d")
def test_conv2d_arm_qemu_vs_host(arm_build, spec):
    _check_arm_vs_host(arm_build, spec)


@_by_family("maxpool2d", "global_avgpool")
def test_pool_arm_qemu_vs_host(arm_build, spec):
    _check_arm_vs_host(arm_build, spec)


@_by_family("add", "relu")
def test_add_relu_arm_qemu_vs_host(arm_build, spec):
    _check_arm_vs_host(arm_build, spec)


@_by_family("dense")
def test_dense_arm_qemu_vs_host(arm_build, spec):
    _check_arm_vs_host(arm_build, spec)


@_by_family("quantize", "dequantize")
def test_quantize_arm_qemu_vs_host(arm_build, spec):
    _check_arm_vs_host(arm_build, spec)


@_by_family("pack", "unpack")
def test_layout_arm_qemu_vs_host(arm_build, spec):
    _check_arm_vs_host(arm_build, spec)


@_by_family("lut", "muladd", "mul", "avgpool2d", "concat", "gather", "resize", "softmax", "layernorm", "matmul")
def test_network_kernels_arm_qemu_vs_host(arm_build, spec):
    _check_arm_vs_host(arm_build, spec)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.family in ("conv2d", "dense", "lut", "muladd", "avgpool2d",
                                                                   "concat", "gather", "resize", "softmax", "mul",
                                                                   "layernorm", "matmul")][-24:],
                         ids=case_id)
def test_network_kernels_arm_qemu_vs_numpy_reference(arm_build, spec):
    """The Cortex-A9 build of the network executor's kernels equals the project's numpy reference."""
    harness, library, work = arm_build
    inputs = ref.random_inputs(spec, np.random.default_rng(7))
    arm = run_kernel_qemu(harness, library, spec, inputs, work)
    np.testing.assert_array_equal(arm, reference_of(spec, inputs))


def test_stem_conv_arm_qemu_vs_numpy(arm_build):
    """Closes the loop: the board build of the full-size stem conv equals plain numpy."""
    spec = SPECS[0]
    assert (spec.c, spec.h, spec.oc, spec.kh, spec.stride, spec.pad) == (3, 224, 64, 7, (2, 2), (3, 3, 3, 3))
    harness, library, work = arm_build
    inputs = ref.random_inputs(spec, np.random.default_rng(5))
    arm = run_kernel_qemu(harness, library, spec, inputs, work)
    np.testing.assert_array_equal(arm, ref.conv2d(*inputs, stride=spec.stride, pad=spec.pad, shift=spec.shift,
                                                  relu=spec.relu))


def test_every_kernel_family_runs_under_arm_qemu():
    families = {s.family for s in SPECS}
    assert families == set(cf.FAMILIES)
