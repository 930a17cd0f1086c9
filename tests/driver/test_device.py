"""The device API on the sim backend: runs bundles, checks their configuration."""

import numpy as np
import pytest

from driver import DeviceError, open_device
from tests.hw import programs
from vdla_hw.semantics import execute


def test_sim_device_runs_a_bundle_like_the_reference():
    bundle, expected, _ = programs.blocked_matmul("tiny")
    with open_device("sim", "tiny") as device:
        result = device.run(bundle)
    np.testing.assert_array_equal(result.dram, execute(bundle).dram)
    assert result.cycles > 0 and result.seconds == pytest.approx(result.cycles / device.config.clock_hz)
    assert result.counters["cycles"] == result.cycles


def test_bundle_for_another_configuration_is_refused():
    bundle, _, _ = programs.blocked_matmul("tiny")
    with pytest.raises(DeviceError, match="built for 1x4_.*recompile"):
        open_device("sim", "osdi18").run(bundle)


def test_unknown_target():
    with pytest.raises(DeviceError, match="unknown target 'fpga'"):
        open_device("fpga")
