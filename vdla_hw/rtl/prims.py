"""Primitive MyHDL blocks: SRAMs, delay lines, the command queues and the token FIFOs.

Timing of the queues is the contract's (vdla_hw.timing): an entry or token pushed at cycle t is
visible to the consumer at t + QUEUE_LATENCY; a slot freed at t is visible to the producer at
t + QUEUE_LATENCY.
"""

from __future__ import annotations

from myhdl import Signal, always, always_comb, always_seq, block, intbv

from vdla_hw.rtl.params import log2


@block
def ram(clk, we, waddr, wdata, re, raddr, rdata, depth, forward=False):
    """Simple dual-port SRAM (one write, one read port), synchronous read with enable.

    rdata (width of wdata) holds mem[raddr] one cycle after re; it holds its value while re is
    low. With ``forward``, a read of the address written in the same cycle returns the new data
    (write-first), which the ALU relies on.
    """
    mem = [Signal(intbv(0)[len(wdata):]) for _ in range(depth)]
    dout = Signal(intbv(0)[len(wdata):])

    @always(clk.posedge)
    def write():
        if we:
            mem[int(waddr)].next = wdata

    @always(clk.posedge)
    def read():
        if re:
            dout.next = mem[int(raddr)]

    if not forward:
        @always_comb
        def out():
            rdata.next = dout
        return write, read, out

    hit = Signal(bool(0))
    wlast = Signal(intbv(0)[len(wdata):])

    @always(clk.posedge)
    def fwd():
        if re:
            hit.next = we and raddr == waddr
            wlast.next = wdata

    @always_comb
    def out_fwd():
        if hit:
            rdata.next = wlast
        else:
            rdata.next = dout
    return write, read, fwd, out_fwd


@block
def wire(a, b):
    """``b`` follows ``a`` (a Verilog assign)."""
    @always_comb
    def w():
        b.next = a
    return w


@block
def delay(clk, rst, din, dout, n):
    """dout = din delayed by n cycles (n = 0: a wire). 1-bit."""
    if n == 0:
        @always_comb
        def wire():
            dout.next = din
        return wire
    sr = Signal(intbv(0)[n:])
    if n == 1:
        @always_seq(clk.posedge, reset=rst)
        def shift1():
            sr.next = din
    else:
        @always_seq(clk.posedge, reset=rst)
        def shift():
            sr.next = (sr[n - 1:] << 1) | din

    @always_comb
    def out():
        dout.next = sr[n - 1]
    return (shift1 if n == 1 else shift), out


@block
def cmd_queue(clk, rst, push, wdata, room, pop, avail, head, depth, latency):
    """A command queue of ``depth`` entries (first-word fall-through).

    Producer: ``room`` is high while the queue looks not full (frees seen after ``latency``);
    ``push`` writes ``wdata``. Consumer: ``avail`` is high while an entry is visible (pushes
    seen after ``latency``); ``head`` is that entry; ``pop`` removes it.
    """
    aw = max(1, log2(depth))
    cw = log2(depth + 1) + 1
    mem = [Signal(intbv(0)[len(wdata):]) for _ in range(depth)]
    wp = Signal(intbv(0)[aw:])
    rp = Signal(intbv(0)[aw:])
    rp_n = Signal(intbv(0)[aw:])
    dout = Signal(intbv(0)[len(wdata):])
    byp = Signal(bool(0))
    byp_data = Signal(intbv(0)[len(wdata):])
    used = Signal(intbv(0)[cw:])     # producer view
    vis = Signal(intbv(0)[cw:])      # consumer view
    push_d = Signal(bool(0))
    pop_d = Signal(bool(0))
    insts = [delay(clk, rst, push, push_d, latency - 1), delay(clk, rst, pop, pop_d, latency - 1)]
    last = depth - 1

    @always_comb
    def comb():
        room.next = used < depth
        avail.next = vis != 0
        if pop:
            if rp == last:
                rp_n.next = 0
            else:
                rp_n.next = rp + 1
        else:
            rp_n.next = rp
        if byp:
            head.next = byp_data
        else:
            head.next = dout

    @always(clk.posedge)
    def store():
        if push:
            mem[int(wp)].next = wdata
        dout.next = mem[int(rp_n)]
        byp.next = push and wp == rp_n
        byp_data.next = wdata

    @always_seq(clk.posedge, reset=rst)
    def ptrs():
        if push:
            if wp == last:
                wp.next = 0
            else:
                wp.next = wp + 1
        rp.next = rp_n
        if push and not pop_d:
            used.next = used + 1
        elif pop_d and not push:
            used.next = used - 1
        if push_d and not pop:
            vis.next = vis + 1
        elif pop and not push_d:
            vis.next = vis - 1
    return insts, comb, store, ptrs


@block
def token_queue(clk, rst, push, pop, avail, overflow, depth, latency):
    """A dependency-token FIFO (1-bit tokens, so a counter). ``avail``: a token is visible to
    the consumer (pushes seen after ``latency``). ``overflow`` is high in a cycle whose push
    would exceed ``depth`` tokens counting pops up to the cycle before (token_overflow)."""
    cw = log2(depth + 2) + 1
    held = Signal(intbv(0)[cw:])
    vis = Signal(intbv(0)[cw:])
    push_d = Signal(bool(0))
    inst = delay(clk, rst, push, push_d, latency - 1)

    @always_comb
    def comb():
        avail.next = vis != 0
        overflow.next = push and held >= depth

    @always_seq(clk.posedge, reset=rst)
    def count():
        if push and not pop:
            held.next = held + 1
        elif pop and not push:
            held.next = held - 1
        if push_d and not pop:
            vis.next = vis + 1
        elif pop and not push_d:
            vis.next = vis - 1
    return inst, comb, count
