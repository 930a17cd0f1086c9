"""The control slave: AXI-lite handshakes (:func:`axil_slave`) in front of the register file of
``vdla_hw.regmap`` (:func:`control`), on the free-running clock.

Behaviour (docs/spec.md section 8; ``driver/regmodel.py`` implements the same rules):

* START begins a run unless the device is running (``start_while_busy`` stops it), frozen by an
  error (START is ignored until CLEAR), the count is zero (``zero_insn_count``), the stream is
  misaligned or outside the image (``insn_addr_range``) or DRAM_BASE is not 4 kB aligned
  (``dram_base_align``). A START that is not ignored zeroes CYCLES, the counters, ERROR and
  ERROR_INSN first. If the memory port is still finishing the bus transfers of an earlier run
  (``bus_idle`` low after an error or CLEAR), the START waits (STATUS busy) and the run begins
  the cycle the port is idle; otherwise cycle 0 is the cycle after the START write is taken.
  A run begins at least 2 cycles after the core was last running (a START taken in the very
  cycle after a run stopped waits one cycle): the memory port's precomputed walk of fetch's
  first chunk needs the core held in reset that long (memport.PortClient).
* The first error (a failing START, or an error the core raises with its instruction index)
  stops the run and freezes the device until CLEAR; CYCLES keeps the cycle it stopped at.
* CLEAR stops a run, returns STATUS to idle and zeroes ERROR, CYCLES and the counters; CLEAR
  and START in one write clear, then start.
* CYCLES counts during a run and holds the FINISH (or error) cycle after it; reading CYCLES_LO
  latches CYCLES_HI. ``irq`` is high while STATUS shows done or error.
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, intbv

from vdla_hw import regmap
from vdla_hw.config import ISA_VERSION
from vdla_hw.isa import MODULES
from vdla_hw.rtl.axi import AxiLite
from vdla_hw.rtl.params import RtlParams

WORDS = regmap.SPAN // regmap.REG_BYTES
NO_INSN = 0xFFFFFFFF


@block
def axil_slave(clk, rst, axil: AxiLite, wr, waddr, wdata, raddr, rword):
    """AXI-lite slave handshakes, correct under any back-pressure. A write is taken in a cycle
    where AW and W are both valid and no write response waits (``wr`` pulses with the word
    address ``waddr`` and ``wdata``); its OKAY response is valid from the next cycle until BREADY.
    A read is taken when no read response waits: ``raddr`` is its word address and ``rword`` the
    register's value in that cycle, registered into RDATA and held until RREADY."""
    AW = len(axil.aw.addr)

    @always_comb
    def comb():
        take_w = axil.aw.valid and axil.w.valid and not axil.b.valid
        axil.aw.ready.next = take_w
        axil.w.ready.next = take_w
        wr.next = take_w
        waddr.next = axil.aw.addr[AW:2]
        wdata.next = axil.w.data
        axil.ar.ready.next = not axil.r.valid
        raddr.next = axil.ar.addr[AW:2]
        axil.b.resp.next = 0
        axil.r.resp.next = 0

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if axil.b.valid and axil.b.ready:
            axil.b.valid.next = 0
        if axil.aw.valid and axil.w.valid and not axil.b.valid:
            axil.b.valid.next = 1
        if axil.r.valid and axil.r.ready:
            axil.r.valid.next = 0
        if axil.ar.valid and not axil.r.valid:
            axil.r.valid.next = 1
            axil.r.data.next = rword
    return comb, seq


@block
def counter(clk, rst, run, clr, inc, cnt):
    """A 32-bit event counter: adds ``inc`` (a count or a bool) of every run cycle, zeroed by
    ``clr``. The increment is registered first (the module logic behind ``inc`` and the carry
    chain of the add are different cycles), so a run cycle's count shows two cycles later:
    the counters are final two cycles after the run stops, before any AXI-lite read issued
    after STATUS shows it (a read takes at least two cycles)."""
    inc_r = Signal(intbv(0)[len(inc):]) if len(inc) > 1 else Signal(bool(0))

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if clr:
            inc_r.next = 0
            cnt.next = 0
        else:
            if run:
                inc_r.next = inc
            else:
                inc_r.next = 0
            cnt.next = (cnt + inc_r) & 0xFFFFFFFF
    return seq


@block
def control(clk, rst, p: RtlParams, axil: AxiLite, run, cyc, finish, core_err, core_err_insn, insn_ret,
            dram_base, dram_bytes, insn_addr, insn_count, incs, bus_idle, irq):
    """``run``: the core runs (it is held in reset otherwise); ``cyc``: the run's cycle number;
    ``finish``: FINISH retires this cycle; ``core_err``/``core_err_insn``: ERROR bits the core
    raises this cycle and the instruction index; ``insn_ret``: per module of isa.MODULES, an
    instruction retired; ``incs``: register name -> what that busy/stall counter adds per run
    cycle; ``bus_idle``: the memory port has nothing in flight."""
    E = regmap.ERROR_BITS
    E_BUSY, E_ZERO, E_RANGE, E_ALIGN = (E[k] for k in ("start_while_busy", "zero_insn_count", "insn_addr_range",
                                                       "dram_base_align"))
    O = {r.name: r.offset // regmap.REG_BYTES for r in regmap.REGISTERS}
    o_ctrl, o_base, o_bytes, o_iaddr, o_icnt, o_lo = (O[n] for n in ("CTRL", "DRAM_BASE", "DRAM_BYTES", "INSN_ADDR",
                                                                     "INSN_COUNT", "CYCLES_LO"))
    START, CLEAR = regmap.CTRL_START, regmap.CTRL_CLEAR
    ALIGN_MASK = regmap.DRAM_BASE_ALIGN - 1
    wr = Signal(bool(0))
    waddr, raddr = Signal(intbv(0)[6:]), Signal(intbv(0)[6:])
    wdata, rword = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    pending = Signal(bool(0))       # START taken, waiting for the memory port to drain
    held = Signal(bool(0))          # the core was held (not running) in the previous cycle too
    done, error = Signal(bool(0)), Signal(bool(0))
    errbits = Signal(intbv(0)[32:])
    errinsn = Signal(intbv(NO_INSN)[32:])
    cycles = Signal(intbv(0)[64:])  # latched at FINISH / error
    cyc_now = Signal(intbv(0)[64:])
    hi_latch = Signal(intbv(0)[32:])
    status, cyc_lo = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    id_isa = Signal(intbv(ISA_VERSION)[32:])
    id_cfg = Signal(intbv(p.config.fingerprint_hash)[32:])
    zero = Signal(intbv(0)[32:])
    insns = [Signal(intbv(0)[32:]) for _ in MODULES]
    clr = Signal(bool(0))
    w_ctrl = Signal(bool(0))
    w_clear, w_start = Signal(bool(0)), Signal(bool(0))
    start_busy, start_frozen = Signal(bool(0)), Signal(bool(0))
    start_bits = Signal(intbv(0)[32:])   # error bits of a START that fails its checks (0: it runs)
    insts = [axil_slave(clk, rst, axil, wr, waddr, wdata, raddr, rword)]

    # the readable registers, word by word in offset order
    words = [zero] * WORDS
    for name, sig in (("STATUS", status), ("ERROR", errbits), ("ERROR_INSN", errinsn), ("DRAM_BASE", dram_base),
                      ("DRAM_BYTES", dram_bytes), ("INSN_ADDR", insn_addr), ("INSN_COUNT", insn_count),
                      ("CYCLES_LO", cyc_lo), ("CYCLES_HI", hi_latch), ("ID_ISA", id_isa), ("ID_CONFIG", id_cfg)):
        words[O[name]] = sig
    for k, module in enumerate(MODULES):
        words[O[regmap.counter_name(module, "insns")]] = insns[k]
        insts.append(counter(clk, rst, run, clr, insn_ret[k], insns[k]))
    for name, inc in incs.items():
        cnt = Signal(intbv(0)[32:])
        words[O[name]] = cnt
        insts.append(counter(clk, rst, run, clr, inc, cnt))
    bus = ConcatSignal(*reversed(words))

    @always_comb
    def regs_out():
        status.next = (error << 2) | (done << 1) | (run or pending)
        irq.next = done or error
        if run:
            cyc_now.next = cyc
        else:
            cyc_now.next = cycles
        tmp = intbv(0)[len(bus):]
        tmp[:] = bus >> (raddr * 32)
        rword.next = tmp[32:]

    @always_comb
    def cyc_low():
        cyc_lo.next = cyc_now[32:0]

    @always_comb
    def ctrl_write():
        w_ctrl.next = wr and waddr == o_ctrl
        w_clear.next = wr and waddr == o_ctrl and (wdata & CLEAR) != 0
        w_start.next = wr and waddr == o_ctrl and (wdata & START) != 0
        clearing = (wdata & CLEAR) != 0
        start_busy.next = (run or pending) and not clearing
        start_frozen.next = error and not clearing and not (run or pending)
        bits = intbv(0)[32:]
        bits[:] = 0
        if insn_count == 0:
            bits[:] = E_ZERO
        elif insn_addr[4:0] != 0 or insn_addr >= dram_bytes or insn_addr + (insn_count << 4) > dram_bytes:
            bits[:] = E_RANGE
        elif (dram_base & ALIGN_MASK) != 0:
            bits[:] = E_ALIGN
        start_bits.next = bits

    @always_comb
    def clear_counters():
        clr.next = w_clear or (w_start and not start_busy and not start_frozen)

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if run:
            cyc.next = cyc + 1
        if raddr == o_lo and axil.ar.valid and not axil.r.valid:
            hi_latch.next = cyc_now[64:32]
        if run and finish:
            run.next = 0
            done.next = 1
            cycles.next = cyc
        if run and core_err != 0:
            run.next = 0
            error.next = 1
            errbits.next = core_err
            errinsn.next = core_err_insn
            cycles.next = cyc
        held.next = not run
        if pending and bus_idle and held:
            pending.next = 0
            run.next = 1
            cyc.next = 0
        if wr:
            if waddr == o_base:
                dram_base.next = wdata
            elif waddr == o_bytes:
                dram_bytes.next = wdata
            elif waddr == o_iaddr:
                insn_addr.next = wdata
            elif waddr == o_icnt:
                insn_count.next = wdata
        if clr:  # CLEAR, or a START that is not ignored: a fresh run state
            done.next = 0
            error.next = 0
            errbits.next = 0
            errinsn.next = NO_INSN
            cycles.next = 0
        if w_clear:
            run.next = 0
            pending.next = 0
        if w_start:
            if start_busy:
                run.next = 0
                pending.next = 0
                error.next = 1
                errbits.next = E_BUSY
                if run:
                    cycles.next = cyc
            elif not start_frozen:
                if start_bits != 0:
                    error.next = 1
                    errbits.next = start_bits
                elif bus_idle and not run and held:
                    run.next = 1
                    cyc.next = 0
                else:   # CLEAR + START during a run, bus transfers still draining, or the run
                    # stopped in the previous cycle: wait (the core is held in reset for 2 cycles
                    # before a run, the memory port's precomputed walks need them: memport.py)
                    run.next = 0
                    pending.next = 1
    insts += [regs_out, cyc_low, ctrl_write, clear_counters, seq]
    return insts
