"""Fetch's chunk buffer in MyHDL's own simulator: routing a whole chunk of instructions (the
chunk buffer's ``slot`` ends one past its last entry, ``timing.fetch_chunk``) never reads the
buffer out of range. The buffers are Python lists in the simulation, so an out-of-range read
raises IndexError where the Verilog would read an undefined word."""

from __future__ import annotations

import pytest
from myhdl import ResetSignal, Signal, StopSimulation, block, delay, instance, intbv

from vdla_hw import isa, regmap, timing
from vdla_hw.config import load_config
from vdla_hw.rtl.decode import ENTRY_BITS, INSN_BYTES
from vdla_hw.rtl.dma_ports import ErrReport, QueuePush
from vdla_hw.rtl.fetch import fetch
from vdla_hw.rtl.memport import PortClient
from vdla_hw.rtl.params import INDEX_BITS, rtl_params

pytestmark = pytest.mark.rtl


@pytest.mark.parametrize("chunks", [1, 2])
def test_routing_whole_chunks_stays_inside_the_chunk_buffer(chunks):
    p = rtl_params(load_config("tiny"))
    C = timing.fetch_chunk(p.config)
    IB = INSN_BYTES // p.B
    count = chunks * C
    clk, rst = Signal(bool(0)), ResetSignal(1, active=1, isasync=False)
    insn_addr, insn_count = Signal(intbv(0)[regmap.REG_BITS:]), Signal(intbv(count)[regmap.REG_BITS:])
    client = PortClient(write=False)
    rdata = Signal(intbv(0)[p.B * 8:])
    rooms = [Signal(bool(1)) for _ in range(3)]
    pushes = [Signal(bool(0)) for _ in range(3)]
    qdata = Signal(intbv(0)[ENTRY_BITS:])
    rerr = ErrReport(Signal(intbv(0)[regmap.REG_BITS:]), Signal(intbv(0)[regmap.REG_BITS:]))
    qstall = Signal(bool(0))
    chunk_index = Signal(intbv(0)[INDEX_BITS:])
    pushed = []
    # every beat 0: a LOAD of micro-ops (opcode 0, memory type 0), routed to compute
    assert isa.OPCODES["LOAD"] == 0

    @block
    def bench():
        dut = fetch(clk, rst, p, insn_addr, insn_count, client, rdata, [QueuePush(r, s) for r, s in zip(rooms, pushes)],
                    qdata, rerr, qstall, chunk_index)

        @instance
        def clock():
            while True:
                yield delay(5)
                clk.next = not clk

        @instance
        def port():
            """Grants a request in the cycle it is made, then moves the chunk's beats one per
            cycle and releases the port the cycle after the last."""
            for _ in range(3):
                yield clk.negedge
            rst.next = 0
            for _ in range(2000):
                yield clk.negedge
                client.grant.next, client.beat.next, client.rel.next = 0, 0, 0
                if client.req:
                    client.grant.next = 1
                    nbeats = min(C, count - len(pushed)) * IB
                    for _ in range(2):
                        yield clk.negedge
                        client.grant.next = 0
                    for _ in range(nbeats):
                        client.beat.next = 1
                        yield clk.negedge
                    client.beat.next = 0
                    client.rel.next = 1
                if len(pushed) == count and not client.req:
                    for _ in range(20):     # fetch idles with the buffer index past its last entry
                        yield clk.negedge
                    raise StopSimulation
            raise AssertionError("fetch did not route the whole stream")

        @instance
        def watch():
            while True:
                yield clk.posedge
                if any(bool(s) for s in pushes):
                    pushed.append(int(qdata) >> (ENTRY_BITS - INDEX_BITS))
                assert int(rerr.bits) == 0, f"fetch raised ERROR {int(rerr.bits):#x}"
        return dut, clock, port, watch

    sim = bench()
    sim.run_sim(quiet=1)
    sim.quit_sim()
    assert pushed == list(range(count))
