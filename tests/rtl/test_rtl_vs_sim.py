"""RTL vs simulator: the same bundles on the MyHDL RTL (cocotb, Icarus and Verilator) and on
vdla_sim give the same final DRAM image byte for byte, the same total cycles and the same
retire cycle for every instruction (the first divergence is reported)."""

from __future__ import annotations

import pytest

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
    assert rtl_result.counters["compute"] + rtl_result.counters["load"] + rtl_result.counters["store"] == \
        bundle.insn_count
