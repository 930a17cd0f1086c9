"""On-chip SRAMs built from :func:`prims.ram`.

:func:`srams` builds the accelerator's memories behind :class:`SramPorts`, the ports the modules
see. A wide memory (element >= beat) is one RAM, one element per address. A narrow memory
(element < beat, e.g. 4-byte micro-ops on an 8-byte port) is 2 banks (even and odd lines) of
``lanes`` lane RAMs; a line holds ``lanes`` consecutive elements (one beat's worth), so a beat
that straddles two lines writes both in one cycle. Element ports adapt single-element reads
and writes to the banks.
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, intbv

from vdla_hw.rtl.params import MemGeom, RtlParams, log2
from vdla_hw.rtl.prims import ram, wire


@block
def narrow_sram(clk, g: MemGeom, wports, rports):
    """wports/rports: per bank (we_lanes, waddr, wdata) / (re, raddr, rdata); data buses hold
    ``lanes`` elements, lane 0 at the low bits."""
    insts = []
    for (we, wa, wd), (re, ra, rd) in zip(wports, rports):
        outs = [Signal(intbv(0)[g.width:]) for _ in range(g.lanes)]
        for s in range(g.lanes):
            insts.append(ram(clk, we(s), wa, wd(g.width * (s + 1), g.width * s), re, ra, outs[s], g.bank_depth))
        cat = ConcatSignal(*reversed(outs))
        insts.append(wire(cat, rd))
    return insts


@block
def elem_read(clk, g: MemGeom, re, raddr, rdata, rports):
    """Read element ``raddr`` (data one cycle after ``re``) from a narrow memory's banks."""
    (re0, ra0, rd0), (re1, ra1, rd1) = rports
    lgL = log2(g.lanes)
    aw = len(ra0)
    sel_bank = Signal(bool(0))
    sel_lane = Signal(intbv(0)[max(1, lgL):])

    @always_comb
    def addr():
        re0.next = re
        re1.next = re
        a = intbv(0)[len(raddr):]
        a[:] = raddr >> (lgL + 1)
        ra0.next = a[aw:]
        ra1.next = a[aw:]

    @always_seq(clk.posedge, reset=None)
    def sel():
        if re:
            sel_bank.next = raddr[lgL]
            sel_lane.next = raddr & (g.lanes - 1)

    @always_comb
    def out():
        tmp = intbv(0)[len(rd0):]
        if sel_bank:
            tmp[:] = rd1 >> (sel_lane * g.width)
        else:
            tmp[:] = rd0 >> (sel_lane * g.width)
        rdata.next = tmp[g.width:]
    return addr, sel, out


@block
def elem_write(g: MemGeom, we, waddr, wdata, wports):
    """Write element ``waddr`` of a narrow memory (one lane of one bank)."""
    (we0, wa0, wd0), (we1, wa1, wd1) = wports
    lgL = log2(g.lanes)
    aw = len(wa0)
    rep = ConcatSignal(*([wdata] * g.lanes))

    @always_comb
    def comb():
        a = intbv(0)[len(waddr):]
        a[:] = waddr >> (lgL + 1)
        wa0.next = a[aw:]
        wa1.next = a[aw:]
        wd0.next = rep
        wd1.next = rep
        we0.next = 0
        we1.next = 0
        if we:
            if waddr[lgL]:
                we1.next = 1 << (waddr & (g.lanes - 1))
            else:
                we0.next = 1 << (waddr & (g.lanes - 1))
    return comb


def wports(g):
    """Write ports of a memory: (we, waddr, wdata) or 2 banks of (we_lanes, waddr, wdata)."""
    if g.narrow:
        aw = max(1, log2(g.bank_depth))
        return tuple((Signal(intbv(0)[g.lanes:]), Signal(intbv(0)[aw:]), Signal(intbv(0)[g.lanes * g.width:]))
                     for _ in range(2))
    return Signal(bool(0)), Signal(intbv(0)[g.ibits:]), Signal(intbv(0)[g.width:])


def rports(g):
    """Read ports of a memory: (re, raddr, rdata) or 2 banks of them (a line of lanes)."""
    if g.narrow:
        aw = max(1, log2(g.bank_depth))
        return tuple((Signal(bool(0)), Signal(intbv(0)[aw:]), Signal(intbv(0)[g.lanes * g.width:])) for _ in range(2))
    return Signal(bool(0)), Signal(intbv(0)[g.ibits:]), Signal(intbv(0)[g.width:])


def eports(g):
    """An element port of a memory: (enable, index, element)."""
    return Signal(bool(0)), Signal(intbv(0)[g.ibits:]), Signal(intbv(0)[g.width:])


class SramPorts:
    """The on-chip memories' ports as the modules see them (signal tuples, see :func:`wports`):
    written by the DMAs (``uop_w``, ``inp_w``, ``wgt_w``) and compute (``acc_w``, ``out_w``:
    elements), read by compute (``uop_r``, ``inp_r``, ``wgt_r``, ``acc_r``: elements) and store
    (``out_r``: element or two banks)."""

    def __init__(self, p: RtlParams):
        g = p.mems
        self.uop_w, self.inp_w, self.wgt_w = wports(g["uop"]), wports(g["inp"]), wports(g["wgt"])
        self.uop_r, self.inp_r, self.wgt_r, self.acc_r = (eports(g[m]) for m in ("uop", "inp", "wgt", "acc"))
        self.acc_w, self.out_w = eports(g["acc"]), eports(g["out"])
        self.out_r = rports(g["out"])


@block
def srams(clk, p: RtlParams, s: SramPorts):
    """The SRAMs behind ``s``: a narrow memory (element narrower than a beat) as 2 banks x lanes
    (sram.py) with an element read or write view, a wide one as one simple dual-port RAM."""
    g = p.mems
    insts = []
    for name, wp, rp in (("uop", s.uop_w, s.uop_r), ("inp", s.inp_w, s.inp_r), ("wgt", s.wgt_w, s.wgt_r)):
        if g[name].narrow:
            banks_r = rports(g[name])
            insts += [narrow_sram(clk, g[name], wp, banks_r), elem_read(clk, g[name], *rp, banks_r)]
        else:
            insts.append(ram(clk, *wp, *rp, g[name].depth))
    insts.append(ram(clk, *s.acc_w, *s.acc_r, g["acc"].depth))   # compute forwards its own writes
    if g["out"].narrow:
        banks_w = wports(g["out"])
        insts += [elem_write(g["out"], *s.out_w, banks_w), narrow_sram(clk, g["out"], banks_w, s.out_r)]
    else:
        insts.append(ram(clk, *s.out_w, *s.out_r, g["out"].depth))
    return insts
