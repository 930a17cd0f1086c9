"""The read DMA's two walks over a LOAD's SRAM footprint (:mod:`vdla_hw.rtl.dma`'s timing), both
restarted in the earliest request cycle (``at_req``) from the decode pipeline's positions:

* :func:`data_pos`: where the next data element lands: its row's first SRAM element and its
  column, and which beat of a multi-beat element comes next (the earlier beats wait in a shift
  register, so an element's last beat writes it whole);
* :func:`pad_walk`: the next padding element, one per beat-free cycle: the zero rows above and
  below the data and the zero columns left and right of each data row.

No start term is needed: an instruction's beats and padding writes end by its retire, the
earliest next start, and both walks restart from the request cycle."""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, concat

from vdla_hw.rtl.dma_decode import LoadDecode, TransferFields, side_bits
from vdla_hw.rtl.dma_ports import vec
from vdla_hw.rtl.params import RtlParams


class DataPos:
    """The data walk's registers: ``row_sram`` (the row's first SRAM element), ``col`` (the
    element within the row), ``k`` (the element's next beat) and ``sr`` (its earlier beats, the
    latest at the top; one bit when elements are at most a beat)."""

    def __init__(self, p: RtlParams, d: LoadDecode, max_beats: int):
        self.row_sram, self.col = vec(d.pos_bits), vec(d.pos_bits)
        self.k = vec(len(d.ebm))
        self.sr = vec(max(1, (max_beats - 1) * p.B * 8))


class PadWrite:
    """A padding write: ``we`` (a zero element is written this cycle) at SRAM element ``addr``."""

    def __init__(self, d: LoadDecode):
        self.we = Signal(bool(0))
        self.addr = vec(d.pos_bits)


@block
def data_pos(clk, rst, p: RtlParams, at_req, me_beat, row_last, rdata, d: LoadDecode, pos: DataPos):
    """Advance ``pos`` on each of this master's beats (``me_beat``; ``row_last``: the row's last
    beat); ``rdata`` enters the shift register."""
    row_sram, col, k, sr = pos.row_sram, pos.col, pos.k, pos.sr
    s_first, cols, ebm = d.s_first, d.cols, d.ebm
    SRW, BW8 = len(sr), len(rdata)

    @always_seq(clk.posedge, reset=rst)
    def walk():
        if at_req:
            row_sram.next = s_first
            col.next = 0
            k.next = 0
        elif me_beat:
            if k == ebm:
                k.next = 0
                col.next = col + 1
            else:
                k.next = k + 1
            if row_last:
                row_sram.next = row_sram + cols
                col.next = 0
                k.next = 0
    if SRW > BW8:
        @always_seq(clk.posedge, reset=rst)
        def shift():
            if me_beat:
                sr.next = concat(rdata, sr[SRW:BW8])
        return walk, shift
    if SRW == BW8:
        @always_seq(clk.posedge, reset=rst)
        def shift1():
            if me_beat:
                sr.next = rdata
        return walk, shift1
    return walk


@block
def pad_walk(clk, rst, at_req, me_beat, f: TransferFields, d: LoadDecode, pad: PadWrite):
    """From the request cycle (when the LOAD moves data or pads rows only, passes the range check
    and has padding),
    the next padding element after (pr, pc) in every cycle without a beat of this master
    (``me_beat``)."""
    sw = side_bits(f)
    pr, pc = vec(sw), vec(sw)           # footprint row and column of the next padding element
    prb = vec(d.pos_bits)               # SRAM element of row pr's first element
    pact = Signal(bool(0))
    top, bot, left, right = f.y_pad_top, f.y_pad_bottom, f.x_pad_left, f.x_pad_right
    ys, xs, sbase, moves, pads, bad, npz = f.y_size, f.x_size, f.sram_base, f.moves, f.pads, d.bad, d.npz
    rows, cols, topys, leftxs, s_bot = d.rows, d.cols, d.topys, d.leftxs, d.s_bot
    pad_we, pad_addr = pad.we, pad.addr

    @always_comb
    def padw():
        pad_we.next = pact and not me_beat
        pad_addr.next = prb + pc

    @always_seq(clk.posedge, reset=rst)
    def walk():
        if at_req:
            prb.next = sbase
            pr.next = 0
            pc.next = 0
            pact.next = 0
            if (moves or pads) and not bad and not npz:
                pact.next = 1
                if top == 0 and left == 0 and ys != 0:
                    if right != 0:
                        pc.next = xs
                    else:
                        pr.next = ys
                        prb.next = s_bot
        elif pad_we:
            datarow = pr >= top and pr < topys
            if pc + 1 < cols and (not datarow or pc + 1 < left or pc + 1 >= leftxs):
                pc.next = pc + 1
            elif datarow and pc + 1 == left and right != 0:
                pc.next = leftxs
            else:
                nr = pr + 1
                ndata = nr >= top and nr < topys
                if nr == rows:
                    pact.next = 0
                elif not ndata or left != 0:
                    pr.next = nr
                    pc.next = 0
                    prb.next = prb + cols
                elif right != 0:
                    pr.next = nr
                    pc.next = xs
                    prb.next = prb + cols
                elif bot != 0:
                    pr.next = topys
                    pc.next = 0
                    prb.next = s_bot
                else:
                    pact.next = 0
    return padw, walk
