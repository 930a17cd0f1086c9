"""The store module's datapath: STORE of OUT elements to DRAM through the write side of the
memory port.

Timing (vdla_hw.timing.exec_cycles of a STORE): INSN_OVERHEAD cycles from the start cycle,
a port request held until granted, the write transaction (first beat in the grant cycle);
``done`` in the cycle the port is released. The OUT SRAM is read one beat ahead: the first
beat's element(s) at t_s + 2, the next beat's in every beat cycle, so each beat's data
is ready when the port moves it (the SRAM output holds through burst gaps).

Blocks: the fields latch (shared with the read DMA, :func:`vdla_hw.rtl.dma_decode.transfer_latch`),
:func:`store_geom` (the first beat and the row geometry, registered), :func:`store_control`
(phases, request, done, range-check report), and the read side (:mod:`vdla_hw.rtl.store_read`).
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw import isa
from vdla_hw.rtl.compute_ports import count_bits
from vdla_hw.rtl.decode import insn_fields
from vdla_hw.rtl.dma_decode import TransferFields, transfer_latch
from vdla_hw.rtl.dma_ports import ErrReport, InsnPort, WriteBeat, vec
from vdla_hw.rtl.memport import BeatBus, PortClient
from vdla_hw.rtl.params import ADDR_BITS, RtlParams
from vdla_hw.rtl.portdesc import desc_elements
from vdla_hw.rtl.rangechk import range_check
from vdla_hw.rtl.store_read import BeatRef, RowGeom, beat_walk, narrow_read, wide_read

IDLE, PRE, REQ, HOLD = range(4)
OPC_STORE = isa.OPCODES["STORE"]


@block
def store_geom(clk, rst, p: RtlParams, mystart, f: TransferFields, first, s: BeatRef, g: RowGeom):
    """``first``: the first look-up cycle, t_s + 2; ``s``: the first beat (row 0's bytes,
    beats and SRAM element) and ``g`` the row geometry, registered from the fields (valid from
    t_s + 2)."""
    lge, lgB = p.mems["out"].lg_elem, p.lgB
    first1 = Signal(bool(0))             # t_s + 1
    dbase, xs, xst, sbase = f.dram_base, f.x_size, f.x_stride, f.sram_base
    s_ra, s_end, s_b, s_last, s_sr = s.ra, s.re, s.b, s.last, s.sr
    g_st, g_stxb, g_stxbm1, g_x = g.stride, g.next_end, g.next_last, g.elems
    AW = ADDR_BITS

    @always_seq(clk.posedge, reset=rst)
    def geom():
        first1.next = mystart
        first.next = first1
        ra = intbv(0)[AW + 1:]
        ra[:] = dbase << lge
        en = intbv(0)[AW + 1:]
        en[:] = (dbase + xs) << lge
        s_ra.next = ra
        s_end.next = en
        s_b.next = ra >> lgB
        s_last.next = (en - 1) >> lgB
        s_sr.next = sbase
        g_st.next = xst << lge
        g_stxb.next = (xst << lge) + (xs << lge)
        g_stxbm1.next = (xst << lge) + (xs << lge) - 1
        g_x.next = xs
    return geom


@block
def store_control(clk, rst, p: RtlParams, mystart, done, client: PortClient, f: TransferFields, err, bad,
                  rerr: ErrReport):
    """A STORE's phases: PRE (the decode cycles), REQ (the port request, held until granted),
    HOLD (the write transaction, until ``client.rel``: the retire). In the earliest request cycle
    (``at_req``) a failing range check (``err``/``bad``) reports in ``rerr`` and ends the STORE.
    ``client.req`` and ``done`` come from registers only."""
    OVH = p.config.INSN_OVERHEAD
    req, grant, rel_me = client.req, client.grant, client.rel
    rbits, rinsn, c_idx, moves = rerr.bits, rerr.insn, f.index, f.moves
    phase = vec(count_bits(HOLD))
    cnt = vec(count_bits(OVH - 1))       # PRE: decode cycles left - 1
    at_req = Signal(bool(0))

    @always_comb
    def port_out():
        req.next = ((at_req and moves) or phase == REQ) and not bad
        done.next = (at_req and not moves) or (phase == HOLD and rel_me)
        rinsn.next = c_idx
        if at_req and moves:
            rbits.next = err
        else:
            rbits.next = 0

    @always_seq(clk.posedge, reset=rst)
    def seq():
        # at_req: the cycle phase is PRE with its count at 0 (a register; OVH >= 2: never right after a start)
        at_req.next = phase == PRE and cnt == 1 and not mystart
        if mystart:
            phase.next = PRE
            cnt.next = OVH - 1
        elif phase == PRE:
            if at_req:
                if not moves or bad:
                    phase.next = IDLE
                elif grant:
                    phase.next = HOLD
                else:
                    phase.next = REQ
            else:
                cnt.next = cnt - 1
        elif phase == REQ:
            if grant:
                phase.next = HOLD
        elif phase == HOLD:
            if rel_me:
                phase.next = IDLE
    return port_out, seq


@block
def store(clk, rst, p: RtlParams, cmd: InsnPort, client: PortClient, beat: BeatBus, wbeat: WriteBeat, out,
          dram_bytes, rerr: ErrReport):
    """``cmd``: the STORE's start, entry and done; ``client``: the store's memory-port client;
    ``beat``: where the port's current beat lies; ``wbeat``: the beat's data and byte strobes.
    ``out``: the OUT SRAM's read side (:func:`vdla_hw.rtl.dma_ports.sram_read`: one read port
    for a wide memory, one per bank for a narrow one).

    The start cycle only registers the fields. Range check (vdla_hw.program.check_transfer,
    :mod:`vdla_hw.rtl.rangechk`): in the earliest request cycle t_s + INSN_OVERHEAD ``rerr.bits``
    carries ERROR ``sram_range`` when sram_base + y_size * x_size passes the OUT depth, else
    ``dram_range`` when the DRAM rows pass ``dram_bytes``, with ``rerr.insn`` the index; the
    request is then never raised (no beat moves). ``req`` and ``done`` depend on registers
    only. The walker's first look-up (the first beat's OUT elements) is at t_s + 2, from the
    row geometry registered in the decode cycles, before the grant (t_s + INSN_OVERHEAD at the
    earliest)."""
    g = p.mems["out"]
    st = insn_fields(cmd.insn, p, "STORE")
    f = TransferFields(st)
    mystart, first, step = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    pos_bits = len(f.y_size) + len(f.x_size) + 1        # SRAM elements: sram_base + y_size * x_size
    first_beat, look, cur = (BeatRef(p, pos_bits) for _ in range(3))
    rows = RowGeom(f.x_size)
    # range check (vdla_hw.rtl.rangechk: valid from t_s + DECODE_CYCLES)
    depth = Signal(intbv(g.depth)[g.depth.bit_length():])      # undriven: a constant
    elems = vec(len(dram_bytes))
    fp = vec(len(f.y_size) + len(f.x_size))
    err, bad = vec(len(rerr.bits)), Signal(bool(0))
    start, opcode, lge = cmd.start, st.opcode, g.lg_elem

    @always_comb
    def decode():
        mystart.next = start and opcode == OPC_STORE
        elems.next = dram_bytes >> lge

    insts = [decode, transfer_latch(clk, rst, mystart, st, f), store_geom(clk, rst, p, mystart, f, first, first_beat,
                                                                          rows),
             store_control(clk, rst, p, mystart, cmd.done, client, f, err, bad, rerr),
             beat_walk(clk, rst, p, first, client.beat, first_beat, rows, step, look, cur),
             desc_elements(clk, rst, client.desc, f.y_size, f.dram_base, f.x_stride, f.x_size, lge),
             range_check(clk, rst, f.y_size, f.x_size, f.sram_base, depth, f.dram_base, f.y_size, f.x_size,
                         f.x_stride, elems, fp, err, bad)]
    if g.narrow:
        insts.append(narrow_read(g, p.lgB, step, look, cur, out, wbeat))
    else:
        insts.append(wide_read(g, p.lgB, step, look, cur, out, wbeat))
    return insts
