"""Vivado's interface attributes on the FPGA top (``vdla_axi_top``), so that IP integrator's
module reference (bitstreams.pynq_z1) takes every bus, its clock, reset and interrupt from the
HDL instead of inferring them from port names.

Syntax and keys: AMD UG994 (Designing IP Subsystems Using IP Integrator, "HDL Parameters for
Interface Inference": ``X_INTERFACE_INFO`` = "VLNV INTERFACE_NAME LOGICAL_NAME" on every port of
an interface, ``X_INTERFACE_PARAMETER`` = "XIL_INTERFACENAME name, KEY value, ..." on one port of
it, in Verilog-2001 attribute syntax ``(* NAME = "value" *)`` prefixed to the port's declaration)
and UG1118 (Creating and Packaging Custom IP, "Inferring Clock and Reset Interfaces"); the
parameter names are those of the AXI interface (aximm) and the clock/reset/interrupt signal
definitions (ASSOCIATED_BUSIF, ASSOCIATED_RESET, FREQ_HZ, POLARITY, SENSITIVITY).

Contract of :func:`add_attributes`: every port of the module gets exactly one INFO attribute (an
unknown port is an error, not a port left to inference), each attribute on its own line right
before the port's ``input``/``output`` declaration, and nothing else changes: deleting the lines
:func:`is_attribute_line` matches gives back the converter's text byte for byte, so the Verilog
Vivado builds is the Verilog the benches simulate. Values come from the configuration (FREQ_HZ =
CLOCK_MHZ, outstanding transactions, burst length) and from the declared port widths, never typed
in twice.
"""

from __future__ import annotations

import re

from vdla_hw.config import Config
from vdla_hw.errors import VdlaError

AXIMM = "xilinx.com:interface:aximm:1.0"
CLOCK = "xilinx.com:signal:clock:1.0"
RESET = "xilinx.com:signal:reset:1.0"
INTERRUPT = "xilinx.com:signal:interrupt:1.0"
# the top's ports: clock, reset, interrupt and the two buses (prefix -> interface name)
CLK, RST, IRQ = "clk", "rst", "irq"
BUSES = {"s_axil_": "s_axil", "m_axi_": "m_axi"}
_DECL = re.compile(r"^(input|output|inout)\s+(?:\[(\d+):(\d+)\]\s+)?(\w+);$")
_ATTR = re.compile(r'^\(\* (X_INTERFACE_\w+) = "([^"]*)" \*\)$')


def freq_hz(config: Config) -> int:
    """The clock's FREQ_HZ: the configuration's CLOCK_MHZ in Hz."""
    return int(round(float(config.CLOCK_MHZ) * 1e6))


def port_widths(verilog: str) -> dict[str, tuple[str, int]]:
    """Port name -> (direction, width) from the module's ``input``/``output`` declarations."""
    out = {}
    for line in verilog.splitlines():
        m = _DECL.match(line)
        if m:
            direction, msb, lsb, name = m.groups()
            out[name] = (direction, 1 if msb is None else int(msb) - int(lsb) + 1)
    return out


def _params(**kv) -> str:
    return ", ".join(f"{k} {v}" for k, v in kv.items())


def interface_attributes(config: Config, ports: dict[str, tuple[str, int]]) -> dict[str, list[tuple[str, str]]]:
    """Port name -> its attributes [(name, value)] for the FPGA top whose ports are ``ports``
    (:func:`port_widths`). Raises VdlaError for a port that belongs to no interface."""
    hz = freq_hz(config)
    width = {name: w for name, (_, w) in ports.items()}
    attrs: dict[str, list[tuple[str, str]]] = {}
    for name in ports:
        if name == CLK:
            attrs[name] = [("X_INTERFACE_INFO", f"{CLOCK} {CLK} CLK"),
                           ("X_INTERFACE_PARAMETER", _params(XIL_INTERFACENAME=CLK,
                                                             ASSOCIATED_BUSIF=":".join(BUSES.values()),
                                                             ASSOCIATED_RESET=RST, FREQ_HZ=hz))]
        elif name == RST:   # synchronous, active high (vdla_hw.rtl.top)
            attrs[name] = [("X_INTERFACE_INFO", f"{RESET} {RST} RST"),
                           ("X_INTERFACE_PARAMETER", _params(XIL_INTERFACENAME=RST, POLARITY="ACTIVE_HIGH"))]
        elif name == IRQ:   # STATUS done or error, held until CLEAR: a level
            attrs[name] = [("X_INTERFACE_INFO", f"{INTERRUPT} {IRQ} INTERRUPT"),
                           ("X_INTERFACE_PARAMETER", _params(XIL_INTERFACENAME=IRQ, SENSITIVITY="LEVEL_HIGH"))]
        else:
            prefix = next((p for p in BUSES if name.startswith(p)), None)
            if prefix is None:
                raise VdlaError(f"port {name!r} of the FPGA top belongs to no Vivado interface "
                                f"(known: {CLK}, {RST}, {IRQ}, {', '.join(p + '*' for p in BUSES)}); add it to vdla_hw/rtl/ip_attrs.py")
            attrs[name] = [("X_INTERFACE_INFO", f"{AXIMM} {BUSES[prefix]} {name[len(prefix):].upper()}")]
    for prefix, bus in BUSES.items():
        first = next((n for n in ports if n.startswith(prefix)), None)
        if first is None:
            raise VdlaError(f"the FPGA top has no {bus} port ({prefix}*)")
        attrs[first].append(("X_INTERFACE_PARAMETER", _bus_params(config, bus, prefix, width, hz)))
    return attrs


def _bus_params(config: Config, bus: str, prefix: str, width: dict[str, int], hz: int) -> str:
    """The interface's X_INTERFACE_PARAMETER: widths and optional signals (HAS_*) from the ports
    the bus has, its transaction limits from the configuration (the control slave: one read and
    one write at a time, no bursts)."""
    w = {name[len(prefix):]: n for name, n in width.items() if name.startswith(prefix)}
    has = {f"HAS_{sig.upper()}": int(f"ar{sig}" in w or f"aw{sig}" in w)
           for sig in ("burst", "lock", "cache", "prot", "qos", "region")}
    has.update(HAS_WSTRB=int("wstrb" in w), HAS_BRESP=int("bresp" in w), HAS_RRESP=int("rresp" in w))
    common = dict(XIL_INTERFACENAME=bus, DATA_WIDTH=w["wdata"], ADDR_WIDTH=w["awaddr"])
    if bus == "s_axil":
        return _params(**common, PROTOCOL="AXI4LITE", ID_WIDTH=0, FREQ_HZ=hz, READ_WRITE_MODE="READ_WRITE", **has,
                       NUM_READ_OUTSTANDING=1, NUM_WRITE_OUTSTANDING=1, MAX_BURST_LENGTH=1)
    return _params(**common, PROTOCOL="AXI3", ID_WIDTH=w["arid"], ARUSER_WIDTH=w.get("aruser", 0),
                   AWUSER_WIDTH=w.get("awuser", 0), FREQ_HZ=hz, READ_WRITE_MODE="READ_WRITE", **has,
                   SUPPORTS_NARROW_BURST=0, NUM_READ_OUTSTANDING=config.MEM_READ_OUTSTANDING,
                   NUM_WRITE_OUTSTANDING=config.MEM_WRITE_OUTSTANDING, MAX_BURST_LENGTH=config.MEM_MAX_BURST)


def is_attribute_line(line: str) -> bool:
    """Whether ``line`` is one :func:`add_attributes` inserted."""
    return _ATTR.match(line) is not None


def parse(verilog: str) -> dict[str, list[tuple[str, str]]]:
    """Port name -> the attributes on the lines right before its declaration (what Vivado reads)."""
    out, pending = {}, []
    for line in verilog.splitlines():
        m = _ATTR.match(line)
        if m:
            pending.append(m.groups())
            continue
        d = _DECL.match(line)
        if d and pending:
            out[d.group(4)] = pending
        pending = []
    return out


def add_attributes(config: Config, verilog: str) -> str:
    """``verilog`` (the converter's ``vdla_axi_top``) with the interface attributes of every port."""
    ports = port_widths(verilog)
    attrs = interface_attributes(config, ports)
    lines = []
    for line in verilog.split("\n"):
        m = _DECL.match(line)
        if m:
            lines.extend(f'(* {k} = "{v}" *)' for k, v in attrs[m.group(4)])
        lines.append(line)
    return "\n".join(lines)
