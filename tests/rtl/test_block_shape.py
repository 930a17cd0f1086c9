"""Issue 13 item 4 on the compute side: the compute module's blocks and the arithmetic they use are
small functions (each under about 150 lines) and size no register by a literal width: every
``intbv(...)[N:]`` and signed-signal width comes from the configuration, the ISA layout or another
signal's width. Static (ast), no simulation."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vdla_hw.rtl

RTL = Path(vdla_hw.rtl.__file__).parent
FILES = ["compute.py", "compute_loop.py", "compute_pipe.py", "compute_ports.py", "gemm.py", "vec.py", "decode.py",
         "dma_ports.py", "dma.py", "dma_decode.py", "dma_walk.py", "dma_write.py", "rangechk.py", "store.py",
         "store_read.py", "fetch.py", "portdesc.py", "walker.py", "sram.py", "memport.py", "arbiter.py", "control.py",
         "axi_check.py", "axi_check_acc.py", "axi_top.py", "axi.py", "top.py", "core_queues.py", "core_status.py",
         "ctl.py", "prims.py"]
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
