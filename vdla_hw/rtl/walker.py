"""The row walker of the memory port: where a transaction's rows split into AXI bursts (a new
burst at each row start, 4 kB boundary and ``MEM_MAX_BURST`` beats; ``vdla_hw.membus``), walked
burst by burst (the address side) or beat by beat (the data side)."""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw.membus import BURST_BOUNDARY
from vdla_hw.rtl.params import ADDR_BITS, RtlParams, log2
from vdla_hw.rtl.portdesc import ROWS_BITS, desc_fields


class WalkPos:
    """A walker's position: ``has`` (a beat or burst is left), ``beat``, ``last`` (the row's
    last beat), ``row_addr``/``row_end`` and ``blen`` (beats left in the current burst)."""

    def __init__(self, p: RtlParams):
        bw = ADDR_BITS - p.lgB
        self.has = Signal(bool(0))
        self.beat = Signal(intbv(0)[bw:])
        self.last = Signal(intbv(0)[bw:])
        self.row_addr = Signal(intbv(0)[ADDR_BITS:])
        self.row_end = Signal(intbv(0)[ADDR_BITS:])
        self.blen = Signal(intbv(0)[log2(p.config.MEM_MAX_BURST + 1) + 1:])


@block
def row_walker(clk, rst, p: RtlParams, load, desc, step, per_beat: bool, pos: WalkPos):
    """Walk the rows of a transaction by bursts (``per_beat`` False) or by beats (True).
    ``load`` (with ``desc``) starts a walk; ``pos`` shows the loaded position in that same
    cycle. ``step`` moves past the current burst or beat."""
    lgB = p.lgB
    BW = ADDR_BITS - lgB
    MAXB = p.config.MEM_MAX_BURST
    PAGE = BURST_BOUNDARY // p.B
    has, beat, last, rows, addr, bcnt = (Signal(bool(0)), Signal(intbv(0)[BW:]), Signal(intbv(0)[BW:]),
                                         Signal(intbv(0)[ROWS_BITS:]), Signal(intbv(0)[ADDR_BITS:]),
                                         Signal(intbv(0)[len(pos.blen):]))
    stride, nbytes = Signal(intbv(0)[ADDR_BITS:]), Signal(intbv(0)[ADDR_BITS:])
    c_rows, c_bcnt = Signal(intbv(0)[ROWS_BITS:]), Signal(intbv(0)[len(pos.blen):])
    c_stride, c_nbytes = Signal(intbv(0)[ADDR_BITS:]), Signal(intbv(0)[ADDR_BITS:])
    n_addr = Signal(intbv(0)[ADDR_BITS:])
    row_left = Signal(intbv(0)[BW + 1:])
    d = desc_fields(desc, lgB)
    amount = Signal(intbv(0)[len(pos.blen):])   # beats one step moves past
    one = Signal(intbv(1)[len(pos.blen):])      # undriven: a constant 1

    @always_comb
    def amt():
        amount.next = one if per_beat else pos.blen

    @always_comb
    def cur():
        a0 = intbv(0)[ADDR_BITS + 1:]
        a0[:] = d.addr0 + d.nbytes - 1
        if load:
            pos.has.next = 1
            pos.beat.next = d.addr0_beat
            pos.last.next = a0[ADDR_BITS:lgB]
            pos.row_addr.next = d.addr0
            c_rows.next = d.rows
            c_bcnt.next = 0
            c_stride.next = d.stride
            c_nbytes.next = d.nbytes
        else:
            pos.has.next = has
            pos.beat.next = beat
            pos.last.next = last
            pos.row_addr.next = addr
            c_rows.next = rows
            c_bcnt.next = bcnt
            c_stride.next = stride
            c_nbytes.next = nbytes

    @always_comb
    def lengths():
        e = intbv(0)[ADDR_BITS + 1:]
        e[:] = pos.row_addr + c_nbytes
        pos.row_end.next = e[ADDR_BITS:]
        left = intbv(0)[BW + 1:]
        left[:] = pos.last - pos.beat + 1
        row_left.next = left
        n = intbv(0)[len(pos.blen):]
        n[:] = MAXB - c_bcnt
        page_left = PAGE - (pos.beat & (PAGE - 1))
        if page_left < n:
            n[:] = page_left
        if left < n:
            n[:] = left
        pos.blen.next = n
        a = intbv(0)[ADDR_BITS + 1:]
        a[:] = pos.row_addr + c_stride
        n_addr.next = a[ADDR_BITS:]

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if load or step:
            has.next = pos.has
            beat.next = pos.beat
            last.next = pos.last
            rows.next = c_rows
            addr.next = pos.row_addr
            bcnt.next = c_bcnt
            stride.next = c_stride
            nbytes.next = c_nbytes
        if step:
            if amount == row_left:           # the row's last beat or burst
                bcnt.next = 0
                if c_rows > 1:
                    e = intbv(0)[ADDR_BITS + 1:]
                    e[:] = n_addr + c_nbytes - 1
                    rows.next = c_rows - 1
                    addr.next = n_addr
                    beat.next = n_addr[ADDR_BITS:lgB]
                    last.next = e[ADDR_BITS:lgB]
                else:
                    has.next = 0
            else:
                beat.next = pos.beat + amount
                if amount == pos.blen:        # the burst ends here
                    bcnt.next = 0
                else:
                    bcnt.next = c_bcnt + amount
    return amt, cur, lengths, seq
