"""llvm-mca timing of machine blocks small enough to count by hand, and the resource bounds the
CPU data adds (NEON Q forms, the A9's 64-bit load/store path)."""

import pytest

from compiler.cpu_fallback.cost import load_cpu
from compiler.cpu_fallback.cost.mca import for_mca, is_quad_form, memory_bytes, stand_in, time_blocks, version

A9, A53 = load_cpu("cortex-a9"), load_cpu("cortex-a53")


def cycles(code, cpu=A9):
    timings, _ = time_blocks({"b": code}, cpu)
    return timings["b"]


def test_dependent_chain_takes_one_cycle_per_add():
    t = cycles(["add r0, r0, #1"] * 8)
    assert t.cycles == pytest.approx(8, rel=0.03) and t.bound == "schedule"


def test_independent_adds_use_both_integer_pipes():
    t = cycles([f"add r{i}, r{i + 8 if i < 4 else i}, #1" for i in range(8)])
    assert t.cycles == pytest.approx(4, rel=0.05)
    assert cycles([f"add x{i}, x{i + 10}, #1" for i in range(8)], A53).cycles == pytest.approx(4, rel=0.05)


def test_quad_neon_ops_take_the_64_bit_pipe_twice():
    """LLVM's A9 machine model gives VADD.I32 Q and D one NEON slot each; the itineraries (and
    the core) take two cycles for the Q form: 4 independent Q adds cost 8 cycles, 4 D adds 4."""
    quad = cycles([f"vadd.i32 q{8 + i}, q12, q13" for i in range(4)])
    assert quad.mca_cycles == pytest.approx(4, rel=0.05)
    assert quad.neon_cycles == 8 and quad.cycles == 8 and quad.bound == "neon"
    double = cycles([f"vadd.i32 d{16 + i}, d24, d25" for i in range(4)])
    assert double.neon_cycles == 4 and double.cycles == pytest.approx(4, rel=0.05)
    # The A53's model is used as it is (no sourced correction): no NEON bound.
    assert cycles([f"add v{i}.4s, v12.4s, v13.4s" for i in range(4)], A53).neon_cycles == 0


def test_vector_loads_take_the_load_store_path_eight_bytes_a_cycle():
    t = cycles([f"vld1.8 {{d{16 + 2 * i}, d{17 + 2 * i}}}, [r{i}]" for i in range(4)])
    assert t.load_store_cycles == 8 and t.cycles == 8 and t.bound == "load/store"


def test_instruction_classification():
    assert memory_bytes("vld1.32 {d16-d19}, [r0]!") == 32
    assert memory_bytes("vld1.8 {d16[0]}, [r0]") == 1
    assert memory_bytes("ldrsb r1, [r10, #-1]") == 1 and memory_bytes("push {r4, r5, lr}") == 12
    assert memory_bytes("add r0, r1, r2") == 0
    assert is_quad_form("vadd.i32 q8, q9, q10") and is_quad_form("vmla.i32 q8, q9, d0[1]")
    assert not is_quad_form("vmovl.s8 q10, d19") and not is_quad_form("vmovn.i32 d23, q11")
    assert is_quad_form("add v0.4s, v1.4s, v2.4s") and not is_quad_form("smlal v1.4s, v2.4h, v3.4h")
    assert for_mca("push {r4, r5, lr}") == ["str\tr4, [sp, #0]", "str\tr5, [sp, #4]", "str\tlr, [sp, #8]"]
    assert for_mca("vpop {d8-d9}") == ["vldr\td8, [sp, #0]", "vldr\td9, [sp, #8]"]


def test_instructions_without_scheduling_data_get_a_named_stand_in():
    """LLVM's A9 model has no data for USAT; the block is still timed, and the report says how."""
    timings, stand_ins = time_blocks({"b": ["usat r0, #7, r1, asr #8", "add r2, r0, #1"]}, A9)
    assert stand_ins == {"usat r0, #7, r1, asr #8": "mov\tr0, r1"}
    assert timings["b"].cycles > 0
    assert stand_in("usat r0, #7, r10, asr #8") == "mov\tr0, r10"


def test_version_names_llvm():
    assert "LLVM version" in version()
