"""`vdla hw synth --hierarchical` (vdla_hw/rtl/synth_hier.py): yosys synth_xilinx without -flatten on
the hierarchical Verilog reports LUT/FF/DSP/BRAM per block and their totals, against the flat
synthesis of the same configuration (tiny's core; docs/rtl.md, "Per-block resources"). Slow (a
synthesis each, cached after)."""

from __future__ import annotations

import json

import pytest

from vdla.cli import main
from vdla_hw.rtl.fmax import estimate_fmax
from vdla_hw.rtl.synth_hier import COUNTS, per_block

pytestmark = [pytest.mark.rtl, pytest.mark.slow]
BLOCKS = {"control", "queues", "memport", "srams", "fetch", "load", "compute", "store", "status", "top"}
# docs/rtl.md "Per-block resources": tiny's core, hierarchical and flat (yosys synth_xilinx)
DOC_TINY = {"hier": {"lut": 11888, "ff": 8203, "dsp": 28}, "flat": {"lut": 10870, "ff": 7542, "dsp": 28}}


def test_per_block_reads_every_module_of_the_stat():
    stat = """
=== vdla_fetch ===
       41   CARRY4
      174   FDRE
      254   LUT2
       23   RAM32M

=== vdla_top ===
        1   BUFG
       10   IBUF
        1   vdla_fetch

=== design hierarchy ===
        1   BUFG
       10   IBUF
       41   CARRY4
      174   FDRE
      254   LUT2
       23   RAM32M
        1   vdla_fetch
"""
    blocks, totals = per_block(stat, "vdla_top")
    assert blocks["fetch"]["lut"] == 254 + 4 * 23 and blocks["fetch"]["ff"] == 174 and blocks["top"]["lut"] == 0
    assert totals["lut"] == blocks["fetch"]["lut"] and totals["ff"] == 174


def test_tiny_core_per_block_and_totals(capsys):
    assert main(["hw", "synth", "--config", "tiny", "--hierarchical", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res["blocks"]) == BLOCKS and res["hierarchical"] and res["latches"] == 0
    for k in COUNTS:     # every cell is in exactly one block: the totals are their sum
        assert res[k] == pytest.approx(sum(b[k] for b in res["blocks"].values())), k
    for name in BLOCKS - {"top"}:
        assert res["blocks"][name]["lut"] > 0 and res["blocks"][name]["ff"] > 0, name
    assert res["blocks"]["compute"]["dsp"] > 0 and res["blocks"]["top"]["lut"] == 0
    flat = estimate_fmax("tiny", "core")
    # no optimisation across block boundaries: the same multipliers, more (never fewer) LUTs and FFs
    assert res["dsp"] == flat["dsp"] and res["lut"] >= flat["lut"] and res["ff"] >= flat["ff"]
    assert {k: res[k] for k in DOC_TINY["hier"]} == DOC_TINY["hier"]
    assert {k: flat[k] for k in DOC_TINY["flat"]} == DOC_TINY["flat"]
    largest = sorted(res["blocks"], key=lambda name: -res["blocks"][name]["lut"])[:2]
    assert set(largest) == {"compute", "memport"}
    assert main(["hw", "synth", "--config", "tiny", "--hierarchical"]) == 0
    text = capsys.readouterr().out
    assert "compute" in text and "total" in text and "no clock estimate" in text
