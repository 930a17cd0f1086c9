"""The interface attributes on the FPGA top that `vdla hw bitstream` writes (vdla_hw.rtl.ip_attrs),
read back by an independent Verilog front end (yosys ``read_verilog -lib``: the attributes it
attaches to each port are the ones a tool reading the file sees): every port of both buses, the
clock (FREQ_HZ = CLOCK_MHZ, both buses, the reset), the reset's polarity, the interrupt's
sensitivity, AXI3 / AXI4LITE with the declared widths; and nothing but attribute lines added to
the Verilog the benches simulate. tiny's project is checked in the fast tier
(tests/driver/test_bitstream.py); another port at another clock, and the byte-for-byte check, here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from bitstreams import pynq_z1
from vdla_hw.config import Config, load_config, with_port
from vdla_hw.rtl.axi_top import PORT_ATTRIBUTES

pytestmark = pytest.mark.skipif(importlib.util.find_spec("myhdl") is None, reason="needs MyHDL (requirements/rtl.txt)")

AXI3_CHANNELS = {"AW": ("ID", "ADDR", "LEN", "SIZE", "BURST", "LOCK", "CACHE", "PROT", "QOS", "VALID", "READY"),
                 "W": ("ID", "DATA", "STRB", "LAST", "VALID", "READY"), "B": ("ID", "RESP", "VALID", "READY"),
                 "AR": ("ID", "ADDR", "LEN", "SIZE", "BURST", "LOCK", "CACHE", "PROT", "QOS", "VALID", "READY"),
                 "R": ("ID", "DATA", "RESP", "LAST", "VALID", "READY")}
AXI_LITE = ("AWADDR", "AWVALID", "AWREADY", "WDATA", "WSTRB", "WVALID", "WREADY", "BRESP", "BVALID", "BREADY",
            "ARADDR", "ARVALID", "ARREADY", "RDATA", "RRESP", "RVALID", "RREADY")
AXIMM = "xilinx.com:interface:aximm:1.0"


def read_ports(verilog: Path) -> dict[str, dict]:
    """Port name -> {"direction", "width", "attributes"} as yosys reads the module."""
    from vdla_hw.rtl.synth import yosys

    out = verilog.parent / "ports.json"
    subprocess.run(yosys() + ["-q", "-p", f"read_verilog -lib {verilog.name}; write_json {out.name}"],
                   cwd=verilog.parent, check=True, capture_output=True)
    module = json.loads(out.read_text())["modules"][pynq_z1.AXI_TOP]
    out.unlink()
    return {name: {"direction": port["direction"], "width": len(port["bits"]),
                   "attributes": module["netnames"][name]["attributes"]} for name, port in module["ports"].items()}


def params(text: str) -> dict[str, str]:
    """An X_INTERFACE_PARAMETER value ("KEY value, KEY value") as a dict."""
    return dict(item.strip().split(" ", 1) for item in text.split(","))


def check_attributes(verilog: Path, config: Config) -> dict[str, dict]:
    """Assert every interface attribute of the FPGA top written for ``config``; returns the ports."""
    ports = read_ports(verilog)
    hz = str(int(round(float(config.CLOCK_MHZ) * 1e6)))
    info = {name: p["attributes"].get("X_INTERFACE_INFO") for name, p in ports.items()}
    assert None not in info.values(), [n for n, v in info.items() if v is None]      # every port, no inference
    # clock, reset, interrupt
    assert info["clk"] == "xilinx.com:signal:clock:1.0 clk CLK"
    clk = params(ports["clk"]["attributes"]["X_INTERFACE_PARAMETER"])
    assert set(clk["ASSOCIATED_BUSIF"].split(":")) == {"s_axil", "m_axi"}
    assert clk["ASSOCIATED_RESET"] == "rst" and clk["FREQ_HZ"] == hz
    assert info["rst"] == "xilinx.com:signal:reset:1.0 rst RST"
    assert params(ports["rst"]["attributes"]["X_INTERFACE_PARAMETER"])["POLARITY"] == "ACTIVE_HIGH"
    assert info["irq"] == "xilinx.com:signal:interrupt:1.0 irq INTERRUPT" and ports["irq"]["direction"] == "output"
    assert params(ports["irq"]["attributes"]["X_INTERFACE_PARAMETER"])["SENSITIVITY"] == "LEVEL_HIGH"
    # the buses: each port maps to its own logical signal, the whole signal set is there
    user = PORT_ATTRIBUTES[config.MEM_PORT]["user"] is not None
    expect = {"m_axi": {ch + f for ch, fields in AXI3_CHANNELS.items() for f in fields} | ({"ARUSER", "AWUSER"} if user else set()),
              "s_axil": set(AXI_LITE)}
    for bus, logical in expect.items():
        mine = {n: info[n].split() for n in ports if n.startswith(bus + "_")}
        assert all(v[0] == AXIMM and v[1] == bus and v[2] == n[len(bus) + 1:].upper() for n, v in mine.items()), mine
        assert {v[2] for v in mine.values()} == logical
        bus_params = [params(ports[n]["attributes"]["X_INTERFACE_PARAMETER"]) for n in mine
                      if "X_INTERFACE_PARAMETER" in ports[n]["attributes"]]
        assert len(bus_params) == 1, bus                    # one port carries the interface's parameters
        [p] = bus_params
        assert p["XIL_INTERFACENAME"] == bus and p["FREQ_HZ"] == hz
        assert p["DATA_WIDTH"] == str(ports[f"{bus}_wdata"]["width"]) and p["ADDR_WIDTH"] == str(ports[f"{bus}_awaddr"]["width"])
        for sig in ("burst", "lock", "cache", "prot", "qos", "region"):   # optional signals: declared iff present
            assert p[f"HAS_{sig.upper()}"] == str(int(f"{bus}_ar{sig}" in ports)), (bus, sig)
        if bus == "m_axi":
            assert p["PROTOCOL"] == "AXI3" and p["DATA_WIDTH"] == str(8 * config.MEM_BYTES_PER_BEAT)
            assert p["ID_WIDTH"] == str(ports["m_axi_arid"]["width"]) == str(PORT_ATTRIBUTES[config.MEM_PORT]["id_bits"])
            assert p["ARUSER_WIDTH"] == p["AWUSER_WIDTH"] == ("5" if user else "0")
            assert p["NUM_READ_OUTSTANDING"] == str(config.MEM_READ_OUTSTANDING)
            assert p["NUM_WRITE_OUTSTANDING"] == str(config.MEM_WRITE_OUTSTANDING)
            assert p["MAX_BURST_LENGTH"] == str(config.MEM_MAX_BURST)
            masters = ("AWVALID", "WVALID", "ARVALID", "RREADY", "BREADY")   # what a master drives
        else:
            assert p["PROTOCOL"] == "AXI4LITE" and p["DATA_WIDTH"] == "32"
            masters = ("AWREADY", "WREADY", "ARREADY", "RVALID", "BVALID")   # what a slave drives
        assert all(ports[f"{bus}_{s.lower()}"]["direction"] == "output" for s in masters)
    return ports


def test_a_port_of_no_interface_is_an_error_not_an_inference():
    from vdla_hw.errors import VdlaError
    from vdla_hw.rtl.convert import to_verilog
    from vdla_hw.rtl.ip_attrs import interface_attributes

    ports = {"clk": ("input", 1), "rst": ("input", 1), "irq": ("output", 1), "s_axil_awaddr": ("input", 8),
             "s_axil_wdata": ("input", 32), "m_axi_araddr": ("output", 32), "m_axi_arid": ("output", 6),
             "m_axi_awaddr": ("output", 32), "m_axi_wdata": ("output", 64), "debug_out": ("output", 4)}
    with pytest.raises(VdlaError, match="port 'debug_out' of the FPGA top belongs to no Vivado interface"):
        interface_attributes(load_config("tiny"), ports)
    del ports["debug_out"]
    assert interface_attributes(load_config("tiny"), ports)["m_axi_araddr"][0] == ("X_INTERFACE_INFO", f"{AXIMM} m_axi ARADDR")
    with pytest.raises(VdlaError, match="interface attributes are for the FPGA top vdla_axi_top, not vdla_top"):
        to_verilog("tiny", ".", top="vdla_top", ip_attributes=True)


@pytest.fixture(scope="module")
def acp_200(tmp_path_factory):
    """tiny on the ACP port at 200 MHz: the other port's signal set (AxUSER, 3-bit IDs), another clock."""
    base = with_port(load_config("tiny"), "acp")
    config = replace(base, name="tiny@acp-200", params={**base.params, "CLOCK_MHZ": 200.0})
    out = tmp_path_factory.mktemp("acp200")
    pynq_z1.write_project(config, out)
    return config, out


@pytest.mark.slow
def test_acp_port_at_200_mhz_has_every_attribute(acp_200):
    config, out = acp_200
    ports = check_attributes(out / "rtl" / f"{pynq_z1.AXI_TOP}.v", config)
    assert params(ports["clk"]["attributes"]["X_INTERFACE_PARAMETER"])["FREQ_HZ"] == "200000000"
    assert "m_axi_aruser" in ports and ports["m_axi_arid"]["width"] == 3
    manifest = json.loads((out / "vdla.json").read_text())
    assert manifest["clock_mhz"] == 200.0 and manifest["memory_port"]["ps7_port"] == "S_AXI_ACP"


@pytest.mark.slow
def test_only_attribute_lines_are_added_to_the_simulated_verilog(acp_200, tmp_path):
    """Vivado builds the Verilog the benches simulate: without the attribute lines the file is the
    converter's text byte for byte."""
    from vdla_hw.rtl.convert import to_verilog
    from vdla_hw.rtl.ip_attrs import is_attribute_line

    config, out = acp_200
    built = (out / "rtl" / f"{pynq_z1.AXI_TOP}.v").read_text()
    simulated = to_verilog(config, tmp_path, top=pynq_z1.AXI_TOP).read_text()
    kept = [line for line in built.split("\n") if not is_attribute_line(line)]
    assert "\n".join(kept) == simulated
    assert len(built.split("\n")) - len(kept) > len(read_ports(out / "rtl" / f"{pynq_z1.AXI_TOP}.v"))


@pytest.mark.slow
def test_simulators_accept_the_attributed_verilog(acp_200, tmp_path):
    """Icarus compiles it and Verilator lints it with every warning (-Wall) but the three classes
    convert.header waives: the attribute lines add no warning."""
    import shutil
    import sys

    verilog = acp_200[1] / "rtl" / f"{pynq_z1.AXI_TOP}.v"
    iverilog = shutil.which("iverilog")
    assert iverilog, "iverilog not installed (scripts/setup.sh)"
    done = subprocess.run([iverilog, "-o", str(tmp_path / "a.out"), str(verilog)], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    verilator = Path(sys.executable).parent / "verilator"
    done = subprocess.run([str(verilator), "--lint-only", "-Wall", str(verilog)], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0 and "%Warning" not in done.stderr, done.stderr
