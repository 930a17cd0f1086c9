"""The memory-port transaction descriptor, declared once: what a client of the port
(``vdla_hw.rtl.memport``) holds on its ``desc`` bus while it asks.

Fields from bit 0 (:data:`DESC_LAYOUT`): ``rows`` (rows to move), ``addr0`` (byte offset of row
0 in the image), ``stride`` (bytes from one row start to the next), ``nbytes`` (bytes per row).
Clients build it with :func:`desc_pack` (LOAD and STORE through :func:`desc_elements`); the
port's walkers read it with :func:`desc_fields`."""

from __future__ import annotations

from types import SimpleNamespace

from myhdl import Signal, always_comb, always_seq, block, concat, intbv

from vdla_hw import isa
from vdla_hw.config import load_config
from vdla_hw.rtl.params import ADDR_BITS

# rows: a LOAD's or STORE's y_size, at the ISA layout's width (fetch moves one row). The LOAD/STORE
# fields have the same widths in every configuration (vdla_hw.isa.field_table), so the default
# configuration's layout gives it.
ROWS_BITS = isa.layout("LOAD", load_config())["y_size"].width
DESC_LAYOUT = (("rows", ROWS_BITS), ("addr0", ADDR_BITS), ("stride", ADDR_BITS), ("nbytes", ADDR_BITS))
DESC_LO = {}
_pos = 0
for _name, _width in DESC_LAYOUT:
    DESC_LO[_name] = _pos
    _pos += _width
DESC_BITS = _pos


def desc_fields(desc, lgB: int) -> SimpleNamespace:
    """The fields of the descriptor bus ``desc`` as read-only slices (Verilog ``assign``s), plus
    ``addr0_beat``: the beat number of ``addr0`` (beats of ``2**lgB`` bytes)."""
    fields = {name: desc(DESC_LO[name] + width, DESC_LO[name]) for name, width in DESC_LAYOUT}
    fields["addr0_beat"] = desc(DESC_LO["addr0"] + ADDR_BITS, DESC_LO["addr0"] + lgB)
    return SimpleNamespace(**fields)


@block
def desc_pack(desc, rows, addr0, stride, nbytes):
    """Drive ``desc`` with the fields given (each exactly its :data:`DESC_LAYOUT` width)."""
    widths = dict(DESC_LAYOUT)
    assert [name for name, _ in DESC_LAYOUT] == ["rows", "addr0", "stride", "nbytes"]
    for name, sig in (("rows", rows), ("addr0", addr0), ("stride", stride), ("nbytes", nbytes)):
        assert len(sig) == widths[name], (name, len(sig), widths[name])

    @always_comb
    def pack():
        desc.next = concat(nbytes, stride, addr0, rows)
    return pack


@block
def desc_elements(clk, rst, desc, rows, elem0, elem_stride, elems, lge):
    """The descriptor of a LOAD's or STORE's rows, given in elements of ``2**lge`` bytes (``lge``
    a constant or a signal): row 0 at element ``elem0``, rows ``elem_stride`` elements apart,
    ``elems`` elements per row. The three byte values are registered (one decode stage: the
    port reads the descriptor from the request cycle on); ``rows`` is passed through."""
    addr0, stride, nbytes = (Signal(intbv(0)[ADDR_BITS:]) for _ in range(3))
    max_lge = lge if isinstance(lge, int) else (1 << len(lge)) - 1
    # a field shifted by the largest element size, before truncation to a byte address
    wide = max(len(elems), len(elem_stride), len(elem0)) + max_lge

    @always_seq(clk.posedge, reset=rst)
    def to_bytes():
        a = intbv(0)[wide:]
        a[:] = elems << lge
        nbytes.next = a[ADDR_BITS:]
        b = intbv(0)[wide:]
        b[:] = elem_stride << lge
        stride.next = b[ADDR_BITS:]
        d = intbv(0)[wide:]
        d[:] = elem0 << lge
        addr0.next = d[ADDR_BITS:]
    return to_bytes, desc_pack(desc, rows, addr0, stride, nbytes)
