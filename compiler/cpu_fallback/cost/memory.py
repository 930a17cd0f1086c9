"""How much of a kernel's memory time the core hides under its compute, and how much it waits.

The A9 overlaps memory with compute only as far as its miss handling reaches: the L1 data side
has two line-fill buffers (Cortex-A9 TRM DDI 0388, section 7.1), so at most two line fills are
in flight, and the core runs ahead of a missing load only as far as its out-of-order window
reaches (interval analysis: Karkhanis and Smith, "A first-order superscalar processor model",
ISCA 2004; Eyerman et al., "A mechanistic performance model for superscalar out-of-order
processors", TOCS 2009: a miss costs its latency minus what the window issues under it). This
module turns the cache simulator's counts into cycles with those limits::

    l2     = L2-hit lines x max(l2_line_cycles, l2_latency_cycles / fill_buffers)
    dram   = max(DRAM bytes / bandwidth, DRAM-read lines x dram_latency / fill_buffers)
    hidden = min(compute, sum over L2, DRAM of min(its cycles, its lines x miss_window_cycles))
    cycles = compute + l2 + dram - hidden

With many cycles of compute per miss a line costs at most its fill time beyond the window; with
little compute per miss the kernel runs at the memory's pace (``max``). A CPU whose data file
leaves ``fill_buffers`` or ``miss_window_cycles`` null ("not applied") gets full overlap,
``max(compute, memory)``, the model before this one.

Two cores (``cores=2``): each runs its share of the kernel with its own L1 and fill buffers;
they share the L2 and the DRAM port, so the DRAM bandwidth is the lesser of twice one core's and
the shared ceiling (``shared_dram_bytes_per_s``), and the latency term counts one core's lines.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryTraffic:
    """One core's traffic of one kernel call: lines it filled from the L2, lines and bytes from
    DRAM (``dram_bytes`` counts the whole kernel's DRAM traffic, both cores' when shared)."""

    l2_lines: float
    dram_read_lines: float
    dram_bytes: float


def memory_cycles(cpu, traffic: MemoryTraffic, cores: int = 1) -> tuple[float, float]:
    """(L2 cycles, DRAM cycles) of one core's ``traffic``, ``cores`` cores sharing the DRAM."""
    fill = cpu.fill_buffers
    l2_per_line = cpu.l2_line_cycles if fill is None else max(cpu.l2_line_cycles, cpu.l2_latency_cycles / fill)
    bandwidth = cores * cpu.dram_bytes_per_s
    if cores > 1 and cpu.shared_dram_bytes_per_s is not None:
        bandwidth = min(bandwidth, cpu.shared_dram_bytes_per_s)
    dram = traffic.dram_bytes / bandwidth * cpu.clock_hz
    if fill is not None:
        latency = cpu.l2_latency_cycles + cpu.dram_latency_s * cpu.clock_hz
        dram = max(dram, traffic.dram_read_lines * latency / fill)
    return traffic.l2_lines * l2_per_line, dram


def exposed_cycles(cpu, compute: float, levels) -> tuple[float, float]:
    """(total cycles, hidden memory cycles) of ``compute`` core cycles and the memory ``levels``,
    (cycles, line fills) pairs (L2, DRAM): each fill hides at most the window's cycles of its own
    level's time, and all of them together at most the compute (see the module docstring)."""
    window = cpu.miss_window_cycles
    memory = sum(cycles for cycles, _ in levels)
    reach = sum(cycles if window is None else min(cycles, lines * window) for cycles, lines in levels)
    hidden = min(reach, compute)
    return compute + memory - hidden, hidden
