"""The PYNQ-Z1 recipe's Vivado script (bitstreams.pynq_z1 + bitstreams.vivado_flow), run in a real Tcl
interpreter with Vivado's commands stubbed: a setup or hold violation stops the build before any
bitstream is written, no path depends on the Vivado version's folder layout, and the constraints
carry the configuration's clock. (No Vivado here: what this cannot check is listed in docs/board.md.)"""

from __future__ import annotations

import importlib.util
import re
import shutil

import pytest

from bitstreams import pynq_z1, vivado_flow
from vdla_hw.config import load_config

pytestmark = pytest.mark.skipif(importlib.util.find_spec("myhdl") is None, reason="needs MyHDL (requirements/rtl.txt)")
tkinter = pytest.importorskip("tkinter", reason="the Tcl interpreter comes with Python's tkinter")

# Vivado's commands the script needs answers from; every other one is recorded and returns "".
STUBS = r"""
set ::calls {}
proc unknown {args} { lappend ::calls [lindex $args 0]; return "" }
proc version {args} { return $::vivado }
proc make_wrapper {args} { lappend ::calls make_wrapper; return /gen/vdla_wrapper.v }
proc get_timing_paths {args} { if {[lsearch $args -setup] >= 0} { return setup_path }; return hold_path }
proc get_clocks {args} { return clk_fpga_0 }
proc get_files {args} { if {[lsearch -glob $args *.hwh] >= 0} { return $::hwh }; return vdla.bd }
proc write_bitstream {args} { lappend ::calls write_bitstream; close [open [lindex $args end] w] }
proc get_property {name obj} {
    switch -glob -- $name {
        CONFIG.PCW_ACT_* { return $::fclk }
        STATUS { return $::status }
        PERIOD { return $::period }
        SLACK { if {$obj eq "setup_path"} { return $::wns } else { return $::whs } }
        STATS.TPWS { return $::tpws }
        default { return "" }
    }
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("recipe")
    pynq_z1.write_project("tiny", out)
    return out


def run(project, tmp_path, **kw):
    """Source build.tcl in a copy of ``project`` with the stubbed Vivado; returns (folder, calls, error)."""
    here = tmp_path / f"proj{len(list(tmp_path.glob('proj*')))}"
    shutil.copytree(project, here)
    hwh = tmp_path / "vdla.hwh"
    hwh.write_text("<hwh/>")
    values = {"vivado": "2022.1", "fclk": "100.000000", "status": "route_design Complete!", "period": "10.000",
              "wns": "0.250", "whs": "0.030", "tpws": "0.000", "hwh": str(hwh)} | kw
    tcl = tkinter.Tcl()
    tcl.eval(STUBS)
    for k, v in values.items():
        tcl.setvar(k, v)
    try:
        tcl.eval(f"source {{{here / 'build.tcl'}}}")
        error = None
    except tkinter.TclError as e:
        error = str(e)
    return here, [str(c) for c in tcl.splitlist(tcl.getvar("calls"))], error


def test_met_timing_writes_bitstream_hwh_and_manifest(built, tmp_path):
    here, calls, error = run(built, tmp_path)
    assert error is None
    assert {p.name for p in (here / "out").iterdir()} == {"vdla.bit", "vdla.hwh", "vdla.json"}
    assert calls.index("make_wrapper") < calls.index("launch_runs") < calls.index("write_bitstream")


@pytest.mark.parametrize("kw, what", [({"wns": "-0.012"}, "setup WNS -0.012"), ({"whs": "-0.004"}, "hold WHS -0.004"),
                                      ({"tpws": "-0.100"}, "pulse width TPWS -0.100")])
def test_any_violation_stops_before_the_bitstream(built, tmp_path, kw, what):
    (built / "out").mkdir(exist_ok=True)
    (built / "out" / "vdla.bit").write_text("stale")        # a previous build's bitstream
    try:
        here, calls, error = run(built, tmp_path, **kw)
    finally:
        shutil.rmtree(built / "out")
    assert error and "timing not met at 100 MHz" in error and what in error and "no bitstream written" in error
    assert "write_bitstream" not in calls
    assert not (here / "out").exists()                       # the stale one is gone too


def test_failed_implementation_and_unclocked_design_stop(built, tmp_path):
    _, calls, error = run(built, tmp_path, status="route_design ERROR")
    assert "implementation failed" in error and "write_bitstream" not in calls
    _, _, error = run(built, tmp_path, period="5.000")
    assert "FCLK_CLK0 is not constrained to 10.000 ns" in error


def test_a_clock_the_ps_cannot_make_is_refused(built, tmp_path):
    _, calls, error = run(built, tmp_path, fclk="95.238095")
    assert "the PS makes FCLK_CLK0 = 95.238095 MHz, not the configuration's 100 MHz" in error
    assert "launch_runs" not in calls


def test_missing_hwh_is_an_error(built, tmp_path):
    _, calls, error = run(built, tmp_path, hwh="")
    assert "no hardware handoff" in error and "write_bitstream" not in calls


@pytest.mark.parametrize("vivado", ["2020.1", "2020.2", "2021.2", "2022.1", "2023.2", "2019.1"])
def test_runs_on_every_vivado_release(built, tmp_path, vivado):
    here, _, error = run(built, tmp_path, vivado=vivado)
    assert error is None and (here / "out" / "vdla.bit").exists()


def test_no_version_specific_output_paths(built):
    tcl = (built / "build.tcl").read_text()
    for line in tcl.splitlines():
        if ".gen/" in line and not line.lstrip().startswith("#"):   # only as the fallback next to .srcs/
            assert "glob -nocomplain" in line and ".srcs/sources_1/bd/" in line, line
    assert "runs/impl_1/" not in tcl and "[make_wrapper -files" in tcl
    assert tcl.index("file delete -force $here/out") < tcl.index("create_project")


def test_constraints_carry_the_configured_clock(built):
    xdc = (built / vivado_flow.CONSTRAINTS).read_text()
    assert xdc.startswith(f"# Generated by {pynq_z1.GENERATOR}")
    assert re.search(r"create_clock -name clk_fpga_0 -period 10\.000 \[get_pins", xdc)
    osdi = vivado_flow.constraints_xdc(load_config("osdi18-200"), pynq_z1.GENERATOR)
    assert "-period 5.000" in osdi and "200 MHz" in osdi
    tcl = (built / "build.tcl").read_text()
    assert "add_files -fileset constrs_1 -norecurse $here/constraints.xdc" in tcl
    assert "PROCESSING_ORDER LATE" in tcl and "PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ" in tcl
