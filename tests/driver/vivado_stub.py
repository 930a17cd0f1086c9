"""Run the PYNQ-Z1 recipe's Tcl (build.tcl, constraints.xdc) in a real Tcl interpreter (Debian's
``tclsh``, apt package tcl: scripts/setup.sh) with Vivado's commands stubbed: each stub records
its call (command and arguments after Tcl's substitution) and answers what the script reads.

What this checks: the script parses and runs as Tcl, which commands it calls in which order with
which arguments, and where it stops (``error``). What it cannot check: what Vivado does with those
commands (listed in docs/board.md)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

TCLSH = shutil.which("tclsh")
SEP, END = "\x1f", "\x1e"   # between a call's words; after each call
# the segments each PS7 slave port offers a master (the stub's answer to get_bd_addr_segs ps7/<port>/*)
PORT_SEGMENTS = {"S_AXI_HP0": ("HP0_DDR_LOWOCM", "HP0_HIGH_OCM"),
                 "S_AXI_ACP": ("ACP_DDR_LOWOCM", "ACP_HIGH_OCM", "ACP_IOP", "ACP_M_AXI_GP0", "ACP_QSPI_LINEAR")}

STUBS = r"""
set ::log [open $::calls_file w]
fconfigure $::log -encoding utf-8
proc record {words} { puts -nonewline $::log "[join $words \x1f]\x1e" }
proc unknown {args} { record $args; return "" }
proc version {args} { record [list version {*}$args]; return $::vivado }
proc get_board_parts {args} { record [list get_board_parts {*}$args]; return $::boards }
proc make_wrapper {args} { record [list make_wrapper {*}$args]; return /gen/vdla_wrapper.v }
proc get_timing_paths {args} { if {[lsearch $args -setup] >= 0} { return setup_path }; return hold_path }
proc get_clocks {args} { return clk_fpga_0 }
proc get_pins {args} { return [lindex $args end] }
proc get_files {args} { if {[lsearch -glob $args *.hwh] >= 0} { return $::hwh }; return [lindex $args end] }
proc write_bitstream {args} { record [list write_bitstream {*}$args]; close [open [lindex $args end] w] }
proc write_debug_probes {args} { record [list write_debug_probes {*}$args]; close [open [lindex $args end] w] }
# block-design objects: their name (so recorded calls show what they connect); nets: none yet
foreach cmd {get_bd_cells get_bd_pins get_bd_intf_pins get_bd_addr_spaces get_bd_intf_nets} {
    proc $cmd {args} "
        if {\[lsearch \$args -filter\] >= 0} { return rst_ps7 }
        return \[lindex \$args end\]"
}
proc get_bd_nets {args} { return "" }
proc get_bd_addr_segs {args} {
    set name [lindex $args end]
    if {[regexp {^ps7/(S_AXI_\w+)/\*$} $name -> port]} {
        set out {}
        foreach seg [dict get $::segments $port] { lappend out /ps7/$port/$seg }
        return $out
    }
    return $name
}
proc get_property {args} {
    set name [lindex $args end-1]
    set obj [lindex $args end]
    switch -glob -- $name {
        CONFIG.PCW_ACT_* { return $::fclk }
        STATUS { return $::status }
        PERIOD { return $::period }
        INPUT_JITTER { return $::jitter }
        SLACK { if {$obj eq "setup_path"} { return $::wns } else { return $::whs } }
        STATS.TPWS { return $::tpws }
        default { return "" }
    }
}
"""


@dataclass
class Run:
    """One run of a script: the calls it made (each a list of words), its error (None if it
    finished) and the folder it ran in."""
    calls: list[list[str]]
    error: str | None
    here: Path

    def named(self, command: str) -> list[list[str]]:
        return [c for c in self.calls if c and c[0] == command]

    def commands(self) -> list[str]:
        return [c[0] for c in self.calls if c]


def run_tcl(script: Path, workdir: Path, **values: str) -> Run:
    """Source ``script`` in tclsh with the stubs and the given answers (see :data:`DEFAULTS`)."""
    if TCLSH is None:
        raise RuntimeError("tclsh not found: install Debian's tcl package (scripts/setup.sh does)")
    calls_file = workdir / "calls.bin"
    answers = DEFAULTS | values
    driver = workdir / "driver.tcl"
    driver.write_text(
        f"set ::calls_file {{{calls_file}}}\n"
        + "".join(f"set ::{k} {{{v}}}\n" for k, v in answers.items())
        + "set ::segments [dict create " + " ".join(f"{p} {{{' '.join(s)}}}" for p, s in PORT_SEGMENTS.items()) + "]\n"
        + STUBS
        + f"if {{[catch {{source {{{script}}}}} msg]}} {{ close $::log; puts stderr $msg; exit 3 }}\nclose $::log\n")
    done = subprocess.run([TCLSH, str(driver)], capture_output=True, text=True, cwd=workdir, timeout=60)
    if done.returncode not in (0, 3):
        raise RuntimeError(f"tclsh failed ({done.returncode}): {done.stderr.strip()}")
    text = calls_file.read_text(encoding="utf-8") if calls_file.exists() else ""
    calls = [rec.split(SEP) for rec in text.split(END) if rec]
    return Run(calls, done.stderr.strip() if done.returncode == 3 else None, script.parent)


DEFAULTS = {"vivado": "2022.1", "boards": "digilentinc.com:pynq-z1:part0:1.0", "fclk": "100.000000",
            "status": "route_design Complete!", "period": "10.000", "jitter": "0.300", "wns": "0.250",
            "whs": "0.030", "tpws": "0.000", "hwh": ""}


def run_project(project: Path, tmp_path: Path, **values: str) -> Run:
    """Run ``project``'s build.tcl in a copy of the folder (with a .hwh to find unless ``hwh`` is given)."""
    here = tmp_path / f"proj{len(list(tmp_path.glob('proj*')))}"
    shutil.copytree(project, here)
    if "hwh" not in values:
        hwh = here / "found.hwh"
        hwh.write_text("<hwh/>")
        values["hwh"] = str(hwh)
    return run_tcl(here / "build.tcl", here, **values)
