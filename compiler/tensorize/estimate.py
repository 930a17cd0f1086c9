"""Analytic cycle estimate of a compiled convolution, for the schedule search.

Two levels, both from the configuration's timing parameters:

- :func:`insn_cycles`: cycles one module spends on one instruction (transfers: per row, the
  memory latency plus one cycle per beat; GEMM one uop per cycle; ALU one uop per
  ``ALU_CYCLES_PER_UOP``; each with its decode overhead and pipeline drain).
- :func:`estimate`: a segment-level pipeline over the threads' segments: a segment's loads
  start when the load module and the memory port are free and the same thread's previous
  compute is done (its buffer is free); its compute starts when its loads are done; a
  thread's first compute of a tile waits for that thread's previous store; stores share the
  memory port with loads.

The simulator is the judge; tests check that this estimate stays within a tolerance of it and
that it ranks schedules sensibly.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.annotated import Segment
from vdla_hw import isa, program
from vdla_hw.config import Config


def transfer_cycles(insn: isa.Insn, config: Config) -> int:
    """Memory-port cycles of a LOAD/STORE: per row, first-beat latency plus its beats."""
    if not program.moves_data(insn):
        return 0
    row_bytes = insn.x_size * config.elem_bytes(insn.mem)
    beats = -(-row_bytes // config.MEM_BYTES_PER_BEAT)
    bursts = -(-beats // config.MEM_MAX_BURST)
    return insn.y_size * (config.MEM_LATENCY + beats + bursts - 1)


def insn_cycles(insn: isa.Insn, config: Config) -> int:
    """Cycles the executing module is busy with ``insn``."""
    over = config.INSN_OVERHEAD
    if insn.kind in ("LOAD", "STORE"):
        return over + transfer_cycles(insn, config)
    work = insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn)
    if insn.kind == "GEMM":
        return over + work + config.GEMM_PIPELINE_DEPTH
    if insn.kind == "ALU":
        return over + work * config.ALU_CYCLES_PER_UOP + config.ALU_PIPELINE_DEPTH
    return over


@dataclass
class Estimate:
    cycles: int
    compute: int      # busy cycles of the compute module
    memory: int       # busy cycles of the memory port (loads and stores)
    bytes: int        # DRAM bytes moved by loads and stores

    def seconds(self, config: Config) -> float:
        return self.cycles / config.clock_hz


def estimate(threads: list[list[Segment]], config: Config) -> Estimate:
    """Pipeline estimate over interleaved segments (round robin, as latency hiding merges them)."""
    load_free = compute_free = store_free = port_free = 0
    compute_done = [0] * len(threads)   # per thread: its last compute finished
    store_done = [0] * len(threads)     # per thread: its last store finished
    busy_c = busy_m = moved = 0
    longest = max((len(t) for t in threads), default=0)
    for k in range(longest):
        for t, segs in enumerate(threads):
            if k >= len(segs):
                continue
            loads = compute = stores = 0
            resets = False
            for op in segs[k].ops:
                insn = op.insn
                cycles = insn_cycles(insn, config)
                if insn.kind in ("LOAD", "STORE") and program.moves_data(insn):
                    moved += insn.y_size * insn.x_size * config.elem_bytes(insn.mem)
                    busy_m += cycles
                if op.module == "load":
                    loads += cycles
                elif op.module == "store":
                    stores += cycles
                else:
                    compute += cycles
                    busy_c += cycles
                    resets = resets or (insn.kind == "GEMM" and insn.reset)
            ready = compute_done[t]
            if loads:
                start = max(load_free, port_free, compute_done[t])
                load_free = port_free = start + loads
                ready = load_free
            if compute:
                start = max(compute_free, ready, store_done[t] if resets else 0)
                compute_free = compute_done[t] = start + compute
            if stores:
                start = max(store_free, port_free, compute_done[t])
                store_free = port_free = store_done[t] = start + stores
    end = max(load_free, compute_free, store_free)
    return Estimate(cycles=end, compute=busy_c, memory=busy_m, bytes=moved)
