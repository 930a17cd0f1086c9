"""The store's read side (:mod:`vdla_hw.rtl.store`): a walk over the STORE's beats one ahead of
the memory port, and the OUT SRAM read that gives each W beat its data and strobes.

The walk holds three beats (:class:`BeatRef`): ``cur`` (the beat whose OUT elements sit in the
SRAM output: the port's current beat), ``nxt`` (the one after it) and ``look`` (the beat looked
up in this cycle: the first beat in the first look-up cycle, else ``nxt``). Every step (the
first look-up, then each of the store's beats) reads ``look``'s elements and moves it to
``cur``. A wide OUT memory (element >= beat) reads the element holding the beat
(:func:`wide_read`); a narrow one reads the two lines the beat can straddle, one per bank, and
picks each byte lane's element (:func:`narrow_read`, :func:`store_lane`)."""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, intbv

from vdla_hw.rtl.compute_ports import ReadPort
from vdla_hw.rtl.dma_ports import WriteBeat, vec
from vdla_hw.rtl.params import ADDR_BITS, MemGeom, RtlParams, log2


class BeatRef:
    """A beat of the walk: its row's first byte ``ra`` and end byte ``re``, its beat number
    ``b``, the row's last beat ``last``, and ``sr``: the SRAM element of the row's first element
    (``pos_bits`` wide)."""

    def __init__(self, p: RtlParams, pos_bits: int):
        beat_bits = ADDR_BITS - p.lgB
        self.ra, self.re = vec(ADDR_BITS + 1), vec(ADDR_BITS + 1)
        self.b, self.last = vec(beat_bits + 1), vec(beat_bits + 1)
        self.sr = vec(pos_bits)


class RowGeom:
    """The STORE's row geometry, registered in the decode cycles: ``stride`` (bytes from a row's
    start to the next), ``next_end`` (stride + row bytes: the next row's end from this row's
    start), ``next_last`` (that - 1: the next row's last byte) and ``elems`` (x_size)."""

    def __init__(self, x_size):
        self.stride = vec(ADDR_BITS + 1)
        self.next_end, self.next_last = vec(ADDR_BITS + 2), vec(ADDR_BITS + 2)
        self.elems = vec(len(x_size))


@block
def beat_walk(clk, rst, p: RtlParams, first, me_beat, first_beat: BeatRef, g: RowGeom, step, look: BeatRef,
              cur: BeatRef):
    """``step`` (the first look-up cycle ``first``, or a beat of the store) moves ``look`` to
    ``cur`` and the beat after it to the walk's next; ``look`` is ``first_beat`` in the first
    look-up, else that next beat."""
    lgB = p.lgB
    nxt = BeatRef(p, len(look.sr))
    w_ra, w_re, w_b, w_last, w_sr = nxt.ra, nxt.re, nxt.b, nxt.last, nxt.sr
    s_ra, s_end, s_b, s_last, s_sr = first_beat.ra, first_beat.re, first_beat.b, first_beat.last, first_beat.sr
    l_ra, l_re, l_b, l_last, l_sr = look.ra, look.re, look.b, look.last, look.sr
    c_ra, c_re, c_b, c_sr = cur.ra, cur.re, cur.b, cur.sr
    g_st, g_stxb, g_stxbm1, g_x = g.stride, g.next_end, g.next_last, g.elems
    AW = ADDR_BITS

    @always_comb
    def pick():
        step.next = first or me_beat
        if first:
            l_ra.next = s_ra
            l_re.next = s_end
            l_b.next = s_b
            l_last.next = s_last
            l_sr.next = s_sr
        else:
            l_ra.next = w_ra
            l_re.next = w_re
            l_b.next = w_b
            l_last.next = w_last
            l_sr.next = w_sr

    @always_seq(clk.posedge, reset=rst)
    def walk():
        if step:
            c_ra.next = l_ra
            c_re.next = l_re
            c_b.next = l_b
            c_sr.next = l_sr
            if l_b == l_last:
                # the next row: its start, end and beats from the precomputed row geometry
                nra = intbv(0)[AW + 2:]
                nra[:] = l_ra + g_st
                nre = intbv(0)[AW + 2:]
                nre[:] = l_ra + g_stxb
                nla = intbv(0)[AW + 2:]
                nla[:] = l_ra + g_stxbm1
                w_ra.next = nra[AW:]
                w_re.next = nre[AW + 1:]
                w_b.next = nra[AW:lgB]
                w_last.next = nla[AW + 1:lgB]
                w_sr.next = l_sr + g_x
            else:
                w_ra.next = l_ra
                w_re.next = l_re
                w_b.next = l_b + 1
                w_last.next = l_last
                w_sr.next = l_sr
    return pick, walk


@block
def wide_read(g: MemGeom, lgB: int, step, look: BeatRef, cur: BeatRef, out: ReadPort, wbeat: WriteBeat):
    """A wide OUT memory: read the element holding ``look`` at each step; the W beat is the
    slice of it that ``cur`` covers, all bytes strobed."""
    B = 1 << lgB
    EB = g.elem_bytes // B
    ib, lge = g.ibits, g.lg_elem
    re, ra, rd = out.re, out.addr, out.data
    wdata, wstrb = wbeat.data, wbeat.strb
    l_ra, l_b, l_sr, c_ra, c_b = look.ra, look.b, look.sr, cur.ra, cur.b
    AW = len(l_sr) + ADDR_BITS
    KW = max(1, log2(EB)) + 1

    @always_comb
    def rd_addr():
        re.next = step
        a = intbv(0)[AW:]
        a[:] = l_sr + (((l_b << lgB) - l_ra) >> lge)
        ra.next = a[ib:]

    @always_comb
    def data_out():
        k = intbv(0)[KW:]
        k[:] = (((c_b << lgB) - c_ra) >> lgB) & (EB - 1)
        tmp = intbv(0)[len(rd):]
        tmp[:] = rd >> (k * B * 8)
        wdata.next = tmp[B * 8:]
        wstrb.next = (1 << B) - 1
    return rd_addr, data_out


@block
def store_lane(t, g: MemGeom, lgB: int, cur: BeatRef, bp, d0, d1, data, strb):
    """DRAM lane ``t`` of a beat of a narrow OUT memory: its element from bank 0 or 1 (``bp``:
    the beat's line bias), strobed when it lies in the row."""
    L, lgL, e = g.lanes, log2(g.lanes), g.elem_bytes
    ew = e * 8
    row_addr, row_end, beat = cur.ra, cur.re, cur.b

    @always_comb
    def comb():
        q = intbv(0)[len(bp) + 1:]
        q[:] = bp + t
        lane = intbv(0)[max(1, lgL):]
        lane[:] = q & (L - 1)
        ba = intbv(0)[ADDR_BITS + 1:]
        ba[:] = (beat << lgB) + t * e
        tmp = intbv(0)[len(d0):]
        if ((q >> lgL) & 1) == 1:
            tmp[:] = d0 >> (lane * ew)
        else:
            tmp[:] = d1 >> (lane * ew)
        data.next = tmp[ew:]
        if ba >= row_addr and ba < row_end:
            strb.next = (1 << e) - 1
        else:
            strb.next = 0
    return comb


@block
def narrow_read(g: MemGeom, lgB: int, step, look: BeatRef, cur: BeatRef, banks, wbeat: WriteBeat):
    """A narrow OUT memory (``banks``: the two banks' :class:`ReadPort`): read the line(s)
    ``look`` covers at each step, then assemble ``cur``'s beat lane by lane."""
    (re0, ra0, rd0), (re1, ra1, rd1) = ((b.re, b.addr, b.data) for b in banks)
    L, lgL, lge, e = g.lanes, log2(g.lanes), g.lg_elem, g.elem_bytes
    aw = len(ra0)
    l_ra, l_b, l_sr, c_ra, c_b, c_sr = look.ra, look.b, look.sr, cur.ra, cur.b, cur.sr
    BPW = len(l_sr) + ADDR_BITS
    bp, lineA = vec(BPW), vec(BPW)

    @always_comb
    def lbias():
        bb = intbv(0)[ADDR_BITS + 1:]
        bb[:] = l_b << lgB
        # the first element of the beat inside the row
        if l_ra > bb:
            lineA.next = ((l_sr + L + (bb >> lge) - (l_ra >> lge) + ((l_ra - bb) >> lge)) >> lgL) - 1
        else:
            lineA.next = ((l_sr + L + (bb >> lge) - (l_ra >> lge)) >> lgL) - 1

    @always_comb
    def rd_addr():
        re0.next = step
        re1.next = step
        la = intbv(0)[len(lineA):]
        la[:] = lineA >> 1
        lb = intbv(0)[len(lineA):]
        lb[:] = (lineA + 1) >> 1
        if lineA[0] == 0:
            ra0.next = la[aw:]
            ra1.next = lb[aw:]
        else:
            ra1.next = la[aw:]
            ra0.next = lb[aw:]

    @always_comb
    def cbias():
        bb = intbv(0)[ADDR_BITS + 1:]
        bb[:] = c_b << lgB
        bp.next = c_sr + L + (bb >> lge) - (c_ra >> lge)

    datas = [vec(e * 8) for _ in range(L)]
    strbs = [vec(e) for _ in range(L)]
    lanes = [store_lane(t, g, lgB, cur, bp, rd0, rd1, datas[t], strbs[t]) for t in range(L)]
    dcat = ConcatSignal(*reversed(datas)) if L > 1 else datas[0]
    scat = ConcatSignal(*reversed(strbs)) if L > 1 else strbs[0]
    wdata, wstrb = wbeat.data, wbeat.strb

    @always_comb
    def data_out():
        wdata.next = dcat
        wstrb.next = scat
    return lbias, rd_addr, cbias, lanes, data_out
