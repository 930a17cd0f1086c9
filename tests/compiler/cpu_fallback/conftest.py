"""Shared fixtures: one Cortex-A9 kernel library and qemu harness per test session."""

import pytest

from compiler.cpu_fallback.arm import build_arm_library
from compiler.cpu_fallback.qemu import build_harness

from .arm_cases import arm_specs


@pytest.fixture(scope="session")
def arm_build(tmp_path_factory):
    """(harness, library, work_dir) for every spec of ``arm_cases.arm_specs()``.

    Missing tools raise ToolchainError here, so the ARM tests error (never skip).
    """
    work = tmp_path_factory.mktemp("cpu_fallback_arm")
    library = build_arm_library(arm_specs(), work / "libvdla_cpu_test.so")
    harness = build_harness(work)
    return harness, library, work
