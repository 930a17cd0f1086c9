"""Scoreboard: an RTL run (``driver.rtl_run.RtlResult``) against the simulator's run of the same bundle (image byte for byte,
total cycles, and the per-instruction retire cycle), reporting the first divergence."""

from __future__ import annotations

import numpy as np



def diverge(sim, rtl) -> str | None:
    """None when the runs agree, else one line naming the first divergence."""
    if rtl.timeout:
        return f"RTL timed out (status {rtl.status:#x}); simulator finished at cycle {sim.cycles}"
    if rtl.error:
        return f"RTL raised error bits {rtl.error:#x} at instruction {rtl.error_insn}"
    got = {}
    for index, module, cycle in rtl.retire:
        got.setdefault(index, (module, cycle))
    order = sorted(((r[2], i, r[0]) for i, r in enumerate(sim.retire) if r is not None))
    for cycle, index, module in order:
        if index not in got:
            return f"instruction {index} ({module}) retired at cycle {cycle} in the simulator, never in the RTL"
        rmod, rcyc = got[index]
        if rmod != module or rcyc != cycle:
            return (f"first divergence: instruction {index} module {module}: expected retire cycle {cycle}, "
                    f"RTL {rmod} at cycle {rcyc}")
    if rtl.cycles != sim.cycles:
        return f"total cycles: expected {sim.cycles}, RTL {rtl.cycles}"
    if rtl.dram.shape != sim.dram.shape or not np.array_equal(rtl.dram, sim.dram):
        bad = np.flatnonzero(rtl.dram != sim.dram)
        return f"final DRAM differs in {bad.size} bytes, first at byte {bad[0]}: expected {sim.dram[bad[0]]}, RTL {rtl.dram[bad[0]]}"
    return None
