"""vdla_hw/work.py: the static work of a program and each model's bound on it (issue 22 item 4).
Every count comes from the instructions alone; the reference semantics refuse a program past
their bound before running anything, accept one exactly at it; the cycle floor never exceeds a
real run's cycles; the RTL's budget refuses what cannot finish."""

import numpy as np
import pytest

from vdla_hw import limits, program, semantics, timing, work
from vdla_hw.asm import assemble
from vdla_hw.errors import LimitError
from vdla_sim import simulate
from vdla_sim.progen import random_program

# The 112-byte program of vdla_hw/limits.py's docstring and its one-uop variant (268 M uops: 2**28
# serial cycles, under DEFAULT_MAX_CYCLES; the reference ran it for about 2.6 hours).
LOOP = ".uops k 0,0,0 1,0,0 2,0,0\nLOAD uop sram=0 dram=k x=3\n{insn} uop=0:{n} iter=16383x16383\nFINISH\n"


def loop_program(insn="GEMM", n=3):
    return assemble(LOOP.format(insn=insn, n=n), source="loop.s")


def small_program():
    """Two loads, a 2 x 3 GEMM of 3 uops, a store: 18 uops, 4 DRAM rows."""
    return assemble(".config tiny\n.uops k 0,0,0 1,0,0 2,0,0\n.data x inp 2 random 1\n.data y out 3\n"
                    "LOAD uop sram=0 dram=k x=3\nLOAD inp sram=0 dram=x y=2 x=1 push_next\n"
                    "GEMM uop=0:3 iter=2x3 pop_prev push_next\nSTORE out sram=0 dram=y x=3 pop_prev\nFINISH\n")


def test_work_counts_come_from_the_instructions():
    bundle = small_program()
    insns = program.decode_checked(bundle)
    w = work.of(insns, bundle.config)
    assert [s.kind for s in w.steps] == [i.kind for i in insns]
    assert w.uops == 18 and [s.rows for s in w.steps] == [1, 2, 0, 1, 0]
    assert w.serial_cycles == sum(sum(timing.exec_cost(bundle.config, i)[:3]) for i in insns)
    assert sum(work.reference_units(s) for s in w.steps) == 5 + 18 + 4


@pytest.mark.parametrize("seed", range(12))
def test_the_cycle_floor_is_never_above_a_run(seed):
    bundle = random_program(seed, "tiny")
    w = work.of(program.decode_checked(bundle), bundle.config)
    assert 0 < w.min_cycles <= simulate(bundle, race_check=False).cycles


@pytest.mark.parametrize("insn, n", [("GEMM", 3), ("GEMM", 1), ("ALU add", 1)])
def test_the_reference_refuses_the_16383_squared_loop_before_running(monkeypatch, insn, n):
    def never(*args):
        raise AssertionError("the interpreter started")

    monkeypatch.setattr(semantics, "_load", never)
    monkeypatch.setattr(semantics, "_compute", never)
    with pytest.raises(LimitError, match=r"instruction 1 \((GEMM|ALU)\) brings the program's"):
        semantics.execute(loop_program(insn, n))


def test_the_one_uop_loop_is_within_the_cycle_bound_but_past_the_uop_bound():
    bundle = loop_program("GEMM", 1)
    w = work.of(program.decode_checked(bundle), bundle.config)
    assert w.serial_cycles < limits.DEFAULT_MAX_CYCLES  # the cycle bound alone let it run for hours
    with pytest.raises(LimitError, match=r"past the limit of 8,388,608 micro-ops: it needs 268,402,693 in all, "
                                         r"about 2\.7 h .*raise --max-uops"):
        semantics.execute(bundle)


def test_the_reference_runs_a_program_exactly_at_its_bound():
    bundle = small_program()
    total = 5 + 18 + 4
    expected = semantics.execute(bundle).dram
    assert np.array_equal(semantics.execute(bundle, max_uops=total).dram, expected)
    with pytest.raises(LimitError, match=r"instruction 4 \(FINISH\) brings the program's work on the reference "
                                         r"semantics past the limit of 26 micro-ops: it needs 27 in all"):
        semantics.execute(bundle, max_uops=total - 1)
    with pytest.raises(LimitError, match=r"instruction 2 \(GEMM\) brings"):  # 2 + 3 + 19 steps by its end
        semantics.execute(bundle, max_uops=23)


def test_rtl_budget_leaves_room_and_refuses_what_cannot_finish():
    bundle = small_program()
    w = work.of(program.decode_checked(bundle), bundle.config)
    assert work.rtl_budget(w, "verilator", "compiled") == limits.RTL_MIN_BUDGET  # small: a hang ends soon
    assert work.rtl_budget(w, "icarus", "cocotb", timeout_cycles=w.min_cycles) == w.min_cycles
    with pytest.raises(LimitError, match="needs at least .* cycles on the RTL"):
        work.rtl_budget(w, "icarus", "cocotb", timeout_cycles=w.min_cycles - 1)
    big = work.of(program.decode_checked(loop_program()), loop_program().config)
    with pytest.raises(LimitError, match=r"past the limit of 268,435,456; verilator's compiled bench runs at most"):
        work.rtl_budget(big, "verilator", "compiled")
    with pytest.raises(LimitError, match=r"past the limit of 131,072; icarus's cocotb bench"):
        work.rtl_budget(big, "icarus", "cocotb")


def test_duration_reads_well():
    assert [work.duration(s) for s in (0.5, 40, 300, 9600, 10 ** 6)] == ["0.50 s", "40 s", "5 min", "2.7 h",
                                                                          "12 days"]
