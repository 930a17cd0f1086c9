"""The FPGA top level: the core (:func:`vdla_hw.rtl.top.vdla_top`) with the AXI3 signal set of
the Zynq PS port the configuration names (``MEM_PORT``: S_AXI_ACP or S_AXI_HP0) on its memory
master, for the Vivado recipe (``bitstreams/``).

One clock, no gating: the core stalls on AXI handshakes (docs/rtl.md, "Clocking"). Ports:

* ``s_axil_*``: the AXI-lite control slave (vdla_hw.regmap), to M_AXI_GP0;
* ``m_axi_*``: AXI3 master to the port: IDs always 0 (so responses come back in order; ``wid`` =
  ``awid``) at the port's ID width, 4-bit ``*len`` (bursts of at most 16 beats), ``*size`` = the
  full data width, INCR bursts, ``*lock`` normal, ``*qos`` 0, and the port's constant attributes
  of :data:`PORT_ATTRIBUTES` on ``*cache``, ``*prot`` and (ACP only) ``*user``;
* ``irq``: STATUS done or error (level), for the PS's IRQ_F2P.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, block, intbv

from vdla_hw.rtl.axi import (ACP_ID_BITS, ACP_USER_BITS, AXBURST_BITS, AXCACHE_BITS, AXI3_ID_BITS, AXI3_LEN_BITS,
                             AXI3_LOCK_BITS, AXPROT_BITS, AXQOS_BITS, AXSIZE_BITS, RESP_BITS, AxiLite, flat_names)
from vdla_hw.rtl.params import ADDR_BITS, RtlParams
from vdla_hw.rtl.top import top_ports, vdla_top

# The constant attributes the master drives on each PS port (MEM_PORT), each with its source:
# ID width, AxCACHE, AxPROT and AxUSER (None: the port has no AxUSER).
# * hp: 0b0011 = normal, bufferable, modifiable (UG585 ch. 5.3: AxCACHE[1] lets the HP port merge
#   and upsize); HP0 is not coherent, so the driver flushes and invalidates.
# * acp: a request is coherent (the SCU snoops the L1 caches) only with AxCACHE[1] = 1 and
#   AxUSER[0] = 1 (UG585 ch. 3.5, "ACP requests"; Cortex-A9 MPCore TRM 2.4.1). AxCACHE 0b1111 =
#   write-back, read and write allocate, VTA's PYNQ build's AXI_CACHE_BITS; AxUSER[4:1] carries the
#   inner cache attributes to the L2, "typically set to 0b1111" (Intel Arria 10 HPS TRM 10.3.15.1,
#   the same Cortex-A9 ACP), so AxUSER = 0b11111 -- what the PS7's "default ACP user value" option
#   that VTA's build sets applies too (bitstreams.pynq_z1).
# * AxPROT 0 (data, secure, unprivileged) on both: VTA's PYNQ build's AXI_PROT_BITS 000.
PORT_ATTRIBUTES = {
    "hp": {"id_bits": AXI3_ID_BITS, "cache": 0b0011, "prot": 0b000, "user": None},
    "acp": {"id_bits": ACP_ID_BITS, "cache": 0b1111, "prot": 0b000, "user": 0b11111},
}
# AXI3 signals beyond the core's: name -> width (constant outputs and ignored inputs)
AXI3_EXTRA = {f"{ax}{name}": width for ax in ("ar", "aw") for name, width in
              (("lock", AXI3_LOCK_BITS), ("cache", AXCACHE_BITS), ("prot", AXPROT_BITS), ("qos", AXQOS_BITS))}
USER_SIGNALS = {"aruser": ACP_USER_BITS, "awuser": ACP_USER_BITS}


def port_attributes(config) -> dict:
    """The attributes of :data:`PORT_ATTRIBUTES` for the configuration's MEM_PORT."""
    return PORT_ATTRIBUTES[config.MEM_PORT]


def axi_top_ports(p: RtlParams) -> dict:
    """The FPGA top's port signals by name (``m_axi_aruser``/``awuser`` only on a port with AxUSER)."""
    attrs = port_attributes(p.c)
    ident = attrs["id_bits"]
    s = {"clk": Signal(bool(0)), "rst": top_ports(p)["rst"]}
    s.update(flat_names(AxiLite(), "s_axil"))
    widths = {"araddr": ADDR_BITS, "arlen": AXI3_LEN_BITS, "arsize": AXSIZE_BITS, "arburst": AXBURST_BITS,
              "arid": ident, "rid": ident, "rdata": p.B * 8, "rresp": RESP_BITS, "awaddr": ADDR_BITS,
              "awlen": AXI3_LEN_BITS, "awsize": AXSIZE_BITS, "awburst": AXBURST_BITS, "awid": ident,
              "wid": ident, "wdata": p.B * 8, "wstrb": p.B, "bid": ident, "bresp": RESP_BITS,
              **AXI3_EXTRA, **(USER_SIGNALS if attrs["user"] is not None else {})}
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
                 m_axi_wready, m_axi_bvalid, m_axi_bready, irq, m_axi_aruser=None, m_axi_awuser=None):
    ports = dict(locals())
    attrs = port_attributes(p.c)
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
    id0 = Signal(intbv(0)[len(m_axi_arid):])
    lock0, qos0 = (Signal(intbv(0)[len(sig):]) for sig in (m_axi_arlock, m_axi_arqos))
    prot = Signal(intbv(attrs["prot"])[len(m_axi_arprot):])
    cache = Signal(intbv(attrs["cache"])[len(m_axi_arcache):])

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
        m_axi_arprot.next = prot
        m_axi_awprot.next = prot
        m_axi_arqos.next = qos0
        m_axi_awqos.next = qos0
    insts.append(axi3)
    if attrs["user"] is not None:
        user = Signal(intbv(attrs["user"])[len(m_axi_aruser):])

        @always_comb
        def axuser():
            m_axi_aruser.next = user
            m_axi_awuser.next = user
        insts.append(axuser)
    return insts
