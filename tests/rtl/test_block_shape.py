"""Issue 13 item 4 for the whole RTL: every block file of ``vdla_hw/rtl`` keeps its functions small
(each under about 150 lines) and sizes no register by a literal width: every ``intbv(...)[N:]``
and signed-signal width comes from the configuration, the ISA layout, the register map, a named
bus/protocol constant or another signal's width. The files are found by a glob, so a new block
file is checked without being listed; only the Python tools around the RTL are left out, each
with why. Static (ast), no simulation."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vdla_hw.rtl

RTL = Path(vdla_hw.rtl.__file__).parent
# Modules of vdla_hw/rtl that describe no hardware (never converted to Verilog) -> why
NOT_RTL = {
    "__init__.py": "the package marker",
    "compare.py": "the scoreboard of an RTL run against the simulator",
    "compiled.py": "builds and drives the compiled Verilator bench",
    "convert.py": "runs MyHDL's Verilog conversion",
    "fmax.py": "the clock estimate (yosys + sta), cached",
    "fmax_reference.py": "the third-party reference cores (their published Verilog) the clock estimate is checked on",
    "harness.py": "writes the simulation harness's Verilog text",
    "runner.py": "cached builds and cocotb launches",
    "srchash.py": "the build cache key",
    "sta.py": "static timing analysis of a yosys netlist",
    "synth.py": "the yosys synthesis driver",
    "tb_memory.py": "the cocotb bench's memory model (Python, cocotbext-axi)",
    "xc7_cells.py": "7-series cell delay models for the STA",
}
FILES = sorted(path.name for path in RTL.glob("*.py") if path.name not in NOT_RTL)
MAX_LINES = 150


def _functions(tree):
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)] + \
        [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, ast.FunctionDef)]


def literal_widths(source: str) -> list[str]:
    """``intbv(...)[<int>:]`` and ``_s(<int>)`` in ``source``, as 'line: text'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) \
                and getattr(node.value.func, "id", None) == "intbv" and isinstance(node.slice, ast.Slice) \
                and isinstance(node.slice.lower, ast.Constant):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_s" \
                and node.args and isinstance(node.args[0], ast.Constant):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(found, key=lambda text: int(text.split(":")[0]))


@pytest.mark.parametrize("name", FILES)
def test_blocks_are_small_and_have_no_literal_widths(name):
    source = (RTL / name).read_text()
    long = [f"{f.name}: {f.end_lineno - f.lineno + 1} lines" for f in _functions(ast.parse(source))
            if f.end_lineno - f.lineno + 1 > MAX_LINES]
    assert not long, f"{name}: functions over {MAX_LINES} lines: {long}"
    assert not literal_widths(source), f"{name}: literal widths: {literal_widths(source)}"


def test_the_check_sees_literal_widths():
    assert literal_widths("a = Signal(intbv(0)[32:])\nb = _s(17)\nc = intbv(0)[len(x):]\n") == \
        ["1: intbv(0)[32:]", "2: _s(17)"]


def test_the_glob_sees_every_block_file():
    assert {"top.py", "memport.py", "control.py", "axi_check.py", "compute.py", "dma.py", "fetch.py", "store.py",
            "params.py"} <= set(FILES)
    assert all((RTL / name).exists() for name in NOT_RTL), "NOT_RTL names a file that is gone"
