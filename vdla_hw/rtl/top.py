"""The accelerator's core top level: fetch, load, compute and store with their command queues,
the four token FIFOs, the SRAMs, the memory port (an AXI master) and the AXI-lite control slave,
all on one free-running clock: modules wait through valid/ready handshakes and clock enables,
never a gated clock.

Ports (all synchronous to ``clk``; ``rst`` is active high):

* ``s_axil_*``: the AXI-lite control slave (vdla_hw.regmap), :class:`vdla_hw.rtl.axi.AxiLite`;
* ``m_axi_*``: the memory master (:mod:`vdla_hw.rtl.memport`), AXI with 8-bit ``*len`` (never
  above 15), constant ID 0, full-width INCR bursts (``*size``, ``*burst``);
* ``irq``: STATUS done or error;
* the retire trace for test benches: in the cycle after module k of load/compute/store retires
  an instruction, ``ret_valid`` bit k is set with its index in ``ret_index_*`` and the retire
  cycle in ``ret_cycle``; ``ret_tog`` toggles at every cycle with a retire, so a bench can wait
  for its edges instead of sampling every cycle.

The FPGA top :func:`vdla_hw.rtl.axi_top.vdla_axi_top` wraps this one with HP0's AXI3 signals.
"""

from __future__ import annotations

from myhdl import ResetSignal, Signal, always_comb, block, intbv

from vdla_hw.regmap import REG_BITS
from vdla_hw.rtl.axi import AXSIZE_BITS, AXBURST_BITS, BURST_INCR, AxiLite, AxiMaster, bind, flat_names
from vdla_hw.rtl.compute import compute
from vdla_hw.rtl.control import CoreLink, RunRegs, control
from vdla_hw.rtl.core_queues import EXEC, TOKEN_QUEUES, TokenQueue, module_ctls, queues
from vdla_hw.rtl.core_status import RetireTrace, counter_incs, error_merge, retire_trace
from vdla_hw.rtl.ctl import CmdQueue, ModuleCtl
from vdla_hw.rtl.dma import dma_read
from vdla_hw.rtl.dma_ports import ErrReport, InsnPort, QueuePush, WriteBeat, sram_read, sram_write
from vdla_hw.rtl.decode import ENTRY_BITS
from vdla_hw.rtl.fetch import fetch
from vdla_hw.rtl.memport import BeatBus, PortClient, PortError, memport
from vdla_hw.rtl.params import CYCLE_BITS, INDEX_BITS, RtlParams, arbitration_order
from vdla_hw.rtl.prims import wire
from vdla_hw.rtl.sram import SramPorts, srams
from vdla_hw.rtl.store import store

# constant AXI signals of the core's master, (name, width): one ID bit (always 0), full-width
# INCR bursts; and the response IDs it ignores
AXI_CONSTANTS = (("arid", 1), ("awid", 1), ("arsize", AXSIZE_BITS), ("awsize", AXSIZE_BITS),
                 ("arburst", AXBURST_BITS), ("awburst", AXBURST_BITS))
AXI_IGNORED = (("rid", 1), ("bid", 1))


def top_ports(p: RtlParams) -> dict:
    """The core top level's port signals by name (the converter's module ports)."""
    s = {"clk": Signal(bool(0)), "rst": ResetSignal(0, active=1, isasync=False)}
    s.update(flat_names(AxiLite(), "s_axil"))
    s.update(flat_names(AxiMaster(p), "m_axi"))
    for name, width in AXI_CONSTANTS + AXI_IGNORED:
        s["m_axi_" + name] = Signal(bool(0)) if width == 1 else Signal(intbv(0)[width:])
    s.update(irq=Signal(bool(0)), ret_valid=Signal(intbv(0)[len(EXEC):]), ret_cycle=Signal(intbv(0)[CYCLE_BITS:]),
             ret_tog=Signal(bool(0)))
    for m in EXEC:
        s["ret_index_" + m] = Signal(intbv(0)[INDEX_BITS:])
    return s


@block
def vdla_top(p: RtlParams, clk, rst, s_axil_awaddr, s_axil_awvalid, s_axil_awready, s_axil_wdata, s_axil_wstrb,
             s_axil_wvalid, s_axil_wready, s_axil_bresp, s_axil_bvalid, s_axil_bready, s_axil_araddr, s_axil_arvalid,
             s_axil_arready, s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready, m_axi_araddr, m_axi_arlen,
             m_axi_arvalid, m_axi_arready, m_axi_rdata, m_axi_rresp, m_axi_rlast, m_axi_rvalid, m_axi_rready,
             m_axi_awaddr, m_axi_awlen, m_axi_awvalid, m_axi_awready, m_axi_wdata, m_axi_wstrb, m_axi_wlast,
             m_axi_wvalid, m_axi_wready, m_axi_bresp, m_axi_bvalid, m_axi_bready, m_axi_arid, m_axi_awid, m_axi_arsize,
             m_axi_awsize, m_axi_arburst, m_axi_awburst, m_axi_rid, m_axi_bid, irq, ret_valid, ret_cycle, ret_tog,
             ret_index_load, ret_index_compute, ret_index_store):
    """The core (module docstring). Its ports are the Verilog module's, in order: the converter
    names a top level's ports after its arguments, and expanding interface objects would put
    them after every plain signal; inside, the AXI ports are bound to :class:`AxiLite` /
    :class:`AxiMaster` and everything is wired by named interfaces."""
    ports = dict(locals())
    axil, axi = AxiLite(), AxiMaster(p)
    bind(axil, "s_axil", ports)
    bind(axi, "m_axi", ports)
    core, regs = CoreLink(busy_max=p.config.FETCH_CYCLES_PER_INSN + 1), RunRegs()
    dram_bytes = regs.dram_bytes
    stopped = Signal(bool(1))
    crst = ResetSignal(0, active=1, isasync=False)    # the core runs out of reset only in a run
    insts = [_axi_constants(p, m_axi_arid, m_axi_awid, m_axi_arsize, m_axi_awsize, m_axi_arburst, m_axi_awburst),
             control(clk, rst, p, axil, core, regs, irq), _core_reset(rst, core.run, crst, stopped)]

    # ---- command and token queues, instruction control -------------------------------------
    qdata = Signal(intbv(0)[ENTRY_BITS:])
    q = {m: CmdQueue() for m in EXEC}
    tq = {n: TokenQueue() for n in TOKEN_QUEUES}
    ctl = {m: ModuleCtl(p) for m in EXEC}
    insts += [queues(clk, crst, p, qdata, q, tq), module_ctls(clk, crst, p, q, tq, ctl)]

    # ---- memory port, SRAMs ------------------------------------------------------------------
    order = arbitration_order()
    mp = {m: PortClient(write=m == "store") for m in order}
    beat = BeatBus(p)
    store_wdata = Signal(intbv(0)[len(axi.w.data):])
    store_wstrb = Signal(intbv(0)[len(axi.w.strb):])
    perr = PortError(axi, len(order))
    insts.append(memport(clk, rst, p, stopped, regs.dram_base, [mp[m] for m in order], axi, store_wdata, store_wstrb,
                         beat, core.bus_idle, perr))
    mem_rdata = axi.r.data
    g, sp = p.mems, SramPorts(p)
    insts.append(srams(clk, p, sp))

    # ---- modules -----------------------------------------------------------------------------
    # ERROR reports: fetch's (bad instructions), each LOAD/STORE datapath's range check
    errs = {"fetch": ErrReport(Signal(intbv(0)[REG_BITS:]), Signal(intbv(0)[REG_BITS:]))}
    errs.update({m: ErrReport(Signal(intbv(0)[REG_BITS:]), Signal(intbv(0)[INDEX_BITS:])) for m in EXEC})
    f_qstall = Signal(bool(0))
    f_index = Signal(intbv(0)[INDEX_BITS:])
    insts.append(fetch(clk, crst, p, regs.insn_addr, regs.insn_count, mp["fetch"], mem_rdata,
                       [QueuePush(q[m].room, q[m].push) for m in EXEC], qdata, errs["fetch"],
                       f_qstall, f_index))
    ld = ctl["load"].cmd
    ld_start = Signal(bool(0))
    insts.append(wire(ld.start, ld_start))
    insts.append(dma_read(clk, crst, p, ["inp", "wgt"], InsnPort(ld_start, ld.insn, ld.done), mp["load"], beat,
                          mem_rdata, {"inp": sram_write(g["inp"], sp.inp_w), "wgt": sram_write(g["wgt"], sp.wgt_w)},
                          dram_bytes, errs["load"]))
    insts.append(compute(clk, crst, p, ctl["compute"].cmd, core.finish, mp["compute"], beat, mem_rdata, sp, dram_bytes,
                         errs["compute"]))
    insts.append(store(clk, crst, p, ctl["store"].cmd, mp["store"], beat, WriteBeat(store_wdata, store_wstrb),
                       sram_read(g["out"], sp.out_r), dram_bytes, errs["store"]))

    # ---- retire trace, errors, counters --------------------------------------------------------
    pushes = [q[m].push for m in EXEC]
    trace = RetireTrace(ret_valid, ret_cycle, ret_tog, (ret_index_load, ret_index_compute, ret_index_store))
    insts += [retire_trace(clk, rst, core, pushes, ctl, trace),
              error_merge(core, errs, perr, f_index, ctl, {n: tq[n].over for n in TOKEN_QUEUES}),
              counter_incs(clk, crst, p, core, mp, pushes, f_qstall, ctl)]
    return insts


@block
def _core_reset(rst, run, crst, stopped):
    """The core is held in reset (``crst``) unless it runs; ``stopped`` tells the memory port."""
    @always_comb
    def comb():
        crst.next = rst or not run
        stopped.next = not run
    return comb


@block
def _axi_constants(p: RtlParams, arid, awid, arsize, awsize, arburst, awburst):
    """ID 0, full-width beats (AxSIZE = log2 bytes per beat), INCR bursts (constant signals:
    MyHDL converts an undriven signal to a constant assignment)."""
    zero = Signal(bool(0))
    size = Signal(intbv(p.lgB)[len(arsize):])
    incr = Signal(intbv(BURST_INCR)[len(arburst):])

    @always_comb
    def const():
        arid.next = zero
        awid.next = zero
        arsize.next = size
        awsize.next = size
        arburst.next = incr
        awburst.next = incr
    return const
