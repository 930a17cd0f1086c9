"""AXI interface objects of the RTL: the memory master's five channels and the control slave's
AXI-lite channels, as named groups of signals (docs/rtl.md, "Ports").

Blocks take these objects instead of long positional signal lists. ``bind`` ties an interface to
the top level's flat ports (``m_axi_arvalid`` ...), which is what the converter and the test
bench's cocotbext-axi bus objects see. Widths come from the configuration (data width) and from
AXI (the constants below, each once; AMBA AXI and ACE Protocol Specification, ARM IHI 0022, the
AXI3 and AXI4 signal tables): 32-bit addresses, 8-bit burst lengths inside the core (AXI3 uses
the low 4 bits, since no burst is longer than 16 beats), 2-bit responses; the AXI-lite data word
is the 32-bit register of ``vdla_hw.regmap``.
"""

from __future__ import annotations

from myhdl import Signal, intbv

from vdla_hw.regmap import ADDRESS_SPACE, REG_BITS
from vdla_hw.rtl.params import ADDR_BITS, RtlParams, log2

RESP_OKAY, RESP_EXOKAY, RESP_SLVERR, RESP_DECERR = 0, 1, 2, 3
BURST_INCR = 1
LEN_BITS = 8          # AXI4 width inside the core; the FPGA top drives AXI3's 4-bit AxLEN
AXI3_LEN_BITS = 4
AXI3_ID_BITS = 6      # the Zynq HP ports' AXI3 ID width (S_AXI_HP0_ARID[5:0] ...)
ACP_ID_BITS = 3       # the ACP's AXI3 ID width (S_AXI_ACP_ARID[2:0] ..., UG585 ch. 3.5)
ACP_USER_BITS = 5     # the ACP's AxUSER: [0] shared (coherent) request, [4:1] inner cache attributes (UG585 ch. 3.5)
AXIL_ADDR_BITS = log2(ADDRESS_SPACE)   # the control slave's segment (4 KiB), decoded whole (control.axil_slave)
AXIL_DATA_BITS = REG_BITS   # AXI-lite data: one register word (WSTRB: one bit per byte)
RESP_BITS = 2         # xRESP
AXSIZE_BITS = 3       # AxSIZE: log2 of the bytes per beat
AXBURST_BITS = 2      # AxBURST: FIXED, INCR, WRAP
AXI3_LOCK_BITS = 2    # AXI3 AxLOCK (AXI4 has 1 bit)
AXCACHE_BITS = 4      # AxCACHE
AXPROT_BITS = 3       # AxPROT
AXQOS_BITS = 4        # AxQOS (AXI4; the Zynq HP ports carry it on their AXI3 interface)


def _sig(width: int):
    return Signal(bool(0)) if width == 1 else Signal(intbv(0)[width:])


class Channel:
    """One AXI channel: payload signals plus ``valid`` / ``ready``."""

    def __init__(self, **widths: int):
        self.fields = tuple(widths)
        for name, width in widths.items():
            setattr(self, name, _sig(width))
        self.valid = Signal(bool(0))
        self.ready = Signal(bool(0))


class AxiMaster:
    """The memory master of the core (``m_axi_*``): the signals the DMA drives or reads.
    ``ar``/``aw``: addr, len; ``r``: data, resp, last; ``w``: data, strb, last; ``b``: resp."""

    CHANNELS = ("ar", "r", "aw", "w", "b")

    def __init__(self, p: RtlParams):
        self.ar = Channel(addr=ADDR_BITS, len=LEN_BITS)
        self.r = Channel(data=p.B * 8, resp=RESP_BITS, last=1)
        self.aw = Channel(addr=ADDR_BITS, len=LEN_BITS)
        self.w = Channel(data=p.B * 8, strb=p.B, last=1)
        self.b = Channel(resp=RESP_BITS)


class AxiLite:
    """The control slave's AXI-lite channels (``s_axil_*``): aw addr; w data, strb; b resp;
    ar addr; r data, resp."""

    CHANNELS = ("aw", "w", "b", "ar", "r")

    def __init__(self):
        self.aw = Channel(addr=AXIL_ADDR_BITS)
        self.w = Channel(data=AXIL_DATA_BITS, strb=AXIL_DATA_BITS // 8)
        self.b = Channel(resp=RESP_BITS)
        self.ar = Channel(addr=AXIL_ADDR_BITS)
        self.r = Channel(data=AXIL_DATA_BITS, resp=RESP_BITS)


def flat_names(intf, prefix: str) -> dict[str, object]:
    """Top-level port name -> signal of every signal of ``intf`` (``m_axi_arvalid`` ...)."""
    out = {}
    for ch_name in intf.CHANNELS:
        ch = getattr(intf, ch_name)
        for field in ch.fields + ("valid", "ready"):
            out[f"{prefix}_{ch_name}{field}"] = getattr(ch, field)
    return out


def bind(intf, prefix: str, ports: dict) -> None:
    """Make ``intf`` use the top-level signals ``ports[prefix_<channel><field>]``."""
    for ch_name in intf.CHANNELS:
        ch = getattr(intf, ch_name)
        for field in ch.fields + ("valid", "ready"):
            setattr(ch, field, ports[f"{prefix}_{ch_name}{field}"])
