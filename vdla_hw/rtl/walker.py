"""The row walker of the memory port: where a transaction's rows split into AXI bursts (a new
burst at each row start, 4 kB boundary and ``MEM_MAX_BURST`` beats; ``vdla_hw.membus``), walked
burst by burst (the address side) or beat by beat (the data side).

A walk is a :class:`WalkState` held in registers. :func:`walk_next` is the combinational step
(from a state: its current burst's length and the state after moving past it or past one
beat); :func:`desc_state` is the state a descriptor starts in. The port loads a walker in the
grant cycle with a state computed from registers only (the data side: the descriptor's start;
the address side: the state after its first burst, precomputed per client by
:func:`first_burst`), so nothing in the grant cycle waits for burst arithmetic."""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw.membus import BURST_BOUNDARY
from vdla_hw.rtl.params import ADDR_BITS, RtlParams, log2
from vdla_hw.rtl.portdesc import ROWS_BITS, desc_fields


def _blen_bits(p: RtlParams) -> int:
    return log2(p.config.MEM_MAX_BURST + 1) + 1


class _BeatPos:
    """What every view of a walk carries: ``has`` (a beat or burst is left), ``beat`` (its beat
    address) and ``last`` (the row's last beat)."""

    def __init__(self, p: RtlParams):
        bw = ADDR_BITS - p.lgB
        self.has = Signal(bool(0))
        self.beat = Signal(intbv(0)[bw:])
        self.last = Signal(intbv(0)[bw:])


class WalkState(_BeatPos):
    """A walk's position: ``has``, ``beat``, ``last`` (:class:`_BeatPos`), ``rows`` left,
    ``addr`` / ``end`` (the row's first byte and the byte after it), ``bcnt`` (beats of the
    current burst already moved), the descriptor's ``stride`` and ``nbytes``, and the next row's
    first and last byte (``n_addr``, ``n_lastb``: kept one row ahead, so a row change adds nothing in
    series)."""

    NAMES = ("has", "beat", "last", "rows", "addr", "end", "bcnt", "stride", "nbytes", "n_addr", "n_lastb")

    def __init__(self, p: RtlParams):
        super().__init__(p)
        self.rows = Signal(intbv(0)[ROWS_BITS:])
        self.addr = Signal(intbv(0)[ADDR_BITS:])
        self.end = Signal(intbv(0)[ADDR_BITS:])
        self.bcnt = Signal(intbv(0)[_blen_bits(p):])
        self.stride = Signal(intbv(0)[ADDR_BITS:])
        self.nbytes = Signal(intbv(0)[ADDR_BITS:])
        self.n_addr = Signal(intbv(0)[ADDR_BITS:])
        self.n_lastb = Signal(intbv(0)[ADDR_BITS:])


class WalkPos(_BeatPos):
    """What a walker shows (from its registers): ``has``, ``beat``, ``last`` (:class:`_BeatPos`),
    ``row_addr`` / ``row_end`` and ``blen`` (beats left in the current burst)."""

    def __init__(self, p: RtlParams):
        super().__init__(p)
        self.row_addr = Signal(intbv(0)[ADDR_BITS:])
        self.row_end = Signal(intbv(0)[ADDR_BITS:])
        self.blen = Signal(intbv(0)[_blen_bits(p):])


@block
def desc_state(p: RtlParams, desc, s: WalkState):
    """``s`` = the state a walk of descriptor ``desc`` starts in (combinational)."""
    lgB = p.lgB
    d = desc_fields(desc, lgB)

    @always_comb
    def start():
        a0 = intbv(0)[ADDR_BITS + 1:]
        a0[:] = d.addr0 + d.nbytes - 1
        a1 = intbv(0)[ADDR_BITS + 2:]
        a1[:] = d.addr0 + d.stride
        a2 = intbv(0)[ADDR_BITS + 2:]
        a2[:] = d.addr0 + d.stride + d.nbytes - 1
        s.n_addr.next = a1[ADDR_BITS:]
        s.n_lastb.next = a2[ADDR_BITS:]
        e = intbv(0)[ADDR_BITS + 1:]
        e[:] = d.addr0 + d.nbytes
        s.end.next = e[ADDR_BITS:]
        s.has.next = 1
        s.beat.next = d.addr0_beat
        s.last.next = a0[ADDR_BITS:lgB]
        s.rows.next = d.rows
        s.addr.next = d.addr0
        s.bcnt.next = 0
        s.stride.next = d.stride
        s.nbytes.next = d.nbytes
    return start


@block
def advance(p: RtlParams, s: WalkState, row_done, beat_in, bcnt_in, n: WalkState):
    """``n`` = the state after one step from ``s``: the next row's start when ``row_done``
    (``has`` drops after the last row), else ``s`` at ``beat_in`` with ``bcnt_in``."""
    lgB = p.lgB

    @always_comb
    def nxt():
        a = intbv(0)[ADDR_BITS + 1:]
        a[:] = s.n_addr + s.stride       # the row after next: first and last byte
        b = intbv(0)[ADDR_BITS + 1:]
        b[:] = s.n_lastb + s.stride
        c = intbv(0)[ADDR_BITS + 1:]
        c[:] = s.n_lastb + 1             # the next row's end
        n.has.next = s.has
        n.beat.next = s.beat
        n.last.next = s.last
        n.rows.next = s.rows
        n.addr.next = s.addr
        n.end.next = s.end
        n.bcnt.next = s.bcnt
        n.stride.next = s.stride
        n.nbytes.next = s.nbytes
        n.n_addr.next = s.n_addr
        n.n_lastb.next = s.n_lastb
        if row_done:
            n.bcnt.next = 0
            if s.rows > 1:
                n.rows.next = s.rows - 1
                n.addr.next = s.n_addr
                n.end.next = c[ADDR_BITS:]
                n.beat.next = s.n_addr[ADDR_BITS:lgB]
                n.last.next = s.n_lastb[ADDR_BITS:lgB]
                n.n_addr.next = a[ADDR_BITS:]
                n.n_lastb.next = b[ADDR_BITS:]
            else:
                n.has.next = 0
        else:
            n.beat.next = beat_in
            n.bcnt.next = bcnt_in
    return nxt


@block
def walk_next(p: RtlParams, s: WalkState, per_beat: bool, blen, row_end, n: WalkState):
    """From state ``s``: ``blen`` (beats left in its burst), ``row_end`` (its row's end byte)
    and ``n``, the state after one step past the burst (``per_beat`` False) or one beat."""
    lgB = p.lgB
    BW = ADDR_BITS - lgB
    MAXB = p.config.MEM_MAX_BURST
    PAGE = BURST_BOUNDARY // p.B
    row_left = Signal(intbv(0)[BW + 1:])
    amount = Signal(intbv(0)[len(blen):])   # beats one step moves past
    one = Signal(intbv(1)[len(blen):])      # undriven: a constant 1
    row_done = Signal(bool(0))
    beat_in, bcnt_in = Signal(intbv(0)[len(s.beat):]), Signal(intbv(0)[len(s.bcnt):])

    @always_comb
    def amt():
        amount.next = one if per_beat else blen

    @always_comb
    def lengths():
        row_end.next = s.end
        left = intbv(0)[BW + 1:]
        left[:] = s.last - s.beat + 1
        row_left.next = left
        k = intbv(0)[len(blen):]
        k[:] = MAXB - s.bcnt
        page_left = PAGE - (s.beat & (PAGE - 1))
        if page_left < k:
            k[:] = page_left
        if left < k:
            k[:] = left
        blen.next = k

    @always_comb
    def inrow():
        row_done.next = amount == row_left   # the row's last beat or burst
        beat_in.next = s.beat + amount
        if amount == blen:                   # the burst ends here
            bcnt_in.next = 0
        else:
            bcnt_in.next = s.bcnt + amount
    return amt, lengths, inrow, advance(p, s, row_done, beat_in, bcnt_in, n)


@block
def state_reg(clk, rst, load, ld: WalkState, step, nx: WalkState, s: WalkState):
    """``s`` <= ``ld`` on ``load``, else ``nx`` on ``step``."""
    @always_seq(clk.posedge, reset=rst)
    def seq():
        if load:
            s.has.next = ld.has
            s.beat.next = ld.beat
            s.last.next = ld.last
            s.rows.next = ld.rows
            s.addr.next = ld.addr
            s.end.next = ld.end
            s.bcnt.next = ld.bcnt
            s.stride.next = ld.stride
            s.nbytes.next = ld.nbytes
            s.n_addr.next = ld.n_addr
            s.n_lastb.next = ld.n_lastb
        elif step:
            s.has.next = nx.has
            s.beat.next = nx.beat
            s.last.next = nx.last
            s.rows.next = nx.rows
            s.addr.next = nx.addr
            s.end.next = nx.end
            s.bcnt.next = nx.bcnt
            s.stride.next = nx.stride
            s.nbytes.next = nx.nbytes
            s.n_addr.next = nx.n_addr
            s.n_lastb.next = nx.n_lastb
    return seq


@block
def row_walker(clk, rst, p: RtlParams, load, ld: WalkState, step, per_beat: bool, pos: WalkPos):
    """Walk the rows of a transaction by bursts (``per_beat`` False) or by beats (True).
    ``load`` starts a walk in state ``ld``, shown by ``pos`` from the next cycle; ``step`` moves
    past the current burst or beat (``pos`` shows the registers: never the state being loaded)."""
    s, n = WalkState(p), WalkState(p)

    @always_comb
    def show():
        pos.has.next = s.has
        pos.beat.next = s.beat
        pos.last.next = s.last
        pos.row_addr.next = s.addr
    return walk_next(p, s, per_beat, pos.blen, pos.row_end, n), state_reg(clk, rst, load, ld, step, n, s), show


@block
def beat_walker(clk, rst, p: RtlParams, load, ld: WalkState, ld_blen, step, pos: WalkPos):
    """The data side: walk the rows of a transaction beat by beat. Like :func:`row_walker` with
    ``per_beat``, but the current burst's beats left (``pos.blen``) is a register too: loaded
    with ``ld_blen`` (the first burst's length, precomputed), counted down, and at a burst's
    end replaced by the next burst's length, computed from registers in parallel for both
    cases (the next beat of the row, or the next row's first beat)."""
    lgB = p.lgB
    BW = ADDR_BITS - lgB
    MAXB = p.config.MEM_MAX_BURST
    PAGE = BURST_BOUNDARY // p.B
    s, n = WalkState(p), WalkState(p)
    blen = Signal(intbv(0)[len(pos.blen):])
    nb_row = Signal(intbv(0)[len(pos.blen):])    # next burst's length if it starts at beat + 1
    nb_next = Signal(intbv(0)[len(pos.blen):])   # ... if it starts the next row
    row_done = Signal(bool(0))
    beat_in = Signal(intbv(0)[len(s.beat):])
    zero = Signal(intbv(0)[len(s.bcnt):])        # undriven: bcnt stays 0 (blen is counted instead)

    @always_comb
    def show():
        pos.has.next = s.has
        pos.beat.next = s.beat
        pos.last.next = s.last
        pos.row_addr.next = s.addr
        pos.blen.next = blen

    @always_comb
    def next_len():
        k = intbv(0)[len(blen):]
        k[:] = MAXB
        b1 = intbv(0)[BW + 1:]
        b1[:] = s.beat + 1
        pl = PAGE - (b1 & (PAGE - 1))
        if pl < k:
            k[:] = pl
        left = intbv(0)[BW + 1:]
        left[:] = s.last - s.beat
        if left < k:
            k[:] = left
        nb_row.next = k
        m = intbv(0)[len(blen):]
        m[:] = MAXB
        nb = intbv(0)[BW:]
        nb[:] = s.n_addr[ADDR_BITS:lgB]
        nl = intbv(0)[BW:]
        nl[:] = s.n_lastb[ADDR_BITS:lgB]
        pl2 = PAGE - (nb & (PAGE - 1))
        if pl2 < m:
            m[:] = pl2
        left2 = intbv(0)[BW + 1:]
        left2[:] = nl - nb + 1
        if left2 < m:
            m[:] = left2
        nb_next.next = m

    @always_seq(clk.posedge, reset=rst)
    def count():
        if load:
            blen.next = ld_blen
        elif step:
            if s.beat == s.last:
                blen.next = nb_next
            elif blen == 1:
                blen.next = nb_row
            else:
                blen.next = blen - 1
    @always_comb
    def inrow():
        pos.row_end.next = s.end
        row_done.next = s.beat == s.last     # the row's last beat
        beat_in.next = s.beat + 1
    return (show, next_len, count, inrow, advance(p, s, row_done, beat_in, zero, n),
            state_reg(clk, rst, load, ld, step, n, s))


@block
def first_burst(clk, rst, p: RtlParams, desc, base, s0: WalkState, s1: WalkState, a_addr, a_len):
    """Registered from a client's descriptor ``desc`` in every cycle, in two stages (so ``desc``
    must hold from 2 cycles before the client's request): the walk's start state ``s0`` (the
    data walker's load), then the address walker's state after the first burst (``s1``) and
    that burst's AXI address and length. The port loads them when it grants the client."""
    lgB = p.lgB
    d0, n = WalkState(p), WalkState(p)
    blen = Signal(intbv(0)[_blen_bits(p):])
    row_end = Signal(intbv(0)[ADDR_BITS:])
    always = Signal(bool(1))        # undriven: a constant 1
    never = Signal(bool(0))

    @always_seq(clk.posedge, reset=rst)
    def burst0():
        a = intbv(0)[ADDR_BITS + 1:]
        a[:] = base + (s0.beat << lgB)
        a_addr.next = a[ADDR_BITS:]
        a_len.next = blen - 1
    return (desc_state(p, desc, d0), state_reg(clk, rst, always, d0, never, d0, s0),
            walk_next(p, s0, False, blen, row_end, n), state_reg(clk, rst, always, n, never, n, s1), burst0)
