"""LOAD data movers: the read DMA shared by the load module (inp, wgt) and compute (uop, acc).

Timing (vdla_hw.timing.exec_cycles of a LOAD): from the start cycle t_s, INSN_OVERHEAD cycles
of decode, then a port request (held until granted), the port transaction, then one cycle per
padding element; ``done`` is high in the retire cycle. Data lands in SRAM as beats arrive;
padding zeros are written in cycles without a beat, from the cycle after the earliest request
cycle (the padding iterator's row bases come out of the decode pipeline). There are always
enough before retire: from the grant g (at or after the request cycle) the port is held P
cycles, released at g + P, and the retire is at g + P + pad; the B beats move in
[g + 1, g + P - 1] and P >= B + MEM_LATENCY + 1 (the first beat comes MEM_LATENCY >= 1 cycles
after the AR, raised at g + 1 at the earliest), so [g + 1, g + P + pad - 1] holds at least
pad + MEM_LATENCY beat-free cycles.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, concat, intbv

from vdla_hw.config import MEM_TYPES
from vdla_hw.rtl.decode import field_reg, insn_fields
from vdla_hw.rtl.dma_ports import ErrReport, InsnPort
from vdla_hw.rtl.memport import BeatBus, PortClient
from vdla_hw.rtl.params import ADDR_BITS, DECODE_CYCLES, MemGeom, RtlParams, log2
from vdla_hw.rtl.portdesc import desc_elements
from vdla_hw.rtl.rangechk import range_check

IDLE, PRE, REQ, HOLD, POST = range(5)


@block
def wide_writer(clk, rst, g: MemGeom, sel, me_beat, row_last, rdata, sr, k, row_sram, col, pad_we, pad_addr,
                we, waddr, wdata, lgB):
    """Element writes of a memory whose element is >= one beat: the last beat of an element
    writes concat(beat, previous beats)."""
    EB = g.elem_bytes // (1 << lgB)
    top = EB - 1
    BW = len(rdata)
    ib = g.ibits

    @always_comb
    def comb():
        a = intbv(0)[len(row_sram) + 1:]
        a[:] = row_sram + col
        we.next = 0
        waddr.next = pad_addr[ib:]
        wdata.next = 0
        if sel:
            if me_beat and k == top:
                we.next = 1
                waddr.next = a[ib:]
                if EB == 1:
                    wdata.next = rdata
                else:
                    wdata.next = concat(rdata, sr[len(sr):len(sr) - top * BW])
            elif pad_we:
                we.next = 1
    return comb


@block
def narrow_lane(s, g: MemGeom, bpl, lo_t, hi_t, rdata, we0, we1, dlane):
    """SRAM lane ``s`` of a narrow memory during a beat: which DRAM lane feeds it, whether it is
    in the row, and in which bank (line parity) it lands. ``bpl``: the low lgL + 1 bits of the
    beat's line bias (all this needs of it)."""
    L, lgL, ew = g.lanes, log2(g.lanes), g.width

    @always_comb
    def comb():
        t = intbv(0)[lgL:]
        t[:] = (s + L - (bpl & (L - 1))) & (L - 1)
        q = intbv(0)[lgL + 2:]
        q[:] = bpl + t
        tmp = intbv(0)[len(rdata):]
        tmp[:] = rdata >> (t * ew)
        dlane.next = tmp[ew:]
        we0.next = 0
        we1.next = 0
        if t >= lo_t and t < hi_t:
            if ((q >> lgL) & 1) == 1:   # line = (q >> lgL) - 1 is even
                we0.next = 1
            else:
                we1.next = 1
    return comb


@block
def narrow_writer(clk, rst, g: MemGeom, sel, me_beat, beat_idx, row_addr, row_end, row_last, rdata, row_sram,
                  pad_we, pad_addr, ports, lgB):
    """Beat writes of a memory whose element is narrower than a beat: up to two lines (one per
    bank) per beat, each lane with its own write enable; padding writes one lane. The lanes in
    the row come from the low address bits only: a row starts inside the beat only on its first
    beat and ends inside it only on its last (``row_last``)."""
    B = 1 << lgB
    L, lgL, lge = g.lanes, log2(g.lanes), g.lg_elem
    (we0, a0, d0), (we1, a1, d1) = ports
    aw = len(a0)
    PW = len(row_sram) + 2
    bp = Signal(intbv(0)[PW + ADDR_BITS:])
    bpl = Signal(intbv(0)[lgL + 1:])
    lo_t = Signal(intbv(0)[lgL + 1:])
    hi_t = Signal(intbv(0)[lgL + 1:])
    lineA = Signal(intbv(0)[PW + ADDR_BITS:])
    lanes0 = [Signal(bool(0)) for _ in range(L)]
    lanes1 = [Signal(bool(0)) for _ in range(L)]
    dl = [Signal(intbv(0)[g.width:]) for _ in range(L)]
    insts = [narrow_lane(s, g, bpl, lo_t, hi_t, rdata, lanes0[s], lanes1[s], dl[s]) for s in range(L)]
    m0 = Signal(intbv(0)[L:])
    m1 = Signal(intbv(0)[L:])
    dcat = Signal(intbv(0)[B * 8:])
    if L > 1:
        from myhdl import ConcatSignal
        m0 = ConcatSignal(*reversed(lanes0))
        m1 = ConcatSignal(*reversed(lanes1))
        dcat = ConcatSignal(*reversed(dl))
    else:
        @always_comb
        def one():
            m0.next = lanes0[0]
            m1.next = lanes1[0]
            dcat.next = dl[0]
        insts.append(one)

    @always_comb
    def lanes():
        bb = intbv(0)[ADDR_BITS + 1:]
        bb[:] = beat_idx << lgB
        ra_lo = intbv(0)[lgB:]
        ra_lo[:] = row_addr & (B - 1)
        re_lo = intbv(0)[lgB:]
        re_lo[:] = row_end & (B - 1)
        if beat_idx == (row_addr >> lgB):       # the row's first beat: starts at its byte ra_lo
            lo_t.next = ra_lo >> lge
        else:
            lo_t.next = 0
        if row_last and re_lo != 0:             # the row's last beat, ending inside it
            hi_t.next = re_lo >> lge
        else:
            hi_t.next = L
        bp.next = row_sram + L + (bb >> lge) - (row_addr >> lge)
        lo = intbv(0)[lgL + 2:]
        lo[:] = (row_sram + L + ((beat_idx & 1) << lgL) - (row_addr >> lge)) & (2 * L - 1)
        bpl.next = lo[lgL + 1:]

    @always_comb
    def linea():
        lineA.next = ((bp + lo_t) >> lgL) - 1

    @always_comb
    def comb():
        pline = intbv(0)[len(pad_addr):]
        pline[:] = pad_addr >> lgL
        we0.next = 0
        we1.next = 0
        d0.next = dcat
        d1.next = dcat
        la = intbv(0)[len(lineA):]
        la[:] = lineA >> 1
        lb = intbv(0)[len(lineA):]
        lb[:] = (lineA + 1) >> 1
        pl = intbv(0)[len(pad_addr):]
        pl[:] = pline >> 1
        if lineA[0] == 0:
            a0.next = la[aw:]
            a1.next = lb[aw:]
        else:
            a1.next = la[aw:]
            a0.next = lb[aw:]
        if sel:
            if me_beat:
                we0.next = m0
                we1.next = m1
            elif pad_we:
                d0.next = 0
                d1.next = 0
                if pline[0] == 0:
                    we0.next = 1 << (pad_addr & (L - 1))
                    a0.next = pl[aw:]
                else:
                    we1.next = 1 << (pad_addr & (L - 1))
                    a1.next = pl[aw:]
    return insts, lanes, linea, comb


@block
def dma_read(clk, rst, p: RtlParams, mems, cmd: InsnPort, client: PortClient, beat: BeatBus, rdata, sram: dict,
             dram_bytes, rerr: ErrReport):
    """Read DMA for LOAD instructions of the memory types ``mems``.

    ``cmd.start`` (with the entry ``cmd.insn``) begins a LOAD; ``cmd.done`` is high in its retire
    cycle. ``client``: this master's memory-port client; ``beat``: where the port's current beat
    lies (this master's when ``client.beat``); ``rdata`` the beat's data. ``sram[mem]``: the
    write side of each memory (:func:`vdla_hw.rtl.dma_ports.sram_write`).

    The start cycle only registers the fields; sums, products and the range check
    (vdla_hw.program.check_transfer, :mod:`vdla_hw.rtl.rangechk`) fill the decode cycles. In
    the earliest request cycle t_s + INSN_OVERHEAD (INSN_OVERHEAD >= DECODE_CYCLES) ``rerr.bits``
    carries ERROR ``sram_range`` or ``dram_range`` for a failing transfer, with ``rerr.insn`` the
    instruction's index; the request is then never raised (no beat moves) and the DMA goes
    idle. ``req`` and ``done`` depend on registers only. The padding iterator starts in that
    cycle too (its row bases are products of the decode pipeline).
    """
    c = p.config
    start, sinsn, done = cmd.start, cmd.insn, cmd.done
    req, desc, grant, rel_me = client.req, client.desc, client.grant, client.rel
    me_beat, beat_idx, row_addr, row_end, row_last = client.beat, beat.idx, beat.row_addr, beat.row_end, beat.row_last
    rerr, rerr_insn = rerr.bits, rerr.insn
    sram_ports = {m: tuple((b.we, b.addr, b.data) for b in w) if isinstance(w, tuple) else (w.we, w.addr, w.data)
                  for m, w in sram.items()}
    OVH = c.INSN_OVERHEAD
    assert OVH >= DECODE_CYCLES, "rtl_params refuses this configuration"

    ld = insn_fields(sinsn, p, "LOAD")
    codes = [MEM_TYPES.index(m) for m in mems]
    geoms = [p.mems[m] for m in mems]
    lges = [g.lg_elem for g in geoms]
    ebs = [max(1, g.elem_bytes // p.B) for g in geoms]
    maxeb = max(ebs)
    code0, code1 = codes[0], codes[1]
    lge0, lge1 = lges[0], lges[1]
    eb0, eb1 = ebs[0] - 1, ebs[1] - 1

    phase = Signal(intbv(0)[3:])
    cnt = Signal(intbv(0)[32:])          # POST: padding cycles left - 1
    cz = Signal(bool(0))                 # cnt == 0 (a register: done comes from registers)
    dcnt = Signal(intbv(0)[log2(OVH + 1) + 1:])   # PRE: decode cycles left - 1
    mt = field_reg(ld.memory_type)
    sbase = field_reg(ld.sram_base)
    dbase = field_reg(ld.dram_base)
    ys = field_reg(ld.y_size)
    xs = field_reg(ld.x_size)
    xst = field_reg(ld.x_stride)
    top = field_reg(ld.y_pad_top)
    bot = field_reg(ld.y_pad_bottom)
    left = field_reg(ld.x_pad_left)
    right = field_reg(ld.x_pad_right)
    c_idx = field_reg(ld.index)
    moves = Signal(bool(0))
    lge = Signal(intbv(0)[4:])
    ebm = Signal(intbv(0)[8:])
    sel0 = Signal(bool(0))
    sel1 = Signal(bool(0))
    # decode pipeline (rangechk's stages): stage 1 sums, stage 2 products, stage 3 padding bases
    RS = 40
    # footprint sides: 16-bit sizes plus two 4-bit pads fit 17 bits, so each product is one
    # DSP48E1 (17 x 17 unsigned inside its 25 x 18 signed multiplier)
    SW = len(ld.y_size) + 1
    assert 2 * ((1 << len(ld.y_pad_top)) - 1) + (1 << len(ld.y_size)) - 1 < (1 << SW)
    rows_s, cols_s = Signal(intbv(0)[SW:]), Signal(intbv(0)[SW:])      # sums of field registers
    cols = Signal(intbv(0)[SW:])         # stage 1: footprint columns, rows
    rows = Signal(intbv(0)[SW:])
    topys = Signal(intbv(0)[SW:])        # stage 1: y_pad_top + y_size, x_pad_left + x_size
    leftxs = Signal(intbv(0)[SW:])
    top1, ys1, xs1, left1, sb1 = (Signal(intbv(0)[len(s_):]) for s_ in (top, ys, xs, left, sbase))
    npz = Signal(bool(0))                # stage 1: no padding at all
    fp = Signal(intbv(0)[RS:])           # stage 2: rows * cols
    yx2, topc2, botc2 = (Signal(intbv(0)[RS:]) for _ in range(3))
    left2, sb2 = Signal(intbv(0)[len(left):]), Signal(intbv(0)[len(sbase):])
    npadm1 = Signal(intbv(0)[32:])       # stage 3: padding elements - 1
    np1 = Signal(bool(0))                # stage 3: exactly one padding element
    s_first = Signal(intbv(0)[RS:])      # stage 3: SRAM element of the first data element
    s_bot = Signal(intbv(0)[RS:])        # stage 3: SRAM element of the first bottom-padding row
    err = Signal(intbv(0)[len(rerr):])
    bad = Signal(bool(0))
    dep = Signal(intbv(0)[32:])
    elems = Signal(intbv(0)[32:])
    at_req = Signal(bool(0))             # the earliest request cycle (decode over), a register
    # data write position
    row_sram = Signal(intbv(0)[RS:])
    col = Signal(intbv(0)[RS:])
    k = Signal(intbv(0)[8:])
    SRW = max(1, (maxeb - 1) * p.B * 8)
    sr = Signal(intbv(0)[SRW:])
    # padding iterator
    pr = Signal(intbv(0)[SW:])
    pc = Signal(intbv(0)[SW:])
    prb = Signal(intbv(0)[RS:])
    pact = Signal(bool(0))
    pad_we = Signal(bool(0))
    pad_addr = Signal(intbv(0)[RS:])
    dep0, dep1 = geoms[0].depth, geoms[1].depth

    @always_comb
    def dec():
        rows_s.next = top + ys + bot
        cols_s.next = left + xs + right
        sel0.next = mt == code0
        sel1.next = mt == code1
        if mt == code0:
            lge.next = lge0
            ebm.next = eb0
            dep.next = dep0
        else:
            lge.next = lge1
            ebm.next = eb1
            dep.next = dep1

    @always_comb
    def dec2():
        elems.next = dram_bytes >> lge

    @always_seq(clk.posedge, reset=rst)
    def stages():
        # stage 1
        rows.next = rows_s
        cols.next = cols_s
        topys.next = top + ys
        leftxs.next = left + xs
        top1.next = top
        ys1.next = ys
        xs1.next = xs
        left1.next = left
        sb1.next = sbase
        npz.next = top == 0 and bot == 0 and left == 0 and right == 0
        # stage 2
        yx2.next = ys1 * xs1
        topc2.next = top1 * cols
        botc2.next = topys * cols
        left2.next = left1
        sb2.next = sb1
        # stage 3
        npadm1.next = (fp - yx2 - 1) & 0xFFFFFFFF
        np1.next = fp == yx2 + 1
        s_first.next = sb2 + topc2 + left2
        s_bot.next = sb2 + botc2

    @always_comb
    def port_out():
        req.next = 0
        done.next = 0
        rerr.next = 0
        rerr_insn.next = c_idx
        if ((at_req and moves) or phase == REQ) and not bad:
            req.next = 1
        if at_req and moves:
            rerr.next = err
        if at_req and not moves:
            done.next = 1
        if phase == HOLD and rel_me and npz:
            done.next = 1
        if phase == POST and cz:
            done.next = 1

    @always_comb
    def padw():
        pad_we.next = pact and not me_beat
        pad_addr.next = prb + pc

    @always_seq(clk.posedge, reset=rst)
    def seq():
        # at_req: the cycle phase is PRE with its count at 0 (a register; OVH >= 2: never right after a start)
        at_req.next = phase == PRE and dcnt == 1 and not start
        if start:
            phase.next = PRE
            dcnt.next = OVH - 1
            mt.next = ld.memory_type
            sbase.next = ld.sram_base
            dbase.next = ld.dram_base
            ys.next = ld.y_size
            xs.next = ld.x_size
            xst.next = ld.x_stride
            top.next = ld.y_pad_top
            bot.next = ld.y_pad_bottom
            left.next = ld.x_pad_left
            right.next = ld.x_pad_right
            c_idx.next = ld.index
            moves.next = ld.x_size != 0 and ld.y_size != 0
        else:
            if phase == PRE:
                if at_req:
                    if not moves:
                        phase.next = IDLE
                    elif grant:
                        phase.next = HOLD
                    else:
                        phase.next = REQ
                else:
                    dcnt.next = dcnt - 1
            elif phase == REQ:
                if grant:
                    phase.next = HOLD
            elif phase == HOLD:
                if rel_me:
                    if npz:
                        phase.next = IDLE
                    else:
                        phase.next = POST
                        cnt.next = npadm1
                        cz.next = np1
            elif phase == POST:
                if cz:
                    phase.next = IDLE
                else:
                    cnt.next = cnt - 1
                    cz.next = cnt == 1
            if at_req and moves and bad:
                phase.next = IDLE

    @always_seq(clk.posedge, reset=rst)
    def walk():
        # (no start term: beats and padding writes of an instruction end by its retire, the
        # earliest next start, and both restart from the request cycle)
        # data position (the first row's SRAM base comes out of the decode pipeline)
        if at_req:
            row_sram.next = s_first
            col.next = 0
            k.next = 0
        elif me_beat:
            if k == ebm:
                k.next = 0
                col.next = col + 1
            else:
                k.next = k + 1
            if row_last:
                row_sram.next = row_sram + cols
                col.next = 0
                k.next = 0
        # padding iterator: starts at the request cycle (first padding element), then the
        # next padding element after (pr, pc) in every beat-free cycle
        if at_req:
            prb.next = sbase
            pr.next = 0
            pc.next = 0
            pact.next = 0
            if moves and not bad and not npz:
                pact.next = 1
                if top == 0 and left == 0:
                    if right != 0:
                        pc.next = xs
                    else:
                        pr.next = ys
                        prb.next = s_bot
        elif pad_we:
            datarow = pr >= top and pr < topys
            if pc + 1 < cols and (not datarow or pc + 1 < left or pc + 1 >= leftxs):
                pc.next = pc + 1
            elif datarow and pc + 1 == left and right != 0:
                pc.next = leftxs
            else:
                nr = pr + 1
                ndata = nr >= top and nr < topys
                if nr == rows:
                    pact.next = 0
                elif not ndata or left != 0:
                    pr.next = nr
                    pc.next = 0
                    prb.next = prb + cols
                elif right != 0:
                    pr.next = nr
                    pc.next = xs
                    prb.next = prb + cols
                elif bot != 0:
                    pr.next = topys
                    pc.next = 0
                    prb.next = s_bot
                else:
                    pact.next = 0

    insts = [dec, dec2, stages, port_out, padw, seq, walk, desc_elements(clk, rst, desc, ys, dbase, xst, xs, lge),
             range_check(clk, rst, rows_s, cols_s, sbase, dep, dbase, ys, xs, xst, elems, fp, err, bad)]
    BW8 = p.B * 8
    if SRW > BW8:
        @always_seq(clk.posedge, reset=rst)
        def shift():
            if me_beat:
                sr.next = concat(rdata, sr[SRW:BW8])
        insts.append(shift)
    elif SRW == BW8:
        @always_seq(clk.posedge, reset=rst)
        def shift1():
            if me_beat:
                sr.next = rdata
        insts.append(shift1)
    sels = [sel0, sel1]
    for i, (m, g) in enumerate(zip(mems, geoms)):
        if g.narrow:
            insts.append(narrow_writer(clk, rst, g, sels[i], me_beat, beat_idx, row_addr, row_end, row_last, rdata,
                                       row_sram, pad_we, pad_addr, sram_ports[m], p.lgB))
        else:
            we, wa, wd = sram_ports[m]
            insts.append(wide_writer(clk, rst, g, sels[i], me_beat, row_last, rdata, sr, k, row_sram, col, pad_we,
                                     pad_addr, we, wa, wd, p.lgB))
    return insts
