"""The memory port's arbitration (:mod:`vdla_hw.rtl.memport`): which client of
``timing.ARBITRATION_ORDER`` is granted, the granted client's precomputed walk, and the
routing of the data-beat and release pulses to the owner. Clients are
:class:`vdla_hw.rtl.memport.PortClient` (``req``, ``desc``, ``write`` in; ``grant``, ``rel``,
``beat`` out)."""

from __future__ import annotations

from myhdl import always_comb, block

from vdla_hw.rtl.params import RtlParams
from vdla_hw.rtl.walker import WalkState


@block
def arbiter(p: RtlParams, idle, clients, gnt, gidx, gdesc, gwrite):
    """Fixed priority in ``clients`` order (timing.ARBITRATION_ORDER): in a cycle the port is
    ``idle``, the first requester gets ``grant``; ``gnt``/``gidx``/``gdesc``/``gwrite`` name it."""
    c0, c1, c2, c3 = clients
    w0, w1, w2, w3 = (bool(c.write) for c in clients)

    @always_comb
    def arb():
        c0.grant.next = 0
        c1.grant.next = 0
        c2.grant.next = 0
        c3.grant.next = 0
        gnt.next = 0
        gidx.next = 0
        gdesc.next = c0.desc
        gwrite.next = w0
        if idle:
            if c0.req:
                c0.grant.next = 1
                gnt.next = 1
            elif c1.req:
                c1.grant.next = 1
                gnt.next = 1
                gidx.next = 1
                gdesc.next = c1.desc
                gwrite.next = w1
            elif c2.req:
                c2.grant.next = 1
                gnt.next = 1
                gidx.next = 2
                gdesc.next = c2.desc
                gwrite.next = w2
            elif c3.req:
                c3.grant.next = 1
                gnt.next = 1
                gidx.next = 3
                gdesc.next = c3.desc
                gwrite.next = w3
    return arb


@block
def grant_mux(gidx, firsts, s0: WalkState, s1: WalkState, a_addr, a_len):
    """The granted client's precomputed walk (:func:`vdla_hw.rtl.walker.first_burst`):
    ``firsts`` = (start state, state after the first burst, its address, its length) per
    client, in arbitration order."""
    (e0, f0, a0, l0), (e1, f1, a1, l1), (e2, f2, a2, l2), (e3, f3, a3, l3) = firsts
    insts = []
    for name in WalkState.NAMES:
        insts.append(_mux4(gidx, *(getattr(e, name) for e in (e0, e1, e2, e3)), getattr(s0, name)))
        insts.append(_mux4(gidx, *(getattr(f, name) for f in (f0, f1, f2, f3)), getattr(s1, name)))
    insts.append(_mux4(gidx, a0, a1, a2, a3, a_addr))
    insts.append(_mux4(gidx, l0, l1, l2, l3, a_len))
    return insts


@block
def _mux4(sel, x0, x1, x2, x3, out):
    @always_comb
    def mux():
        if sel == 0:
            out.next = x0
        elif sel == 1:
            out.next = x1
        elif sel == 2:
            out.next = x2
        else:
            out.next = x3
    return mux


@block
def client_sel(owner, fire, rel, clients):
    """Route the data-beat and release pulses to the owning client."""
    c0, c1, c2, c3 = clients

    @always_comb
    def sel():
        c0.beat.next = fire and owner == 0
        c1.beat.next = fire and owner == 1
        c2.beat.next = fire and owner == 2
        c3.beat.next = fire and owner == 3
        c0.rel.next = rel and owner == 0
        c1.rel.next = rel and owner == 1
        c2.rel.next = rel and owner == 2
        c3.rel.next = rel and owner == 3
    return sel
