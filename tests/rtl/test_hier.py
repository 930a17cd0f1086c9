"""Hierarchical Verilog (vdla_hw/rtl/hier.py) against the flat Verilog of the same design: the same
top ports, one module per block, deterministic text, Verilator -Wall lint clean, and the same
simulation (cycles, counters, retire trace, final image) on programs of the RTL corpus."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla_hw.config import load_config
from vdla_hw.errors import VdlaError
from vdla_hw.rtl.harness import ports_of

pytestmark = [pytest.mark.rtl, pytest.mark.slow]
VERILATOR = str(Path(sys.executable).parent / "verilator")
PARTS = ("control", "queues", "memport", "srams", "fetch", "load", "compute", "store", "status")


@pytest.fixture(scope="module")
def verilog(tmp_path_factory):
    """tiny's flat and hierarchical Verilog of both tops, and the hierarchical FPGA top converted again."""
    from vdla_hw.rtl.convert import to_verilog

    out = {}
    for top in ("vdla_top", "vdla_axi_top"):
        for hier in (False, True):
            out[top, hier] = to_verilog("tiny", tmp_path_factory.mktemp("v"), top=top, hierarchical=hier)
    out["again"] = to_verilog("tiny", tmp_path_factory.mktemp("v"), top="vdla_axi_top", hierarchical=True)
    return out


@pytest.mark.parametrize("top", ["vdla_top", "vdla_axi_top"])
def test_hierarchical_top_keeps_the_flat_ports(verilog, top):
    assert ports_of(verilog[top, True]) == ports_of(verilog[top, False])
    assert len(ports_of(verilog[top, True])) > 50


@pytest.mark.parametrize("top", ["vdla_top", "vdla_axi_top"])
def test_one_module_per_block(verilog, top):
    text = verilog[top, True].read_text()
    modules = re.findall(r"^module (\w+) \(", text, re.M)
    expected = [f"vdla_{p}" for p in PARTS] + ["vdla_top"] + (["vdla_axi3", "vdla_axi_top"] if top == "vdla_axi_top" else [])
    assert modules == expected
    top_text = text[text.rindex(f"module {top} ("):]
    assert "always" not in top_text    # structural: every piece of logic is in a block's module
    flat = verilog[top, False].read_text()
    assert len(re.findall(r"^module ", flat, re.M)) == 1


def _declared(text: str) -> set:
    ports = set(re.findall(r"^(?:input|output)\s+(?:signed\s+)?(?:\[[^\]]+\]\s+)?(\w+);", text, re.M))
    return set(re.findall(r"^(?:reg|wire)\s+(?:signed\s+)?(?:\[[^\]]+\]\s+)?(\w+)", text, re.M)) - ports


def test_parts_keep_the_flat_names(verilog):
    """Every signal inside a block's module has its name in the flat module (``fetch0_bcnt``,
    ``compute0_dma_read1_...``), so paths read the same in per-block and flat reports."""
    flat_core = _declared(verilog["vdla_top", False].read_text())
    flat_axi = _declared(verilog["vdla_axi_top", False].read_text())
    modules = {m.split()[0]: m for m in re.split(r"^module ", verilog["vdla_axi_top", True].read_text(), flags=re.M)[1:]}
    for part in PARTS:
        inner = _declared(modules[f"vdla_{part}"])
        assert inner and inner <= flat_core, (part, sorted(inner - flat_core)[:5])
    assert _declared(modules["vdla_axi3"]) <= flat_axi


def test_conversion_is_deterministic(verilog):
    assert verilog["again"].read_bytes() == verilog["vdla_axi_top", True].read_bytes()


def test_hierarchical_checks_its_top():
    from vdla_hw.rtl.convert import to_verilog

    with pytest.raises(VdlaError, match="hierarchical Verilog is for vdla_top and vdla_axi_top, not axi_checker"):
        to_verilog("tiny", "/nonexistent", top="axi_checker", hierarchical=True)


@pytest.mark.parametrize("top", ["core-hier", "axi-hier"])
def test_lint_clean(top):
    """As the flat design (tests/rtl/test_convert.py): Verilator -Wall on the design, the checker and
    the harness, no warning (the file of many modules waives only DECLFILENAME, in the file)."""
    from vdla_hw.rtl.runner import sources

    src = sources(load_config("tiny"), top)
    proc = subprocess.run([VERILATOR, "--lint-only", "-Wall", "--top-module", "vdla_harness",
                           *map(str, sorted(src.glob("*.v")))], capture_output=True, text=True)
    assert proc.returncode == 0 and "%Warning" not in proc.stderr and "%Error" not in proc.stderr, proc.stderr[-3000:]


def _programs():
    from tests.hw.programs import fixed_corpus
    from tests.rtl.conftest import workloads
    from vdla_sim.progen import random_program

    progs = dict(fixed_corpus("tiny"))
    chosen = [progs[n] for n in ("load_store", "matmul", "relu", "pad_1_2_3_1", "alu_max_vec")]
    return chosen + [b for _, b in workloads("tiny")] + [random_program(seed, "tiny") for seed in range(3)]


@pytest.mark.parametrize("top", ["core", "axi"])
def test_simulates_like_the_flat_verilog(top):
    """Same cycles, wall-clock cycles, per-module counters, retire trace (core top), AXI checks and
    final image as the flat Verilog, program by program, back to back (Verilator, compiled bench)."""
    from driver.rtl_run import run_bundles

    bundles = _programs()
    budgets = [400_000] * len(bundles)
    flat = run_bundles(bundles, "verilator", top=top, budgets=budgets, keep_srams=True)
    hier = run_bundles(bundles, "verilator", top=top + "-hier", budgets=budgets, keep_srams=True)
    for k, (f, h) in enumerate(zip(flat, hier)):
        assert f.done and not f.timeout and not f.error, k
        assert (h.cycles, h.wall_cycles, h.status) == (f.cycles, f.wall_cycles, f.status), k
        assert h.modules == f.modules and h.retire == f.retire and h.beats == f.beats, k
        assert h.axi_checks == f.axi_checks, k
        assert np.array_equal(h.dram, f.dram), k
