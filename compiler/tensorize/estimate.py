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
from compiler.tensorize.conv2d import DramPlan, Emitter
from vdla_hw import isa, program, timing
from vdla_hw.config import Config

# The DRAM plan the search times schedules with: every array at 0, a one-row uop table.
SEARCH_DRAM = DramPlan(inp=0, wgt=0, bias=0, out=0, uops=0, uop_count=1, zeros=0, shift=0)


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


def segment_cost(insns, config: Config) -> tuple:
    """What the pipeline reads of one segment: (load cycles, load port cycles, compute cycles,
    compute port cycles, store cycles, store port cycles, resets, instructions, bytes moved);
    ``insns`` are instructions (or :class:`Op` s, read through ``.insn``)."""
    cost = {"load": [0, 0], "compute": [0, 0], "store": [0, 0]}
    resets, moved = False, 0
    for insn in insns:
        module, cycles, port, nbytes, reset = _insn_cost(getattr(insn, "insn", insn), config)
        cost[module][0] += cycles
        cost[module][1] += port
        moved += nbytes
        resets = resets or reset
    return (*cost["load"], *cost["compute"], *cost["store"], resets, len(insns), moved)


def _insn_cost(insn: isa.Insn, config: Config) -> tuple:
    """(module, module cycles, port cycles, bytes moved, is a resetting GEMM) of one instruction."""
    cycles, port = insn_cycles(insn, config)
    moved = insn.y_size * insn.x_size * config.elem_bytes(insn.mem) if port else 0
    return insn.module, cycles, port, moved, insn.kind == "GEMM" and bool(insn.reset)


def estimate(threads: list[list[Segment]], config: Config) -> Estimate:
    """Pipeline estimate over interleaved segments (round robin, as latency hiding merges them)."""
    return pipeline([[segment_cost(seg.ops, config) for seg in segs] for segs in threads], config)


def pipeline(threads: list[list[tuple]], config: Config) -> Estimate:
    """:func:`estimate` over each segment's :func:`segment_cost`."""
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
            loads, load_port, compute, compute_port, stores, store_port, resets, count, nbytes = segs[k]
            moved += nbytes
            port_free += fetch_per_insn * count
            busy_m += load_port + compute_port + store_port
            ready = compute_done[t]
            if loads:
                start = max(load_free, compute_done[t], port_free - load_port)
                port_free = max(start, port_free) + load_port
                load_free = ready = start + loads
            if compute:
                busy_c += compute
                start = max(compute_free, ready, store_done[t] if resets else 0)
                compute_free = compute_done[t] = start + compute
                port_free = max(port_free, start) + compute_port
            if stores:
                start = max(store_free, compute_done[t], port_free - store_port)
                port_free = max(start, port_free) + store_port
                store_free = store_done[t] = start + stores
    end = max(load_free, compute_free, store_free, port_free)
    return Estimate(cycles=int(end), compute=busy_c, memory=int(busy_m), bytes=moved)


class _CostEmitter(Emitter):
    """The code generator's emitter, each segment kept as its :func:`segment_cost` only: the
    same instructions, no SRAM ranges, no segment objects; equal instructions are costed once."""

    def __init__(self, *args):
        super().__init__(*args)
        self.memo = _MEMO.setdefault(self.plan.config, {})

    def op(self, ops: list, kind: str, uops=None, tag: str = "", **fields) -> None:
        key = (kind, *fields.items())
        cost = self.memo.get(key)
        if cost is None:
            cost = self.memo[key] = _insn_cost(isa.Insn(kind, **fields), self.plan.config)
        ops.append(cost)

    def segment(self, ops: list) -> None:
        if self.lead and not self.segments:
            ops = self.lead + ops
        load, compute, store = [0, 0], [0, 0], [0, 0]
        cost = {"load": load, "compute": compute, "store": store}
        resets, moved = False, 0
        for module, cycles, port, nbytes, reset in ops:
            c = cost[module]
            c[0] += cycles
            c[1] += port
            moved += nbytes
            resets = resets or reset
        self.segments.append((*load, *compute, *store, resets, len(ops), moved))


_MEMO: dict = {}   # config -> instruction fields -> _insn_cost (instructions repeat across plans)
MEMO_LIMIT = 1 << 18  # entries (about 60 MB); emptied beyond, between plans


def plan_estimate(plan) -> tuple[Estimate, int]:
    """(:func:`estimate`, instruction count) of ``plan``'s segments as the search times them (DRAM
    bases 0), without generating annotated segments; equal to ``estimate(thread_segments(...))``
    (tests/compiler/tensorize/test_search_fast.py checks it over many layers and configurations)."""
    from compiler.tensorize.conv2d import thread_buffers, thread_segments

    if len(_MEMO) > 64 or sum(map(len, _MEMO.values())) > MEMO_LIMIT:
        _MEMO.clear()
    threads = thread_segments(plan, SEARCH_DRAM, thread_buffers(plan), emitter=_CostEmitter)
    return pipeline(threads, plan.config), sum(seg[7] for t in threads for seg in t)
