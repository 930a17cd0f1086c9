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

from myhdl import ResetSignal, Signal, always_comb, always_seq, block, intbv

from vdla_hw import isa, regmap
from vdla_hw.isa import FLAG_QUEUE, MODULES
from vdla_hw.rtl.axi import BURST_INCR, AxiLite, AxiMaster, bind, flat_names
from vdla_hw.rtl.compute import compute
from vdla_hw.rtl.control import CoreLink, RunRegs, control
from vdla_hw.rtl.ctl import exec_ctl
from vdla_hw.rtl.dma import dma_read
from vdla_hw.rtl.dma_ports import ErrReport, InsnPort, QueuePush, WriteBeat, sram_read, sram_write
from vdla_hw.rtl.fetch import fetch
from vdla_hw.rtl.memport import BeatBus, PortClient, PortError, memport
from vdla_hw.rtl.decode import ENTRY_BITS
from vdla_hw.rtl.params import INDEX_BITS, RtlParams, arbitration_order, log2
from vdla_hw.rtl.prims import cmd_queue, ram, token_queue
from vdla_hw.rtl.sram import elem_read, elem_write, narrow_sram
from vdla_hw.rtl.store import store

CYC_BITS = 64
EXEC = ("load", "compute", "store")
# constant AXI signals of the core's master: (name, width) -> value given the params
AXI_CONSTANTS = (("arid", 1), ("awid", 1), ("arsize", 3), ("awsize", 3), ("arburst", 2), ("awburst", 2))
AXI_IGNORED = (("rid", 1), ("bid", 1))


def top_ports(p: RtlParams) -> dict:
    """The core top level's port signals by name (the converter's module ports)."""
    s = {"clk": Signal(bool(0)), "rst": ResetSignal(0, active=1, isasync=False)}
    s.update(flat_names(AxiLite(), "s_axil"))
    s.update(flat_names(AxiMaster(p), "m_axi"))
    for name, width in AXI_CONSTANTS + AXI_IGNORED:
        s["m_axi_" + name] = Signal(bool(0)) if width == 1 else Signal(intbv(0)[width:])
    s.update(irq=Signal(bool(0)), ret_valid=Signal(intbv(0)[3:]), ret_cycle=Signal(intbv(0)[CYC_BITS:]),
             ret_tog=Signal(bool(0)))
    for m in EXEC:
        s["ret_index_" + m] = Signal(intbv(0)[INDEX_BITS:])
    return s


def _wports(g):
    """Write ports of a memory: (we, waddr, wdata) or 2 banks of (we_lanes, waddr, wdata)."""
    if g.narrow:
        aw = max(1, log2(g.bank_depth))
        return tuple((Signal(intbv(0)[g.lanes:]), Signal(intbv(0)[aw:]), Signal(intbv(0)[g.lanes * g.width:]))
                     for _ in range(2))
    return Signal(bool(0)), Signal(intbv(0)[g.ibits:]), Signal(intbv(0)[g.width:])


def _rports(g):
    if g.narrow:
        aw = max(1, log2(g.bank_depth))
        return tuple((Signal(bool(0)), Signal(intbv(0)[aw:]), Signal(intbv(0)[g.lanes * g.width:])) for _ in range(2))
    return Signal(bool(0)), Signal(intbv(0)[g.ibits:]), Signal(intbv(0)[g.width:])


def _eports(g):
    return Signal(bool(0)), Signal(intbv(0)[g.ibits:]), Signal(intbv(0)[g.width:])


@block
def vdla_top(p: RtlParams, clk, rst, s_axil_awaddr, s_axil_awvalid, s_axil_awready, s_axil_wdata, s_axil_wstrb,
             s_axil_wvalid, s_axil_wready, s_axil_bresp, s_axil_bvalid, s_axil_bready, s_axil_araddr, s_axil_arvalid,
             s_axil_arready, s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready, m_axi_araddr, m_axi_arlen,
             m_axi_arvalid, m_axi_arready, m_axi_rdata, m_axi_rresp, m_axi_rlast, m_axi_rvalid, m_axi_rready,
             m_axi_awaddr, m_axi_awlen, m_axi_awvalid, m_axi_awready, m_axi_wdata, m_axi_wstrb, m_axi_wlast,
             m_axi_wvalid, m_axi_wready, m_axi_bresp, m_axi_bvalid, m_axi_bready, m_axi_arid, m_axi_awid, m_axi_arsize,
             m_axi_awsize, m_axi_arburst, m_axi_awburst, m_axi_rid, m_axi_bid, irq, ret_valid, ret_cycle, ret_tog,
             ret_index_load, ret_index_compute, ret_index_store):
    c = p.config
    QL = c.QUEUE_LATENCY
    insts = []
    W = ENTRY_BITS
    OPW = isa.layout("FINISH", c)["opcode"].width
    ports = dict(locals())
    axil, axi = AxiLite(), AxiMaster(p)
    bind(axil, "s_axil", ports)
    bind(axi, "m_axi", ports)
    insts.append(_axi_constants(p, m_axi_arid, m_axi_awid, m_axi_arsize, m_axi_awsize, m_axi_arburst, m_axi_awburst))

    # ---- control -------------------------------------------------------------------------
    # per-module busy/stall counters (vdla_sim's definitions): what each adds in a run cycle
    core, regs = CoreLink(busy_max=c.FETCH_CYCLES_PER_INSN + 1), RunRegs()
    run, cyc, finish, core_err, core_err_insn = core.run, core.cyc, core.finish, core.err, core.err_insn
    rets, bus_idle, incs = core.rets, core.bus_idle, core.incs
    dram_base, dram_bytes, insn_addr, insn_count = regs.dram_base, regs.dram_bytes, regs.insn_addr, regs.insn_count
    stopped = Signal(bool(1))
    crst = ResetSignal(0, active=1, isasync=False)
    insts.append(control(clk, rst, p, axil, core, regs, irq))

    @always_comb
    def core_reset():
        crst.next = rst or not run
        stopped.next = not run
    insts.append(core_reset)

    # ---- command queues ------------------------------------------------------------------
    qdata = Signal(intbv(0)[W:])
    q = {}
    for m in ("load", "compute", "store"):
        q[m] = dict(push=Signal(bool(0)), room=Signal(bool(0)), pop=Signal(bool(0)), avail=Signal(bool(0)),
                    head=Signal(intbv(0)[W:]))
        insts.append(cmd_queue(clk, crst, q[m]["push"], qdata, q[m]["room"], q[m]["pop"], q[m]["avail"],
                               q[m]["head"], c.CMD_QUEUE_DEPTH, QL))

    # ---- token queues --------------------------------------------------------------------
    tq = {}
    for name in ("l2c", "c2l", "c2s", "s2c"):
        tq[name] = dict(push=Signal(bool(0)), pop=Signal(bool(0)), avail=Signal(bool(0)), over=Signal(bool(0)))
        insts.append(token_queue(clk, crst, tq[name]["push"], tq[name]["pop"], tq[name]["avail"], tq[name]["over"],
                                 c.TOKEN_QUEUE_DEPTH, QL))
    one = Signal(bool(1))

    def tok(module, flag):
        key = (module, flag)
        return tq[FLAG_QUEUE[key]] if key in FLAG_QUEUE else None

    # ---- memory port ---------------------------------------------------------------------
    order = arbitration_order()
    mp = {m: PortClient(write=m == "store") for m in order}
    beat = BeatBus(p)
    store_wdata = Signal(intbv(0)[p.B * 8:])
    store_wstrb = Signal(intbv(0)[p.B:])
    perr = PortError(axi, len(order))
    err_valid, err_code, err_owner = perr.valid, perr.code, perr.owner
    insts.append(memport(clk, rst, p, stopped, dram_base, [mp[m] for m in order], axi, store_wdata, store_wstrb,
                         beat, bus_idle, perr))
    mem_rdata = axi.r.data

    # ---- SRAMs ---------------------------------------------------------------------------
    g = p.mems
    uop_w, inp_w, wgt_w = _wports(g["uop"]), _wports(g["inp"]), _wports(g["wgt"])
    uop_r, inp_r, wgt_r, acc_r = _eports(g["uop"]), _eports(g["inp"]), _eports(g["wgt"]), _eports(g["acc"])
    acc_w, out_w = _eports(g["acc"]), _eports(g["out"])
    out_r = _rports(g["out"])
    for name, wp, rp in (("uop", uop_w, uop_r), ("inp", inp_w, inp_r), ("wgt", wgt_w, wgt_r)):
        if g[name].narrow:
            banks_r = _rports(g[name])
            insts += [narrow_sram(clk, g[name], wp, banks_r), elem_read(clk, g[name], *rp, banks_r)]
        else:
            insts.append(ram(clk, *wp, *rp, g[name].depth))
    insts.append(ram(clk, *acc_w, *acc_r, g["acc"].depth))   # compute forwards its own writes
    if g["out"].narrow:
        banks_w = _wports(g["out"])
        insts += [elem_write(g["out"], *out_w, banks_w), narrow_sram(clk, g["out"], banks_w, out_r)]
    else:
        insts.append(ram(clk, *out_w, *out_r, g["out"].depth))

    # ---- modules -------------------------------------------------------------------------
    err_f = Signal(intbv(0)[32:])
    err_f_insn = Signal(intbv(0)[32:])
    f_qstall = Signal(bool(0))
    f_index = Signal(intbv(0)[INDEX_BITS:])
    insts.append(fetch(clk, crst, p, insn_addr, insn_count, mp["fetch"], mem_rdata,
                       [QueuePush(q[m]["room"], q[m]["push"]) for m in EXEC], qdata, ErrReport(err_f, err_f_insn),
                       f_qstall, f_index))

    ctl = {}
    for m in ("load", "compute", "store"):
        d = ctl[m] = dict(start=Signal(bool(0)), sinsn=Signal(intbv(0)[W:]), done=Signal(bool(0)),
                          pp=Signal(bool(0)), pn=Signal(bool(0)), up=Signal(bool(0)), un=Signal(bool(0)),
                          rv=Signal(bool(0)), ri=Signal(intbv(0)[INDEX_BITS:]), op=Signal(intbv(0)[OPW:]),
                          act=Signal(bool(0)), tst=Signal(bool(0)))
        prev_q, next_q = tok(m, "pop_prev"), tok(m, "pop_next")
        insts.append(exec_ctl(clk, crst, p, q[m]["avail"], q[m]["head"], q[m]["pop"],
                              prev_q["avail"] if prev_q else one, next_q["avail"] if next_q else one,
                              d["start"], d["sinsn"], d["done"], d["pp"], d["pn"], d["up"], d["un"], d["rv"], d["ri"],
                              d["op"], d["act"], d["tst"]))

    def mport(m):
        return (mp[m].beat, beat.idx, beat.row_addr, beat.row_end, beat.row_last)

    rng = {m: (Signal(intbv(0)[32:]), Signal(intbv(0)[INDEX_BITS:])) for m in ("load", "compute", "store")}
    ld = ctl["load"]
    ld_start = Signal(bool(0))
    insts.append(_wire(ld["start"], ld_start))
    insts.append(dma_read(clk, crst, p, ["inp", "wgt"], InsnPort(ld_start, ld["sinsn"], ld["done"]), mp["load"], beat,
                          mem_rdata, {"inp": sram_write(g["inp"], inp_w), "wgt": sram_write(g["wgt"], wgt_w)},
                          dram_bytes, ErrReport(*rng["load"])))
    cp = ctl["compute"]
    insts.append(compute(clk, crst, p, cp["start"], cp["sinsn"], cp["done"], finish, mp["compute"].req,
                         mp["compute"].desc, mp["compute"].grant, mp["compute"].rel, mport("compute"),
                         mem_rdata, uop_w, uop_r, inp_r, wgt_r, acc_r, acc_w, out_w, dram_bytes, *rng["compute"]))
    st = ctl["store"]
    insts.append(store(clk, crst, p, InsnPort(st["start"], st["sinsn"], st["done"]), mp["store"], beat,
                       WriteBeat(store_wdata, store_wstrb), sram_read(g["out"], out_r), dram_bytes,
                       ErrReport(*rng["store"])))

    # ---- tokens, retire trace, errors ------------------------------------------------------
    for m in ("load", "compute", "store"):
        for flag, key in (("pop_prev", "pp"), ("pop_next", "pn"), ("push_prev", "up"), ("push_next", "un")):
            t = tok(m, flag)
            if t is not None:
                insts.append(_wire(ctl[m][key], t["pop" if flag.startswith("pop") else "push"]))
    lv, cv, sv = ctl["load"]["rv"], ctl["compute"]["rv"], ctl["store"]["rv"]
    li, ci, si = ctl["load"]["ri"], ctl["compute"]["ri"], ctl["store"]["ri"]
    r_fetch, r_load, r_comp, r_store = rets
    o_l2c, o_c2l, o_c2s, o_s2c = (tq[n]["over"] for n in ("l2c", "c2l", "c2s", "s2c"))
    E_TOK = regmap.ERROR_BITS["token_overflow"]
    ql_push, qc_push, qs_push = q["load"]["push"], q["compute"]["push"], q["store"]["push"]

    any_ret = Signal(bool(0))

    @always_comb
    def retires():
        any_ret.next = lv or cv or sv
        r_fetch.next = ql_push or qc_push or qs_push
        r_load.next = lv
        r_comp.next = cv
        r_store.next = sv

    @always_seq(clk.posedge, reset=rst)
    def trace():
        # the retire trace, one cycle late (registered outputs)
        ret_valid.next = (sv << 2) | (cv << 1) | lv
        if any_ret:
            ret_tog.next = not ret_tog
            ret_cycle.next = cyc
            ret_index_load.next = li
            ret_index_compute.next = ci
            ret_index_store.next = si

    (rl, rli), (rc, rci), (rs, rsi) = rng["load"], rng["compute"], rng["store"]
    E_SLV, E_DEC = regmap.ERROR_BITS["axi_slverr"], regmap.ERROR_BITS["axi_decerr"]
    K_STORE, K_COMPUTE, K_LOAD = (order.index(m) for m in ("store", "compute", "load"))
    bus_bits = Signal(intbv(0)[32:])
    bus_insn = Signal(intbv(0)[32:])

    @always_comb
    def bus_error():
        # an error response names the instruction whose transfer it belongs to (fetch: the first
        # instruction of the chunk being read)
        bus_bits.next = 0
        if err_valid:
            if err_code == 3:
                bus_bits.next = E_DEC
            else:
                bus_bits.next = E_SLV
        if err_owner == K_STORE:
            bus_insn.next = si
        elif err_owner == K_COMPUTE:
            bus_insn.next = ci
        elif err_owner == K_LOAD:
            bus_insn.next = li
        else:
            bus_insn.next = f_index

    @always_comb
    def errors():
        # fetch's errors first, then the LOAD/STORE range checks, bus errors, token overflow
        core_err.next = err_f | rl | rc | rs | bus_bits
        core_err_insn.next = err_f_insn
        if err_f == 0:
            if rl != 0:
                core_err_insn.next = rli
            elif rc != 0:
                core_err_insn.next = rci
            elif rs != 0:
                core_err_insn.next = rsi
            elif bus_bits != 0:
                core_err_insn.next = bus_insn
        if o_l2c or o_c2l:
            core_err.next = err_f | rl | rc | rs | bus_bits | E_TOK
            if o_l2c:
                core_err_insn.next = li
            else:
                core_err_insn.next = ci
        elif o_c2s or o_s2c:
            core_err.next = err_f | rl | rc | rs | bus_bits | E_TOK
            if o_c2s:
                core_err_insn.next = ci
            else:
                core_err_insn.next = si
    insts += [retires, trace, bus_error, errors]

    # ---- counters: busy = [start, retire) minus memory waits (fetch: FETCH_CYCLES_PER_INSN per
    # routed instruction plus its port transactions), stall_mem = request to grant, stall_token =
    # take to start, stall_queue = fetch held by a full command queue
    STEP = c.FETCH_CYCLES_PER_INSN
    f_req, f_gnt, f_rel = mp["fetch"].req, mp["fetch"].grant, mp["fetch"].rel
    f_hold = Signal(bool(0))
    fb, fsm, fsq = (incs[regmap.counter_name("fetch", n)] for n in ("busy", "stall_mem", "stall_queue"))

    @always_seq(clk.posedge, reset=crst)
    def fhold():
        if f_gnt:
            f_hold.next = 1
        elif f_rel:
            f_hold.next = 0

    @always_comb
    def fcount():
        v = intbv(0)[len(fb):]
        v[:] = 0
        if ql_push or qc_push or qs_push:
            v[:] = STEP
        if f_gnt or (f_hold and not f_rel):
            v[:] = v + 1
        fb.next = v
        fsm.next = f_req and not f_gnt
        fsq.next = f_qstall
    insts += [fhold, fcount]
    for m in ("load", "compute", "store"):
        insts.append(_mod_count(ctl[m]["act"], ctl[m]["tst"], mp[m].req, mp[m].grant,
                                incs[regmap.counter_name(m, "busy")], incs[regmap.counter_name(m, "stall_token")],
                                incs[regmap.counter_name(m, "stall_mem")]))
    return insts


@block
def _mod_count(act, tst, req, grant, busy_inc, tok_inc, mem_inc):
    @always_comb
    def cnt():
        mem_inc.next = req and not grant
        busy_inc.next = act and not (req and not grant)
        tok_inc.next = tst
    return cnt


@block
def _wire(a, b):
    @always_comb
    def w():
        b.next = a
    return w


@block
def _axi_constants(p: RtlParams, arid, awid, arsize, awsize, arburst, awburst):
    """ID 0, full-width beats (AxSIZE = log2 bytes per beat), INCR bursts (constant signals:
    MyHDL converts an undriven signal to a constant assignment)."""
    zero = Signal(bool(0))
    size = Signal(intbv(p.lgB)[3:])
    incr = Signal(intbv(BURST_INCR)[2:])

    @always_comb
    def const():
        arid.next = zero
        awid.next = zero
        arsize.next = size
        awsize.next = size
        arburst.next = incr
        awburst.next = incr
    return const
