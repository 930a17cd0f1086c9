"""The timing contract (vdla_hw.timing, docs/timing.md) pinned in exact cycles on the tiny
preset with INSN_OVERHEAD 1 (docs/timing.md's worked example; the preset itself has 4, the
RTL's decode pipeline, which only shifts each start-to-work gap by 3), and the simulator vs its
own bounds on a blocked matmul.

tiny: 8-byte beats, bursts of 16 beats, read latency 8, write latency 4, no burst gap, 4 read and
2 write bursts in flight, QUEUE_LATENCY 1, FETCH_CYCLES_PER_INSN 1, INSN_OVERHEAD 1, GEMM pipeline 4, ALU 2 cycles per uop
+ 3, fetch chunk 16 * 8 / 16 = 8 instructions, command queues of 8, token FIFOs of 16.
"""

import numpy as np
import pytest

from vdla_hw import alu, timing
from vdla_hw.bundle import BundleBuilder
from vdla_hw.config import load_config
from vdla_sim import simulate
from vdla_sim.memory import MemoryPort, Request
from vdla_sim.workloads import blocked_gemm

UOP, WGT, INP, ACC, OUT = range(5)
TINY = '{"preset": "tiny", "INSN_OVERHEAD": 1}'


def test_tiny_parameters_are_the_ones_these_tests_assume():
    c = load_config(TINY)
    assert (c.MEM_BYTES_PER_BEAT, c.MEM_MAX_BURST, c.MEM_LATENCY, c.MEM_WRITE_LATENCY, c.MEM_BURST_GAP) == (8, 16, 8, 4, 0)
    assert (c.MEM_READ_OUTSTANDING, c.MEM_WRITE_OUTSTANDING) == (4, 2)
    assert (c.QUEUE_LATENCY, c.FETCH_CYCLES_PER_INSN, c.INSN_OVERHEAD) == (1, 1, 1)
    assert (c.GEMM_PIPELINE_DEPTH, c.ALU_CYCLES_PER_UOP, c.ALU_PIPELINE_DEPTH) == (4, 2, 3)
    assert (c.CMD_QUEUE_DEPTH, c.TOKEN_QUEUE_DEPTH, c.DDR_BYTES_PER_CYCLE_CAP) == (8, 16, 0)
    assert timing.fetch_chunk(c) == 8


def test_finish_alone():
    # fetch: 1 instruction = 16 B = 2 beats in one burst: AR at 1, beats at 9 and 10, port free
    # at 11; pushed at 11, visible at 12; FINISH runs INSN_OVERHEAD = 1 cycle: retires at 13.
    b = BundleBuilder(TINY)
    b.emit("FINISH")
    result = simulate(b.build())
    assert result.retire == [("compute", 12, 13)]
    assert result.cycles == 13
    assert result.modules["fetch"]["busy"] == 11 + 1


def test_finish_alone_on_the_preset_takes_its_insn_overhead():
    # the same program on the tiny preset itself: FINISH starts at 12 and runs INSN_OVERHEAD = 4
    b = BundleBuilder("tiny")
    b.emit("FINISH")
    result = simulate(b.build())
    assert b.config.INSN_OVERHEAD == 4
    assert result.retire == [("compute", 12, 16)] and result.cycles == 16


def _mixed_program():
    b = BundleBuilder(TINY)
    src = b.array("x", "inp", [[1, 2, 3, 4]] * 40)                 # inp elements 0.., 4 B each
    k = b.uops("k", [(0, 0, 0), (1, 1, 0), (2, 2, 0)])              # uop element 48 = byte 192
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=3, x_stride=3)
    b.emit("GEMM", uop_end=3, iter_out=2, iter_in=3, dst_factor_out=3, dst_factor_in=6)
    b.emit("ALU", uop_end=3, iter_out=2, iter_in=1, dst_factor_out=3, alu_opcode=alu.OPCODE["add"], use_imm=1, imm=1)
    b.emit("LOAD", memory_type=INP, dram_base=src + 1, y_size=3, x_size=5, x_stride=7, y_pad_top=1, x_pad_right=2)
    b.emit("STORE", memory_type=OUT, y_size=2, x_size=3, x_stride=5)
    bundle = b.build()
    assert (src, k, bundle.insn_offset) == (0, 48, 256)
    return bundle


def test_each_instruction_kind_in_exact_cycles():
    # fetch: 6 instructions = 96 B = one burst of 12 beats: 1 + 8 + 12 = 21; pushes at 21..26.
    result = simulate(_mixed_program(), race_check=False)
    assert result.retire == [
        # LOAD uop: visible 22, request 23, 12 B at byte 192 = beats 24..25: 1 + 8 + 2 = 11.
        ("compute", 22, 34),
        # GEMM: 1 + 2*3*3 uops + 4 = 23.
        ("compute", 34, 57),
        # ALU: 1 + 2*6 + 3 = 16.
        ("compute", 57, 73),
        # LOAD inp: start 25, request 26, waits for the port (uop load until 34, then the store,
        # which outranks load); rows at bytes 4, 32, 60 of 20 B = three bursts of 3 beats (4 may
        # be in flight): 1 + 8 + 9 = 18 from 43; then 4*7 - 3*5 = 13 padding elements, one per
        # cycle: 43 + 18 + 13 = 74.
        ("load", 25, 74),
        # STORE: start 26, request 27, granted at 34 (store > load); rows at bytes 0 and 20 of
        # 12 B = two bursts of 2 beats: W beats at 1-2 and 3-4 after the grant, responses 4
        # cycles after each last beat (6, 8): port free at 34 + 9 = 43.
        ("store", 26, 43),
        # FINISH after the ALU.
        ("compute", 73, 74),
    ]
    assert result.cycles == 74 and result.last_retire == 74
    assert result.modules["store"]["stall_mem"] == 34 - 27
    assert result.modules["load"]["stall_mem"] == 43 - 26
    assert result.modules["load"]["busy"] == 1 + 18 + 13 and result.modules["store"]["busy"] == 1 + 9
    assert result.port_busy == 21 + 11 + 9 + 18


def test_token_handover_takes_queue_latency():
    b = BundleBuilder(TINY)
    b.emit("LOAD", memory_type=INP, push_next=1)            # moves nothing: overhead only
    b.emit("GEMM", pop_prev=1, push_next=1)                 # no uops: overhead only
    b.emit("STORE", memory_type=OUT, pop_prev=1, push_prev=1)
    b.emit("FINISH", pop_next=1)
    r = simulate(b.build())
    # fetch: 4 instructions = 8 beats: 1 + 8 + 8 = 17 cycles; pushes at 17, 18, 19, 20.
    assert r.retire[0] == ("load", 18, 19)
    assert r.retire[1] == ("compute", 20, 21)     # taken at 19, token pushed at 19 visible at 20
    assert r.retire[2] == ("store", 22, 23)       # token pushed at 21, visible at 22
    assert r.retire[3] == ("compute", 24, 25)
    assert r.modules["compute"]["stall_token"] == 1 + 3    # GEMM waits 19->20, FINISH 21->24
    assert r.queue_occupancy["token_l2c"]["max"] == 1


def test_gemm_and_alu_cost_formulas():
    c = load_config(TINY)
    from vdla_hw.isa import Insn
    gemm = Insn("GEMM", uop_bgn=2, uop_end=7, iter_out=3, iter_in=4)
    alu = Insn("ALU", uop_bgn=0, uop_end=2, iter_out=5, iter_in=1)
    assert timing.exec_cycles(c, gemm) == (1 + 60 + 4, 0, 0)
    assert timing.exec_cycles(c, alu) == (1 + 2 * 10 + 3, 0, 0)
    assert timing.exec_cycles(c, Insn("GEMM", uop_bgn=3, uop_end=3)) == (1, 0, 0)
    assert timing.exec_cycles(c, Insn("FINISH")) == (1, 0, 0)
    assert timing.exec_cycles(c, Insn("LOAD", memory_type=INP, y_size=1)) == (1, 0, 0)


def test_bursts_from_byte_addresses():
    c = load_config("tiny")  # 8-byte beats, 16-beat bursts, pages of 512 beats

    def bursts(starts, nbytes):
        return timing.burst_lengths(c, np.array(starts), nbytes).tolist()
    assert bursts([0], 8) == [1]
    assert bursts([4], 8) == [2]                      # unaligned: one more beat
    assert bursts([0], 16 * 8) == [16]
    assert bursts([0], 17 * 8) == [16, 1]             # split at MEM_MAX_BURST
    assert bursts([4096 - 8], 16) == [1, 1]           # split at the 4 KB boundary
    assert bursts([4096 - 64], 64 + 4096 + 8) == [8] + [16] * 32 + [1]
    assert bursts([0, 100], 8) == [1, 2]              # rows never share a burst


def test_read_and_write_transactions_in_exact_cycles():
    c = load_config("tiny")  # latency 8, write latency 4, 4 reads / 2 writes in flight
    # one burst: address at 1, first beat at 1 + 8, last at 8 + len, free the cycle after
    assert timing.read_cycles(c, [10]) == 1 + 8 + 10
    assert timing.write_cycles(c, [10]) == 1 + 10 + 4      # beats 1..10, response at 14
    assert timing.read_cycles(c, []) == 0 and timing.write_cycles(c, []) == 0
    # enough bursts in flight: the latency is paid once
    assert timing.read_cycles(c, [16, 16, 16]) == 1 + 8 + 48
    # one-beat bursts: 4 in flight cover 4 beats of the 8-cycle latency, so the data stalls:
    # burst k's address waits for burst k-4's beat: e_0 = 9, a_4 = 10, its beat at 18
    assert timing.read_cycles(c, [1] * 5) == 18 + 1
    # writes: 2 in flight; burst 2's address waits for burst 0's response (1 + 2 - 1 + 4 = 6)
    assert timing.write_cycles(c, [2, 2, 2]) == 1 + 6 + 2 + 4  # beats 7..8, response 12
    capped = load_config('{"preset": "tiny", "DDR_BYTES_PER_CYCLE_CAP": 5.0}')
    assert timing.read_cycles(capped, [10]) == 1 + 8 + 1 + 15   # beat j at ceil(8 j / 5)
    gapped = load_config('{"preset": "tiny", "MEM_BURST_GAP": 3}')
    assert timing.read_cycles(gapped, [16, 16, 8]) == 1 + 8 + 40 + 2 * 3
    assert timing.write_cycles(gapped, [8, 8]) == 1 + 16 + 3 + 4


def test_arbitration_order_and_no_preemption():
    assert timing.ARBITRATION_ORDER == ("store", "compute", "load", "fetch")
    port = MemoryPort(load_config("tiny"))
    for master in ("fetch", "load", "compute", "store"):
        port.request(Request(5, master, 10))
    grants, again = [], True
    for t in range(100):
        g = port.grant(t)
        if g:
            grants.append((g.request.master, g.start))
            if again:
                again = False
                port.request(Request(6, "store", 10))  # arrives while the others wait: outranks them
    assert grants == [("store", 5), ("store", 15), ("compute", 25), ("load", 35), ("fetch", 45)]
    # a request made while the port is busy does not preempt the running transaction
    port = MemoryPort(load_config("tiny"))
    port.request(Request(0, "fetch", 10))
    assert port.grant(0).request.master == "fetch"
    port.request(Request(1, "store", 3))
    assert port.grant(5) is None and port.grant(10).start == 10


def test_full_command_queue_stalls_fetch():
    b = BundleBuilder("tiny")
    b.emit("ALU", uop_end=1, iter_out=50, iter_in=1)  # 104 cycles, while fetch brings in 3 chunks of 8
    for _ in range(30):
        b.emit("GEMM")  # no uops: overhead only
    r = simulate(b.build())
    assert r.queue_occupancy["cmd_compute"]["max"] == 8
    assert r.modules["fetch"]["stall_queue"] > 0


def test_double_buffering_beats_serial_and_respects_bounds():
    results = {}
    for buffers in (1, 2):
        bundle, _ = blocked_gemm("tiny", 32, 32, 32, (4, 2, 4), buffers=buffers)
        results[buffers] = simulate(bundle)
    serial, double = results[1], results[2]
    assert double.cycles < serial.cycles
    for r in (serial, double):
        compute_bound = r.counters.gemm_uops  # one uop per cycle on the GEMM core
        memory_bound = r.port_busy            # every transaction holds the one port
        assert r.cycles >= max(compute_bound, memory_bound)
    assert double.gemm_utilization > serial.gemm_utilization


@pytest.mark.parametrize("preset", ["osdi18", "vta-pynq"])
def test_double_buffered_gemm_is_near_the_compute_roof(preset):
    bundle, _ = blocked_gemm(preset, 256, 256, 256, (128, 8, 8) if preset == "osdi18" else (64, 8, 16), buffers=2)
    r = simulate(bundle)
    assert r.cycles >= r.counters.gemm_uops and r.cycles >= r.port_busy
    assert r.gemm_utilization > 0.8
    assert abs(r.gops - 2 * r.macs / r.seconds / 1e9) < 1e-9
