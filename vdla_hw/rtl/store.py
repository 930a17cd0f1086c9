"""The store module's datapath: STORE of OUT elements to DRAM through the write side of the
memory port.

Timing (vdla_hw.timing.exec_cycles of a STORE): INSN_OVERHEAD cycles from the start cycle,
a port request held until granted, the write transaction (first beat in the grant cycle);
``done`` in the cycle the port is released. The OUT SRAM is read one beat ahead: the first
beat's element(s) at t_s + 2, the next beat's in every beat cycle, so each beat's data
is ready when the port moves it (the SRAM output holds through burst gaps).
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, intbv

from vdla_hw import isa
from vdla_hw.rtl.decode import field_reg, insn_fields
from vdla_hw.rtl.dma_ports import ErrReport, InsnPort, WriteBeat
from vdla_hw.rtl.memport import BeatBus, PortClient
from vdla_hw.rtl.params import ADDR_BITS, RtlParams, log2
from vdla_hw.rtl.portdesc import desc_elements
from vdla_hw.rtl.rangechk import range_check

IDLE, PRE, REQ, HOLD = range(4)


@block
def store_lane(t, L, lgL, e, lgB, row_addr, row_end, beat, bp, d0, d1, data, strb):
    """DRAM lane ``t`` of a beat of a narrow OUT memory: its element from bank 0 or 1."""
    ew = e * 8
    lge = log2(e)
    B = 1 << lgB

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
    c = p.config
    g = p.mems["out"]
    OVH = c.INSN_OVERHEAD
    B, lgB = p.B, p.lgB
    lge = g.lg_elem
    start, sinsn, done = cmd.start, cmd.insn, cmd.done
    req, desc, grant, rel_me = client.req, client.desc, client.grant, client.rel
    me_beat, beat_idx, row_addr, row_end, row_last = client.beat, beat.idx, beat.row_addr, beat.row_end, beat.row_last
    wdata, wstrb = wbeat.data, wbeat.strb
    rerr, rerr_insn = rerr.bits, rerr.insn
    out_r = tuple((b.re, b.addr, b.data) for b in out) if isinstance(out, tuple) else (out.re, out.addr, out.data)
    OPC = isa.OPCODES["STORE"]

    st = insn_fields(sinsn, p, "STORE")
    phase = Signal(intbv(0)[2:])
    cnt = Signal(intbv(0)[8:])
    dbase = field_reg(st.dram_base)
    ys = field_reg(st.y_size)
    xs = field_reg(st.x_size)
    xst = field_reg(st.x_stride)
    sbase = field_reg(st.sram_base)
    c_idx = field_reg(st.index)
    moves = Signal(bool(0))
    mystart = Signal(bool(0))
    at_req = Signal(bool(0))
    BW = ADDR_BITS - lgB
    RS = 40
    # beat walker: the beat after the one whose data sits in the SRAM output (w_*), the
    # current one (c_*), and the one being looked up this cycle (l_*)
    w_ra, w_re, c_ra, c_re, l_ra, l_re = (Signal(intbv(0)[ADDR_BITS + 1:]) for _ in range(6))
    w_b, w_last, c_b, l_b, l_last = (Signal(intbv(0)[BW + 1:]) for _ in range(5))
    w_sr, c_sr, l_sr = (Signal(intbv(0)[RS:]) for _ in range(3))
    step = Signal(bool(0))
    # decode stage 1 (registers): the first row's bytes and beats, the walker's row geometry
    s_ra, s_end = Signal(intbv(0)[ADDR_BITS + 1:]), Signal(intbv(0)[ADDR_BITS + 1:])
    s_b, s_last = Signal(intbv(0)[BW + 1:]), Signal(intbv(0)[BW + 1:])
    s_sr = Signal(intbv(0)[RS:])
    g_st = Signal(intbv(0)[ADDR_BITS + 1:])      # row stride in bytes
    g_stxb = Signal(intbv(0)[ADDR_BITS + 2:])    # stride + row bytes (next row's end)
    g_stxbm1 = Signal(intbv(0)[ADDR_BITS + 2:])  # stride + row bytes - 1 (next row's last byte)
    g_x = field_reg(st.x_size)
    first1, first = Signal(bool(0)), Signal(bool(0))   # t_s + 1, t_s + 2: the first look-up

    @always_comb
    def look():
        mystart.next = start and st.opcode == OPC
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
    def geom():
        first1.next = mystart
        first.next = first1
        ra = intbv(0)[ADDR_BITS + 1:]
        ra[:] = dbase << lge
        en = intbv(0)[ADDR_BITS + 1:]
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

    # ---- range check (vdla_hw.rtl.rangechk: valid from t_s + DECODE_CYCLES) ---------------
    depth = Signal(intbv(g.depth)[32:])          # undriven: a constant
    elems = Signal(intbv(0)[32:])
    fp = Signal(intbv(0)[40:])
    err = Signal(intbv(0)[len(rerr):])
    bad = Signal(bool(0))

    @always_comb
    def port_out():
        elems.next = dram_bytes >> lge
        req.next = ((at_req and moves) or phase == REQ) and not bad
        done.next = (at_req and not moves) or (phase == HOLD and rel_me)
        rerr_insn.next = c_idx
        if at_req and moves:
            rerr.next = err
        else:
            rerr.next = 0

    @always_seq(clk.posedge, reset=rst)
    def seq():
        # at_req: the cycle phase is PRE with its count at 0 (a register; OVH >= 2: never right after a start)
        at_req.next = phase == PRE and cnt == 1 and not mystart
        if mystart:
            phase.next = PRE
            cnt.next = OVH - 1
            dbase.next = st.dram_base
            ys.next = st.y_size
            xs.next = st.x_size
            xst.next = st.x_stride
            sbase.next = st.sram_base
            c_idx.next = st.index
            moves.next = st.x_size != 0 and st.y_size != 0
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
        if step:
            c_ra.next = l_ra
            c_re.next = l_re
            c_b.next = l_b
            c_sr.next = l_sr
            if l_b == l_last:
                # the next row: its start, end and beats from the precomputed row geometry
                nra = intbv(0)[ADDR_BITS + 2:]
                nra[:] = l_ra + g_st
                nre = intbv(0)[ADDR_BITS + 2:]
                nre[:] = l_ra + g_stxb
                nla = intbv(0)[ADDR_BITS + 2:]
                nla[:] = l_ra + g_stxbm1
                w_ra.next = nra[ADDR_BITS:]
                w_re.next = nre[ADDR_BITS + 1:]
                w_b.next = nra[ADDR_BITS:lgB]
                w_last.next = nla[ADDR_BITS + 1:lgB]
                w_sr.next = l_sr + g_x
            else:
                w_ra.next = l_ra
                w_re.next = l_re
                w_b.next = l_b + 1
                w_last.next = l_last
                w_sr.next = l_sr

    insts = [look, port_out, seq, geom, desc_elements(clk, rst, desc, ys, dbase, xst, xs, lge),
             range_check(clk, rst, ys, xs, sbase, depth, dbase, ys, xs, xst, elems, fp, err, bad)]

    if not g.narrow:
        re, ra, rd = out_r
        EB = g.elem_bytes // B
        ib = g.ibits

        @always_comb
        def rd_addr():
            re.next = step
            a = intbv(0)[RS + ADDR_BITS:]
            a[:] = l_sr + (((l_b << lgB) - l_ra) >> lge)
            ra.next = a[ib:]

        KW = max(1, log2(EB)) + 1

        @always_comb
        def data_out():
            k = intbv(0)[KW:]
            k[:] = (((c_b << lgB) - c_ra) >> lgB) & (EB - 1)
            tmp = intbv(0)[len(rd):]
            tmp[:] = rd >> (k * B * 8)
            wdata.next = tmp[B * 8:]
            wstrb.next = (1 << B) - 1
        insts += [rd_addr, data_out]
    else:
        (re0, ra0, rd0), (re1, ra1, rd1) = out_r
        L, lgL = g.lanes, log2(g.lanes)
        e = g.elem_bytes
        aw = len(ra0)
        bp = Signal(intbv(0)[RS + ADDR_BITS:])
        lbp = Signal(intbv(0)[RS + ADDR_BITS:])
        lineA = Signal(intbv(0)[RS + ADDR_BITS:])

        @always_comb
        def lbias():
            bb = intbv(0)[ADDR_BITS + 1:]
            bb[:] = l_b << lgB
            lbp.next = l_sr + L + (bb >> lge) - (l_ra >> lge)
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

        datas = [Signal(intbv(0)[e * 8:]) for _ in range(L)]
        strbs = [Signal(intbv(0)[e:]) for _ in range(L)]
        insts += [lbias, rd_addr, cbias]
        insts += [store_lane(t, L, lgL, e, lgB, c_ra, c_re, c_b, bp, rd0, rd1, datas[t], strbs[t]) for t in range(L)]
        dcat = ConcatSignal(*reversed(datas)) if L > 1 else datas[0]
        scat = ConcatSignal(*reversed(strbs)) if L > 1 else strbs[0]

        @always_comb
        def data_out():
            wdata.next = dcat
            wstrb.next = scat
        insts.append(data_out)
    return insts
