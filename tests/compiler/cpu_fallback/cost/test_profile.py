"""Block counts and cache counters of the profiler (the instrumented IR run on this machine),
checked on kernels and address streams small enough to count by hand."""

import ctypes

import llvmlite.binding as llvm
import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost import load_cpu
from compiler.cpu_fallback.cost.analysis import analyse
from compiler.cpu_fallback.cost.cachesim import STATS, simulator_ir
from compiler.cpu_fallback.cost.profile import ProfileError, instrument
from compiler.cpu_fallback.jit import host_target_machine

A9 = load_cpu("cortex-a9")


def test_add_loop_trip_count_is_size_over_the_vector_width():
    """The A9 add kernel runs one 16-lane int8 NEON body per 16 elements, then a scalar tail."""
    for size, trips in ((1000, 62), (2000, 125), (512, 32)):
        loops = analyse(cf.AddSpec(size=size, shift=1, relu=True), A9).loops()
        assert len(loops) == 1
        assert (loops[0]["iterations"], loops[0]["entries"]) == (trips, 1)


def test_cycles_are_executions_times_cycles_per_iteration():
    """Doubling the add adds exactly (extra iterations) x (the body's cycles per iteration)."""
    small, large = (analyse(cf.AddSpec(size=n, shift=1, relu=True), A9) for n in (8192, 16384))
    body = large.loops()[0]["cycles_per_iteration"]
    assert body == small.loops()[0]["cycles_per_iteration"] > 0
    assert large.core_cycles - small.core_cycles == pytest.approx(512 * body)


def test_streaming_kernel_misses_every_line_once():
    a = analyse(cf.AddSpec(size=1000, shift=1, relu=True), A9)
    lines = 3 * -(-1000 // 32)
    assert a.l1_misses == lines  # the profiler page-aligns its buffers
    assert a.l2_misses == a.l1_misses  # nothing is reused: every L1 miss goes to DRAM
    assert a.l2_store_misses == -(-1000 // 32)  # the output's lines


def touch_stream(cpu, passes):
    """Run the cache simulator alone on ``passes`` of (start, bytes, step) address streams."""
    module = llvm.parse_assembly(simulator_ir(cpu))
    for fn in module.functions:  # export the simulator for this test
        if fn.name == "vdla.touch":
            fn.linkage = "external"
    engine = llvm.create_mcjit_compiler(module, host_target_machine())
    engine.finalize_object()
    touch = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_bool)(engine.get_function_address("vdla.touch"))
    for start, nbytes, step in passes:
        for address in range(start, start + nbytes, step):
            touch(address, step, False)
    stats = (ctypes.c_int64 * len(STATS)).from_address(engine.get_global_value_address("vdla.stats"))
    return dict(zip(STATS, list(stats)))


def test_cache_simulator_on_streams_counted_by_hand():
    base = 1 << 20
    # 16 kB read twice: fits the 32 kB L1, so only the first pass misses (512 lines of 32 B).
    assert touch_stream(A9, [(base, 16384, 16)] * 2)["l1_misses"] == 512
    # 64 kB read twice: LRU streaming thrashes the L1 both times, the 512 kB L2 keeps it.
    twice = touch_stream(A9, [(base, 65536, 32)] * 2)
    assert (twice["l1_misses"], twice["l2_misses"]) == (4096, 2048)
    # 1 MB read twice: larger than the L2 too.
    big = touch_stream(A9, [(base, 1 << 20, 32)] * 2)
    assert big["l2_misses"] == 2 * 32768
    # An access that straddles two lines touches both.
    assert touch_stream(A9, [(base + 24, 16, 16)])["accesses"] == 2


def test_instrumentation_refuses_memory_intrinsics():
    text = ("define void @k(ptr noalias %a, ptr noalias %b) {\nb0:\n"
            "  call void @llvm.memcpy.p0.p0.i32(ptr %a, ptr %b, i32 16, i1 false)\n  ret void\n}\n")
    with pytest.raises(ProfileError, match="memory intrinsic @llvm.memcpy"):
        instrument(text, "k")
