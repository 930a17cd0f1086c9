"""AXI interface objects of the RTL: the memory master's five channels and the control slave's
AXI-lite channels, as named groups of signals (docs/rtl.md, "Ports").

Blocks take these objects instead of long positional signal lists. ``bind`` ties an interface to
the top level's flat ports (``m_axi_arvalid`` ...), which is what the converter and the test
bench's cocotbext-axi bus objects see. Widths come from the configuration (data width) and from
AXI: 32-bit addresses, 8-bit burst lengths inside the core (AXI3 uses the low 4 bits, since no
burst is longer than 16 beats), 2-bit responses.
"""

from __future__ import annotations

from myhdl import Signal, intbv

from vdla_hw.rtl.params import ADDR_BITS, RtlParams

RESP_OKAY, RESP_EXOKAY, RESP_SLVERR, RESP_DECERR = 0, 1, 2, 3
BURST_INCR = 1
LEN_BITS = 8          # AXI4 width inside the core; the FPGA top drives AXI3's 4-bit AxLEN
AXI3_LEN_BITS = 4
AXI3_ID_BITS = 6      # the Zynq HP ports' AXI3 ID width (S_AXI_HP0_ARID[5:0] ...)
AXIL_ADDR_BITS = 8    # the control slave decodes 8 address bits (regmap.SPAN <= 256 bytes)


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
        self.r = Channel(data=p.B * 8, resp=2, last=1)
        self.aw = Channel(addr=ADDR_BITS, len=LEN_BITS)
        self.w = Channel(data=p.B * 8, strb=p.B, last=1)
        self.b = Channel(resp=2)


class AxiLite:
    """The control slave's AXI-lite channels (``s_axil_*``): aw addr; w data, strb; b resp;
    ar addr; r data, resp."""

    CHANNELS = ("aw", "w", "b", "ar", "r")

    def __init__(self):
        self.aw = Channel(addr=AXIL_ADDR_BITS)
        self.w = Channel(data=32, strb=4)
        self.b = Channel(resp=2)
        self.ar = Channel(addr=AXIL_ADDR_BITS)
        self.r = Channel(data=32, resp=2)


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
