"""The FPGA top (vdla_axi_top): the core behind the AXI3 master adapter, memory served by
cocotbext-axi's AxiRam. Same final image as the simulator; the core's own cycle counter still
equals the contract's cycle count (the adapter stalls the core's clock while it waits)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla_hw.rtl.runner import run_bundles
from vdla_sim import simulate
from vdla_sim.progen import random_program

from tests.hw.programs import fixed_corpus

pytestmark = pytest.mark.rtl


def test_axi_top_with_axiram_matches_sim():
    progs = fixed_corpus("tiny") + [(f"random{s}", random_program(s, "tiny")) for s in range(10)]
    sims = [simulate(b) for _, b in progs]
    res = run_bundles([b for _, b in progs], "icarus", budgets=[40 * s.cycles + 5000 for s in sims],
                      top="vdla_axi_top")
    for (name, _), s, r in zip(progs, sims, res):
        assert not r.timeout and not r.error, f"{name}: status {r.status:#x} error {r.error:#x}"
        assert np.array_equal(r.dram, s.dram), f"{name}: final image differs"
        assert r.cycles == s.cycles, f"{name}: core cycles {r.cycles}, simulator {s.cycles}"
