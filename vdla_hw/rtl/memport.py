"""The memory port: one AXI master (``m_axi``) shared by fetch, load, compute and store, with
the timing of the contract's bus model (``vdla_hw.membus``; docs/timing.md, "Memory port").

A client asks with ``req`` and a descriptor (``vdla_hw.rtl.portdesc``: rows, byte offset of row 0
in the image, row stride in bytes, bytes per row) held stable while it asks. When the port is idle, the first
requester of ``timing.ARBITRATION_ORDER`` is granted in that cycle (``grant``) and owns the
port for the whole transaction:

* the **address walker** splits the rows into bursts (row start, 4 kB boundary,
  ``MEM_MAX_BURST`` beats) and raises one AR (read) or AW (write) per cycle from the cycle after
  the grant, while fewer than ``MEM_READ_OUTSTANDING`` / ``MEM_WRITE_OUTSTANDING`` bursts are in
  flight (a read burst until its RLAST, a write burst until its B response);
* the **data walker** follows the same rows beat by beat: each R beat (RREADY is always high)
  and each W beat advances it; it tells the owner's datapath which beat moves (``beat``: the
  owner's ``client.beat`` pulse, ``idx``, ``row_addr``, ``row_end``, ``row_last``) and gives W
  its WLAST. W beats of a burst go out once its AW has been raised;
* the transaction ends with its last R beat or its last B response; the owner's ``rel`` pulses
  in the next cycle, the cycle a new grant can happen.

Addresses on the bus are ``base`` (DRAM_BASE, 4 kB aligned) plus the image offset. An error
response (RRESP/BRESP SLVERR or DECERR) raises ``err_valid`` for one cycle with ``err_code``
(the response) and ``err_owner`` (the client's index). ``abort`` (the core stopped: an error,
FINISH or CLEAR) lets no new transaction or burst start but completes the bus protocol of what is
in flight: the pending address handshake, the W beats of every raised AW (with WSTRB = 0), and
every R beat and B response; ``bus_idle`` is high when nothing is in flight. A W beat that waits
for WREADY keeps its data and strobes in a holding register (AXI: payload stable while VALID
waits), even when the core stops under it. This block is reset
by ``rst`` only, never by the core's reset, so the bus is never left mid-burst.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw.rtl.arbiter import arbiter, client_sel, grant_mux
from vdla_hw.rtl.axi import BURST_INCR, AxiMaster  # noqa: F401 (BURST_INCR: docs)
from vdla_hw.rtl.params import ADDR_BITS, RtlParams, log2
from vdla_hw.rtl.portdesc import DESC_BITS
from vdla_hw.rtl.walker import WalkPos, WalkState, beat_walker, first_burst, row_walker

IDLE, READ, WRITE = 0, 1, 2
ADDR_MASK = (1 << ADDR_BITS) - 1


class PortClient:
    """One client of the port: ``req``/``desc`` in, ``grant`` (the grant cycle), ``rel`` (the
    cycle after its transaction ended) and ``beat`` (one of its data beats moves) out.

    The port precomputes each client's walk from ``desc`` over 2 register stages, so ``desc``
    must hold from 2 cycles before the request. Fetch, which requests in a run's cycle 0, shows
    its first chunk's descriptor while the core is held in reset, and a run begins at least 2
    cycles after the core stopped (control.py)."""

    def __init__(self, write: bool):
        self.write = write
        self.req = Signal(bool(0))
        self.desc = Signal(intbv(0)[DESC_BITS:])
        self.grant = Signal(bool(0))
        self.rel = Signal(bool(0))
        self.beat = Signal(bool(0))


class BeatBus:
    """Where the current data beat lies: beat number (image byte offset / B), the bytes
    [row_addr, row_end) of its row, and whether it is the row's last beat."""

    def __init__(self, p: RtlParams):
        self.idx = Signal(intbv(0)[ADDR_BITS - p.lgB:])
        self.row_addr = Signal(intbv(0)[ADDR_BITS:])
        self.row_end = Signal(intbv(0)[ADDR_BITS:])
        self.row_last = Signal(bool(0))


class PortError:
    """An error response of the bus: ``valid`` for one cycle, ``code`` (the RRESP/BRESP,
    vdla_hw.rtl.axi.RESP_*) and ``owner`` (the client's index in arbitration order)."""

    def __init__(self, axi: AxiMaster, nclients: int):
        self.valid = Signal(bool(0))
        self.code = Signal(intbv(0)[len(axi.r.resp):])
        self.owner = Signal(intbv(0)[log2(nclients):])


class PortState:
    """The port's transaction state, shared by its blocks: ``phase`` (IDLE / READ / WRITE) and
    ``owner`` (the client's index) of the transaction; the address slot ``a_valid`` / ``a_addr``
    / ``a_len`` (the AR or AW on the bus); ``w_valid``; the bursts ``inflight`` (raised, not
    finished: RLAST / B) and ``w_owed`` (AWs raised whose W burst has not ended), with their
    next values ``inflight_n`` / ``w_owed_n``; this cycle's handshakes ``r_fire``, ``rl_fire``
    (RLAST), ``b_fire``, ``w_fire``, ``wl_fire`` (WLAST)."""

    def __init__(self, p: RtlParams, axi: AxiMaster, nclients: int):
        c = p.config
        kw = log2(max(c.MEM_READ_OUTSTANDING, c.MEM_WRITE_OUTSTANDING) + 2) + 1
        self.phase = Signal(intbv(IDLE)[log2(WRITE + 1):])
        self.owner = Signal(intbv(0)[log2(nclients):])
        self.a_valid = Signal(bool(0))
        self.a_addr = Signal(intbv(0)[len(axi.ar.addr):])
        self.a_len = Signal(intbv(0)[len(axi.ar.len):])
        self.w_valid = Signal(bool(0))
        self.inflight, self.w_owed, self.inflight_n, self.w_owed_n = (Signal(intbv(0)[kw:]) for _ in range(4))
        self.r_fire, self.rl_fire, self.b_fire, self.w_fire, self.wl_fire = (Signal(bool(0)) for _ in range(5))


@block
def memport(clk, rst, p: RtlParams, abort, base, clients, axi: AxiMaster, wsrc_data, wsrc_strb, beat: BeatBus,
            bus_idle, err: PortError):
    """``clients``: four :class:`PortClient` in arbitration order; ``wsrc_data``/``wsrc_strb``:
    the write data of the current W beat (from the store module); ``beat``: the current data
    beat's position (valid with a client's ``beat`` pulse); ``err``: an error response."""
    c = p.config
    lgB = p.lgB
    K_RD, K_WR = c.MEM_READ_OUTSTANDING, c.MEM_WRITE_OUTSTANDING
    assert len(clients) == 4, "the port arbitrates exactly fetch, load, compute and store"
    st = PortState(p, axi, len(clients))
    phase, inflight, w_owed = st.phase, st.inflight, st.w_owed
    rel = Signal(bool(0))
    gnt, gwrite = Signal(bool(0)), Signal(bool(0))
    gidx = Signal(intbv(0)[len(st.owner):])
    gdesc = Signal(intbv(0)[DESC_BITS:])
    idle = Signal(bool(0))
    load = Signal(bool(0))
    apos, dpos = WalkPos(p), WalkPos(p)
    raise_a = Signal(bool(0))      # the address walker's burst goes on AR/AW next cycle
    raise_busy = Signal(bool(0))   # raise_a outside the grant cycle (phase != IDLE)
    data_step = Signal(bool(0))
    a_free = Signal(bool(0))
    done = Signal(bool(0))
    fire = Signal(bool(0))

    # per client, registered from its descriptor: the address walker after the first burst
    def walk():
        return WalkState(p), WalkState(p), Signal(intbv(0)[len(axi.ar.addr):]), Signal(intbv(0)[len(axi.ar.len):])
    firsts = [walk() for _ in clients]
    pre = [first_burst(clk, rst, p, cl.desc, base, *f) for cl, f in zip(clients, firsts)]
    g_s1, g_addr, g_len = WalkState(p), Signal(intbv(0)[len(axi.ar.addr):]), Signal(intbv(0)[len(axi.ar.len):])
    d_s0 = WalkState(p)
    d_blen = Signal(intbv(0)[len(dpos.blen):])   # the granted client's first burst length

    @always_comb
    def first_len():
        d_blen.next = g_len + 1
    insts = [arbiter(p, idle, clients, gnt, gidx, gdesc, gwrite),
             grant_mux(gidx, firsts, d_s0, g_s1, g_addr, g_len),
             row_walker(clk, rst, p, load, g_s1, raise_a, False, apos),
             beat_walker(clk, rst, p, load, d_s0, d_blen, data_step, dpos),
             client_sel(st.owner, fire, rel, clients),
             burst_counts(st, gnt, gwrite, raise_busy),
             bus_drive(clk, rst, st, axi, abort, dpos, wsrc_data, wsrc_strb, beat, bus_idle, err)]
    insts += pre

    @always_comb
    def handshakes():
        idle.next = phase == IDLE and not abort
        load.next = gnt
        st.r_fire.next = axi.r.valid and phase == READ
        st.rl_fire.next = axi.r.valid and axi.r.last and phase == READ
        st.b_fire.next = axi.b.valid and phase == WRITE
        st.w_fire.next = st.w_valid and axi.w.ready
        st.wl_fire.next = st.w_valid and axi.w.ready and dpos.blen == 1
        if phase == WRITE:
            a_free.next = not st.a_valid or axi.aw.ready
        else:
            a_free.next = not st.a_valid or axi.ar.ready

    @always_comb
    def issue():
        room = intbv(0)[len(inflight):]
        room[:] = inflight
        if st.rl_fire or st.b_fire:
            room[:] = inflight - 1
        # in the grant cycle the port is empty (nothing in flight, AR/AW free): the first burst
        # is always raised, from the client's precomputed first burst
        raise_busy.next = 0
        if phase != IDLE and not abort and a_free and apos.has:
            if phase == WRITE:
                raise_busy.next = room < K_WR
            else:
                raise_busy.next = room < K_RD
        data_step.next = st.r_fire or st.w_fire
        fire.next = (st.r_fire or st.w_fire) and not abort

    @always_comb
    def raising():
        raise_a.next = raise_busy or gnt

    @always_comb
    def ending():
        # the transaction ends when no burst is left to raise (or the core stopped: then none is
        # raised either) and every raised burst has finished -- its last R beat, or its W beats
        # and its B response -- this cycle at the latest: the counts are 0, or 1 and it ends now
        fin = st.rl_fire or st.b_fire
        done.next = (phase != IDLE and (abort or not apos.has)
                     and ((inflight == 0 and not fin) or (inflight == 1 and fin))
                     and ((w_owed == 0 and not st.wl_fire) or (w_owed == 1 and st.wl_fire)))

    @always_seq(clk.posedge, reset=rst)
    def seq():
        rel.next = 0
        inflight.next = st.inflight_n
        w_owed.next = st.w_owed_n
        if gnt:
            st.owner.next = gidx
            if gwrite:
                phase.next = WRITE
            else:
                phase.next = READ
        elif done:
            phase.next = IDLE
            rel.next = not abort
        if gnt:
            st.a_valid.next = 1
            st.a_addr.next = g_addr
            st.a_len.next = g_len
        elif raise_busy:
            st.a_valid.next = 1
            a = intbv(0)[ADDR_BITS + 1:]
            a[:] = base + (apos.beat << lgB)
            st.a_addr.next = a[ADDR_BITS:]
            st.a_len.next = apos.blen - 1
        elif a_free:
            st.a_valid.next = 0
        st.w_valid.next = (st.w_valid and not axi.w.ready) or st.w_owed_n != 0
    insts += [first_len, handshakes, issue, raising, ending, seq]
    return insts


@block
def burst_counts(st: PortState, gnt, gwrite, raise_busy):
    """``st.inflight_n`` / ``st.w_owed_n``: the burst counts after this cycle's raise (the grant's
    first burst, or ``raise_busy``) and this cycle's RLAST / B / WLAST."""
    phase, inflight, w_owed = st.phase, st.inflight, st.w_owed
    n_busy = Signal(intbv(0)[len(inflight):])
    o_busy = Signal(intbv(0)[len(w_owed):])

    @always_comb
    def counts():
        # the grant cycle starts from an empty port: the first burst is the only one in flight
        if gnt:
            st.inflight_n.next = 1
            st.w_owed_n.next = gwrite
        else:
            st.inflight_n.next = n_busy
            st.w_owed_n.next = o_busy

    @always_comb
    def counts_busy():
        # the same counts outside the grant cycle (without the grant's logic on the path)
        n = intbv(0)[len(inflight):]
        n[:] = inflight
        if raise_busy:
            n[:] = n + 1
        if st.rl_fire or st.b_fire:
            n[:] = n - 1
        n_busy.next = n
        o = intbv(0)[len(w_owed):]
        o[:] = w_owed
        if raise_busy and phase == WRITE:
            o[:] = o + 1
        if st.wl_fire:
            o[:] = o - 1
        o_busy.next = o
    return counts, counts_busy


@block
def bus_drive(clk, rst, st: PortState, axi: AxiMaster, abort, dpos: WalkPos, wsrc_data, wsrc_strb, beat: BeatBus,
              bus_idle, err: PortError):
    """The master's outputs from the port state; the W holding register (a W beat that waits for
    WREADY keeps its data and strobes, whatever its source does); the beat position; the error
    report."""
    phase = st.phase
    w_held = Signal(bool(0))       # a W beat is waiting for WREADY: its payload is held here
    w_hdata = Signal(intbv(0)[len(axi.w.data):])
    w_hstrb = Signal(intbv(0)[len(axi.w.strb):])

    @always_comb
    def bus_out():
        axi.ar.valid.next = st.a_valid and phase == READ
        axi.aw.valid.next = st.a_valid and phase == WRITE
        axi.ar.addr.next = st.a_addr
        axi.aw.addr.next = st.a_addr
        axi.ar.len.next = st.a_len
        axi.aw.len.next = st.a_len
        axi.r.ready.next = 1
        axi.b.ready.next = 1
        axi.w.valid.next = st.w_valid
        axi.w.last.next = dpos.blen == 1
        if w_held:                  # a beat that waits keeps its payload, whatever its source does
            axi.w.data.next = w_hdata
            axi.w.strb.next = w_hstrb
        elif abort:
            axi.w.data.next = wsrc_data
            axi.w.strb.next = 0
        else:
            axi.w.data.next = wsrc_data
            axi.w.strb.next = wsrc_strb
        beat.idx.next = dpos.beat
        beat.row_addr.next = dpos.row_addr
        beat.row_end.next = dpos.row_end
        beat.row_last.next = dpos.beat == dpos.last
        bus_idle.next = phase == IDLE
        err.owner.next = st.owner
        if phase == READ:
            err.code.next = axi.r.resp
        else:
            err.code.next = axi.b.resp
        err.valid.next = not abort and ((st.r_fire and axi.r.resp[1]) or (st.b_fire and axi.b.resp[1]))

    @always_seq(clk.posedge, reset=rst)
    def hold():
        if st.w_valid and not axi.w.ready:
            if not w_held:
                w_held.next = 1
                w_hdata.next = axi.w.data
                w_hstrb.next = axi.w.strb
        else:
            w_held.next = 0
    return bus_out, hold
