"""Analytic cycle estimate of a compiled convolution, for the schedule search.

Two levels, both from the configuration's timing parameters:

- :func:`insn_cycles`: cycles one module spends on one instruction, and how many of them hold
  the memory port, straight from the timing contract (``vdla_hw.timing.exec_cycles``).
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
from vdla_hw import isa, program, timing
from vdla_hw.config import Config


def insn_cycles(insn: isa.Insn, config: Config) -> tuple[int, int]:
    """(module-busy cycles, memory-port cycles) of ``insn`` under the timing contract."""
    before, port, after = timing.exec_cycles(config, insn)
    return before + port + after, port


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
    chunk = timing.fetch_chunk(config)
    fetch_per_insn = timing.fetch_cycles(config, 0, chunk) / chunk  # fetch shares the port
    longest = max((len(t) for t in threads), default=0)
    for k in range(longest):
        for t, segs in enumerate(threads):
            if k >= len(segs):
                continue
            cost = {"load": [0, 0], "compute": [0, 0], "store": [0, 0]}
            resets = False
            for op in segs[k].ops:
                cycles, port = insn_cycles(op.insn, config)
                if port:
                    moved += op.insn.y_size * op.insn.x_size * config.elem_bytes(op.insn.mem)
                cost[op.module][0] += cycles
                cost[op.module][1] += port
                resets = resets or (op.insn.kind == "GEMM" and op.insn.reset)
            port_free += fetch_per_insn * len(segs[k].ops)
            busy_m += sum(port for _, port in cost.values())
            ready = compute_done[t]
            loads, load_port = cost["load"]
            if loads:
                start = max(load_free, compute_done[t], port_free - load_port)
                port_free = max(start, port_free) + load_port
                load_free = ready = start + loads
            compute, compute_port = cost["compute"]
            if compute:
                busy_c += compute
                start = max(compute_free, ready, store_done[t] if resets else 0)
                compute_free = compute_done[t] = start + compute
                port_free = max(port_free, start) + compute_port
            stores, store_port = cost["store"]
            if stores:
                start = max(store_free, compute_done[t], port_free - store_port)
                port_free = max(start, port_free) + store_port
                store_free = store_done[t] = start + stores
    end = max(load_free, compute_free, store_free, port_free)
    return Estimate(cycles=int(end), compute=busy_c, memory=int(busy_m), bytes=moved)
