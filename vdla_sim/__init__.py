"""The cycle-level simulator of the timing contract (``vdla_hw.timing``).

``simulate(bundle)`` runs a program bundle with fetch, load, compute and store concurrent, the
command and token queues, the shared memory port and the SRAMs, and returns a
:class:`SimResult`: the final DRAM image (equal to the reference semantics for every correctly
synchronised program), cycles, utilisation, the per-module counters of the counter registers
(busy and stall cycles, instructions), queue occupancy, bytes moved and the reference counters.
Deadlocks, races, GEMM hazards, out-of-range accesses and runaway programs end with one-line
errors naming the instructions involved.
"""

from __future__ import annotations

from pathlib import Path

from vdla_hw.bundle import Bundle
from vdla_hw.sram_state import SramState
from vdla_sim.engine import EXEC_MODULES, Engine
from vdla_sim.errors import CycleLimitError, DeadlockError, HazardError, RaceError, SimError
from vdla_sim.result import SimResult, occupancy

__all__ = ["simulate", "SimResult", "SimError", "DeadlockError", "RaceError", "HazardError", "CycleLimitError"]


def simulate(bundle: Bundle, *, max_cycles: int | None = None, race_check: bool | None = None,
             trace_path: str | Path | None = None, max_work: int | None = None, data: bool = True,
             sram: SramState | None = None, uninit: str = "off", allow_vta_hazards: bool = False) -> SimResult:
    """Run ``bundle`` under the timing contract. ``max_cycles`` bounds the simulated time and
    ``max_work`` the simulator's work (both: vdla_hw/limits.py); ``race_check`` turns on the
    vector-clock race detector (default: on with data); ``trace_path`` writes a Chrome/Perfetto
    trace JSON.

    ``data=False`` is the timing-only mode: the same cycles, busy/stall counts, retire times,
    byte and uop counters as a data run, without computing any value (the result's ``dram`` is
    None). It cannot see what depends on memory contents (uop indices past their SRAM, GEMM
    hazards, races: a race check needs the data mode), so use it on programs known to be
    correct, e.g. compiled ones.

    ``sram`` is the SRAM state at START (``vdla_hw.sram_state.SramState``, updated in place and
    returned as ``result.sram``; default: a fresh device's zeros), so a session runs programs
    back to back as the hardware does; ``uninit`` ("off", "warn", "error") checks for reads of
    SRAM no instruction of the session wrote (``result.uninit``: the first, with "warn";
    "error" raises ``vdla_hw.sram_state.UninitError``). Neither works in the timing-only mode
    (no SRAM values: ValueError).

    ``allow_vta_hazards`` runs a GEMM whose uop list repeats an accumulator within one sweep
    (``vdla_hw.timing.gemm_hazard``), which is refused by default (HazardError) because VTA's
    GEMM pipeline would compute it differently; this machine forwards the write, so the result
    is the reference semantics' at the usual cycles (docs/spec.md section 5)."""
    if race_check is None:
        race_check = data
    elif race_check and not data:
        raise ValueError("the race check reads the uops: it needs data=True")
    engine = Engine(bundle, max_cycles=max_cycles, race_check=race_check, max_work=max_work, data=data,
                    sram=sram, uninit=uninit, allow_vta_hazards=allow_vta_hazards)
    engine.run()
    result = _result(engine)
    if trace_path is not None:
        from vdla_sim import trace

        trace.write(trace_path, engine, result)
    return result


def _result(engine: Engine) -> SimResult:
    config = engine.config
    cycles = engine.finish_cycle or 0
    last = max((r[2] for r in engine.retire if r is not None), default=0)
    horizon = max(cycles, last, 1)
    occ = {f"cmd_{m}": occupancy(engine.mods[m].pushed, engine.mods[m].popped, horizon) for m in EXEC_MODULES}
    for q in engine.tok_push:
        occ[f"token_{q}"] = occupancy(engine.tok_push[q], engine.tok_pop[q], horizon)
    counters = engine.datapath.counters
    nbytes = dict(counters.load_bytes)
    nbytes["out"] = counters.store_bytes
    nbytes["insn"] = engine.f_bytes
    tokens_left = {q: len(engine.tok_push[q]) - len(engine.tok_pop[q]) for q in engine.tok_push}
    return SimResult(config=config, dram=engine.dram, cycles=cycles, modules=engine.modules(),
                     queue_occupancy=occ, bytes=nbytes, counters=counters, retire=list(engine.retire),
                     tokens_left=tokens_left, last_retire=last, port_busy=engine.port.busy_cycles,
                     gemm_mac_uops=engine.prepared.mac_uops, sram=engine.sram,
                     uninit=None if engine.uninit is None else engine.uninit.first)
