"""The accelerator's top level: fetch, load, compute and store with their command queues, the
four token FIFOs, the SRAMs, the memory port and the AXI-lite control slave.

External ports (all synchronous to ``clk``; ``rst`` is active high):

* ``s_axil_*``: the AXI-lite control slave (vdla_hw.regmap).
* the memory port, one beat per cycle as the timing contract moves it: ``mem_rd`` /
  ``mem_wr`` (a read / write beat this cycle), ``mem_addr`` (byte address, DRAM_BASE + the
  beat's offset in the image, beat aligned), ``mem_wdata`` / ``mem_wstrb``, and ``mem_rdata``,
  which the memory must drive in the same cycle as ``mem_rd`` (the testbench serves it from
  vdla_sim's memory model; :mod:`vdla_hw.rtl.axi_master` turns it into AXI3 bursts).
* debug: ``dbg_cycle`` (the run's cycle number), ``ret_valid`` (bit k: module k of
  load/compute/store retires an instruction this cycle), ``ret_index_*`` (its index) and
  ``dbg_active`` (a beat or a retire this cycle: the testbench sleeps while it is low).
"""

from __future__ import annotations

from myhdl import ResetSignal, Signal, always_comb, always_seq, block, intbv

from vdla_hw import regmap
from vdla_hw.isa import FLAG_QUEUE, MODULES
from vdla_hw.rtl.compute import compute
from vdla_hw.rtl.control import control
from vdla_hw.rtl.ctl import exec_ctl
from vdla_hw.rtl.dma import dma_read
from vdla_hw.rtl.fetch import fetch
from vdla_hw.rtl.memport import DESC_BITS, memport
from vdla_hw.rtl.params import ADDR_BITS, INDEX_BITS, RtlParams, arbitration_order, log2
from vdla_hw.rtl.prims import cmd_queue, ram, token_queue
from vdla_hw.rtl.sram import elem_read, elem_write, narrow_sram
from vdla_hw.rtl.store import store

CYC_BITS = 64


def top_ports(p: RtlParams) -> dict:
    """The top level's port signals by name (the converter's module ports)."""
    B = p.B
    s = {"clk": Signal(bool(0)), "rst": ResetSignal(0, active=1, isasync=False)}
    for name, width in (("awaddr", 8), ("wdata", 32), ("wstrb", 4), ("bresp", 2), ("araddr", 8), ("rdata", 32),
                        ("rresp", 2)):
        s["s_axil_" + name] = Signal(intbv(0)[width:])
    for name in ("awvalid", "awready", "wvalid", "wready", "bvalid", "bready", "arvalid", "arready", "rvalid",
                 "rready"):
        s["s_axil_" + name] = Signal(bool(0))
    s.update(mem_rd=Signal(bool(0)), mem_wr=Signal(bool(0)), mem_addr=Signal(intbv(0)[ADDR_BITS:]),
             mem_wdata=Signal(intbv(0)[B * 8:]), mem_wstrb=Signal(intbv(0)[B:]), mem_rdata=Signal(intbv(0)[B * 8:]))
    s.update(dbg_cycle=Signal(intbv(0)[CYC_BITS:]), ret_valid=Signal(intbv(0)[3:]), busy=Signal(bool(0)),
             dbg_active=Signal(bool(0)))
    for m in ("load", "compute", "store"):
        s["ret_index_" + m] = Signal(intbv(0)[INDEX_BITS:])
    return s


AXIL = ("awaddr", "awvalid", "awready", "wdata", "wstrb", "wvalid", "wready", "bresp", "bvalid", "bready",
        "araddr", "arvalid", "arready", "rdata", "rresp", "rvalid", "rready")


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
             s_axil_arready, s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready,
             mem_rd, mem_wr, mem_addr, mem_wdata, mem_wstrb, mem_rdata,
             dbg_cycle, ret_valid, busy, dbg_active, ret_index_load, ret_index_compute, ret_index_store):
    c = p.config
    QL = c.QUEUE_LATENCY
    insts = []
    W = 128 + INDEX_BITS

    # ---- control -------------------------------------------------------------------------
    run = Signal(bool(0))
    crst = ResetSignal(0, active=1, isasync=False)
    finish = Signal(bool(0))
    core_err = Signal(intbv(0)[32:])
    core_err_insn = Signal(intbv(0)[32:])
    dram_base, dram_bytes, insn_addr, insn_count = (Signal(intbv(0)[32:]) for _ in range(4))
    rets = [Signal(bool(0)) for _ in MODULES]
    axil = (s_axil_awaddr, s_axil_awvalid, s_axil_awready, s_axil_wdata, s_axil_wstrb, s_axil_wvalid, s_axil_wready,
            s_axil_bresp, s_axil_bvalid, s_axil_bready, s_axil_araddr, s_axil_arvalid, s_axil_arready, s_axil_rdata,
            s_axil_rresp, s_axil_rvalid, s_axil_rready)
    # per-module busy/stall counters (vdla_sim's definitions): what each adds in a run cycle
    incs = {}
    for m in MODULES:
        incs[regmap.counter_name(m, "busy")] = Signal(intbv(0)[8:])
        for cname in ("stall_token", "stall_mem", "stall_queue"):
            incs[regmap.counter_name(m, cname)] = Signal(bool(0))
    insts.append(control(clk, rst, p, axil, run, dbg_cycle, finish, core_err, core_err_insn, rets,
                         dram_base, dram_bytes, insn_addr, insn_count, incs))

    @always_comb
    def core_reset():
        crst.next = rst or not run
        busy.next = run
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
    mp = {m: dict(req=Signal(bool(0)), desc=Signal(intbv(0)[DESC_BITS:]), grant=Signal(bool(0)),
                  beat_me=Signal(bool(0)), rel_me=Signal(bool(0))) for m in order}
    owner = Signal(intbv(0)[2:])
    last_owner = Signal(intbv(0)[2:])
    rel = Signal(bool(0))
    beat = Signal(bool(0))
    beat_wr = Signal(bool(0))
    beat_idx = Signal(intbv(0)[ADDR_BITS - p.lgB:])
    row_addr = Signal(intbv(0)[ADDR_BITS:])
    row_end = Signal(intbv(0)[ADDR_BITS:])
    row_last = Signal(bool(0))
    port_busy = Signal(bool(0))
    insts.append(memport(clk, crst, p, [mp[m]["req"] for m in order], [mp[m]["desc"] for m in order],
                         [mp[m]["grant"] for m in order], owner, rel, beat, beat_wr, beat_idx, row_addr, row_end,
                         row_last, port_busy, [m == "store" for m in order], last_owner))
    for k, m in enumerate(order):
        insts.append(_port_sel(k, beat, owner, rel, last_owner, mp[m]["beat_me"], mp[m]["rel_me"]))
    store_wdata = Signal(intbv(0)[p.B * 8:])
    store_wstrb = Signal(intbv(0)[p.B:])

    @always_comb
    def ext_port():
        mem_rd.next = beat and not beat_wr
        mem_wr.next = beat and beat_wr
        a = intbv(0)[ADDR_BITS + 1:]
        a[:] = dram_base + (beat_idx << p.lgB)
        mem_addr.next = a[ADDR_BITS:]
        mem_wdata.next = store_wdata
        mem_wstrb.next = store_wstrb
    insts.append(ext_port)

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
    insts.append(ram(clk, *acc_w, *acc_r, g["acc"].depth, forward=True))
    if g["out"].narrow:
        banks_w = _wports(g["out"])
        insts += [elem_write(g["out"], *out_w, banks_w), narrow_sram(clk, g["out"], banks_w, out_r)]
    else:
        insts.append(ram(clk, *out_w, *out_r, g["out"].depth))

    # ---- modules -------------------------------------------------------------------------
    err_f = Signal(intbv(0)[32:])
    err_f_insn = Signal(intbv(0)[32:])
    f_qstall = Signal(bool(0))
    insts.append(fetch(clk, crst, p, insn_addr, insn_count, mp["fetch"]["req"], mp["fetch"]["desc"],
                       mp["fetch"]["grant"], mp["fetch"]["rel_me"], mp["fetch"]["beat_me"], mem_rdata,
                       (q["load"]["room"], q["compute"]["room"], q["store"]["room"]),
                       (q["load"]["push"], q["compute"]["push"], q["store"]["push"]), qdata, err_f, err_f_insn,
                       f_qstall))

    ctl = {}
    for m in ("load", "compute", "store"):
        d = ctl[m] = dict(start=Signal(bool(0)), sinsn=Signal(intbv(0)[W:]), done=Signal(bool(0)),
                          pp=Signal(bool(0)), pn=Signal(bool(0)), up=Signal(bool(0)), un=Signal(bool(0)),
                          rv=Signal(bool(0)), ri=Signal(intbv(0)[INDEX_BITS:]), op=Signal(intbv(0)[3:]),
                          act=Signal(bool(0)), tst=Signal(bool(0)))
        prev_q, next_q = tok(m, "pop_prev"), tok(m, "pop_next")
        insts.append(exec_ctl(clk, crst, p, q[m]["avail"], q[m]["head"], q[m]["pop"],
                              prev_q["avail"] if prev_q else one, next_q["avail"] if next_q else one,
                              d["start"], d["sinsn"], d["done"], d["pp"], d["pn"], d["up"], d["un"], d["rv"], d["ri"],
                              d["op"], d["act"], d["tst"]))

    def mport(m):
        return (mp[m]["beat_me"], beat_idx, row_addr, row_end, row_last)

    rng = {m: (Signal(intbv(0)[32:]), Signal(intbv(0)[INDEX_BITS:])) for m in ("load", "compute", "store")}
    ld = ctl["load"]
    ld_start = Signal(bool(0))
    insts.append(_wire(ld["start"], ld_start))
    insts.append(dma_read(clk, crst, p, ["inp", "wgt"], ld_start, ld["sinsn"], ld["done"], mp["load"]["req"],
                          mp["load"]["desc"], mp["load"]["grant"], mp["load"]["rel_me"], mport("load"), mem_rdata,
                          {"inp": inp_w, "wgt": wgt_w}, dram_bytes, *rng["load"]))
    cp = ctl["compute"]
    insts.append(compute(clk, crst, p, cp["start"], cp["sinsn"], cp["done"], finish, mp["compute"]["req"],
                         mp["compute"]["desc"], mp["compute"]["grant"], mp["compute"]["rel_me"], mport("compute"),
                         mem_rdata, uop_w, uop_r, inp_r, wgt_r, acc_r, acc_w, out_w, dram_bytes, *rng["compute"]))
    st = ctl["store"]
    insts.append(store(clk, crst, p, st["start"], st["sinsn"], st["done"], mp["store"]["req"], mp["store"]["desc"],
                       mp["store"]["grant"], mp["store"]["rel_me"], mport("store"), store_wdata, store_wstrb, out_r,
                       dram_bytes, *rng["store"]))

    # ---- tokens, retire trace, errors ------------------------------------------------------
    for m in ("load", "compute", "store"):
        for flag, key in (("pop_prev", "pp"), ("pop_next", "pn"), ("push_prev", "up"), ("push_next", "un")):
            t = tok(m, flag)
            if t is not None:
                insts.append(_wire(ctl[m][key], t["pop" if flag.startswith("pop") else "push"]))
    lv, cv, sv = ctl["load"]["rv"], ctl["compute"]["rv"], ctl["store"]["rv"]
    li, ci, si = ctl["load"]["ri"], ctl["compute"]["ri"], ctl["store"]["ri"]
    fpush = Signal(bool(0))
    r_fetch, r_load, r_comp, r_store = rets
    o_l2c, o_c2l, o_c2s, o_s2c = (tq[n]["over"] for n in ("l2c", "c2l", "c2s", "s2c"))
    E_TOK = regmap.ERROR_BITS["token_overflow"]
    ql_push, qc_push, qs_push = q["load"]["push"], q["compute"]["push"], q["store"]["push"]

    @always_comb
    def trace():
        dbg_active.next = beat or lv or cv or sv
        ret_valid.next = (sv << 2) | (cv << 1) | lv
        ret_index_load.next = li
        ret_index_compute.next = ci
        ret_index_store.next = si
        r_fetch.next = ql_push or qc_push or qs_push
        r_load.next = lv
        r_comp.next = cv
        r_store.next = sv

    (rl, rli), (rc, rci), (rs, rsi) = rng["load"], rng["compute"], rng["store"]

    @always_comb
    def errors():
        # fetch's errors first, then the LOAD/STORE range checks, then token overflow
        core_err.next = err_f | rl | rc | rs
        core_err_insn.next = err_f_insn
        if err_f == 0:
            if rl != 0:
                core_err_insn.next = rli
            elif rc != 0:
                core_err_insn.next = rci
            elif rs != 0:
                core_err_insn.next = rsi
        if o_l2c or o_c2l:
            core_err.next = err_f | rl | rc | rs | E_TOK
            if o_l2c:
                core_err_insn.next = li
            else:
                core_err_insn.next = ci
        elif o_c2s or o_s2c:
            core_err.next = err_f | rl | rc | rs | E_TOK
            if o_c2s:
                core_err_insn.next = ci
            else:
                core_err_insn.next = si
    insts += [trace, errors]

    # ---- counters: busy = [start, retire) minus memory waits (fetch: FETCH_CYCLES_PER_INSN per
    # routed instruction plus its port transactions), stall_mem = request to grant, stall_token =
    # take to start, stall_queue = fetch held by a full command queue
    STEP = c.FETCH_CYCLES_PER_INSN
    f_req, f_gnt, f_rel = mp["fetch"]["req"], mp["fetch"]["grant"], mp["fetch"]["rel_me"]
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
        v = intbv(0)[8:]
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
        insts.append(_mod_count(ctl[m]["act"], ctl[m]["tst"], mp[m]["req"], mp[m]["grant"],
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
def _port_sel(k, beat, owner, rel, last_owner, beat_me, rel_me):
    @always_comb
    def sel():
        beat_me.next = beat and owner == k
        rel_me.next = rel and last_owner == k
    return sel
