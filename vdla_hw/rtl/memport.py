"""The memory port: fixed-priority arbitration of whole transactions and the beat sequencer
that owns the timing contract of ``vdla_hw.timing`` (read_cycles / write_cycles / row_beats).

A master asks with ``req`` and a descriptor (rows, byte address of row 0 inside the image,
row stride in bytes, bytes per row) that is stable while it asks. When the port is free, the
highest-priority requester of timing.ARBITRATION_ORDER is granted in that same cycle. From the
grant cycle g the port:

* read:  waits MEM_LATENCY cycles, then moves one beat per cycle;
* write: moves one beat per cycle from g itself (the master has the first beat's data ready);

row by row, each row from beat floor(addr/B) to floor((addr+bytes-1)/B), a new burst at every
row start, 4 KB boundary and MEM_MAX_BURST beats, MEM_BURST_GAP idle cycles between bursts;
a write then waits MEM_WRITE_LATENCY cycles for its response. ``rel`` is high in the first
cycle the port is free again (the grant's end), for the master in ``owner``.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, concat, intbv

from vdla_hw.timing import BURST_BOUNDARY
from vdla_hw.rtl.params import ADDR_BITS, RtlParams

DESC_BITS = 16 + 3 * ADDR_BITS   # rows, addr0, stride, nbytes


def desc_fields():
    """(name, lo, width) of the transaction descriptor bus."""
    return [("rows", 0, 16), ("addr0", 16, ADDR_BITS), ("stride", 16 + ADDR_BITS, ADDR_BITS),
            ("nbytes", 16 + 2 * ADDR_BITS, ADDR_BITS)]


@block
def memport(clk, rst, p: RtlParams, reqs, descs, grants, owner, rel, beat, beat_wr, beat_idx, row_addr, row_end,
            row_last, busy, writes, last_owner):
    """``reqs``/``descs``/``grants``: one entry per master in arbitration order (highest
    first); ``writes[k]``: master k writes. ``beat`` is high in a data cycle, ``beat_idx`` is
    the beat number (byte address / B), ``row_addr``/``row_end`` bound the current row's bytes,
    ``row_last`` marks the row's last beat."""
    c = p.config
    lgB = p.lgB
    LAT, WLAT, GAP, MAXB = c.MEM_LATENCY, c.MEM_WRITE_LATENCY, c.MEM_BURST_GAP, c.MEM_MAX_BURST
    page_mask = BURST_BOUNDARY // p.B - 1
    r0, r1, r2, r3 = reqs
    d0, d1, d2, d3 = descs
    g0, g1, g2, g3 = grants
    w0, w1, w2, w3 = (bool(w) for w in writes)
    BW = ADDR_BITS - lgB
    CW = 16

    IDLE, LATP, DATA, WLATP = 0, 1, 2, 3
    phase = Signal(intbv(0)[2:])
    cnt = Signal(intbv(0)[CW:])
    gap = Signal(intbv(0)[CW:])
    rows_left = Signal(intbv(0)[16:])
    r_addr = Signal(intbv(0)[ADDR_BITS:])
    r_stride = Signal(intbv(0)[ADDR_BITS:])
    r_bytes = Signal(intbv(0)[ADDR_BITS:])
    r_beat = Signal(intbv(0)[BW:])
    r_last = Signal(intbv(0)[BW:])
    bcnt = Signal(intbv(0)[CW:])
    r_wr = Signal(bool(0))
    r_owner = Signal(intbv(0)[2:])

    gnt = Signal(bool(0))          # a grant happens this cycle
    gidx = Signal(intbv(0)[2:])
    gdesc = Signal(intbv(0)[DESC_BITS:])
    gwr = Signal(bool(0))
    # current beat state: the registers, or the granted descriptor in a write's grant cycle
    c_rows = Signal(intbv(0)[16:])
    c_addr = Signal(intbv(0)[ADDR_BITS:])
    c_stride = Signal(intbv(0)[ADDR_BITS:])
    c_bytes = Signal(intbv(0)[ADDR_BITS:])
    c_beat = Signal(intbv(0)[BW:])
    c_last = Signal(intbv(0)[BW:])
    c_bcnt = Signal(intbv(0)[CW:])
    c_data = Signal(bool(0))       # a beat moves this cycle
    c_wr = Signal(bool(0))
    n_addr = Signal(intbv(0)[ADDR_BITS:])
    n_end = Signal(intbv(0)[ADDR_BITS + 1:])
    g_end = Signal(intbv(0)[ADDR_BITS + 1:])

    @always_comb
    def arb():
        g0.next = 0
        g1.next = 0
        g2.next = 0
        g3.next = 0
        gnt.next = 0
        gidx.next = 0
        gdesc.next = d3
        gwr.next = w3
        if phase == IDLE:
            if r0:
                g0.next = 1
                gnt.next = 1
                gidx.next = 0
                gdesc.next = d0
                gwr.next = w0
            elif r1:
                g1.next = 1
                gnt.next = 1
                gidx.next = 1
                gdesc.next = d1
                gwr.next = w1
            elif r2:
                g2.next = 1
                gnt.next = 1
                gidx.next = 2
                gdesc.next = d2
                gwr.next = w2
            elif r3:
                g3.next = 1
                gnt.next = 1
                gidx.next = 3
                gdesc.next = d3
                gwr.next = w3

    @always_comb
    def gend():
        g_end.next = gdesc[16 + ADDR_BITS:16] + gdesc[DESC_BITS:16 + 2 * ADDR_BITS] - 1

    @always_comb
    def cur():
        if phase == IDLE:
            c_rows.next = gdesc[16:0]
            c_addr.next = gdesc[16 + ADDR_BITS:16]
            c_stride.next = gdesc[16 + 2 * ADDR_BITS:16 + ADDR_BITS]
            c_bytes.next = gdesc[DESC_BITS:16 + 2 * ADDR_BITS]
            c_beat.next = gdesc[16 + ADDR_BITS:16 + lgB]
            c_last.next = g_end[ADDR_BITS:lgB]
            c_bcnt.next = 0
            c_data.next = gnt and gwr
            c_wr.next = gwr
        else:
            c_rows.next = rows_left
            c_addr.next = r_addr
            c_stride.next = r_stride
            c_bytes.next = r_bytes
            c_beat.next = r_beat
            c_last.next = r_last
            c_bcnt.next = bcnt
            c_data.next = phase == DATA and gap == 0
            c_wr.next = r_wr

    @always_comb
    def nxt_row():
        n_addr.next = (c_addr + c_stride) & ((1 << ADDR_BITS) - 1)
        n_end.next = ((c_addr + c_stride) & ((1 << ADDR_BITS) - 1)) + c_bytes - 1

    @always_comb
    def outs():
        beat.next = c_data
        beat_wr.next = c_wr
        beat_idx.next = c_beat
        row_addr.next = c_addr
        row_end.next = (c_addr + c_bytes) & ((1 << ADDR_BITS) - 1)
        row_last.next = c_beat == c_last
        busy.next = phase != IDLE
        last_owner.next = r_owner
        if phase == IDLE:
            owner.next = gidx
        else:
            owner.next = r_owner

    @always_seq(clk.posedge, reset=rst)
    def seq():
        rel.next = 0
        if phase == IDLE and gnt:
            r_owner.next = gidx
            r_wr.next = gwr
            r_stride.next = c_stride
            r_bytes.next = c_bytes
        if phase == LATP:
            if cnt == 0:
                phase.next = DATA
            else:
                cnt.next = cnt - 1
        elif phase == WLATP:
            if cnt == 0:
                phase.next = IDLE
                rel.next = 1
            else:
                cnt.next = cnt - 1
        elif phase == DATA and gap != 0:
            gap.next = gap - 1
        elif c_data:
            if c_beat == c_last:
                if c_rows > 1:
                    rows_left.next = c_rows - 1
                    r_addr.next = n_addr
                    r_beat.next = n_addr[ADDR_BITS:lgB]
                    r_last.next = n_end[ADDR_BITS:lgB]
                    bcnt.next = 0
                    gap.next = GAP
                    phase.next = DATA
                elif c_wr and WLAT > 0:
                    phase.next = WLATP
                    cnt.next = WLAT - 1
                else:
                    phase.next = IDLE
                    rel.next = 1
            else:
                rows_left.next = c_rows
                r_addr.next = c_addr
                r_last.next = c_last
                r_beat.next = c_beat + 1
                phase.next = DATA
                if ((c_beat + 1) & page_mask) == 0 or c_bcnt + 1 == MAXB:
                    bcnt.next = 0
                    gap.next = GAP
                else:
                    bcnt.next = c_bcnt + 1
        elif phase == IDLE and gnt:
            # a read: latency first
            rows_left.next = c_rows
            r_addr.next = c_addr
            r_beat.next = c_beat
            r_last.next = c_last
            bcnt.next = 0
            gap.next = 0
            if LAT > 1:
                phase.next = LATP
                cnt.next = LAT - 2
            else:
                phase.next = DATA
    return arb, gend, cur, nxt_row, outs, seq
