"""Each term of the CPU cost model pinned by hand (cost/model.py ``_kernel_cycles`` and
cost/memory.py), from the kernel's analysis counts and the CPU data: dropping or changing any one
term changes a number here (the mutants of scripts/mutants.py that the coarser tests missed)."""

import dataclasses

import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost import CpuModel, load_cpu
from compiler.cpu_fallback.cost.memory import MemoryTraffic, exposed_cycles, memory_cycles

A9 = load_cpu("cortex-a9")
SPEC = cf.Conv2dSpec(n=1, c=8, h=14, w=14, oc=64, kh=3, kw=3, pad=1, shift=8, relu=True)


def variant(cpu, **values):
    return dataclasses.replace(cpu, values={**cpu.values, **values})


def _lines(nbytes):
    return -(-nbytes // A9.line_bytes)


@pytest.mark.parametrize("threads", [1, 2])
def test_kernel_terms_by_hand(threads):
    model = CpuModel(A9, threads=threads)
    p = model._kernel_cycles(SPEC)
    whole = model._analysis(SPEC)
    own = model._analysis(cf.cost.threads.share(SPEC)) if threads == 2 else whole
    assert p["cores"] == threads
    dram_lines = whole.l2_misses - (0 if A9.write_allocate else whole.l2_store_misses)
    written = sum(a.nbytes for a in SPEC.args() if not a.is_input)
    assert written >= 64 * 14 * 14                      # the outputs: their dirty lines go back to DRAM
    assert p["dram_bytes"] == A9.line_bytes * (dram_lines + _lines(written))
    core_lines = dram_lines / threads
    l2_lines = whole.l1_misses - whole.l2_misses if threads == 1 else max(0.0, own.l1_misses - core_lines)
    assert p["l2_lines"] == pytest.approx(l2_lines)
    assert p["branch_cycles"] == sum(own.loop_entries.values()) * A9.mispredict_cycles
    assert p["core_cycles"] == own.core_cycles
    l2, dram = memory_cycles(A9, MemoryTraffic(l2_lines, core_lines, p["dram_bytes"]), threads)
    assert (p["l2_cycles"], p["dram_cycles"]) == (pytest.approx(l2), pytest.approx(dram))
    fork_join = A9.fork_join_s * A9.clock_hz if threads == 2 else 0.0
    assert p["fork_join_cycles"] == pytest.approx(fork_join) and (threads == 1 or fork_join > 0)
    total = p["core_cycles"] + p["branch_cycles"] + l2 + dram - p["hidden_cycles"] + fork_join
    assert p["cycles"] == pytest.approx(total)


def test_shared_dram_ceiling_binds_when_lower_than_two_cores():
    cpu = variant(A9, shared_dram_bytes_per_s=1.25 * A9.dram_bytes_per_s)
    traffic = MemoryTraffic(l2_lines=0, dram_read_lines=0, dram_bytes=1e6)
    _, two = memory_cycles(cpu, traffic, cores=2)
    assert two == pytest.approx(1e6 / (1.25 * A9.dram_bytes_per_s) * A9.clock_hz)
    _, one = memory_cycles(cpu, traffic, cores=1)          # one core never sees the shared ceiling
    assert one == pytest.approx(1e6 / A9.dram_bytes_per_s * A9.clock_hz)


def test_memory_terms_by_hand_with_round_numbers():
    cpu = variant(A9, clock_hz=1e9, memcpy_bytes_per_s=0.5e9, write_allocate=False, fill_buffers=2,
                  l2_line_cycles=10, l2_latency_cycles=30, dram_latency_s=100e-9, miss_window_cycles=20,
                  shared_dram_bytes_per_s=None)
    # L2: 100 lines x max(10, 30 / 2); DRAM: max(6400 B at 1 B/cycle, 50 lines x (30 + 100) / 2)
    assert memory_cycles(cpu, MemoryTraffic(100, 50, 6400)) == (1500, 6400)
    assert memory_cycles(cpu, MemoryTraffic(100, 200, 6400)) == (1500, 13000)
    assert memory_cycles(cpu, MemoryTraffic(0, 0, 6400), cores=2) == (0, 3200)   # no ceiling: twice the bandwidth
    # hidden: each level at most lines x window, all of them at most the compute
    assert exposed_cycles(cpu, 10_000, [(1500, 100), (6400, 50)]) == (10_000 + 7900 - 2500, 1500 + 1000)
    assert exposed_cycles(cpu, 2000, [(1500, 100), (6400, 50)]) == (2000 + 7900 - 2000, 2000)
