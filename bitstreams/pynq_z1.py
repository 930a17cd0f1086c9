"""The PYNQ-Z1 build recipe: a Vivado project folder that turns the Verilog of ``vdla hw
verilog`` into ``vdla.bit`` + ``vdla.hwh`` for pynq, and the manifest the driver checks.

``write_project(config, out_dir)`` writes::

    out_dir/rtl/vdla_axi_top.v  the FPGA top: the accelerator with the port's AXI3 master (vdla_hw.rtl.axi_top),
                             every port with Vivado's interface attributes (vdla_hw.rtl.ip_attrs);
                             with ``hierarchical``, one module per block before it (vdla_hw.rtl.hier)
    out_dir/build.tcl        Vivado batch script: block design, synthesis, implementation, timing gate
    out_dir/constraints.xdc  user constraints: none (the clock is the PS7's own, see below)
    out_dir/vdla.json        the manifest (copied next to the bitstream as out/vdla.json)
    out_dir/README.txt       what to run and what comes out

and returns the one command to run there (``vivado -mode batch -source build.tcl``), which
leaves ``out/vdla.bit``, ``out/vdla.hwh`` and ``out/vdla.json``: copy that folder to the board.

Block design: the Zynq PS7 (``processing_system7``) with its DDR/FIXED_IO made external and the
PYNQ-Z1 board preset from Digilent's board files (the build stops without them); M_AXI_GP0
drives the control slave (``s_axil``, AXI-lite, ``vdla_hw.regmap``) through an AXI interconnect
(GP0 is AXI3 with 12-bit IDs: the interconnect converts) at :data:`CONTROL_BASE`; the
accelerator's memory master (``m_axi``, ``vdla_axi_top`` of ``vdla_hw.rtl.axi_top``) has the AXI3
signal set of the configuration's port (``MEM_PORT``, or ``vdla hw bitstream --port``; :data:`PS7_PORTS`)
and is wired straight to it (``connect_bd_intf_net``: same protocol, data and ID width, clock),
with no interconnect and no protocol conversion:

* ``acp``: S_AXI_ACP (3-bit IDs), coherent with the CPU caches through the SCU, as VTA's PYNQ build
  (``PCW_USE_S_AXI_ACP``). The master drives AxCACHE 0b1111 and AxUSER 0b11111 (coherent requests
  need AxCACHE[1] = 1 and AxUSER[0] = 1, UG585 ch. 3.5); the PS7's "default ACP user value"
  option is set as in VTA's build, so the PS applies the same AxUSER whatever the master drives.
* ``hp``: S_AXI_HP0 (6-bit IDs), not coherent (the driver flushes and invalidates), AxCACHE 0b0011.

The address map is explicit: the registers at :data:`CONTROL_BASE` (:data:`CONTROL_SPAN`), and the
master sees the DDR (:data:`DDR_BASE`, :data:`DDR_SPAN`) and no other segment of its port.
Its ``irq`` (STATUS done or error, level) goes to IRQ_F2P[0]. ``ila`` adds a System ILA on both buses.
One clock: FCLK_CLK0, at the configuration's clock, drives the whole design (no gated or derived
clock, no latch; ``vdla hw synth --top axi`` checks that), constrained by the PS7 IP itself (its
period from the achieved frequency, and its input jitter; no later ``create_clock`` replaces it);
the build checks the PS's achieved frequency and the timed period and jitter. The build stops,
and writes no bitstream, on any setup, hold or pulse-width violation (bitstreams.vivado_flow). No
vendor binaries are written or kept in git.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from bitstreams.vivado_flow import CONSTRAINTS, constraints_xdc, fclk_check_tcl, implementation_tcl, version_check_tcl
from vdla_hw import regmap
from vdla_hw.rtl import ip_attrs
from vdla_hw.config import ISA_VERSION, Config, load_config, with_port

PART = "xc7z020clg400-1"
BOARD_PART_PATTERN = "*pynq-z1*"
VIVADO_VERSION = "2022.1"  # the Vivado release the PYNQ v3.0 images were built with
IP_NAME = "vdla_0"
CONTROL_BASE = 0x43C0_0000  # first M_AXI_GP0 address Vivado hands out on Zynq-7000
CONTROL_SPAN = regmap.ADDRESS_SPACE   # 4 KiB, the smallest AXI segment, all of it decoded by the slave (SLVERR past regmap.SPAN)
DDR_BASE, DDR_SPAN = 0x0000_0000, 0x2000_0000   # the PYNQ-Z1's 512 MiB DDR3 (Digilent PYNQ-Z1 reference manual)
ILA_DEPTH = 1024            # samples per trigger of the optional ILA (vdla hw bitstream --ila)
MANIFEST_FORMAT = "vdla-bitstream"  # driver.pynq_device reads this format
GENERATOR = "bitstreams.pynq_z1 (vdla hw bitstream)"
AXI_TOP = "vdla_axi_top"    # vdla_hw.rtl.axi_top: s_axil_* slave, AXI3 master m_axi_*, irq
RAW_TOP = "vdla_top"        # the core with the raw one-beat-per-cycle memory port
# MEM_PORT -> the PS7 slave port and the processing_system7 settings that enable it. ACP: VTA's
# PYNQ build sets the same two (hardware/xilinx/scripts/vivado.tcl); HP0: 64 bits wide.
PS7_PORTS = {
    "acp": {"slave": "S_AXI_ACP", "settings": {"PCW_USE_S_AXI_ACP": "1", "PCW_USE_DEFAULT_ACP_USER_VAL": "1"}},
    "hp": {"slave": "S_AXI_HP0", "settings": {"PCW_USE_S_AXI_HP0": "1", "PCW_S_AXI_HP0_DATA_WIDTH": None}},
}


def ps7_settings(config: Config) -> dict[str, str]:
    """The processing_system7 CONFIG.* values that enable the configuration's memory port."""
    out = {}
    for key, value in PS7_PORTS[config.MEM_PORT]["settings"].items():
        out[key] = str(8 * config.MEM_BYTES_PER_BEAT) if value is None else value   # None: the data width
    return out


def vivado_command() -> str:
    return "vivado -mode batch -source build.tcl -log build.log -journal build.jou"


def manifest(config: Config, verilog: Path, top: str, hierarchical: bool = False) -> dict:
    """What the driver checks before it trusts a bitstream (driver.pynq_device.load_manifest);
    ``hierarchical``: the Verilog keeps one module per block (vdla_hw.rtl.hier)."""
    from vdla_hw.rtl.axi_top import port_attributes

    attrs = port_attributes(config)
    return {
        "format": MANIFEST_FORMAT,
        "generator": GENERATOR,
        "fingerprint": config.fingerprint,
        "isa_version": ISA_VERSION,
        "config": json.loads(config.to_json()),
        "clock_mhz": config.CLOCK_MHZ,
        "board": "PYNQ-Z1",
        "part": PART,
        "vivado": VIVADO_VERSION,
        "ip_name": IP_NAME,
        "top": top,
        "control_base": CONTROL_BASE,
        "control_span": CONTROL_SPAN,
        "memory_port": {"mem_port": config.MEM_PORT, "ps7_port": PS7_PORTS[config.MEM_PORT]["slave"],
                        "coherent": config.coherent, "axcache": attrs["cache"], "axprot": attrs["prot"],
                        "axuser": attrs["user"], "data_bits": 8 * config.MEM_BYTES_PER_BEAT, "protocol": "AXI3"},
        "registers": {r.name: r.offset for r in regmap.REGISTERS},
        "verilog_sha256": hashlib.sha256(verilog.read_bytes()).hexdigest(),
        "verilog_hierarchical": hierarchical,
    }


def ila_tcl(ip: str) -> str:
    """The optional debug core: a System ILA watching the control bus and the memory bus (both
    interfaces in monitor mode, every channel's handshake, address and data), on FCLK_CLK0."""
    return f"""# debug (--ila): a System ILA on s_axil and m_axi; out/vdla.ltx holds its probes for the hardware manager
create_bd_cell -type ip -vlnv xilinx.com:ip:system_ila ila
set_property -dict [list CONFIG.C_MON_TYPE {{INTERFACE}} CONFIG.C_NUM_MONITOR_SLOTS {{2}} CONFIG.C_DATA_DEPTH {{{ILA_DEPTH}}} \\
    CONFIG.C_SLOT_0_INTF_TYPE {{xilinx.com:interface:aximm_rtl:1.0}} CONFIG.C_SLOT_1_INTF_TYPE {{xilinx.com:interface:aximm_rtl:1.0}}] \\
    [get_bd_cells ila]
connect_bd_intf_net [get_bd_intf_pins ila/SLOT_0_AXI] [get_bd_intf_pins {ip}/s_axil]
connect_bd_intf_net [get_bd_intf_pins ila/SLOT_1_AXI] [get_bd_intf_pins {ip}/m_axi]
connect_bd_net [get_bd_pins ps7/FCLK_CLK0] [get_bd_pins ila/clk]
connect_bd_net [get_bd_pins [lindex [get_bd_cells -filter {{VLNV =~ "*proc_sys_reset*"}}] 0]/peripheral_aresetn] [get_bd_pins ila/resetn]
"""


def _tcl(config: Config, top: str, ila: bool = False, hierarchical: bool = False) -> str:
    c = config
    from vdla_hw.rtl.axi_top import port_attributes

    attrs = port_attributes(c)
    slave = PS7_PORTS[c.MEM_PORT]["slave"]
    port_settings = "".join(f"    CONFIG.{k} {{{v}}} \\\n" for k, v in ps7_settings(c).items())
    return f"""# Generated by {GENERATOR} -- do not edit by hand.
# configuration: {c.name}  fingerprint: {c.fingerprint}  ISA v{ISA_VERSION}
# Builds the PYNQ-Z1 overlay: out/vdla.bit, out/vdla.hwh, out/vdla.json. Run in this folder:
#   {vivado_command()}
set here [file normalize [file dirname [info script]]]
{version_check_tcl(VIVADO_VERSION)}create_project -force vdla_pynq_z1 $here/vivado -part {PART}
# the PYNQ-Z1 PS7 preset (DDR3 timing, MIO, clocks) is in Digilent's board files: without it the
# PS would keep Vivado's defaults and the board would not boot the design, so stop here
set boards [get_board_parts -quiet {BOARD_PART_PATTERN}]
if {{[llength $boards] == 0}} {{
    error "no PYNQ-Z1 board files ({BOARD_PART_PATTERN}): install Digilent's vivado-boards (board_files/pynq-z1) into Vivado's data/boards/board_files or set_param board.repoPaths, then run again"
}}
set_property board_part [lindex $boards end] [current_project]
add_files -norecurse [glob $here/rtl/*.v]
update_compile_order -fileset sources_1

create_bd_design vdla
create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7 ps7
apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \\
    -config {{make_external "FIXED_IO, DDR" apply_board_preset "1" Master "Disable" Slave "Disable"}} [get_bd_cells ps7]
set_property -dict [list \\
    CONFIG.PCW_USE_M_AXI_GP0 {{1}} \\
{port_settings}    CONFIG.PCW_EN_CLK0_PORT {{1}} \\
    CONFIG.PCW_EN_RST0_PORT {{1}} \\
    CONFIG.PCW_USE_FABRIC_INTERRUPT {{1}} \\
    CONFIG.PCW_IRQ_F2P_INTR {{1}} \\
    CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ {{{c.CLOCK_MHZ:g}}} \\
] [get_bd_cells ps7]
{fclk_check_tcl(c, "ps7")}
# the accelerator: {top} from rtl/ (module reference). Its ports carry Vivado's interface
# attributes (vdla_hw/rtl/ip_attrs.py): s_axil AXI4LITE, m_axi AXI3, clk (FREQ_HZ {ip_attrs.freq_hz(c)},
# ASSOCIATED_BUSIF s_axil:m_axi, ASSOCIATED_RESET rst), rst ACTIVE_HIGH, irq LEVEL_HIGH: nothing is inferred from names
create_bd_cell -type module -reference {top} {IP_NAME}
# one clock: FCLK_CLK0 drives the accelerator and the two PS ports it uses
connect_bd_net [get_bd_pins ps7/FCLK_CLK0] [get_bd_pins {IP_NAME}/clk] [get_bd_pins ps7/M_AXI_GP0_ACLK] [get_bd_pins ps7/{slave}_ACLK]
# control: M_AXI_GP0 (AXI3, 12-bit IDs) -> AXI interconnect (the protocol conversion to AXI-lite) -> s_axil (vdla_hw.regmap)
apply_bd_automation -rule xilinx.com:bd_rule:axi4 \\
    -config {{Clk_master {{/ps7/FCLK_CLK0}} Clk_slave {{/ps7/FCLK_CLK0}} Clk_xbar {{/ps7/FCLK_CLK0}} Master {{/ps7/M_AXI_GP0}} Slave {{/{IP_NAME}/s_axil}} intc_ip {{New AXI Interconnect}} master_apm {{0}}}} \\
    [get_bd_intf_pins {IP_NAME}/s_axil]
# memory: m_axi (AXI3: 4-bit AxLEN, WID; {8 * c.MEM_BYTES_PER_BEAT}-bit; bursts of at most {c.MEM_MAX_BURST} beats, never across 4 kB,
# up to {c.MEM_READ_OUTSTANDING} reads / {c.MEM_WRITE_OUTSTANDING} writes in flight) -> {slave} -> DDR, wired straight: same protocol,
# width, ID width and clock on both sides, so no interconnect and no protocol conversion
# MEM_PORT {c.MEM_PORT}: {"coherent through the SCU" if c.coherent else "not coherent"} (AxCACHE {attrs["cache"]:#06b}, AxPROT {attrs["prot"]:#05b}, AxUSER {"none" if attrs["user"] is None else format(attrs["user"], "#07b")})
connect_bd_intf_net [get_bd_intf_pins {IP_NAME}/m_axi] [get_bd_intf_pins ps7/{slave}]
# interrupt: irq (STATUS done or error, level high) -> IRQ_F2P[0] (the driver polls; the line is for later use)
connect_bd_net [get_bd_pins {IP_NAME}/irq] [get_bd_pins ps7/IRQ_F2P]
# rst is active high: the reset block's peripheral_reset, if automation did not connect it
if {{[llength [get_bd_nets -quiet -of_objects [get_bd_pins {IP_NAME}/rst]]] == 0}} {{
    set resetter [lindex [get_bd_cells -filter {{VLNV =~ "*proc_sys_reset*"}}] 0]
    connect_bd_net [get_bd_pins $resetter/peripheral_reset] [get_bd_pins {IP_NAME}/rst]
}}
{ila_tcl(IP_NAME) if ila else ""}# the address map, explicit (out/vdla.json: control_base, control_span): the registers (vdla_hw.regmap,
# 0x{regmap.SPAN:X} bytes) in one {CONTROL_SPAN // 1024} KiB segment of GP0; the accelerator sees the PYNQ-Z1's DDR and nothing else
assign_bd_address -offset 0x{CONTROL_BASE:08X} -range 0x{CONTROL_SPAN:X} \\
    -target_address_space [get_bd_addr_spaces ps7/Data] [get_bd_addr_segs {IP_NAME}/s_axil/reg0] -force
foreach seg [get_bd_addr_segs ps7/{slave}/*] {{
    if {{[string match "*_DDR_LOWOCM" $seg]}} {{
        assign_bd_address -offset 0x{DDR_BASE:08X} -range 0x{DDR_SPAN:08X} \\
            -target_address_space [get_bd_addr_spaces {IP_NAME}/m_axi] $seg -force
    }} else {{
        exclude_bd_addr_seg -target_address_space [get_bd_addr_spaces {IP_NAME}/m_axi] $seg
    }}
}}
validate_bd_design
save_bd_design

{implementation_tcl(c, "vdla", debug_probes=ila, per_block=hierarchical)}file copy -force $here/vdla.json $here/out/vdla.json
puts "built out/vdla.bit, out/vdla.hwh, out/vdla.json ({c.fingerprint}); copy out/ to the board"
"""


def top_module(verilog_dir: Path) -> tuple[str, list[str]]:
    """The top to instantiate and what is missing for a real build (empty when complete)."""
    text = "\n".join(p.read_text() for p in sorted(verilog_dir.glob("*.v")))
    if re.search(rf"\bmodule\s+{AXI_TOP}\b", text) and "m_axi_" in text:
        return AXI_TOP, []
    return AXI_TOP, [f"the RTL has no {AXI_TOP} top with an AXI3 master (m_axi_*) yet: {RAW_TOP} exposes the raw "
                     "one-beat-per-cycle memory port, which HP0 cannot serve; Vivado will stop at the module "
                     "reference until vdla_hw.rtl provides that wrapper"]


def write_scripts(config: Config, out: Path, top: str = AXI_TOP, ila: bool = False, hierarchical: bool = False) -> None:
    """The project's Vivado scripts alone: ``build.tcl`` and ``constraints.xdc`` (they depend on
    the configuration, not on the Verilog's text, which build.tcl reads from ``rtl/``; with
    ``hierarchical``, build.tcl also writes the per-block reports)."""
    (out / "build.tcl").write_text(_tcl(config, top, ila=ila, hierarchical=hierarchical))
    (out / CONSTRAINTS).write_text(constraints_xdc(config, GENERATOR))


def write_project(config: Config | str | None, out_dir: str | Path, port: str | None = None, ila: bool = False,
                  hierarchical: bool = False) -> str:
    """Write the Vivado project folder for ``config`` into ``out_dir``; returns the command to run
    in it. ``port`` ("acp" | "hp") builds for that PS port instead of the configuration's MEM_PORT
    (:func:`vdla_hw.config.with_port`: the port's timing parameters too, so the fingerprint in the
    manifest is that configuration's). ``ila``: add a System ILA on both buses (:func:`ila_tcl`).
    ``hierarchical``: the Verilog with one module per block (:mod:`vdla_hw.rtl.hier`, same top
    and ports), so Vivado's utilisation and timing reports can be read per block.
    :func:`missing_for_build` says what the RTL still lacks."""
    from vdla_hw.rtl.convert import to_verilog

    config = load_config(config)
    if port is not None:
        config = with_port(config, port)
    out = Path(out_dir)
    (out / "rtl").mkdir(parents=True, exist_ok=True)
    verilog = to_verilog(config, out / "rtl", top=AXI_TOP, ip_attributes=True, hierarchical=hierarchical)
    top, pending = top_module(out / "rtl")
    write_scripts(config, out, top, ila=ila, hierarchical=hierarchical)
    (out / "vdla.json").write_text(json.dumps(manifest(config, verilog, top, hierarchical), indent=2) + "\n")
    (out / "README.txt").write_text(
        f"Generated by {GENERATOR} for {config.name} ({config.fingerprint}).\n"
        f"Run here: {vivado_command()}\n"
        "Needs Vivado with Digilent's PYNQ-Z1 board files (vivado-boards); the build stops without them.\n"
        + ("The Verilog is hierarchical (one module per block): the build also writes the utilisation per\n"
           "block (out_utilization_blocks.rpt) and each block's worst path (out_timing_blocks.rpt).\n"
           if hierarchical else "")
        + f"Result: out/vdla.bit, out/vdla.hwh, out/vdla.json{' (and out/vdla.ltx, the ILA probes)' if ila else ''}"
        " -> copy out/ to the board as\n"
        f"/home/xilinx/vdla/bitstreams/{config.fingerprint}/ (see docs/board.md).\n"
        + "".join(f"NOT READY: {p}\n" for p in pending))
    return f"cd {out} && {vivado_command()}"


def missing_for_build(out_dir: str | Path) -> list[str]:
    """What stops Vivado from building the project in ``out_dir`` (empty when nothing does)."""
    return top_module(Path(out_dir) / "rtl")[1]
