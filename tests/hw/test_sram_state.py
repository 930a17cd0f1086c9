"""SRAM state between programs and the --uninit check (vdla_hw/sram_state.py), on the reference
semantics and the simulator (the same first uninitialised read in both): fixed programs that
read INP, WGT, ACC, UOP or OUT before anything wrote them, the same programs writing first,
sessions that carry SRAM from one program to the next, and the random programs of progen."""

from __future__ import annotations

import numpy as np
import pytest

from tests.hw.programs import ACC, ALU, INP, OUT, UOP, WGT
from vdla_hw.bundle import BundleBuilder
from vdla_hw.config import load_config
from vdla_hw.errors import VdlaError
from vdla_hw.sram_state import MODES, SramState, UninitError, execute
from vdla_sim import simulate
from vdla_sim.progen import random_program

PRESET = "tiny"


def gemm_program(*, inp=True, wgt=True, acc=False, uop=True, reset=True, gemm=True, alu=False, store=True,
                 alu_src=0):
    """Load some of INP/WGT/ACC/UOP (each at element 0), then a reset GEMM (``reset``), a GEMM
    (``gemm``) and an ALU add (``alu``: acc[0] += acc[alu_src]) on element 0, then STORE OUT[0]
    (correctly synchronised; which buffer is read first unwritten depends on what was loaded)."""
    b = BundleBuilder(PRESET)
    c = b.config
    rng = np.random.default_rng(3)
    x = b.array("x", "inp", rng.integers(-5, 5, size=(1, c.batch, c.block_in)))
    w = b.array("w", "wgt", rng.integers(-5, 5, size=(1, c.block_out, c.block_in)))
    a = b.array("a", "acc", rng.integers(-50, 50, size=(2, c.batch, c.block_out)))
    y = b.alloc("y", "out", 1)
    k = b.uops("k", [(0, 0, 0), (0, alu_src, 0)])
    if inp:
        b.emit("LOAD", memory_type=INP, dram_base=x, y_size=1, x_size=1, x_stride=1)
    if wgt:
        b.emit("LOAD", memory_type=WGT, dram_base=w, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=INP, push_next=1)          # x_size 0: carries the load -> compute token
    b.emit("LOAD", memory_type=ACC, pop_prev=1)
    if uop:
        b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=2, x_stride=2)
    if acc:
        b.emit("LOAD", memory_type=ACC, dram_base=a, y_size=1, x_size=2, x_stride=2)
    if reset:
        b.emit("GEMM", reset=1, uop_end=1, iter_out=1, iter_in=1)
    if gemm:
        b.emit("GEMM", uop_end=1, iter_out=1, iter_in=1)
    if alu:
        b.emit("ALU", alu_opcode=ALU["add"], uop_bgn=1, uop_end=2, iter_out=1, iter_in=1)
    b.emit("LOAD", memory_type=ACC, push_next=1)
    if store:
        b.emit("STORE", memory_type=OUT, dram_base=y, y_size=1, x_size=1, x_stride=1, pop_prev=1, push_prev=1)
    else:
        b.emit("STORE", memory_type=OUT, pop_prev=1, push_prev=1)
    b.emit("FINISH", pop_next=1)
    return b.build()


def first_reads(bundle, state_ref=None, state_sim=None):
    """The first uninitialised read on the reference and on the simulator (warn mode), as text."""
    _, ref = execute(bundle, state_ref, "warn")
    sim = simulate(bundle, sram=state_sim, uninit="warn").uninit
    assert str(ref) == str(sim), f"reference: {ref}; simulator: {sim}"
    return ref


@pytest.mark.parametrize("case, mem, index", [
    (dict(inp=False, reset=False), "inp", 4),           # the first GEMM step reads INP first
    (dict(wgt=False, reset=False), "wgt", 4),
    (dict(reset=False), "acc", 5),
    (dict(uop=False), "uop", 4),                         # the reset GEMM reads its micro-op
    (dict(reset=False, gemm=False, alu=False), "out", 6),  # STORE of an OUT nothing computed
    (dict(acc=True, reset=False, gemm=False), "out", 7),   # LOAD ACC leaves OUT untouched
    (dict(reset=False, gemm=False, alu=True, acc=True, alu_src=3), "acc", 6),  # ALU src past the loaded ACC
])
def test_first_uninitialised_read_is_named(case, mem, index):
    first = first_reads(gemm_program(**case))
    assert first is not None and (first.mem, first.index) == (mem, index), first
    text = str(first)
    assert text.startswith(f"instruction {index} (") and f"reads {mem.upper()} element" in text


@pytest.mark.parametrize("case", [dict(), dict(acc=True, reset=False), dict(alu=True),
                                  dict(acc=True, reset=False, gemm=False, alu=True, alu_src=1)])
def test_programs_that_write_first_have_no_uninitialised_read(case):
    assert first_reads(gemm_program(**case)) is None


def test_error_mode_raises_naming_the_instruction():
    bundle = gemm_program(inp=False, reset=False)
    for run in (lambda: execute(bundle, None, "error"), lambda: simulate(bundle, uninit="error")):
        with pytest.raises(UninitError) as info:
            run()
        err = info.value
        assert (err.index, err.kind) == (4, "GEMM")
        assert "reads INP element 0 at loop step i=0 j=0 micro-op 0" in str(err)


def test_off_is_the_default_and_finds_nothing():
    bundle = gemm_program(inp=False, reset=False)
    assert simulate(bundle).uninit is None
    _, first = execute(bundle)
    assert first is None


def test_a_session_carries_srams_and_what_was_written():
    """Program 1 loads INP, WGT, ACC and UOP; program 2 computes on them without loading: no
    uninitialised read and the values of program 1 (a fresh device reads zeros and warns)."""
    writer = gemm_program(acc=True, reset=False)
    reader = gemm_program(inp=False, wgt=False, uop=False, reset=False)
    ref_state, sim_state = SramState.fresh(writer.config), SramState.fresh(writer.config)
    assert first_reads(writer, ref_state, sim_state) is None
    assert first_reads(reader, ref_state, sim_state) is None
    for mem in ("inp", "wgt", "acc", "out", "uop"):
        assert np.array_equal(ref_state.srams.of(mem), sim_state.srams.of(mem)), mem
    assert first_reads(reader) is not None          # on a fresh device it reads what nothing wrote
    assert not np.array_equal(simulate(reader, sram=sim_state).dram, simulate(reader).dram)


def test_a_session_partly_untracked_cannot_be_checked():
    state = SramState.fresh(gemm_program().config)
    simulate(gemm_program(), sram=state)
    assert state.written is None
    with pytest.raises(VdlaError, match="ran without the uninitialised-read check"):
        simulate(gemm_program(), sram=state, uninit="warn")


def test_timing_only_mode_has_no_sram_state():
    with pytest.raises(ValueError, match="timing-only"):
        simulate(gemm_program(), data=False, uninit="warn")


def test_unknown_mode_is_refused():
    with pytest.raises(VdlaError, match="unknown --uninit mode"):
        simulate(gemm_program(), uninit="loud")
    assert MODES == ("off", "warn", "error")


@pytest.mark.parametrize("seed", range(40))
def test_progen_programs_name_their_first_uninitialised_read(seed):
    """Every random tiny program reads SRAM it never wrote (issue 25); both models name the
    same first read, and error mode stops there."""
    bundle = random_program(seed, PRESET)
    first = first_reads(bundle)
    assert first is not None
    with pytest.raises(UninitError) as info:
        simulate(bundle, uninit="error")
    assert str(info.value) == str(first)


def test_back_to_back_reference_equals_simulator():
    """Ten progen programs on one session: the reference and the simulator leave the same image
    after each and the same SRAMs at the end; the carried state changes some images."""
    config = load_config(PRESET)
    ref_state, sim_state = SramState.fresh(config), SramState.fresh(config)
    changed = 0
    for seed in range(10):
        bundle = random_program(seed, PRESET)
        ref, _ = execute(bundle, ref_state)
        sim = simulate(bundle, sram=sim_state)
        assert np.array_equal(ref.dram, sim.dram), seed
        changed += not np.array_equal(sim.dram, simulate(bundle).dram)
    for mem in ("inp", "wgt", "acc", "out", "uop"):
        assert np.array_equal(ref_state.srams.of(mem), sim_state.srams.of(mem)), mem
    assert changed > 0



@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_pieces_of_a_loop_find_the_same_first_read(chunk):
    """The tracker walks long loops piece by piece (bounded memory); tiny pieces give the same
    first read and the same written elements as whole loops."""
    from vdla_hw import semantics

    config = load_config(PRESET)
    for seed in range(40):
        bundle = random_program(seed, PRESET)
        whole = SramState.fresh(config)
        _, expected = execute(bundle, whole, "warn")
        state = SramState.fresh(config)
        tracker = state.tracker(config, "warn")
        tracker.chunk = chunk
        semantics.execute(bundle, srams=state.srams, before=tracker.reference_hook)
        assert str(tracker.first) == str(expected), seed
        assert all(np.array_equal(state.written[m], whole.written[m]) for m in state.written), seed
