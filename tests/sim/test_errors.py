"""Programs the simulator must reject, each with one clear line and within seconds: deadlocks,
races, GEMM hazards, out-of-range accesses, token overflow and the cycle limit."""

import time

import pytest

from vdla_hw import alu
from vdla_hw.bundle import BundleBuilder
from vdla_hw.errors import ProgramError
from vdla_hw.semantics import execute
from vdla_sim import CycleLimitError, DeadlockError, HazardError, RaceError, simulate
from vdla_sim.progen import random_program

UOP, WGT, INP, ACC, OUT = range(5)


def run_error(bundle, error, **kwargs):
    start = time.perf_counter()
    with pytest.raises(error) as info:
        simulate(bundle, **kwargs)
    assert time.perf_counter() - start < 5
    message = str(info.value)
    assert "\n" not in message
    return message


def test_deadlock_names_the_blocked_instruction_and_queue():
    b = BundleBuilder("tiny")
    b.emit("GEMM", pop_prev=1)      # waits for an l2c token nobody pushes
    b.emit("FINISH")
    msg = run_error(b.build(), DeadlockError)
    assert "compute: instruction 0 (GEMM) waits for a token in l2c (from load)" in msg
    assert "load: done" in msg and "store: done" in msg


def test_circular_wait_names_every_module():
    b = BundleBuilder("tiny")
    b.emit("LOAD", memory_type=INP, pop_next=1, push_next=1)     # load waits for compute (c2l)
    b.emit("GEMM", pop_prev=1, push_prev=1)                      # compute waits for load (l2c)
    b.emit("STORE", memory_type=OUT, pop_prev=1)                 # store waits for compute (c2s)
    b.emit("FINISH")
    msg = run_error(b.build(), DeadlockError)
    assert "load: instruction 0 (LOAD) waits for a token in c2l" in msg
    assert "compute: instruction 1 (GEMM) waits for a token in l2c" in msg
    assert "store: instruction 2 (STORE) waits for a token in c2s" in msg


def test_deadlock_on_a_full_command_queue_names_fetch():
    # tiny command queues hold 8: the store queue fills with stores that wait for a c2s token
    # that only the GEMM behind them in the stream would push.
    b = BundleBuilder("tiny")
    for _ in range(12):
        b.emit("STORE", memory_type=OUT, pop_prev=1)
    b.emit("GEMM", push_next=1)
    msg = run_error(b.build(), DeadlockError)
    assert "fetch: instruction 9 (STORE) waits for room in the full store command queue" in msg
    assert "store: instruction 0 (STORE) waits for a token in c2s" in msg


def test_raw_race_compute_reads_input_without_token():
    b = BundleBuilder("tiny")
    x = b.array("x", "inp", [[1, 2, 3, 4]] * 4)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=INP, dram_base=x, y_size=1, x_size=4, x_stride=4)   # no push
    b.emit("GEMM", uop_end=1, iter_out=1, iter_in=1)                                 # no pop
    b.emit("FINISH")
    bundle = b.build()
    execute(bundle)  # program order hides the race
    msg = run_error(bundle, RaceError)
    assert msg.startswith("instruction 2 (GEMM): tokens: races with instruction 1 (LOAD): inp element 0 is "
                          "written by 1 (LOAD) and read by 2 (GEMM); the read may see the old value (RAW)")


def test_war_race_load_overwrites_input_still_read():
    b = BundleBuilder("tiny")
    x = b.array("x", "inp", [[1, 2, 3, 4]] * 4)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=INP, dram_base=x, y_size=1, x_size=4, x_stride=4, push_next=1)
    b.emit("GEMM", pop_prev=1, uop_end=1, iter_out=1, iter_in=1)
    b.emit("LOAD", memory_type=INP, dram_base=x + 1, y_size=1, x_size=2, x_stride=2)  # no pop of c2l
    b.emit("FINISH")
    msg = run_error(b.build(), RaceError)
    assert msg.startswith("instruction 3 (LOAD): tokens: races with instruction 2 (GEMM): inp element 0 is "
                          "written by 3 (LOAD) and read by 2 (GEMM); the write may clobber it before the read (WAR)")


def store_before_its_producer():
    """ALU adds 3 into out elements 0-3; the STORE of them pops no c2s token (a RAW race)."""
    b = BundleBuilder("tiny")
    y = b.alloc("y", "out", 4)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("ALU", uop_end=1, iter_out=4, iter_in=1, dst_factor_out=1, use_imm=1, imm=3, alu_opcode=alu.OPCODE["add"])
    b.emit("STORE", memory_type=OUT, dram_base=y, y_size=1, x_size=4, x_stride=4)  # no c2s pop
    b.emit("FINISH")
    return b.build()


def test_store_reading_out_before_its_producer_is_a_race():
    msg = run_error(store_before_its_producer(), RaceError)
    assert "instruction 2 (STORE): tokens: races with instruction 1 (ALU): out element 0" in msg and "(RAW)" in msg


def test_race_check_can_be_turned_off():
    """The racy program raises with the race check on (the default) and runs with it off, to
    what the race gives: the unordered STORE reads out before the ALU writes it, so y keeps its
    zeros where program order (the reference semantics) stores the ALU's 3s."""
    bundle = store_before_its_producer()
    run_error(bundle, RaceError, race_check=True)
    result = simulate(bundle, race_check=False)
    assert (bundle.read("y", execute(bundle).dram) == 3).all()
    assert (bundle.read("y", result.dram) == 0).all() and result.cycles > 0
    assert not any(result.tokens_left.values())


def test_gemm_hazard_names_the_uops():
    b = BundleBuilder("tiny")
    k = b.uops("k", [(0, 0, 0), (1, 0, 0), (0, 0, 0)])   # uop 2 writes acc[0] like uop 0
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=3, x_stride=3)
    b.emit("GEMM", uop_end=3, iter_out=1, iter_in=1)
    b.emit("FINISH")
    msg = run_error(b.build(), HazardError)
    assert msg.startswith("instruction 1 (GEMM): uop: uop 2 writes the accumulator of uop 0, 2 uop(s) earlier in the "
                          "same sweep of the uop list (acc[0] in the first sweep)")
    # a reset GEMM does not read-modify-write: no hazard
    b = BundleBuilder("tiny")
    b.emit("GEMM", reset=1, uop_end=1, iter_out=3, iter_in=1)
    simulate(b.build())


@pytest.mark.parametrize("case", ["sram", "dram", "loop"])
def test_out_of_range_accesses(case):
    b = BundleBuilder("tiny")
    depth = b.config.depth("inp")
    if case == "sram":
        x = b.array("x", "inp", [[1, 2, 3, 4]] * 4)
        b.emit("LOAD", memory_type=INP, sram_base=depth - 2, dram_base=x, y_size=1, x_size=4, x_stride=4)
        field = "sram_base"
    elif case == "dram":
        b.emit("LOAD", memory_type=INP, dram_base=10_000, y_size=1, x_size=4, x_stride=4)
        field = "dram_base"
    else:
        k = b.uops("k", [(0, 0, 0)])
        b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
        b.emit("GEMM", uop_end=1, iter_out=1, iter_in=depth + 1, src_factor_in=1, dst_factor_in=0)
        field = "uop.src_idx"
    b.emit("FINISH")
    msg = run_error(b.build(), ProgramError)
    assert field in msg


def test_token_overflow_is_an_error():
    b = BundleBuilder("tiny")   # token FIFOs of 16
    for _ in range(17):
        b.emit("LOAD", memory_type=INP, push_next=1)
    b.emit("FINISH")
    msg = run_error(b.build(), ProgramError)
    assert "instruction 16 (LOAD): push_next" in msg and "full l2c queue" in msg and "token_overflow" in msg


def test_cycle_limit():
    bundle = random_program(3, "tiny", threads=2, blocks=4)
    full = simulate(bundle).cycles
    msg = run_error(bundle, CycleLimitError, max_cycles=full // 2)
    assert f"cycle limit {full // 2}" in msg
    assert simulate(bundle, max_cycles=full).cycles == full
