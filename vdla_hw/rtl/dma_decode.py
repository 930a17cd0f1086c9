"""The read DMA's instruction latch and decode pipeline (:mod:`vdla_hw.rtl.dma`'s timing).

A LOAD's fields are registered in its start cycle t_s (:func:`transfer_latch`, shared with the
store); the decode pipeline
(:func:`load_decode`) then recomputes from them in every cycle (no enables: the fields hold until
the next start), beside the range check's stages (:mod:`vdla_hw.rtl.rangechk`):

* combinational from the fields: the footprint's sums (rows = y_pad_top + y_size +
  y_pad_bottom, cols likewise), the memory-type selects and the selected memory's element size;
* stage 1 (t_s + 2): rows, cols, y_pad_top + y_size, x_pad_left + x_size, "no padding";
* stage 2 (t_s + 3): the DSP48E1 products y_size * x_size, y_pad_top * cols, (y_pad_top + y_size) * cols
  (the footprint rows * cols is the range check's);
* stage 3 (t_s + 4 = t_s + DECODE_CYCLES): padding elements - 1 and "exactly one", the SRAM
  elements of the first data element and of the first bottom-padding row.

Widths come from the ISA layout: a footprint side has one bit more than y_size (two 4-bit pads
fit), so each product is one DSP48E1 (17 x 17 unsigned inside its 25 x 18 signed multiplier).
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block

from vdla_hw.config import MEM_TYPES
from vdla_hw.rtl.compute_ports import count_bits
from vdla_hw.rtl.decode import field_reg
from vdla_hw.rtl.dma_ports import vec
from vdla_hw.rtl.params import RtlParams
from vdla_hw.rtl.rangechk import range_check


class TransferFields:
    """A LOAD's or STORE's fields registered at its start (ISA names and widths: the two kinds
    share one layout), plus ``moves`` (x_size and y_size both non-zero: data moves) and ``pads``
    (a LOAD of padding rows only: x_size non-zero, y_size 0 and y padding; no DRAM read)."""

    def __init__(self, ld):
        self.memory_type, self.sram_base, self.dram_base = (field_reg(f) for f in (ld.memory_type, ld.sram_base,
                                                                                     ld.dram_base))
        self.y_size, self.x_size, self.x_stride = (field_reg(f) for f in (ld.y_size, ld.x_size, ld.x_stride))
        self.y_pad_top, self.y_pad_bottom = field_reg(ld.y_pad_top), field_reg(ld.y_pad_bottom)
        self.x_pad_left, self.x_pad_right = field_reg(ld.x_pad_left), field_reg(ld.x_pad_right)
        self.index = field_reg(ld.index)
        self.moves = Signal(bool(0))
        self.pads = Signal(bool(0))


def side_bits(f: TransferFields) -> int:
    """Bits of a footprint side (y_pad_top + y_size + y_pad_bottom, or the x sum)."""
    bits = len(f.y_size) + 1
    assert 2 * ((1 << len(f.y_pad_top)) - 1) + (1 << len(f.y_size)) - 1 < (1 << bits)
    return bits


def max_padding(f: TransferFields) -> int:
    """The most padding elements a LOAD can have: (rows * cols - y_size * x_size) at the largest
    sizes and pads the fields hold."""
    size, pad = (1 << len(f.y_size)) - 1, (1 << len(f.y_pad_top)) - 1
    return (size + 2 * pad) * (size + 2 * pad) - size * size


class LoadDecode:
    """The decode pipeline's outputs for the selected memory (``sel[i]``: memory ``mems[i]``):
    ``lge`` (log2 element bytes), ``ebm`` (beats per element - 1), ``rows``/``cols`` (the
    footprint with padding), ``topys``/``leftxs`` (where the data rows/columns end), ``npz``
    (no padding), ``npadm1``/``np1`` (padding elements - 1, exactly one), ``s_first``/``s_bot``
    (SRAM elements of the first data element and of the first bottom-padding row), and the
    range check's ``err``/``bad``. SRAM element positions are ``pos_bits`` wide: the footprint
    product plus a carry for the base."""

    def __init__(self, p: RtlParams, mems, f: TransferFields, err_bits: int):
        geoms = [p.mems[m] for m in mems]
        sw = side_bits(f)
        self.pos_bits = 2 * sw + 1
        self.sel = [Signal(bool(0)) for _ in mems]
        self.lge = vec(count_bits(max(g.lg_elem for g in geoms)))
        self.ebm = vec(count_bits(max(beats_per_elem(p, g) for g in geoms) - 1))
        self.rows, self.cols, self.topys, self.leftxs = (vec(sw) for _ in range(4))
        self.npz, self.np1 = Signal(bool(0)), Signal(bool(0))
        self.npadm1 = vec(max_padding(f).bit_length())
        self.s_first, self.s_bot = vec(self.pos_bits), vec(self.pos_bits)
        self.err, self.bad = vec(err_bits), Signal(bool(0))


def beats_per_elem(p: RtlParams, g) -> int:
    return max(1, g.elem_bytes // p.B)


@block
def transfer_latch(clk, rst, start, ld, f: TransferFields):
    """``f`` <= the fields of the entry ``ld`` (decode.insn_fields of a LOAD or STORE) in a
    start cycle."""
    @always_seq(clk.posedge, reset=rst)
    def latch():
        if start:
            f.memory_type.next = ld.memory_type
            f.sram_base.next = ld.sram_base
            f.dram_base.next = ld.dram_base
            f.y_size.next = ld.y_size
            f.x_size.next = ld.x_size
            f.x_stride.next = ld.x_stride
            f.y_pad_top.next = ld.y_pad_top
            f.y_pad_bottom.next = ld.y_pad_bottom
            f.x_pad_left.next = ld.x_pad_left
            f.x_pad_right.next = ld.x_pad_right
            f.index.next = ld.index
            f.moves.next = ld.x_size != 0 and ld.y_size != 0
            f.pads.next = ld.x_size != 0 and ld.y_size == 0 and (ld.y_pad_top != 0 or ld.y_pad_bottom != 0)
    return latch


@block
def mem_select(p: RtlParams, mems, f: TransferFields, d: LoadDecode, dep, dram_bytes, elems):
    """Which of the two memories ``mems`` the LOAD writes (``d.sel``), its element size
    (``d.lge``, ``d.ebm``) and depth (``dep``), and the DRAM image size in its elements."""
    geoms = [p.mems[m] for m in mems]
    code0, code1 = (MEM_TYPES.index(m) for m in mems)
    lge0, lge1 = (g.lg_elem for g in geoms)
    eb0, eb1 = (beats_per_elem(p, g) - 1 for g in geoms)
    dep0, dep1 = (g.depth for g in geoms)
    sel0, sel1 = d.sel
    mt, lge, ebm = f.memory_type, d.lge, d.ebm

    @always_comb
    def dec():
        sel0.next = mt == code0
        sel1.next = mt == code1
        if mt == code0:
            lge.next = lge0
            ebm.next = eb0
            dep.next = dep0
        else:
            lge.next = lge1
            ebm.next = eb1
            dep.next = dep1

    @always_comb
    def dec2():
        elems.next = dram_bytes >> lge
    return dec, dec2


@block
def load_decode(clk, rst, p: RtlParams, mems, f: TransferFields, dram_bytes, d: LoadDecode):
    """The decode pipeline (module docstring) and the range check, from the field registers."""
    sw = side_bits(f)
    top, bot, left, right = f.y_pad_top, f.y_pad_bottom, f.x_pad_left, f.x_pad_right
    ys, xs, sbase = f.y_size, f.x_size, f.sram_base
    rows, cols, topys, leftxs, npz = d.rows, d.cols, d.topys, d.leftxs, d.npz
    npadm1, np1, s_first, s_bot = d.npadm1, d.np1, d.s_first, d.s_bot
    PADMASK = (1 << len(npadm1)) - 1
    rows_s, cols_s = vec(sw), vec(sw)                                   # sums of field registers
    top1, ys1, xs1, left1, sb1 = (vec(len(s_)) for s_ in (top, ys, xs, left, sbase))    # stage 1
    fp = vec(d.pos_bits)                                                # stage 2: rows * cols
    yx2, topc2, botc2 = (vec(2 * sw) for _ in range(3))
    left2, sb2 = vec(len(left)), vec(len(sbase))
    dep, elems = vec(max(p.mems[m].depth for m in mems).bit_length()), vec(len(dram_bytes))

    @always_comb
    def sums():
        rows_s.next = top + ys + bot
        cols_s.next = left + xs + right

    @always_seq(clk.posedge, reset=rst)
    def stages():
        # stage 1
        rows.next = rows_s
        cols.next = cols_s
        topys.next = top + ys
        leftxs.next = left + xs
        top1.next = top
        ys1.next = ys
        xs1.next = xs
        left1.next = left
        sb1.next = sbase
        npz.next = top == 0 and bot == 0 and left == 0 and right == 0
        # stage 2
        yx2.next = ys1 * xs1
        topc2.next = top1 * cols
        botc2.next = topys * cols
        left2.next = left1
        sb2.next = sb1
        # stage 3 (npadm1 is unused without padding, where fp - yx2 - 1 is -1)
        npadm1.next = (fp - yx2 - 1) & PADMASK
        np1.next = fp == yx2 + 1
        s_first.next = sb2 + topc2 + left2
        s_bot.next = sb2 + botc2

    return (sums, stages, mem_select(p, mems, f, d, dep, dram_bytes, elems),
            range_check(clk, rst, rows_s, cols_s, sbase, dep, f.dram_base, ys, xs, f.x_stride, elems, fp, d.err,
                        d.bad))
