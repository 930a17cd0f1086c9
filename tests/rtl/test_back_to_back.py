"""RTL vs simulator, back to back: programs run one after another in one RTL simulation with no
reset and no clearing of the SRAMs between them (as a board runs them: docs/spec.md section 4,
"SRAM state between programs"), against the simulator carrying one SRAM state from program to
program (``simulate(..., sram=state)``). After every program the final image is the same byte
for byte and the cycles are the same (core top: every retire cycle too), on the core top and on
the FPGA top (AXI3), on the compiled bench and on the cocotb one. The first program starts from
zeroed SRAMs on both (a fresh device).

The carried state matters: the random programs read SRAM they never wrote, so many of their
images differ from a fresh run's (checked, so the comparison cannot pass by the SRAMs being
cleared after all)."""

from __future__ import annotations

import numpy as np
import pytest

from driver.rtl_run import run_bundles
from tests.hw.programs import fixed_corpus
from vdla_hw.config import load_config
from vdla_hw.rtl.compare import diverge
from vdla_hw.sram_state import SramState
from vdla_sim import simulate
from vdla_sim.progen import random_program

pytestmark = pytest.mark.rtl

PRESET = "tiny"
# (top, simulator, bench, random programs)
CASES = [("core", "verilator", "compiled", 40), ("axi", "verilator", "compiled", 40), ("core", "icarus", "cocotb", 8)]


def sequence(randoms: int) -> list[tuple[str, object]]:
    """Random programs with a few fixed ones between them (which write before they read)."""
    fixed = dict(fixed_corpus(PRESET))
    progs = [(f"random{s}", random_program(s, PRESET)) for s in range(randoms)]
    progs.insert(randoms // 2, ("matmul", fixed["matmul"]))
    progs.insert(1, ("relu", fixed["relu"]))
    return progs


def back_to_back_sim(progs) -> list:
    state = SramState.fresh(load_config(PRESET))
    return [simulate(b, sram=state) for _, b in progs]


@pytest.mark.parametrize("top,sim,bench,randoms", CASES, ids=[f"{t}-{s}-{b}" for t, s, b, _ in CASES])
def test_back_to_back_rtl_matches_back_to_back_simulator(top, sim, bench, randoms):
    progs = sequence(randoms)
    sims = back_to_back_sim(progs)
    fresh = [simulate(b) for _, b in progs]
    rtl = run_bundles([b for _, b in progs], sim, top=top, budgets=[2 * s.cycles + 5000 for s in sims],
                      bench=bench, keep_srams=True)
    wrong = []
    for (name, _), s, r in zip(progs, sims, rtl):
        if top == "core":
            problem = diverge(s, r)
        elif r.timeout or r.error:
            problem = f"stopped: {r.message}"
        elif r.cycles != s.cycles:
            problem = f"cycles {r.cycles}, simulator {s.cycles}"
        elif not np.array_equal(r.dram, s.dram):
            problem = f"image differs in {int((r.dram != s.dram).sum())} bytes"
        else:
            problem = None
        if problem:
            wrong.append(f"{name}: {problem}")
        if r.axi_checks["violations"]:
            wrong.append(f"{name}: AXI violations {r.axi_checks}")
    assert not wrong, f"{top} top, {bench} bench, back to back:\n" + "\n".join(wrong)
    changed = [name for (name, _), s, f in zip(progs, sims, fresh) if not np.array_equal(s.dram, f.dram)]
    assert len(changed) >= len(progs) // 2, f"only {changed} depend on the carried SRAM state"
    assert np.array_equal(sims[0].dram, fresh[0].dram), "the first program starts from a fresh device's zeros"
    assert all(s.cycles == f.cycles for s, f in zip(sims, fresh)), "the carried SRAM state changed a cycle count"


def test_without_keep_srams_every_program_starts_from_zeros():
    """The default bench run (SRAMs zeroed before each program) matches fresh simulator runs and
    not the back-to-back ones: the flag is what carries the state."""
    progs = sequence(6)
    fresh = [simulate(b) for _, b in progs]
    rtl = run_bundles([b for _, b in progs], "verilator", top="core", budgets=[2 * s.cycles + 5000 for s in fresh])
    assert all(diverge(f, r) is None for f, r in zip(fresh, rtl))
    carried = back_to_back_sim(progs)
    assert any(not np.array_equal(c.dram, r.dram) for c, r in zip(carried, rtl))


@pytest.mark.parametrize("bench,sim", [("compiled", "verilator"), ("cocotb", "icarus")])
def test_rtl_device_keeps_its_srams_between_runs(bench, sim):
    """The driver's rtl device runs each program as its own bench run; it carries the SRAMs
    from one to the next (saved and loaded through the bench), like the sim device."""
    from driver import open_device

    progs = [b for _, b in sequence(4)][:5]
    with open_device("rtl", PRESET, simulator=sim, bench=bench) as rtl, open_device("sim", PRESET) as sim_dev:
        for k, b in enumerate(progs):
            r, s = rtl.run(b), sim_dev.run(b)
            assert np.array_equal(r.dram, s.dram) and r.cycles == s.cycles, f"program {k}"
    fresh = [simulate(b).dram for b in progs]
    assert any(not np.array_equal(f, d) for f, d in zip(fresh, back_to_back_sim([(None, b) for b in progs])))
