"""The AXI-lite control slave: bad register sequences set an error bit instead of hanging (the
testbench has a cycle timeout), and a good run after CLEAR still works."""

from __future__ import annotations

import numpy as np
import pytest

from vdla_hw import regmap
from vdla_hw.asm import assemble
from vdla_hw.rtl.runner import run_bundles
from vdla_sim import simulate

from tests.rtl.conftest import EXAMPLES

pytestmark = pytest.mark.rtl
E = regmap.ERROR_BITS


def test_bad_register_sequences_set_error_bits():
    bundle = assemble(EXAMPLES[0].read_text(), source=str(EXAMPLES[0]))
    size = bundle.dram.size
    cases = [
        ({"start_twice": True}, "start_while_busy"),
        ({"INSN_COUNT": 0}, "zero_insn_count"),
        ({"INSN_ADDR": size}, "insn_addr_range"),
        ({"INSN_ADDR": bundle.insn_offset + 8}, "insn_addr_range"),
        ({"INSN_COUNT": bundle.insn_count + (size // 16)}, "insn_addr_range"),
        (None, None),  # a good run after the errors (CLEAR worked)
    ]
    results = run_bundles([bundle] * len(cases), "icarus", budgets=[5000] * len(cases), regs=[c for c, _ in cases])
    for (regs, bit), res in zip(cases, results):
        assert not res.timeout, f"{regs}: the device hung"
        if bit is None:
            assert res.done and not res.error
            assert res.cycles == simulate(bundle).cycles
            assert np.array_equal(res.dram, simulate(bundle).dram)
        else:
            assert res.status & regmap.STATUS_ERROR, f"{regs}: no error status"
            assert res.error & E[bit], f"{regs}: error bits {res.error:#x} lack {bit}"
