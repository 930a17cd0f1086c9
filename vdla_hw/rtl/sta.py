"""Static timing analysis of a yosys ``synth_xilinx`` netlist (``write_json``) with the 7-series cell
models of :mod:`vdla_hw.rtl.xc7_cells`: register-to-register paths of the one clock, each a launch
(clock-to-out), combinational arcs, a routing allowance per routed hop, and a setup check.

The method, its sources and what it leaves out are in docs/rtl.md ("Clock estimate"). In short:
a path's delay is ``launch + sum(arc) + hops * routing.per_hop + setup``; the estimated clock is
``1000 / (worst path + clock uncertainty)`` MHz. Paths from or to the top level's ports are not
timed (inside the FPGA they meet the block design's registered AXI interfaces)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from vdla_hw.errors import VdlaError
from vdla_hw.rtl.xc7_cells import LUTS, delays, model

# connections that use dedicated wiring inside a slice or between neighbours: no routing allowance
DEDICATED = {("CARRY4", "CO", "CARRY4", "CI"), ("MUXF7", "O", "MUXF8", "I0"), ("MUXF7", "O", "MUXF8", "I1"),
             ("DSP48E1", "PCOUT", "DSP48E1", "PCIN"), ("DSP48E1", "ACOUT", "DSP48E1", "ACIN"),
             ("DSP48E1", "BCOUT", "DSP48E1", "BCIN"), ("DSP48E1", "CARRYCASCOUT", "DSP48E1", "CARRYCASCIN"),
             ("DSP48E1", "MULTSIGNOUT", "DSP48E1", "MULTSIGNIN")}
# a LUT (or CARRY4 output) whose only load sits in the same slice: packed there by the placer
SAME_SLICE = {("LUT", "CARRY4", "S"), ("LUT", "CARRY4", "DI"), ("LUT", "MUXF7", "I0"), ("LUT", "MUXF7", "I1"),
              ("LUT", "FD", "D"), ("CARRY4", "FD", "D")}


@dataclass
class Step:
    """One cell on a path: the arc it contributes and the routing before it."""
    cell: str
    cell_type: str
    arc: str          # "IN>OUT", "CLK>OUT" (launch) or "IN:setup" (capture)
    delay_ns: float
    wire_ns: float
    signal: str       # a named net at the cell's output (or input, for the capture)
    src: str = ""     # the Verilog line(s) yosys made the cell from


@dataclass
class Path:
    delay_ns: float
    steps: list = field(default_factory=list)

    def as_dict(self) -> dict:
        logic = [s for s in self.steps[1:-1]]
        by_type: dict = defaultdict(int)
        for s in logic:
            by_type[s.cell_type] += 1
        start, end = self.steps[0], self.steps[-1]
        return {"delay_ns": round(self.delay_ns, 3),
                "start": {"signal": start.signal, "cell_type": start.cell_type, "cell": start.cell},
                "end": {"signal": end.signal, "cell_type": end.cell_type, "cell": end.cell,
                        "pin": end.arc.split(":")[0]},
                "logic_levels": len(logic), "levels_by_type": dict(sorted(by_type.items())),
                "route_ns": round(sum(s.wire_ns for s in self.steps), 3),
                "cells": [{"cell_type": s.cell_type, "arc": s.arc, "delay_ns": round(s.delay_ns, 3),
                           "wire_ns": round(s.wire_ns, 3), "signal": s.signal, "src": s.src}
                          for s in self.steps]}


def _pins(conns: dict, dirs: dict, want: str):
    """(pin key, port, bit index, net bit) of a cell's ports in direction ``want``."""
    for port, bits in conns.items():
        if dirs.get(port, "input") != want:
            continue
        for i, b in enumerate(bits):
            if isinstance(b, int):
                yield port, i, b


def _family(cell_type: str) -> str:
    return "LUT" if cell_type in LUTS else "FD" if cell_type.startswith(("FD", "LD")) else cell_type


class Netlist:
    """Drivers, loads, cell models and signal names of the top module of a yosys JSON netlist."""

    def __init__(self, netlist: dict, top: str | None = None, table: dict | None = None):
        mods = netlist.get("modules", {})
        if top is None:
            tops = [n for n, m in mods.items() if int(m.get("attributes", {}).get("top", "0"), 2) == 1] \
                if mods else []
            top = tops[0] if tops else next(iter(mods), None)
        if top not in mods:
            raise VdlaError(f"timing: module {top!r} not in the netlist (modules: {', '.join(mods) or 'none'})")
        mod = mods[top]
        self.table = table or delays()
        self.cells = mod.get("cells", {})
        self.driver: dict = {}                  # bit -> (cell, port, index)
        self.loads: dict = defaultdict(list)    # bit -> [(cell, port, index)]
        self.models: dict = {}
        for name, c in self.cells.items():
            conns, dirs = c.get("connections", {}), c.get("port_directions", {})
            self.models[name] = model(c["type"], c.get("parameters", {}), self.table, conns)
            for port, i, b in _pins(conns, dirs, "output"):
                self.driver[b] = (name, port, i)
            for port, i, b in _pins(conns, dirs, "input"):
                self.loads[b].append((name, port, i))
        self.names: dict = {}
        for net, info in sorted(mod.get("netnames", {}).items(), key=lambda kv: (kv[1].get("hide_name", 0), len(kv[0]))):
            for i, b in enumerate(info["bits"]):
                if isinstance(b, int) and b not in self.names:
                    width = len(info["bits"])
                    self.names[b] = (net if width == 1 else f"{net}[{i}]") if not info.get("hide_name") else None

    def signal(self, bit: int) -> str:
        return self.names.get(bit) or f"<net {bit}>"

    def wire(self, bit: int, load: tuple) -> float:
        """Routing allowance from the driver of ``bit`` to ``load`` (cell, port, index)."""
        drv = self.driver.get(bit)
        if drv is None:
            return 0.0
        dtype, ltype = self.cells[drv[0]]["type"], self.cells[load[0]]["type"]
        fanout = len(self.loads[bit])
        if ltype == "INV" or (dtype, drv[1], ltype, load[1]) in DEDICATED:
            return 0.0
        if fanout == 1 and (_family(dtype), _family(ltype), load[1]) in SAME_SLICE:
            return 0.0
        r = self.table["routing"]
        return r["base"] + r["log2_fanout"] * math.log2(fanout)


def _key(port: str, i: int, width: int) -> tuple:
    return (port, i) if width > 1 else (port, None)


def clock_uncertainty(table: dict, input_jitter_ns: float = 0.0) -> float:
    """Vivado's setup clock uncertainty ((TSJ^2 + TIJ^2)^0.5 + DJ) / 2 with DJ = 0 (no MMCM):
    TSJ the part's system jitter, TIJ the clock's declared input jitter."""
    return math.hypot(table["clock"]["system_jitter"], input_jitter_ns) / 2


def analyse(netlist: dict, top: str | None = None, table: dict | None = None, worst: int = 5,
            input_jitter_ns: float = 0.0) -> dict:
    """Time every register-to-register path; returns the estimate and the worst paths.
    ``input_jitter_ns``: the clock's input jitter (Vivado's set_input_jitter; the PS7's FCLK has
    :func:`fclk_input_jitter`, a board oscillator with a plain create_clock none)."""
    nl = Netlist(netlist, top, table)
    arrival: dict = {}          # bit -> (ns, prev) with prev = (cell, in port, in index, in bit) or launch
    order = _topological(nl)
    for name in order:
        c, m = nl.cells[name], nl.models[name]
        conns = c.get("connections", {})
        for port, bits in conns.items():
            for i, b in enumerate(bits):
                if not isinstance(b, int) or nl.driver.get(b, (None,))[0] != name:
                    continue
                best = None
                pin = _match(m.launch, port, i)
                if pin is not None:
                    best = (m.launch[pin], ("launch", name, port, i))
                for src, dst, ns in m.arcs:
                    if not _pin_is(dst, port, i):
                        continue
                    for sport, si, sb in _expand(src, conns):
                        if sb not in arrival:
                            continue
                        t = arrival[sb][0] + nl.wire(sb, (name, sport, si)) + ns
                        if best is None or t > best[0]:
                            best = (t, (name, sport, si, sb, ns))
                if best is not None:
                    arrival[b] = best
    ends = []
    for name, m in nl.models.items():
        conns = nl.cells[name].get("connections", {})
        for pin, setup in m.checks.items():
            for port, i, b in _expand(pin, conns):
                if b in arrival:
                    t = arrival[b][0] + nl.wire(b, (name, port, i)) + setup
                    ends.append((t, name, port, i, b, setup))
        if m.internal:
            ends.append((m.internal, name, "internal", 0, None, m.internal))
    if not ends:
        raise VdlaError("timing: the netlist has no register-to-register path")
    ends.sort(key=lambda e: -e[0])
    paths, seen = [], set()
    for e in ends:
        path = _trace(nl, arrival, e)
        key = (path.steps[0].signal, path.steps[-1].signal.split("[")[0])
        if key in seen:
            continue
        seen.add(key)
        paths.append(path)
        if len(paths) == worst:
            break
    uncertainty = clock_uncertainty(nl.table, input_jitter_ns)
    period = paths[0].delay_ns + uncertainty
    return {"fmax_mhz": round(1000.0 / period, 1), "period_ns": round(period, 3),
            "clock_uncertainty_ns": round(uncertainty, 4), "input_jitter_ns": round(input_jitter_ns, 4),
            "critical_path": paths[0].as_dict(), "worst_paths": [p.as_dict() for p in paths],
            "timed_endpoints": len(ends)}


def fclk_input_jitter(clock_mhz: float, table: dict | None = None) -> float:
    """The input jitter Vivado's processing_system7 IP declares on an FCLK of ``clock_mhz``
    (set_input_jitter clk_fpga_N: a fixed fraction of the period, xc7z020_timing.toml [clock])."""
    table = table or delays()
    return table["clock"]["fclk_input_jitter"]["fraction"] * 1000.0 / clock_mhz


def _pin_is(pin: str, port: str, i: int) -> bool:
    return pin == port or pin == f"{port}[{i}]"


def _match(table: dict, port: str, i: int):
    if f"{port}[{i}]" in table:
        return f"{port}[{i}]"
    return port if port in table else None


def _expand(pin: str, conns: dict):
    """(port, index, bit) of the connected bits a pin name stands for."""
    if pin.endswith("]"):
        port, idx = pin[:-1].split("[")
        bits = conns.get(port, [])
        i = int(idx)
        if i < len(bits) and isinstance(bits[i], int):
            yield port, i, bits[i]
    else:
        for i, b in enumerate(conns.get(pin, [])):
            if isinstance(b, int):
                yield pin, i, b


def _topological(nl: Netlist) -> list:
    """Cells in an order where every combinational arc's source is timed before its use."""
    deps: dict = {}
    users: dict = defaultdict(list)
    for name, m in nl.models.items():
        conns = nl.cells[name].get("connections", {})
        srcs = set()
        for src, _dst, _ns in m.arcs:
            for _p, _i, b in _expand(src, conns):
                drv = nl.driver.get(b)
                if drv and drv[0] != name:
                    srcs.add(drv[0])
        deps[name] = len(srcs)
        for s in srcs:
            users[s].append(name)
    ready = [n for n, k in deps.items() if k == 0]
    order = []
    while ready:
        n = ready.pop()
        order.append(n)
        for u in users[n]:
            deps[u] -= 1
            if deps[u] == 0:
                ready.append(u)
    if len(order) != len(deps):
        loop = sorted(n for n, k in deps.items() if k > 0)[:5]
        raise VdlaError(f"timing: combinational loop through cells {', '.join(loop)}")
    return order


def _trace(nl: Netlist, arrival: dict, end: tuple) -> Path:
    total, name, port, i, bit, setup = end
    ctype = nl.cells[name]["type"]
    if bit is None:  # a stage inside one cell
        sig = name
        return Path(total, [Step(name, ctype, "CLK>internal", 0.0, 0.0, sig),
                            Step(name, ctype, "internal:setup", setup, 0.0, sig)])
    q = _q_signal(nl, name)
    steps = [Step(name, ctype, f"{port}:setup", setup, nl.wire(bit, (name, port, i)),
                  q or nl.signal(bit))]
    b = bit
    while True:
        ns, prev = arrival[b]
        drv = nl.driver[b]
        dtype = nl.cells[drv[0]]["type"]
        if prev[0] == "launch":
            steps.append(Step(drv[0], dtype, f"CLK>{drv[1]}", ns, 0.0, nl.signal(b)))
            break
        cell, sport, si, sb, arc_ns = prev
        steps.append(Step(cell, dtype, f"{_label(nl, cell, sport, si)}>{_label(nl, cell, drv[1], drv[2])}",
                          arc_ns, 0.0, nl.signal(b)))
        steps[-1].wire_ns = nl.wire(sb, (cell, sport, si))
        b = sb
    steps.reverse()
    for s in steps:   # keep the design's own source lines, not yosys' techmap files
        src = nl.cells[s.cell].get("attributes", {}).get("src", "")
        s.src = "|".join(p for p in src.split("|") if p and not p.startswith("/share/"))
    for k in (0, -1):   # an end without a kept name: say what it is and where its logic comes from
        s, near = steps[k], steps[1 if k == 0 else -2]
        where = s.src or near.src
        if s.signal.startswith("<net") and where:
            s.signal = f"{s.cell_type} {'at' if s.src else 'fed from'} {where}"
    return Path(total, steps)


def _label(nl: Netlist, cell: str, port: str, i: int) -> str:
    """'S[0]' for a bit of a multi-bit port, 'I0' for a one-bit port."""
    return f"{port}[{i}]" if len(nl.cells[cell]["connections"].get(port, ())) > 1 else port


def _q_signal(nl: Netlist, cell: str):
    """The name of the register a capture cell writes (its Q/DO net), for reports."""
    conns = nl.cells[cell].get("connections", {})
    for port in ("Q", "DOADO", "P", "O", "SPO", "DOA"):
        for b in conns.get(port, []):
            if isinstance(b, int) and nl.names.get(b):
                return nl.names[b]
    return None
