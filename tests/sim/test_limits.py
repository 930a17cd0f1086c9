"""Bounded work in the simulator and the reference semantics (vdla_hw/limits.py): the cycle
limit refuses an instruction before its work, long loops run in pieces with flat memory, and
pieces give exactly the results (and the hazard errors) of one whole loop."""

import tracemalloc

import numpy as np
import pytest

from vdla_hw import program
from vdla_hw.bundle import BundleBuilder
from vdla_hw.errors import LimitError
from vdla_hw.semantics import execute
from vdla_sim import CycleLimitError, HazardError, simulate
from vdla_sim import datapath
from vdla_sim.progen import random_program


def long_gemm(iters: int, config="tiny"):
    """One GEMM of iters x iters iterations over 3 uops (all reading inp[0] / wgt[0])."""
    b = BundleBuilder(config)
    c = b.config
    rng = np.random.default_rng(0)
    x = b.array("x", "inp", rng.integers(-128, 128, size=(1, c.batch, c.block_in)))
    w = b.array("w", "wgt", rng.integers(-128, 128, size=(1, c.block_out, c.block_in)))
    k = b.uops("k", [(0, 0, 0), (1, 0, 0), (2, 0, 0)])
    y = b.alloc("y", "out", 3)
    b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=3, x_stride=3)
    b.emit("LOAD", memory_type=2, dram_base=x, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=1, dram_base=w, y_size=1, x_size=1, x_stride=1, push_next=1)
    b.emit("GEMM", uop_end=3, iter_out=iters, iter_in=iters, pop_prev=1)
    b.emit("GEMM", uop_end=3, push_next=1)
    b.emit("STORE", memory_type=4, dram_base=y, y_size=1, x_size=3, x_stride=3, pop_prev=1)
    return b.build()


def test_an_instruction_past_the_cycle_limit_is_refused_before_it_runs():
    bundle = long_gemm(200)  # 120,000 uops
    with pytest.raises(CycleLimitError, match=r"instruction 3 \(GEMM\) would run from cycle"):
        simulate(bundle, max_cycles=100_000)
    assert simulate(bundle, max_cycles=200_000).cycles < 200_000


def test_reference_semantics_bound_their_serial_work():
    bundle = long_gemm(200)
    with pytest.raises(LimitError, match=r"instruction 3 \(GEMM\) brings the program's serial work"):
        execute(bundle, max_cycles=100_000)


def small_pieces(monkeypatch, uops: int):
    """Make the simulator cut loops into pieces of ``uops`` uops (tiny: BATCH 1 x BLOCK 4)."""
    monkeypatch.setattr(datapath, "LOOP_CHUNK_BYTES", 8 * 4 * uops)


@pytest.mark.parametrize("seed", range(40))
def test_loops_in_pieces_equal_whole_loops(monkeypatch, seed):
    bundle = random_program(seed, "tiny")
    whole = simulate(bundle)
    small_pieces(monkeypatch, 3)
    pieces = simulate(bundle)
    assert np.array_equal(whole.dram, pieces.dram) and whole.cycles == pieces.cycles
    assert whole.counters.as_dict() == pieces.counters.as_dict()


def test_hazards_and_repeats_in_pieces_are_those_of_one_loop(monkeypatch):
    """Pieces are whole sweeps of the uop list, so a repeat across a cut is a repeat across
    sweeps (allowed: same image and cycles in pieces) and a repeat within a sweep is reported
    by the first piece exactly as by the whole loop."""
    b = BundleBuilder("tiny")
    k = b.uops("k", [(0, 0, 0), (1, 1, 0), (2, 2, 0), (0, 3, 0), (1, 0, 0), (0, 1, 0)])
    b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=6, x_stride=6)
    b.emit("GEMM", uop_end=3, iter_out=2, iter_in=1, dst_factor_out=2)  # acc 0 1 2 | 2 3 4
    b.emit("GEMM", uop_bgn=2, uop_end=5, iter_out=2, iter_in=1)        # acc 2 0 1 | 2 0 1
    b.emit("GEMM", uop_bgn=3, uop_end=6, iter_out=2, iter_in=1)        # acc 0 1 0: uop 5 repeats uop 3
    b.emit("FINISH")
    bad = b.build()
    good = BundleBuilder("tiny")
    k = good.uops("k", [(0, 0, 0), (1, 1, 0), (2, 2, 0), (0, 3, 0), (1, 0, 0)])
    good.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=5, x_stride=5)
    good.emit("GEMM", uop_end=3, iter_out=2, iter_in=1, dst_factor_out=2)
    good.emit("GEMM", uop_bgn=2, uop_end=5, iter_out=2, iter_in=1)
    good.emit("FINISH")
    good = good.build()
    whole = simulate(good, race_check=False)
    with pytest.raises(HazardError) as whole_err:
        simulate(bad, race_check=False)
    small_pieces(monkeypatch, 3)  # one piece per outer iteration: the repeats are across the cut
    gemm = good.insns()[1]
    assert [(p.iter_out, f) for p, _, f in program.loop_chunks(gemm, np.zeros((3, 3), np.int64), 3)] == [(1, 0), (1, 3)]
    pieces = simulate(good, race_check=False)
    assert np.array_equal(whole.dram, pieces.dram) and whole.cycles == pieces.cycles
    with pytest.raises(HazardError) as pieces_err:
        simulate(bad, race_check=False)
    assert str(whole_err.value) == str(pieces_err.value)
    assert str(whole_err.value).startswith("instruction 3 (GEMM): uop: uop 5 writes the accumulator of uop 3")


def peak_bytes(bundle) -> int:
    tracemalloc.start()
    try:
        simulate(bundle, race_check=True)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_loop_trip_counts(monkeypatch):
    small_pieces(monkeypatch, 4096)
    small, large = peak_bytes(long_gemm(150)), peak_bytes(long_gemm(600))  # 67,500 and 1,080,000 uops
    assert large < 1.5 * small, (small, large)


# --- the simulator's own work bound (vdla_hw/work.py), checked before anything runs --------------
ALU_LOOP = ".uops k 0,0,0\nLOAD uop sram=0 dram=k x=1\nALU add uop=0:1 iter=16383x16383 imm=1\nFINISH\n"


def sim_work(bundle) -> int:
    from vdla_sim import cost

    return cost.program_work(bundle)


def test_the_simulator_refuses_a_16383_squared_alu_loop_before_running(monkeypatch):
    """268 M ALU uops of one wave each, within the cycle bound (2 cycles per uop: 536.8 M <
    2**29): the simulator would have run for about a day."""
    from vdla_hw.asm import assemble

    def never(*args):
        raise AssertionError("the simulator started")

    monkeypatch.setattr(datapath.Datapath, "execute", never)
    with pytest.raises(LimitError, match=r"instruction 1 \(ALU\) brings the program's work on the simulator past "
                                         r"the limit of 2,147,483,648 multiply-add equivalents.*raise --max-work"):
        simulate(assemble(ALU_LOOP, source="alu.s"))


def test_the_simulator_runs_a_program_exactly_at_its_work_bound():
    bundle = long_gemm(20)
    total = sim_work(bundle)
    assert simulate(bundle, max_work=total).cycles > 0
    with pytest.raises(LimitError, match=rf"past the limit of {total - 1:,} multiply-add equivalents: it needs "
                                         rf"{total:,} in all"):
        simulate(bundle, max_work=total - 1)


def test_the_sim_device_refuses_past_the_bound_in_one_line():
    from driver import DeviceError, open_device
    from vdla_hw.asm import assemble

    bundle = assemble(ALU_LOOP, source="alu.s")
    with open_device("sim", bundle.config) as device, pytest.raises(DeviceError) as err:
        device.run(bundle)
    assert str(err.value).startswith("sim device refused the program before running it: instruction 1 (ALU)")
    assert "\n" not in str(err.value)
