"""The read DMA's SRAM write side (:mod:`vdla_hw.rtl.dma`): each R beat of a LOAD, and each
padding zero in a beat-free cycle, written into the selected memory. A wide memory (element >=
beat) takes one element per write, when its last beat arrives (:func:`wide_writer`); a narrow
one (element < beat: 2 banks of ``lanes`` lane RAMs, :mod:`vdla_hw.rtl.sram`) takes a whole
beat in one cycle, up to two lines (one per bank) with a write enable per lane
(:func:`narrow_writer`)."""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, block, concat, intbv

from vdla_hw.rtl.compute_ports import WritePort
from vdla_hw.rtl.dma_walk import DataPos, PadWrite
from vdla_hw.rtl.memport import BeatBus
from vdla_hw.rtl.params import ADDR_BITS, MemGeom, log2


@block
def wide_writer(g: MemGeom, lgB: int, sel, me_beat, rdata, pos: DataPos, pad: PadWrite, w: WritePort):
    """Element writes of a memory whose element is >= one beat (when ``sel``): the last beat of
    an element writes concat(beat, previous beats); else a padding write."""
    sr, k, row_sram, col = pos.sr, pos.k, pos.row_sram, pos.col
    pad_we, pad_addr = pad.we, pad.addr
    we, waddr, wdata = w.we, w.addr, w.data
    EB = g.elem_bytes // (1 << lgB)
    top = EB - 1
    BW = len(rdata)
    ib = g.ibits

    @always_comb
    def comb():
        a = intbv(0)[len(row_sram) + 1:]
        a[:] = row_sram + col
        we.next = 0
        waddr.next = pad_addr[ib:]
        wdata.next = 0
        if sel:
            if me_beat and k == top:
                we.next = 1
                waddr.next = a[ib:]
                if EB == 1:
                    wdata.next = rdata
                else:
                    wdata.next = concat(rdata, sr[len(sr):len(sr) - top * BW])
            elif pad_we:
                we.next = 1
    return comb


@block
def narrow_lane(s, g: MemGeom, bpl, lo_t, hi_t, rdata, we0, we1, dlane):
    """SRAM lane ``s`` of a narrow memory during a beat: which DRAM lane feeds it, whether it is
    in the row, and in which bank (line parity) it lands. ``bpl``: the low lgL + 1 bits of the
    beat's line bias (all this needs of it)."""
    L, lgL, ew = g.lanes, log2(g.lanes), g.width

    @always_comb
    def comb():
        t = intbv(0)[lgL:]
        t[:] = (s + L - (bpl & (L - 1))) & (L - 1)
        q = intbv(0)[lgL + 2:]
        q[:] = bpl + t
        tmp = intbv(0)[len(rdata):]
        tmp[:] = rdata >> (t * ew)
        dlane.next = tmp[ew:]
        we0.next = 0
        we1.next = 0
        if t >= lo_t and t < hi_t:
            if ((q >> lgL) & 1) == 1:   # line = (q >> lgL) - 1 is even
                we0.next = 1
            else:
                we1.next = 1
    return comb


@block
def narrow_writer(g: MemGeom, lgB: int, sel, me_beat, beat: BeatBus, rdata, pos: DataPos, pad: PadWrite, banks):
    """Beat writes of a memory whose element is narrower than a beat: up to two lines (one per
    bank) per beat, each lane with its own write enable; padding writes one lane. The lanes in
    the row come from the low address bits only: a row starts inside the beat only on its first
    beat and ends inside it only on its last (``beat.row_last``). ``banks``: the two banks'
    :class:`WritePort` (``we`` a lane mask, ``data`` a line)."""
    B = 1 << lgB
    L, lgL, lge = g.lanes, log2(g.lanes), g.lg_elem
    (we0, a0, d0), (we1, a1, d1) = ((b.we, b.addr, b.data) for b in banks)
    beat_idx, row_addr, row_end, row_last = beat.idx, beat.row_addr, beat.row_end, beat.row_last
    row_sram, pad_we, pad_addr = pos.row_sram, pad.we, pad.addr
    aw = len(a0)
    PW = len(row_sram) + 2
    bp = Signal(intbv(0)[PW + ADDR_BITS:])
    bpl = Signal(intbv(0)[lgL + 1:])
    lo_t = Signal(intbv(0)[lgL + 1:])
    hi_t = Signal(intbv(0)[lgL + 1:])
    lineA = Signal(intbv(0)[PW + ADDR_BITS:])
    lanes0 = [Signal(bool(0)) for _ in range(L)]
    lanes1 = [Signal(bool(0)) for _ in range(L)]
    dl = [Signal(intbv(0)[g.width:]) for _ in range(L)]
    insts = [narrow_lane(s, g, bpl, lo_t, hi_t, rdata, lanes0[s], lanes1[s], dl[s]) for s in range(L)]
    m0 = Signal(intbv(0)[L:])
    m1 = Signal(intbv(0)[L:])
    dcat = Signal(intbv(0)[B * 8:])
    if L > 1:
        m0 = ConcatSignal(*reversed(lanes0))
        m1 = ConcatSignal(*reversed(lanes1))
        dcat = ConcatSignal(*reversed(dl))
    else:
        @always_comb
        def one():
            m0.next = lanes0[0]
            m1.next = lanes1[0]
            dcat.next = dl[0]
        insts.append(one)

    @always_comb
    def lanes():
        bb = intbv(0)[ADDR_BITS + 1:]
        bb[:] = beat_idx << lgB
        ra_lo = intbv(0)[lgB:]
        ra_lo[:] = row_addr & (B - 1)
        re_lo = intbv(0)[lgB:]
        re_lo[:] = row_end & (B - 1)
        if beat_idx == (row_addr >> lgB):       # the row's first beat: starts at its byte ra_lo
            lo_t.next = ra_lo >> lge
        else:
            lo_t.next = 0
        if row_last and re_lo != 0:             # the row's last beat, ending inside it
            hi_t.next = re_lo >> lge
        else:
            hi_t.next = L
        bp.next = row_sram + L + (bb >> lge) - (row_addr >> lge)
        lo = intbv(0)[lgL + 2:]
        lo[:] = (row_sram + L + ((beat_idx & 1) << lgL) - (row_addr >> lge)) & (2 * L - 1)
        bpl.next = lo[lgL + 1:]

    @always_comb
    def linea():
        lineA.next = ((bp + lo_t) >> lgL) - 1

    @always_comb
    def comb():
        pline = intbv(0)[len(pad_addr):]
        pline[:] = pad_addr >> lgL
        we0.next = 0
        we1.next = 0
        # a beat's lanes, else zeros for a padding write (data without a write enable is
        # unused, so the data mux waits for the beat only, not for the padding condition)
        if me_beat:
            d0.next = dcat
            d1.next = dcat
        else:
            d0.next = 0
            d1.next = 0
        la = intbv(0)[len(lineA):]
        la[:] = lineA >> 1
        lb = intbv(0)[len(lineA):]
        lb[:] = (lineA + 1) >> 1
        pl = intbv(0)[len(pad_addr):]
        pl[:] = pline >> 1
        if lineA[0] == 0:
            a0.next = la[aw:]
            a1.next = lb[aw:]
        else:
            a1.next = la[aw:]
            a0.next = lb[aw:]
        if sel:
            if me_beat:
                we0.next = m0
                we1.next = m1
            elif pad_we:
                if pline[0] == 0:
                    we0.next = 1 << (pad_addr & (L - 1))
                    a0.next = pl[aw:]
                else:
                    we1.next = 1 << (pad_addr & (L - 1))
                    a1.next = pl[aw:]
    return insts, lanes, linea, comb
