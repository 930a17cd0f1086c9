"""The memory model (cost/memory.py) by hand: line fills at the fill buffers' pace, and only what
the core's window covers hidden under compute."""

import dataclasses

import pytest

from compiler.cpu_fallback.cost import load_cpu
from compiler.cpu_fallback.cost.memory import MemoryTraffic, exposed_cycles, memory_cycles

A9 = load_cpu("cortex-a9")


def variant(cpu, **values):
    return dataclasses.replace(cpu, values={**cpu.values, **values})


def test_a9_line_fills_are_paced_by_two_fill_buffers():
    cpu = A9
    l2, dram = memory_cycles(cpu, MemoryTraffic(l2_lines=1000, dram_read_lines=1000, dram_bytes=32_000))
    assert l2 == pytest.approx(1000 * max(cpu.l2_line_cycles, cpu.l2_latency_cycles / cpu.fill_buffers))
    latency = cpu.l2_latency_cycles + cpu.dram_latency_s * cpu.clock_hz
    assert dram == pytest.approx(1000 * latency / 2)  # latency-bound: above 32 kB at the bandwidth
    assert dram > 32_000 / cpu.dram_bytes_per_s * cpu.clock_hz


def test_two_cores_share_the_dram_ceiling():
    traffic = MemoryTraffic(l2_lines=0, dram_read_lines=0, dram_bytes=1e6)
    _, one = memory_cycles(A9, traffic, cores=1)
    _, two = memory_cycles(A9, traffic, cores=2)
    bandwidth = min(2 * A9.dram_bytes_per_s, A9.shared_dram_bytes_per_s)
    assert two == pytest.approx(1e6 / bandwidth * A9.clock_hz)
    assert one / 2 <= two < one  # more bandwidth, not always twice


def test_memory_within_the_window_is_hidden_and_beyond_it_exposed():
    window = A9.miss_window_cycles
    # Much compute, each fill shorter than the window: nothing exposed.
    assert exposed_cycles(A9, 1e6, [(100 * (window - 1), 100)]) == (1e6, 100 * (window - 1))
    # Much compute, fills longer than the window: the rest of each fill is waited for.
    total, hidden = exposed_cycles(A9, 1e6, [(100 * (window + 30), 100)])
    assert hidden == 100 * window and total == pytest.approx(1e6 + 100 * 30)
    # Little compute: the kernel runs at the memory's pace.
    assert exposed_cycles(A9, 500, [(1e5, 10_000)])[0] == pytest.approx(1e5)


def test_short_fills_do_not_lend_their_spare_window_to_long_ones():
    window = A9.miss_window_cycles
    # 1000 L2 fills of 10 cycles (hidden) and 100 DRAM fills of window + 25 (25 each exposed).
    total, hidden = exposed_cycles(A9, 1e7, [(1000 * 10, 1000), (100 * (window + 25), 100)])
    assert hidden == 1000 * 10 + 100 * window and total == pytest.approx(1e7 + 100 * 25)


def test_without_miss_handling_data_memory_overlaps_fully():
    cpu = variant(A9, fill_buffers=None, miss_window_cycles=None)
    assert exposed_cycles(cpu, 1e6, [(2e5, 1), (3e5, 9)])[0] == 1e6
    assert exposed_cycles(cpu, 1e5, [(2e5, 1), (3e5, 9)])[0] == 5e5
    l2, _ = memory_cycles(cpu, MemoryTraffic(l2_lines=10, dram_read_lines=0, dram_bytes=0))
    assert l2 == pytest.approx(10 * cpu.l2_line_cycles)
