"""The FPGA top level: the core (:func:`vdla_hw.rtl.top.vdla_top`) with the AXI3 signal set of
the Zynq's S_AXI_HP0 port on its memory master, for the Vivado recipe (``bitstreams/``).

One clock, no gating: the core stalls on AXI handshakes (docs/rtl.md, "Clocking"). Ports:

* ``s_axil_*``: the AXI-lite control slave (vdla_hw.regmap), to M_AXI_GP0;
* ``m_axi_*``: AXI3 master to S_AXI_HP0: 6-bit IDs (always 0, so responses come back in order;
  ``wid`` = ``awid``), 4-bit ``*len`` (bursts of at most 16 beats), ``*size`` = the full data
  width, INCR bursts, ``*lock`` normal, ``*cache`` 0b0011 (normal, bufferable, modifiable: the
  HP port may merge and upsize), ``*prot`` 0 (data, secure, unprivileged), ``*qos`` 0;
* ``irq``: STATUS done or error (level), for the PS's IRQ_F2P.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, block, intbv

from vdla_hw.rtl.axi import (AXBURST_BITS, AXCACHE_BITS, AXI3_ID_BITS, AXI3_LEN_BITS, AXI3_LOCK_BITS, AXPROT_BITS,
                             AXQOS_BITS, AXSIZE_BITS, RESP_BITS, AxiLite, flat_names)
from vdla_hw.rtl.params import ADDR_BITS, RtlParams
from vdla_hw.rtl.top import top_ports, vdla_top

AXCACHE = 0b0011
# AXI3 signals of HP0 beyond the core's: name -> width (constant outputs and ignored inputs)
AXI3_EXTRA = {f"{ax}{name}": width for ax in ("ar", "aw") for name, width in
              (("lock", AXI3_LOCK_BITS), ("cache", AXCACHE_BITS), ("prot", AXPROT_BITS), ("qos", AXQOS_BITS))}


def axi_top_ports(p: RtlParams) -> dict:
    """The FPGA top's port signals by name."""
    s = {"clk": Signal(bool(0)), "rst": top_ports(p)["rst"]}
    s.update(flat_names(AxiLite(), "s_axil"))
    widths = {"araddr": ADDR_BITS, "arlen": AXI3_LEN_BITS, "arsize": AXSIZE_BITS, "arburst": AXBURST_BITS,
              "arid": AXI3_ID_BITS, "rid": AXI3_ID_BITS, "rdata": p.B * 8, "rresp": RESP_BITS, "awaddr": ADDR_BITS,
              "awlen": AXI3_LEN_BITS, "awsize": AXSIZE_BITS, "awburst": AXBURST_BITS, "awid": AXI3_ID_BITS,
              "wid": AXI3_ID_BITS, "wdata": p.B * 8, "wstrb": p.B, "bid": AXI3_ID_BITS, "bresp": RESP_BITS,
              **AXI3_EXTRA}
    ones = ("arvalid", "arready", "rlast", "rvalid", "rready", "awvalid", "awready", "wlast", "wvalid", "wready",
            "bvalid", "bready")
    for name, width in widths.items():
        s["m_axi_" + name] = Signal(intbv(0)[width:])
    for name in ones:
        s["m_axi_" + name] = Signal(bool(0))
    s["irq"] = Signal(bool(0))
    return s


@block
def vdla_axi_top(p: RtlParams, clk, rst, s_axil_awaddr, s_axil_awvalid, s_axil_awready, s_axil_wdata, s_axil_wstrb,
                 s_axil_wvalid, s_axil_wready, s_axil_bresp, s_axil_bvalid, s_axil_bready, s_axil_araddr,
                 s_axil_arvalid, s_axil_arready, s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready,
                 m_axi_araddr, m_axi_arlen, m_axi_arsize, m_axi_arburst, m_axi_arid, m_axi_rid, m_axi_rdata,
                 m_axi_rresp, m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst, m_axi_awid, m_axi_wid,
                 m_axi_wdata, m_axi_wstrb, m_axi_bid, m_axi_bresp, m_axi_arlock, m_axi_arcache, m_axi_arprot,
                 m_axi_arqos, m_axi_awlock, m_axi_awcache, m_axi_awprot, m_axi_awqos, m_axi_arvalid, m_axi_arready,
                 m_axi_rlast, m_axi_rvalid, m_axi_rready, m_axi_awvalid, m_axi_awready, m_axi_wlast, m_axi_wvalid,
                 m_axi_wready, m_axi_bvalid, m_axi_bready, irq):
    ports = dict(locals())
    core = top_ports(p)
    core["clk"], core["rst"], core["irq"] = clk, rst, irq
    for name in list(core):
        if name.startswith("s_axil_"):
            core[name] = ports[name]
    same = ("araddr", "arsize", "arburst", "arvalid", "arready", "rdata", "rresp", "rlast", "rvalid", "rready",
            "awaddr", "awsize", "awburst", "awvalid", "awready", "wdata", "wstrb", "wlast", "wvalid", "wready",
            "bresp", "bvalid", "bready")
    for name in same:
        core["m_axi_" + name] = ports["m_axi_" + name]
    insts = [vdla_top(p, **core)]
    c_arlen, c_awlen = core["m_axi_arlen"], core["m_axi_awlen"]
    id0 = Signal(intbv(0)[AXI3_ID_BITS:])
    lock0, prot0, qos0 = (Signal(intbv(0)[len(sig):]) for sig in (m_axi_arlock, m_axi_arprot, m_axi_arqos))
    cache = Signal(intbv(AXCACHE)[len(m_axi_arcache):])

    @always_comb
    def axi3():
        m_axi_arlen.next = c_arlen[AXI3_LEN_BITS:]
        m_axi_awlen.next = c_awlen[AXI3_LEN_BITS:]
        m_axi_arid.next = id0
        m_axi_awid.next = id0
        m_axi_wid.next = id0
        m_axi_arlock.next = lock0
        m_axi_awlock.next = lock0
        m_axi_arcache.next = cache
        m_axi_awcache.next = cache
        m_axi_arprot.next = prot0
        m_axi_awprot.next = prot0
        m_axi_arqos.next = qos0
        m_axi_awqos.next = qos0
    insts.append(axi3)
    return insts
