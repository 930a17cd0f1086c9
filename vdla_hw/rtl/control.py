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
* A write changes only the bytes WSTRB selects (a RW register keeps the others; CTRL acts on
  its strobed bytes only). The slave decodes its whole address port (regmap.ADDRESS_SPACE): an
  offset without a register is answered SLVERR (regmap.UNMAPPED_RESP), a read of it returns 0
  and a write changes nothing. START refuses an image that passes 4 GiB
  (``dram_image_wrap``: DRAM_BASE + DRAM_BYTES > 2^32), so no DMA address wraps.
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, intbv

from vdla_hw import regmap
from vdla_hw.config import ISA_VERSION
from vdla_hw.isa import MODULES
from vdla_hw.regmap import REG_BITS
from vdla_hw.rtl.axi import AxiLite
from vdla_hw.rtl.compute_ports import count_bits
from vdla_hw.rtl.decode import INSN_BYTES
from vdla_hw.rtl.params import CYCLE_BITS, RtlParams, log2
from vdla_hw.rtl.prims import wire

WORDS = regmap.SPAN // regmap.REG_BYTES
WORD_SHIFT = log2(regmap.REG_BYTES)     # byte address -> word address
WORD_BITS = max(1, log2(WORDS))         # word address of a register (below WORDS)
MAPPED = sum(1 << (r.offset // regmap.REG_BYTES) for r in regmap.REGISTERS)   # words holding a register
NO_INSN = (1 << REG_BITS) - 1           # ERROR_INSN when no instruction is named


def _reg(value: int = 0) -> Signal:
    return Signal(intbv(value)[REG_BITS:])


class RunRegs:
    """The registers the driver writes before a START: ``dram_base``, ``dram_bytes``,
    ``insn_addr``, ``insn_count`` (regmap.REG_BITS each)."""

    def __init__(self):
        self.dram_base, self.dram_bytes, self.insn_addr, self.insn_count = (_reg() for _ in range(4))


class CoreLink:
    """What the control slave and the core exchange. Out: ``run`` (the core runs; it is held in
    reset otherwise), ``cyc`` (the run's cycle number). In: ``finish`` (FINISH retires this
    cycle); ``err`` / ``err_insn`` (ERROR bits the core raises this cycle and the instruction
    index); ``rets`` (per module of isa.MODULES, an instruction retired); ``incs`` (register name
    -> what that busy/stall counter adds per run cycle: busy counts up to ``busy_max`` a cycle,
    the stalls are bools); ``bus_idle`` (the memory port has nothing in flight)."""

    def __init__(self, busy_max: int):
        self.run = Signal(bool(0))
        self.cyc = Signal(intbv(0)[CYCLE_BITS:])
        self.finish = Signal(bool(0))
        self.err, self.err_insn = _reg(), _reg()
        self.rets = [Signal(bool(0)) for _ in MODULES]
        self.bus_idle = Signal(bool(1))
        self.incs = {}
        for m in MODULES:
            self.incs[regmap.counter_name(m, "busy")] = Signal(intbv(0)[count_bits(busy_max):])
            for name in ("stall_token", "stall_mem", "stall_queue"):
                self.incs[regmap.counter_name(m, name)] = Signal(bool(0))


class CtrlWrite:
    """A write to CTRL, decoded: ``clear``, ``start``; whether a START now is refused as busy
    (``start_busy``) or ignored (``start_frozen``: the device is frozen by an error), and the
    ERROR bits its checks raise (``start_bits``, 0: it runs)."""

    def __init__(self):
        self.clear, self.start = Signal(bool(0)), Signal(bool(0))
        self.start_busy, self.start_frozen = Signal(bool(0)), Signal(bool(0))
        self.start_bits = _reg()


@block
def strobe_lane(strb, k, lane):
    """``lane``: all ones when bit ``k`` of ``strb`` is set, else 0."""
    ONES = (1 << len(lane)) - 1

    @always_comb
    def one():
        if strb[k]:
            lane.next = ONES
        else:
            lane.next = 0
    return one


@block
def byte_mask(strb, mask):
    """``mask``: 0xFF in each byte whose ``strb`` bit is set, 0 in the others."""
    lanes = [Signal(intbv(0)[len(mask) // len(strb):]) for _ in range(len(strb))]   # a byte per strobe bit
    cat = ConcatSignal(*reversed(lanes)) if len(lanes) > 1 else lanes[0]
    return [strobe_lane(strb, k, lanes[k]) for k in range(len(strb))] + [wire(cat, mask)]


@block
def axil_slave(clk, rst, axil: AxiLite, wr, waddr, wdata, wmask, rd, raddr, rword):
    """AXI-lite slave handshakes, correct under any back-pressure, decoding every bit of the
    address port. A write is taken in a cycle where AW and W are both valid and no write
    response waits; at a register's offset ``wr`` pulses with its word address ``waddr``,
    ``wmask`` (the bytes WSTRB selects) and ``wdata`` (WDATA, the other bytes zeroed). Its
    response is valid from the next cycle until BREADY: OKAY, or regmap.UNMAPPED_RESP (SLVERR)
    at an offset without a register (no ``wr``). A read is taken when no read response waits;
    at a register's offset ``rd`` pulses with ``raddr`` its word address; ``rword`` (that
    register's value in that cycle) is registered into RDATA with OKAY, or 0 with SLVERR at an
    offset without a register, and held until RREADY."""
    AW = len(axil.aw.addr)
    wfull, rfull = (Signal(intbv(0)[AW - WORD_SHIFT:]) for _ in range(2))
    wok, rok = Signal(bool(0)), Signal(bool(0))
    mapped = Signal(intbv(MAPPED)[WORDS:])
    OKAY, ERR = regmap.RESP_OKAY, regmap.UNMAPPED_RESP
    insts = [byte_mask(axil.w.strb, wmask)]

    @always_comb
    def addrs():
        wfull.next = axil.aw.addr[AW:WORD_SHIFT]
        rfull.next = axil.ar.addr[AW:WORD_SHIFT]

    @always_comb
    def decode():
        wok.next = wfull < WORDS and mapped[wfull[WORD_BITS:]]
        rok.next = rfull < WORDS and mapped[rfull[WORD_BITS:]]

    @always_comb
    def comb():
        take_w = axil.aw.valid and axil.w.valid and not axil.b.valid
        axil.aw.ready.next = take_w
        axil.w.ready.next = take_w
        wr.next = take_w and wok
        waddr.next = wfull[WORD_BITS:]
        wdata.next = axil.w.data & wmask
        axil.ar.ready.next = not axil.r.valid
        rd.next = axil.ar.valid and not axil.r.valid and rok
        raddr.next = rfull[WORD_BITS:]

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if axil.b.valid and axil.b.ready:
            axil.b.valid.next = 0
        if axil.aw.valid and axil.w.valid and not axil.b.valid:
            axil.b.valid.next = 1
            if wok:
                axil.b.resp.next = OKAY
            else:
                axil.b.resp.next = ERR
        if axil.r.valid and axil.r.ready:
            axil.r.valid.next = 0
        if axil.ar.valid and not axil.r.valid:
            axil.r.valid.next = 1
            if rok:
                axil.r.data.next = rword
                axil.r.resp.next = OKAY
            else:
                axil.r.data.next = 0
                axil.r.resp.next = ERR
    return insts + [addrs, decode, comb, seq]


@block
def counter(clk, rst, run, clr, inc, cnt):
    """A register-wide event counter: adds ``inc`` (a count or a bool) of every run cycle, zeroed
    by ``clr``. The increment is registered first (the module logic behind ``inc`` and the carry
    chain of the add are different cycles), so a run cycle's count shows two cycles later:
    the counters are final two cycles after the run stops, before any AXI-lite read issued
    after STATUS shows it (a read takes at least two cycles)."""
    inc_r = Signal(intbv(0)[len(inc):]) if len(inc) > 1 else Signal(bool(0))
    MASK = (1 << len(cnt)) - 1

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
            cnt.next = (cnt + inc_r) & MASK
    return seq


@block
def readback(raddr, words, rword):
    """``rword`` = ``words[raddr]``: the register word at word address ``raddr`` (0 past the
    last word). An array read over every value of ``raddr``: the same multiplexer as a shift of
    the concatenated registers, but the compiled simulation indexes one word in each cycle
    instead of shifting all of them (36 x 32 bits)."""
    table = [Signal(intbv(0)[len(rword):]) for _ in range(1 << len(raddr))]
    zero = Signal(intbv(0)[len(rword):])
    insts = [wire(w, t) for w, t in zip(list(words) + [zero] * (len(table) - len(words)), table)]

    @always_comb
    def mux():
        rword.next = table[raddr]
    return insts + [mux]


@block
def ctrl_decode(wr, waddr, wdata, regs: RunRegs, run, pending, error, cw: CtrlWrite):
    """Decode a write to CTRL (``wdata``: its strobed bytes) and check a START against the run
    registers (first failing check wins: zero count, stream misaligned or outside the image,
    DRAM_BASE misaligned, image passing 4 GiB)."""
    o_ctrl = regmap.offset("CTRL") // regmap.REG_BYTES
    START, CLEAR = regmap.CTRL_START, regmap.CTRL_CLEAR
    E = regmap.ERROR_BITS
    E_ZERO, E_RANGE, E_ALIGN, E_WRAP = (E[n] for n in ("zero_insn_count", "insn_addr_range", "dram_base_align",
                                                       "dram_image_wrap"))
    ALIGN_MASK = regmap.DRAM_BASE_ALIGN - 1
    LG_INSN = log2(INSN_BYTES)
    insn_addr, insn_count, dram_bytes = regs.insn_addr, regs.insn_count, regs.dram_bytes

    @always_comb
    def decode():
        cw.clear.next = wr and waddr == o_ctrl and (wdata & CLEAR) != 0
        cw.start.next = wr and waddr == o_ctrl and (wdata & START) != 0
        clearing = (wdata & CLEAR) != 0
        cw.start_busy.next = (run or pending) and not clearing
        cw.start_frozen.next = error and not clearing and not (run or pending)
        bits = intbv(0)[len(cw.start_bits):]
        bits[:] = 0
        image_end = intbv(0)[REG_BITS + 1:]   # DRAM_BASE + DRAM_BYTES: past 2^32 when bit 32 and a low
        image_end[:] = regs.dram_base + dram_bytes   # bit are set (2^32 itself ends it at 0xFFFFFFFF)
        if insn_count == 0:
            bits[:] = E_ZERO
        elif insn_addr[LG_INSN:0] != 0 or insn_addr >= dram_bytes or insn_addr + (insn_count << LG_INSN) > dram_bytes:
            bits[:] = E_RANGE
        elif (regs.dram_base & ALIGN_MASK) != 0:
            bits[:] = E_ALIGN
        elif image_end[REG_BITS] and image_end[REG_BITS:] != 0:
            bits[:] = E_WRAP
        cw.start_bits.next = bits
    return decode


@block
def control(clk, rst, p: RtlParams, axil: AxiLite, core: CoreLink, regs: RunRegs, irq):
    """The register file and run control (module docstring) behind :func:`axil_slave`."""
    run, cyc, bus_idle = core.run, core.cyc, core.bus_idle
    E_BUSY = regmap.ERROR_BITS["start_while_busy"]
    O = {r.name: r.offset // regmap.REG_BYTES for r in regmap.REGISTERS}
    o_base, o_bytes, o_iaddr, o_icnt, o_lo = (O[n] for n in ("DRAM_BASE", "DRAM_BYTES", "INSN_ADDR", "INSN_COUNT",
                                                             "CYCLES_LO"))
    S_DONE, S_ERROR = log2(regmap.STATUS_DONE), log2(regmap.STATUS_ERROR)
    assert regmap.STATUS_BUSY == 1, "STATUS busy is bit 0"
    wr, rd = Signal(bool(0)), Signal(bool(0))
    waddr, raddr = (Signal(intbv(0)[WORD_BITS:]) for _ in range(2))
    wdata, wmask, rword = _reg(), _reg(), _reg()
    pending = Signal(bool(0))       # START taken, waiting for the memory port to drain
    held = Signal(bool(0))          # the core was held (not running) in the previous cycle too
    done, error = Signal(bool(0)), Signal(bool(0))
    errbits, errinsn = _reg(), _reg(NO_INSN)
    cycles = Signal(intbv(0)[CYCLE_BITS:])  # latched at FINISH / error
    cyc_now = Signal(intbv(0)[CYCLE_BITS:])
    hi_latch, status, cyc_lo = _reg(), _reg(), _reg()
    id_isa, id_cfg, zero = _reg(ISA_VERSION), _reg(p.config.fingerprint_hash), _reg()
    clr = Signal(bool(0))
    cw = CtrlWrite()
    insts = [axil_slave(clk, rst, axil, wr, waddr, wdata, wmask, rd, raddr, rword),
             ctrl_decode(wr, waddr, wdata, regs, run, pending, error, cw)]

    # the readable registers, word by word in offset order; the counters
    words = [zero] * WORDS
    for name, sig in (("STATUS", status), ("ERROR", errbits), ("ERROR_INSN", errinsn), ("DRAM_BASE", regs.dram_base),
                      ("DRAM_BYTES", regs.dram_bytes), ("INSN_ADDR", regs.insn_addr),
                      ("INSN_COUNT", regs.insn_count), ("CYCLES_LO", cyc_lo), ("CYCLES_HI", hi_latch),
                      ("ID_ISA", id_isa), ("ID_CONFIG", id_cfg)):
        words[O[name]] = sig
    incs = {regmap.counter_name(module, "insns"): core.rets[k] for k, module in enumerate(MODULES)}
    incs.update(core.incs)
    for name, inc in incs.items():
        words[O[name]] = cnt = _reg()
        insts.append(counter(clk, rst, run, clr, inc, cnt))
    insts.append(readback(raddr, words, rword))

    @always_comb
    def regs_out():
        status.next = (error << S_ERROR) | (done << S_DONE) | (run or pending)
        irq.next = done or error
        if run:
            cyc_now.next = cyc
        else:
            cyc_now.next = cycles

    @always_comb
    def cyc_low():
        cyc_lo.next = cyc_now[REG_BITS:0]

    @always_comb
    def clear_counters():
        clr.next = cw.clear or (cw.start and not cw.start_busy and not cw.start_frozen)

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if run:
            cyc.next = cyc + 1
        if rd and raddr == o_lo:
            hi_latch.next = cyc_now[CYCLE_BITS:REG_BITS]
        if run and core.finish:
            run.next = 0
            done.next = 1
            cycles.next = cyc
        if run and core.err != 0:
            run.next = 0
            error.next = 1
            errbits.next = core.err
            errinsn.next = core.err_insn
            cycles.next = cyc
        held.next = not run
        if pending and bus_idle and held:
            pending.next = 0
            run.next = 1
            cyc.next = 0
        if wr:  # the strobed bytes (wdata holds them, the others zeroed); the rest keep their value
            if waddr == o_base:
                regs.dram_base.next = (regs.dram_base & ~wmask) | wdata
            elif waddr == o_bytes:
                regs.dram_bytes.next = (regs.dram_bytes & ~wmask) | wdata
            elif waddr == o_iaddr:
                regs.insn_addr.next = (regs.insn_addr & ~wmask) | wdata
            elif waddr == o_icnt:
                regs.insn_count.next = (regs.insn_count & ~wmask) | wdata
        if clr:  # CLEAR, or a START that is not ignored: a fresh run state
            done.next = 0
            error.next = 0
            errbits.next = 0
            errinsn.next = NO_INSN
            cycles.next = 0
        if cw.clear:
            run.next = 0
            pending.next = 0
        if cw.start:
            if cw.start_busy:
                run.next = 0
                pending.next = 0
                error.next = 1
                errbits.next = E_BUSY
                if run:
                    cycles.next = cyc
            elif not cw.start_frozen:
                if cw.start_bits != 0:
                    error.next = 1
                    errbits.next = cw.start_bits
                elif bus_idle and not run and held:
                    run.next = 1
                    cyc.next = 0
                else:   # CLEAR + START during a run, bus transfers still draining, or the run
                    # stopped in the previous cycle: wait (the core is held in reset for 2 cycles
                    # before a run, the memory port's precomputed walks need them: memport.py)
                    run.next = 0
                    pending.next = 1
    insts += [regs_out, cyc_low, clear_counters, seq]
    return insts
