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
    assert exposed_cycles(A9, compute=1e6, memory=100 * (window - 1), lines=100) == (1e6, 100 * (window - 1))
    # Much compute, fills longer than the window: the rest of each fill is waited for.
    total, hidden = exposed_cycles(A9, compute=1e6, memory=100 * (window + 30), lines=100)
    assert hidden == 100 * window and total == pytest.approx(1e6 + 100 * 30)
    # Little compute: the kernel runs at the memory's pace.
    assert exposed_cycles(A9, compute=500, memory=1e5, lines=10_000)[0] == pytest.approx(1e5)


def test_without_miss_handling_data_memory_overlaps_fully():
    cpu = variant(A9, fill_buffers=None, miss_window_cycles=None)
    assert exposed_cycles(cpu, compute=1e6, memory=5e5, lines=10)[0] == 1e6
    assert exposed_cycles(cpu, compute=1e5, memory=5e5, lines=10)[0] == 5e5
    l2, _ = memory_cycles(cpu, MemoryTraffic(l2_lines=10, dram_read_lines=0, dram_bytes=0))
    assert l2 == pytest.approx(10 * cpu.l2_line_cycles)
