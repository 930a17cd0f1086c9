"""The FPGA build's memory side: the beat-level memory port of ``vdla_top`` as an AXI3 master.

The core expects read data in the cycle it asks for a beat. On a real bus data comes when it
comes, so the adapter stalls the core with a clock enable (an integrated clock gate: BUFGCE on
the FPGA) until the beat is there. The core keeps its own cycle count (CYCLES is the contract's
cycle count); wall-clock time grows by the stalls. Not cycle-exact against the simulator by
design.

Reads go through a prefetch buffer: a read miss issues one INCR burst of up to MEM_MAX_BURST
beats (never crossing 4 KB) from the missed beat; the following beats of the transaction hit
the buffer. Writes are single-beat bursts with byte strobes; any write or an idle core
invalidates the buffer. Bursts never exceed 16 beats, so AXI3's 4-bit ``*len`` is the low
nibble of the 8-bit (AXI4-width) ``m_axi_*len`` ports the testbench's AxiRam expects. The
AXI-lite handshakes are gated with the same enable so the control slave (in the gated domain)
sees every transfer exactly once.
"""

from __future__ import annotations

from myhdl import ResetSignal, Signal, always, always_comb, always_seq, block, intbv

from vdla_hw.rtl.params import ADDR_BITS, RtlParams, log2
from vdla_hw.rtl.top import AXIL, top_ports, vdla_top
from vdla_hw.timing import BURST_BOUNDARY


@block
def axi_adapter(clk, rst, p: RtlParams, busy, c_rd, c_wr, c_addr, c_wdata, c_wstrb, c_rdata, ce, axi):
    B, lgB = p.B, p.lgB
    MAXB = min(p.config.MEM_MAX_BURST, 16)
    page = BURST_BOUNDARY // B
    (awid, awaddr, awlen, awsize, awburst, awvalid, awready, wdata, wstrb, wlast, wvalid, wready,
     bid, bresp, bvalid, bready, arid, araddr, arlen, arsize, arburst, arvalid, arready,
     rid, rdata, rresp, rlast, rvalid, rready) = axi
    BW = ADDR_BITS - lgB
    buf = [Signal(intbv(0)[B * 8:]) for _ in range(MAXB)]
    base = Signal(intbv(0)[BW:])
    nvalid = Signal(intbv(0)[6:])
    bvalid_f = Signal(bool(0))
    ar_busy = Signal(bool(0))
    rcnt = Signal(intbv(0)[5:])
    hit = Signal(bool(0))
    idx = Signal(intbv(0)[BW:])
    beat = Signal(intbv(0)[BW:])
    w_busy = Signal(bool(0))
    w_done = Signal(bool(0))
    aw_ok = Signal(bool(0))
    w_ok = Signal(bool(0))
    ce_l = Signal(bool(1))
    burst = Signal(intbv(0)[6:])

    @always_comb
    def comb():
        beat.next = c_addr[ADDR_BITS:lgB]
        idx.next = (c_addr[ADDR_BITS:lgB] - base) & ((1 << BW) - 1)

    @always_comb
    def comb2():
        hit.next = bvalid_f and idx < nvalid
        ce.next = (not c_rd or (bvalid_f and idx < nvalid)) and (not c_wr or w_done)
        rdd = idx & (MAXB - 1)
        c_rdata.next = buf[int(rdd)]
        left = page - (beat & (page - 1))
        if left < MAXB:
            burst.next = left
        else:
            burst.next = MAXB
        awid.next = 0
        arid.next = 0
        awsize.next = lgB
        arsize.next = lgB
        awburst.next = 1
        arburst.next = 1
        awlen.next = 0
        wlast.next = 1
        rready.next = 1
        bready.next = 1
        awaddr.next = c_addr
        wdata.next = c_wdata
        wstrb.next = c_wstrb

    @always_comb
    def latch():
        if not clk:
            ce_l.next = ce

    @always_seq(clk.posedge, reset=rst)
    def seq():
        # reads
        if c_rd and not hit and not ar_busy and not arvalid:
            arvalid.next = 1
            araddr.next = c_addr
            arlen.next = burst - 1
            base.next = beat
            nvalid.next = 0
            rcnt.next = 0
            bvalid_f.next = 1
            ar_busy.next = 1
        if arvalid and arready:
            arvalid.next = 0
        if rvalid:
            buf[int(rcnt)].next = rdata
            rcnt.next = rcnt + 1
            nvalid.next = rcnt + 1
            if rlast:
                ar_busy.next = 0
        # writes
        if c_wr and not w_busy and not w_done:
            awvalid.next = 1
            wvalid.next = 1
            w_busy.next = 1
            aw_ok.next = 0
            w_ok.next = 0
            bvalid_f.next = 0
        if awvalid and awready:
            awvalid.next = 0
        if wvalid and wready:
            wvalid.next = 0
        if bvalid and w_busy:
            w_busy.next = 0
            w_done.next = 1
        if ce_l and w_done:
            w_done.next = 0
        if not busy and not ar_busy:
            bvalid_f.next = 0
    return comb, comb2, latch, seq


AXI = ("awid", "awaddr", "awlen", "awsize", "awburst", "awvalid", "awready", "wdata", "wstrb", "wlast", "wvalid",
       "wready", "bid", "bresp", "bvalid", "bready", "arid", "araddr", "arlen", "arsize", "arburst", "arvalid",
       "arready", "rid", "rdata", "rresp", "rlast", "rvalid", "rready")


def axi_top_ports(p: RtlParams) -> dict:
    s = {k: v for k, v in top_ports(p).items() if not k.startswith("mem_")}
    widths = {"awid": 1, "awaddr": ADDR_BITS, "awlen": 8, "awsize": 3, "awburst": 2, "wdata": p.B * 8, "wstrb": p.B,
              "bid": 1, "bresp": 2, "arid": 1, "araddr": ADDR_BITS, "arlen": 8, "arsize": 3, "arburst": 2,
              "rid": 1, "rdata": p.B * 8, "rresp": 2}
    for name in AXI:
        s["m_axi_" + name] = Signal(intbv(0)[widths[name]:]) if name in widths else Signal(bool(0))
    return s


@block
def _axi_top(p: RtlParams, ports: dict):
    """vdla_top behind a clock gate, its memory port through :func:`axi_adapter` (``m_axi_*``)."""
    clk, rst = ports["clk"], ports["rst"]
    gclk = Signal(bool(0))
    ce = Signal(bool(1))
    inner = top_ports(p)
    inner["clk"] = gclk
    inner["rst"] = rst
    for name in ("dbg_cycle", "ret_valid", "busy", "dbg_active", "ret_index_load", "ret_index_compute",
                 "ret_index_store"):
        inner[name] = ports[name]
    insts = [vdla_top(p, **inner)]
    m = inner
    insts.append(axi_adapter(clk, rst, p, ports["busy"], m["mem_rd"], m["mem_wr"], m["mem_addr"], m["mem_wdata"],
                             m["mem_wstrb"], m["mem_rdata"], ce, tuple(ports["m_axi_" + n] for n in AXI)))
    gate_en = Signal(bool(1))

    @always_comb
    def gate_latch():
        if not clk:
            gate_en.next = ce

    @always_comb
    def gate():
        gclk.next = clk and gate_en

    o = {n: ports["s_axil_" + n] for n in AXIL}
    i = {n: inner["s_axil_" + n] for n in AXIL}
    o_awready, o_wready, o_arready, o_bvalid, o_rvalid = (o[n] for n in ("awready", "wready", "arready", "bvalid",
                                                                          "rvalid"))
    i_awready, i_wready, i_arready, i_bvalid, i_rvalid = (i[n] for n in ("awready", "wready", "arready", "bvalid",
                                                                          "rvalid"))
    o_bresp, o_rdata, o_rresp, i_bresp, i_rdata, i_rresp = o["bresp"], o["rdata"], o["rresp"], i["bresp"], \
        i["rdata"], i["rresp"]
    ins = [(o[n], i[n]) for n in ("awaddr", "awvalid", "wdata", "wstrb", "wvalid", "bready", "araddr", "arvalid",
                                  "rready")]
    (a0, b0), (a1, b1), (a2, b2), (a3, b3), (a4, b4), (a5, b5), (a6, b6), (a7, b7), (a8, b8) = ins

    @always_comb
    def axil_gate():
        o_awready.next = i_awready and gate_en
        o_wready.next = i_wready and gate_en
        o_arready.next = i_arready and gate_en
        o_bvalid.next = i_bvalid and gate_en
        o_rvalid.next = i_rvalid and gate_en
        o_bresp.next = i_bresp
        o_rdata.next = i_rdata
        o_rresp.next = i_rresp

    @always_comb
    def axil_in():
        b0.next = a0
        b1.next = a1
        b2.next = a2
        b3.next = a3
        b4.next = a4
        b5.next = a5
        b6.next = a6
        b7.next = a7
        b8.next = a8
    insts += [gate_latch, gate, axil_gate, axil_in]
    return insts



@block
def vdla_axi_top(p, clk, rst, s_axil_awaddr, s_axil_wdata, s_axil_wstrb, s_axil_bresp, s_axil_araddr,
                 s_axil_rdata, s_axil_rresp, s_axil_awvalid, s_axil_awready, s_axil_wvalid, s_axil_wready,
                 s_axil_bvalid, s_axil_bready, s_axil_arvalid, s_axil_arready, s_axil_rvalid, s_axil_rready,
                 dbg_cycle, ret_valid, busy, dbg_active, ret_index_load, ret_index_compute, ret_index_store, m_axi_awid,
                 m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst, m_axi_awvalid, m_axi_awready,
                 m_axi_wdata, m_axi_wstrb, m_axi_wlast, m_axi_wvalid, m_axi_wready, m_axi_bid, m_axi_bresp,
                 m_axi_bvalid, m_axi_bready, m_axi_arid, m_axi_araddr, m_axi_arlen, m_axi_arsize,
                 m_axi_arburst, m_axi_arvalid, m_axi_arready, m_axi_rid, m_axi_rdata, m_axi_rresp,
                 m_axi_rlast, m_axi_rvalid, m_axi_rready):
    """The FPGA top level (ports: vdla_top's without mem_*, plus the AXI3 master m_axi_*)."""
    return _axi_top(p, dict(clk=clk, rst=rst, s_axil_awaddr=s_axil_awaddr, s_axil_wdata=s_axil_wdata,
                            s_axil_wstrb=s_axil_wstrb, s_axil_bresp=s_axil_bresp, s_axil_araddr=s_axil_araddr,
                            s_axil_rdata=s_axil_rdata, s_axil_rresp=s_axil_rresp,
                            s_axil_awvalid=s_axil_awvalid, s_axil_awready=s_axil_awready,
                            s_axil_wvalid=s_axil_wvalid, s_axil_wready=s_axil_wready,
                            s_axil_bvalid=s_axil_bvalid, s_axil_bready=s_axil_bready,
                            s_axil_arvalid=s_axil_arvalid, s_axil_arready=s_axil_arready,
                            s_axil_rvalid=s_axil_rvalid, s_axil_rready=s_axil_rready, dbg_cycle=dbg_cycle,
                            ret_valid=ret_valid, busy=busy, dbg_active=dbg_active, ret_index_load=ret_index_load,
                            ret_index_compute=ret_index_compute, ret_index_store=ret_index_store,
                            m_axi_awid=m_axi_awid, m_axi_awaddr=m_axi_awaddr, m_axi_awlen=m_axi_awlen,
                            m_axi_awsize=m_axi_awsize, m_axi_awburst=m_axi_awburst,
                            m_axi_awvalid=m_axi_awvalid, m_axi_awready=m_axi_awready, m_axi_wdata=m_axi_wdata,
                            m_axi_wstrb=m_axi_wstrb, m_axi_wlast=m_axi_wlast, m_axi_wvalid=m_axi_wvalid,
                            m_axi_wready=m_axi_wready, m_axi_bid=m_axi_bid, m_axi_bresp=m_axi_bresp,
                            m_axi_bvalid=m_axi_bvalid, m_axi_bready=m_axi_bready, m_axi_arid=m_axi_arid,
                            m_axi_araddr=m_axi_araddr, m_axi_arlen=m_axi_arlen, m_axi_arsize=m_axi_arsize,
                            m_axi_arburst=m_axi_arburst, m_axi_arvalid=m_axi_arvalid,
                            m_axi_arready=m_axi_arready, m_axi_rid=m_axi_rid, m_axi_rdata=m_axi_rdata,
                            m_axi_rresp=m_axi_rresp, m_axi_rlast=m_axi_rlast, m_axi_rvalid=m_axi_rvalid,
                            m_axi_rready=m_axi_rready))
