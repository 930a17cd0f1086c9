"""The AXI-lite control slave implementing vdla_hw.regmap: run control, status, error cause,
the cycle counter, identification and per-module counters.

START (CTRL bit 0) begins a run unless the device is busy (start_while_busy), INSN_COUNT is
zero (zero_insn_count) or the stream lies outside [0, DRAM_BYTES) or is misaligned
(insn_addr_range); those set ERROR instead, as do errors the core raises. The first error
freezes the device (the core is held in reset, status keeps its values) until CLEAR. The cycle
counter counts from the first run cycle (cycle 0) and latches at FINISH's retire cycle.
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, intbv

from vdla_hw import regmap
from vdla_hw.config import ISA_VERSION
from vdla_hw.isa import MODULES
from vdla_hw.rtl.params import RtlParams

WORDS = regmap.SPAN // regmap.REG_BYTES


@block
def control(clk, rst, p: RtlParams, axil, run, cyc, finish, core_err, core_err_insn, insn_ret,
            dram_base, dram_bytes, insn_addr, insn_count, incs):
    """``axil``: AXI-lite slave signals (awaddr, awvalid, awready, wdata, wstrb, wvalid, wready,
    bresp, bvalid, bready, araddr, arvalid, arready, rdata, rresp, rvalid, rready).
    ``run``: the core runs (held in reset otherwise); ``cyc``: its cycle number; ``finish``:
    FINISH retires this cycle; ``core_err``: ERROR bits raised this cycle (with the instruction
    index); ``insn_ret``: per module of isa.MODULES, an instruction retired (counters).
    ``incs``: register name -> what the busy/stall counter of that name adds in a run cycle;
    every counter is zeroed by CLEAR and by an accepted START."""
    (awaddr, awvalid, awready, wdata, wstrb, wvalid, wready, bresp, bvalid, bready,
     araddr, arvalid, arready, rdata, rresp, rvalid, rready) = axil
    E = regmap.ERROR_BITS
    E_BUSY, E_ZERO, E_RANGE = E["start_while_busy"], E["zero_insn_count"], E["insn_addr_range"]
    O = {r.name: r.offset // 4 for r in regmap.REGISTERS}
    o_ctrl, o_base, o_bytes, o_iaddr, o_icnt, o_lo = (O[n] for n in ("CTRL", "DRAM_BASE", "DRAM_BYTES", "INSN_ADDR",
                                                                     "INSN_COUNT", "CYCLES_LO"))
    START, CLEAR = regmap.CTRL_START, regmap.CTRL_CLEAR
    done = Signal(bool(0))
    error = Signal(bool(0))
    errbits = Signal(intbv(0)[32:])
    errinsn = Signal(intbv(0xFFFFFFFF)[32:])
    cycles = Signal(intbv(0)[64:])
    hi_latch = Signal(intbv(0)[32:])
    status = Signal(intbv(0)[32:])
    cyc_lo = Signal(intbv(0)[32:])
    id_isa = Signal(intbv(ISA_VERSION)[32:])
    id_cfg = Signal(intbv(p.config.fingerprint_hash)[32:])
    zero = Signal(intbv(0)[32:])
    insns = [Signal(intbv(0)[32:]) for _ in MODULES]
    wr = Signal(bool(0))
    waddr_w = Signal(intbv(0)[8:])
    raddr_w = Signal(intbv(0)[8:])

    # the readable registers, word by word in offset order
    words = [zero] * WORDS
    for name, sig in (("STATUS", status), ("ERROR", errbits), ("ERROR_INSN", errinsn), ("DRAM_BASE", dram_base),
                      ("DRAM_BYTES", dram_bytes), ("INSN_ADDR", insn_addr), ("INSN_COUNT", insn_count),
                      ("CYCLES_LO", cyc_lo), ("CYCLES_HI", hi_latch), ("ID_ISA", id_isa), ("ID_CONFIG", id_cfg)):
        words[O[name]] = sig
    for k, module in enumerate(MODULES):
        words[O[regmap.counter_name(module, "insns")]] = insns[k]
    clr = Signal(bool(0))
    ctrs = []
    for name, inc in incs.items():
        cnt = Signal(intbv(0)[32:])
        words[O[name]] = cnt
        ctrs.append(counter(clk, rst, run, clr, inc, cnt))
    bus = ConcatSignal(*reversed(words))
    nmod = len(MODULES)
    i0, i1, i2, i3 = insns
    r0, r1, r2, r3 = insn_ret

    @always_comb
    def comb():
        wr.next = awvalid and wvalid and not bvalid
        awready.next = awvalid and wvalid and not bvalid
        wready.next = awvalid and wvalid and not bvalid
        arready.next = not rvalid
        waddr_w.next = awaddr[len(awaddr):2]
        raddr_w.next = araddr[len(araddr):2]
        status.next = (error << 2) | (done << 1) | run
        cyc_lo.next = cycles[32:0]
        bresp.next = 0
        rresp.next = 0
        clr.next = awvalid and wvalid and not bvalid and awaddr[len(awaddr):2] == o_ctrl and (
            (wdata & CLEAR) != 0 or ((wdata & START) != 0 and not run))

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if bvalid and bready:
            bvalid.next = 0
        if rvalid and rready:
            rvalid.next = 0
        if arvalid and not rvalid:
            rvalid.next = 1
            tmp = intbv(0)[len(bus):]
            tmp[:] = bus >> (raddr_w * 32)
            rdata.next = tmp[32:]
            if raddr_w == o_lo:
                hi_latch.next = cycles[64:32]
        if run:
            cyc.next = cyc + 1
        if r0:
            i0.next = i0 + 1
        if r1:
            i1.next = i1 + 1
        if r2:
            i2.next = i2 + 1
        if r3:
            i3.next = i3 + 1
        if run and finish:
            run.next = 0
            done.next = 1
            cycles.next = cyc
        if run and core_err != 0:
            run.next = 0
            error.next = 1
            errbits.next = errbits | core_err
            errinsn.next = core_err_insn
            cycles.next = cyc
        if wr:
            bvalid.next = 1
            if waddr_w == o_base:
                dram_base.next = wdata
            elif waddr_w == o_bytes:
                dram_bytes.next = wdata
            elif waddr_w == o_iaddr:
                insn_addr.next = wdata
            elif waddr_w == o_icnt:
                insn_count.next = wdata
            elif waddr_w == o_ctrl:
                if wdata & CLEAR:
                    run.next = 0
                    done.next = 0
                    error.next = 0
                    errbits.next = 0
                    errinsn.next = 0xFFFFFFFF
                    cycles.next = 0
                    i0.next = 0
                    i1.next = 0
                    i2.next = 0
                    i3.next = 0
                elif wdata & START:
                    if run:
                        run.next = 0
                        error.next = 1
                        errbits.next = errbits | E_BUSY
                    elif insn_count == 0:
                        error.next = 1
                        errbits.next = errbits | E_ZERO
                    elif insn_addr[4:0] != 0 or insn_addr + (insn_count << 4) > dram_bytes or \
                            insn_addr >= dram_bytes:
                        error.next = 1
                        errbits.next = errbits | E_RANGE
                    else:
                        run.next = 1
                        cyc.next = 0
                        done.next = 0
                        error.next = 0
                        errbits.next = 0
                        errinsn.next = 0xFFFFFFFF
                        cycles.next = 0
                        i0.next = 0
                        i1.next = 0
                        i2.next = 0
                        i3.next = 0
    return comb, seq, ctrs


@block
def counter(clk, rst, run, clr, inc, cnt):
    """A 32-bit event counter: adds ``inc`` in every run cycle, zeroed by ``clr``."""
    @always_seq(clk.posedge, reset=rst)
    def seq():
        if clr:
            cnt.next = 0
        elif run:
            cnt.next = (cnt + inc) & 0xFFFFFFFF
    return seq
