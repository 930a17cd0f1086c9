"""The simulation harness: the design under test (the exact Verilog of ``vdla_top`` or
``vdla_axi_top`` that ``vdla hw verilog`` writes) next to the AXI / AXI-lite protocol checker
(:mod:`vdla_hw.rtl.axi_check`), in a wrapper module ``vdla_harness`` the cocotb bench drives.

The wrapper passes every port of the design through under the same name, with two changes for
the bench's cocotbext-axi models: AXI3 lengths (4 bits) appear 8 bits wide, and the AXI3 signals
cocotbext-axi does not know (``*lock`` of 2 bits, ``*cache``, ``*prot``, ``*qos``, ``wid``, the ACP's
``*user``) stay
inside. It adds the checker's outputs ``chk_checks``, ``chk_violations``, ``chk_rules``,
``chk_rd_out`` and ``chk_wr_out``. Simulation only: never part of a bitstream.
"""

from __future__ import annotations

import re
from pathlib import Path

from vdla_hw.config import Config
from vdla_hw.rtl.axi_check import CHECK_OUTPUTS as CHECKER_OUTPUTS
from vdla_hw.rtl.axi_check import M_SIGNALS, S_SIGNALS
from vdla_hw.rtl.convert import header, to_verilog

HARNESS = "vdla_harness"
CHECKER = "axi_checker"
HIDDEN = ("arlock", "awlock", "arcache", "awcache", "arprot", "awprot", "arqos", "awqos", "wid", "aruser", "awuser")
CHECK_OUTPUTS = tuple(("chk_" + name, width) for name, width in CHECKER_OUTPUTS)


def ports_of(verilog: Path) -> list[tuple[str, str, int]]:
    """(direction, name, width) of every port of the module named like ``verilog`` (``vdla_top.v``:
    ``vdla_top``; a hierarchical file holds its parts' modules before it), in order."""
    text = verilog.read_text()
    text = text[text.rfind(f"module {verilog.stem} ("):]
    decls = re.findall(r"^\s*(input|output)\s*(?:\[(\d+):0\])?\s*(\w+);", text, re.M)
    return [(d, name, int(hi) + 1 if hi else 1) for d, hi, name in decls]


def harness_verilog(config: Config, dut: Path, out_dir: Path) -> Path:
    """Write ``vdla_harness.v`` (and ``axi_checker.v``) around the design in ``dut``; returns
    both paths."""
    top = dut.stem
    ports = ports_of(dut)
    view = {}                      # harness port name -> width
    lines, conns, wires = [], [], []
    for direction, name, width in ports:
        if name.startswith("m_axi_") and name[6:] in HIDDEN:   # not under its port name: the
            wires.append(f"wire [{width - 1}:0] axi3_{name[6:]};")  # bench's bus models look names up
            conns.append(f".{name}(axi3_{name[6:]})")
            continue
        outer = 8 if name.startswith("m_axi_") and name.endswith("len") else width
        view[name] = outer
        rng = f"[{outer - 1}:0] " if outer > 1 else ""
        lines.append(f"{direction} {rng}{name};")
        if outer != width:          # AXI3 length: zero-extend for the bench
            wires.append(f"wire [{width - 1}:0] {name}_3;")
            wires.append(f"assign {name} = {{{outer - width}'d0, {name}_3}};")
            conns.append(f".{name}({name}_3)")
        else:
            conns.append(f".{name}({name})")
    chk = [".clk(clk)", ".rst(rst)"]
    for n in M_SIGNALS:
        chk.append(f".m_{n}(m_axi_{n})")
    for n in S_SIGNALS:
        chk.append(f".s_{n}(s_axil_{n})")
    for name, width in CHECK_OUTPUTS:
        lines.append(f"output [{width - 1}:0] {name};")
        chk.append(f".{name[4:]}({name})")
    names = [name for _, name, _ in ports if name in view] + [n for n, _ in CHECK_OUTPUTS]
    checker = to_verilog(config, out_dir, top=CHECKER)
    text = (header(config) + f"// Simulation harness: {top} and the AXI/AXI-lite protocol checker ({CHECKER}).\n"
            "`timescale 1ns/1ps\n\n"
            f"module {HARNESS} (\n    " + ",\n    ".join(names) + "\n);\n\n" + "\n".join(lines) + "\n\n"
            + "\n".join(wires) + "\n\n"
            + f"{top} dut (\n    " + ",\n    ".join(conns) + "\n);\n\n"
            + f"{CHECKER} protocol_check (\n    " + ",\n    ".join(chk) + "\n);\n\nendmodule\n")
    path = out_dir / f"{HARNESS}.v"
    path.write_text(text)
    return path, checker
