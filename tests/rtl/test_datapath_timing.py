"""The GEMM/ALU datapath is pipelined for the 100 MHz clock (issue 13 item 1): on tiny's FPGA
top (yosys synth_xilinx, the same estimator as `vdla hw synth`), no register-to-register path
that starts at an SRAM read port or in the compute datapath (uop loop, GEMM core, ALU, forward
and write-back registers; not the compute module's LOAD DMA, whose paths belong to the DMA's
pipelining) is longer than the 10 ns period minus the clock uncertainty at the clock estimate's
pessimistic edge: the static delay of a path over the smallest Vivado / static estimate of the
validation designs (vdla_hw.rtl.fmax.with_band, issue 30), the criterion by which `vdla hw synth`
says whether a configuration meets its clock. The ALU multiplies
start at operand registers packed into their DSP48E1 (unnamed in the netlist), so a path from
an unnamed DSP48E1 counts when it ends in the datapath (the acc[dst] latch, the forward register). Before the pipelining the acc SRAM
read -> ALU -> acc write path alone took 15.7 ns. Slow: one synthesis of tiny (about a minute),
shared through the clock estimate's cache with every other test that synthesises tiny's FPGA top.
"""

from __future__ import annotations

import re

import pytest

from vdla_hw.config import load_config
from vdla_hw.rtl import fmax, fmax_shared, sta

pytestmark = [pytest.mark.rtl, pytest.mark.slow]

DATAPATH = re.compile(r"compute0_(?!dma_read)|_ram\d+_dout|narrow_sram|elem_read")


def _in_datapath(signal: str) -> bool:
    return bool(DATAPATH.search(signal)) and "dma_read" not in signal


def test_datapath_paths_fit_100_mhz():
    config = load_config("tiny")
    timing = sta.analyse(fmax_shared.netlist(config, "axi"), "vdla_axi_top", worst=100_000)
    low = fmax.load_validation()["band"]["low"]   # Vivado reached at least this times the static clock
    budget = 1000.0 / config.CLOCK_MHZ * low - timing["clock_uncertainty_ns"]
    paths = timing["worst_paths"]
    assert paths[-1]["delay_ns"] < budget, "not every endpoint was listed"
    mine = [p for p in paths if _in_datapath(p["start"]["signal"])
            or (p["start"]["signal"].startswith("DSP48E1") and _in_datapath(p["end"]["signal"]))]
    assert len(mine) > 100, "the datapath's paths were not recognised by name"
    slow = [f'{p["delay_ns"]:.2f} ns {p["start"]["signal"]} -> {p["end"]["signal"]}'
            for p in mine if p["delay_ns"] > budget]
    assert not slow, f"datapath paths over the 100 MHz budget ({budget:.2f} ns static): " + "; ".join(slow[:5])
