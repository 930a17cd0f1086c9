"""RTL vs simulator: the same bundles on the MyHDL RTL's core top (cocotb, Icarus and Verilator,
memory answering with the configuration's latency) and on vdla_sim give the same final DRAM
image byte for byte, the same total cycles (CYCLES register and the bench's wall-clock count)
and the same retire cycle for every instruction (the first divergence is reported), the same
per-module counter registers (busy, stall_token, stall_mem, stall_queue, insns) as the
simulator's busy/stall counts, and no AXI protocol violation."""

from __future__ import annotations

import pytest

from vdla_hw import regmap
from vdla_hw.rtl.compare import diverge

from tests.rtl.conftest import PAIRS, corpus_names

pytestmark = pytest.mark.rtl

CASES = [(preset, sim, name) for preset, sim in PAIRS for name in corpus_names(preset, sim)]


@pytest.mark.parametrize("preset,sim,name", CASES, ids=[f"{p}-{s}-{n}" for p, s, n in CASES])
def test_rtl_matches_sim(rtl_runs, preset, sim, name):
    bundle, sim_result, rtl_result = rtl_runs.get(preset, sim)[name]
    assert rtl_result.id_ok, "ID_ISA / ID_CONFIG do not match the bundle's configuration"
    problem = diverge(sim_result, rtl_result)
    assert problem is None, f"{preset}/{sim}/{name}: {problem}"
    assert rtl_result.wall_cycles == rtl_result.cycles + regmap.IRQ_AFTER_CYCLES, \
        "wall-clock cycles (START handshake to irq) are not CYCLES + 2 (docs/spec.md section 5)"
    checks = rtl_result.axi_checks
    assert checks["violations"] == 0 and checks["checks"] > 0, checks
    assert checks["left_outstanding"] == 0, checks
    assert rtl_result.counters["compute"] + rtl_result.counters["load"] + rtl_result.counters["store"] == \
        bundle.insn_count
    expected = sim_result.modules
    wrong = [f"{m}.{c}: simulator {expected[m][c]}, RTL {rtl_result.modules[m][c]}"
             for m in expected for c in expected[m] if rtl_result.modules[m][c] != expected[m][c]]
    assert not wrong, f"{preset}/{sim}/{name}: counter registers differ: " + "; ".join(wrong)
