"""The block design build.tcl makes (bitstreams.pynq_z1), from the calls it makes in tclsh with
Vivado's commands stubbed (tests/driver/vivado_stub.py): the memory master wired straight to its PS
port (no interconnect, no automation on that path), the control bus through GP0's automation with
the current clock keys, the PS7 preset required, the configured FCLK, the explicit address map and
the optional ILA. What Vivado's automation itself adds is not visible here (docs/board.md)."""

from __future__ import annotations

import pytest

from bitstreams import pynq_z1
from tests.driver.vivado_stub import PORT_SEGMENTS, run_project
from vdla_hw import regmap
from vdla_hw.config import load_config

IP = pynq_z1.IP_NAME


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """The scripts of tiny (HP0, 100 MHz), osdi18 (ACP) and osdi18-200 (HP0, 200 MHz) with the
    ILA, beside a stand-in rtl/ (build.tcl only adds its files; tests/driver/test_bitstream.py
    and test_ip_attributes.py check the real project and its Verilog)."""
    out = {}
    for name, kw in (("tiny", {}), ("osdi18", {}), ("osdi18-200", {"ila": True})):
        folder = tmp_path_factory.mktemp(name)
        (folder / "rtl").mkdir()
        (folder / "rtl" / f"{pynq_z1.AXI_TOP}.v").write_text(f"module {pynq_z1.AXI_TOP}; endmodule\n")
        (folder / "vdla.json").write_text("{}")
        pynq_z1.write_scripts(load_config(name), folder, **kw)
        out[name] = folder
    return out


def config_of(call: list[str]) -> dict[str, str]:
    """The -config dictionary of an apply_bd_automation call (a Tcl dict: key value ...)."""
    import shlex

    text = call[call.index("-config") + 1]
    words = shlex.split(text.replace("{", '"').replace("}", '"'))
    assert len(words) % 2 == 0, text
    return dict(zip(words[::2], words[1::2]))


@pytest.mark.parametrize("name, slave", [("tiny", "S_AXI_HP0"), ("osdi18", "S_AXI_ACP")])
def test_memory_master_is_wired_straight_to_its_ps_port(projects, tmp_path, name, slave):
    r = run_project(projects[name], tmp_path)
    assert r.error is None, r.error
    assert ["connect_bd_intf_net", f"{IP}/m_axi", f"ps7/{slave}"] in r.calls
    # nothing else touches the memory path: no automation names it, no interconnect is created
    for call in r.named("apply_bd_automation"):
        assert not {"m_axi", slave} & {v.rsplit("/", 1)[-1] for v in config_of(call).values()}, call
        assert not any(slave in word or "m_axi" in word for word in call), call
    cells = [c[-1] for c in r.named("create_bd_cell")]
    assert not any("interconnect" in " ".join(c) or "smartconnect" in " ".join(c) for c in r.named("create_bd_cell")), cells
    # the port's clock is FCLK_CLK0, with the accelerator's
    [clocks] = [c for c in r.named("connect_bd_net") if "ps7/FCLK_CLK0" in c and f"{IP}/clk" in c]
    assert f"ps7/{slave}_ACLK" in clocks and "ps7/M_AXI_GP0_ACLK" in clocks
    other = "S_AXI_ACP" if slave == "S_AXI_HP0" else "S_AXI_HP0"
    assert not any(other in word for call in r.calls for word in call)


def test_control_bus_automation_uses_the_current_clock_keys(projects, tmp_path):
    r = run_project(projects["tiny"], tmp_path)
    axi = [c for c in r.named("apply_bd_automation") if "xilinx.com:bd_rule:axi4" in c]
    assert len(axi) == 1
    cfg = config_of(axi[0])
    assert cfg["Master"] == "/ps7/M_AXI_GP0" and cfg["Slave"] == f"/{IP}/s_axil"
    assert {"Clk_master", "Clk_slave", "Clk_xbar"} <= set(cfg) and "Clk" not in cfg
    assert {cfg[k] for k in ("Clk_master", "Clk_slave", "Clk_xbar")} == {"/ps7/FCLK_CLK0"}
    assert axi[0][-1] == f"{IP}/s_axil"


def test_without_the_board_preset_the_build_stops(projects, tmp_path):
    r = run_project(projects["tiny"], tmp_path, boards="")
    assert r.error and "no PYNQ-Z1 board files" in r.error and "vivado-boards" in r.error
    assert "create_bd_design" not in r.commands() and "write_bitstream" not in r.commands()
    r = run_project(projects["tiny"], tmp_path)   # with them: the last matching board part is used
    [prop] = [c for c in r.named("set_property") if c[1] == "board_part"]
    assert prop[2] == "digilentinc.com:pynq-z1:part0:1.0"
    preset = [c for c in r.named("apply_bd_automation") if "xilinx.com:bd_rule:processing_system7" in c]
    assert preset and config_of(preset[0])["apply_board_preset"] == "1"


@pytest.mark.parametrize("name, mhz", [("tiny", "100"), ("osdi18-200", "200")])
def test_fclk_is_the_configurations_clock(projects, tmp_path, name, mhz):
    r = run_project(projects[name], tmp_path, fclk=f"{mhz}.000000", period=f"{1000 / float(mhz):.3f}")
    assert r.error is None, r.error
    [ps] = [c for c in r.named("set_property") if c[1] == "-dict" and "CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ" in c[2]]
    words = ps[2].split()
    assert words[words.index("CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ") + 1] == mhz
    assert r.commands().index("create_bd_design") < r.commands().index("write_bitstream")


@pytest.mark.parametrize("name, slave", [("tiny", "S_AXI_HP0"), ("osdi18", "S_AXI_ACP")])
def test_address_map_is_explicit(projects, tmp_path, name, slave):
    r = run_project(projects[name], tmp_path)
    assigned = r.named("assign_bd_address")
    assert all("-offset" in c and "-range" in c for c in assigned)     # no bare assign_bd_address
    ctrl = [c for c in assigned if f"{IP}/s_axil/reg0" in c]
    assert len(ctrl) == 1 and ctrl[0][ctrl[0].index("-offset") + 1] == f"0x{pynq_z1.CONTROL_BASE:08X}"
    assert int(ctrl[0][ctrl[0].index("-range") + 1], 16) == pynq_z1.CONTROL_SPAN >= regmap.SPAN
    ddr, *others = PORT_SEGMENTS[slave]
    mem = [c for c in assigned if f"/ps7/{slave}/{ddr}" in c]
    assert len(mem) == 1 and f"{IP}/m_axi" in mem[0]
    assert int(mem[0][mem[0].index("-range") + 1], 16) == pynq_z1.DDR_SPAN
    excluded = {c[-1] for c in r.named("exclude_bd_addr_seg")}
    assert excluded == {f"/ps7/{slave}/{seg}" for seg in others}
    assert r.commands().index("exclude_bd_addr_seg") < r.commands().index("validate_bd_design")


def test_ila_watches_both_buses_only_when_asked(projects, tmp_path):
    r = run_project(projects["osdi18-200"], tmp_path, fclk="200.000000", period="5.000")
    assert r.error is None, r.error
    [ila] = [c for c in r.named("create_bd_cell") if "xilinx.com:ip:system_ila" in c]
    slots = {c[2] for c in r.named("connect_bd_intf_net") if c[1].startswith(f"{ila[-1]}/SLOT_")}
    assert slots == {f"{IP}/s_axil", f"{IP}/m_axi"}
    assert r.commands().index("write_bitstream") < r.commands().index("write_debug_probes")
    assert (r.here / "out" / "vdla.ltx").exists()
    plain = run_project(projects["tiny"], tmp_path)
    assert "write_debug_probes" not in plain.commands()
    assert not [c for c in plain.named("create_bd_cell") if "xilinx.com:ip:system_ila" in c]


def test_hierarchical_build_writes_the_per_block_reports(projects, tmp_path):
    """--hierarchical: the same flow, plus the utilisation per block of the hierarchy and each
    block's worst path, after the whole design's reports and before the timing gate."""
    folder = tmp_path / "hier"
    (folder / "rtl").mkdir(parents=True)
    (folder / "rtl" / f"{pynq_z1.AXI_TOP}.v").write_text(f"module {pynq_z1.AXI_TOP}; endmodule\n")
    (folder / "vdla.json").write_text("{}")
    pynq_z1.write_scripts(load_config("tiny"), folder, hierarchical=True)
    r = run_project(folder, tmp_path)
    assert r.error is None, r.error
    [blocks] = [c for c in r.named("report_utilization") if "-hierarchical" in c]
    assert blocks[-1].endswith("/out_utilization_blocks.rpt")
    cmds = r.commands()
    assert cmds.index("report_timing_summary") < cmds.index("report_utilization", cmds.index("report_timing_summary")) \
        < cmds.index("write_bitstream")
    plain = run_project(projects["tiny"], tmp_path)
    assert not [c for c in plain.named("report_utilization") if "-hierarchical" in c]
    extra = [c for c in r.calls if "-hierarchical" in c and c[0] in ("report_utilization", "get_cells")]
    assert len(extra) == 2 and [c[0] for c in r.calls if c not in extra] == plain.commands()
