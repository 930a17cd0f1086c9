"""The fetch module: reads the instruction stream through the memory port in chunks of
timing.fetch_chunk instructions and routes each to its module's command queue.

Timing (vdla_hw.timing, "fetch"): a chunk is requested at cycle 0 and again FETCH_CYCLES_PER_INSN
cycles after the previous chunk's last push; routing starts in the cycle the port is released
(the chunk has arrived), one instruction per FETCH_CYCLES_PER_INSN cycles, waiting while the
target queue looks full. Each queue entry is {instruction index, instruction}.
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, concat, intbv

from vdla_hw import isa, regmap, timing
from vdla_hw.config import MEM_TYPES
from vdla_hw.rtl.decode import INSN_BITS, INSN_BYTES
from vdla_hw.rtl.dma_ports import ErrReport, QueuePush  # noqa: F401 (QueuePush: docs)
from vdla_hw.rtl.memport import PortClient
from vdla_hw.rtl.compute_ports import count_bits
from vdla_hw.rtl.params import ADDR_BITS, INDEX_BITS, RtlParams, log2
from vdla_hw.rtl.portdesc import ROWS_BITS, desc_pack

REQ, WAIT, ROUTE, DONE = range(4)
TO_LOAD, TO_COMPUTE, TO_STORE, TO_BAD = range(4)      # where an instruction is routed


@block
def fetch_lane(clk, j, IB, lgIB, me_beat, bcnt, rdata, slot, lane, slots):
    """Beat j of every buffered instruction (beat k of the chunk lands in lane k % IB)."""
    mem = [Signal(intbv(0)[len(rdata):]) for _ in range(slots)]

    @always(clk.posedge)
    def write():
        if me_beat and (bcnt & (IB - 1)) == j:
            mem[int(bcnt >> lgIB)].next = rdata

    @always_comb
    def read():
        # slot runs one past the last entry once a whole chunk is routed (the value is then
        # unused): read only inside the buffer
        if slot < slots:
            lane.next = mem[int(slot)]
        else:
            lane.next = 0
    return write, read


@block
def route_mem(clk, p: RtlParams, me_beat, bcnt, rdata, slot, target, bad, slots, IB, lgIB):
    """Where each buffered instruction goes, decoded from its first beat as it arrives (its
    opcode and memory type lie in that beat): ``target`` 0 load, 1 compute, 2 store, 3 bad, with
    ``bad`` its ERROR bit, for the instruction at ``slot``. Routing then reads two bits, not
    the instruction: the buffer holds {bad memory type (else bad opcode), target}."""
    OPC_LOAD, OPC_STORE = isa.OPCODES["LOAD"], isa.OPCODES["STORE"]
    MAXOP = max(isa.OPCODES.values())
    INP, WGT = MEM_TYPES.index("inp"), MEM_TYPES.index("wgt")
    E_OP, E_MT = regmap.ERROR_BITS["bad_opcode"], regmap.ERROR_BITS["bad_memory_type"]
    lay = isa.layout("LOAD", p.config)      # opcode and memory_type: same place in every kind
    OP, MT = lay["opcode"], lay["memory_type"]
    assert OP.lo + OP.width <= len(rdata) and MT.lo + MT.width <= len(rdata), "fields outside the first beat"
    OPM, MTM = (1 << OP.width) - 1, (1 << MT.width) - 1
    TW = len(target)
    BAD_MT = (1 << TW) | TO_BAD
    code = Signal(intbv(0)[TW + 1:])        # {bad memory type (else bad opcode), target}
    mem = [Signal(intbv(0)[len(code):]) for _ in range(slots)]

    @always_comb
    def dec():
        op = intbv(0)[OP.width:]
        op[:] = (rdata >> OP.lo) & OPM
        mt = intbv(0)[MT.width:]
        mt[:] = (rdata >> MT.lo) & MTM
        code.next = TO_COMPUTE
        if op > MAXOP:
            code.next = TO_BAD
        elif (op == OPC_LOAD or op == OPC_STORE) and mt >= len(MEM_TYPES):
            code.next = BAD_MT
        elif op == OPC_STORE:
            code.next = TO_STORE
        elif op == OPC_LOAD and (mt == INP or mt == WGT):
            code.next = TO_LOAD

    @always(clk.posedge)
    def write():
        if me_beat and (bcnt & (IB - 1)) == 0:
            mem[int(bcnt >> lgIB)].next = code

    @always_comb
    def read():
        c = intbv(0)[TW + 1:]
        c[:] = 0
        if slot < slots:        # past the last entry (a whole chunk routed): unused, not read
            c[:] = mem[int(slot)]
        target.next = c[TW:]
        if c[TW:] != TO_BAD:
            bad.next = 0
        elif c[TW]:
            bad.next = E_MT
        else:
            bad.next = E_OP
    return dec, write, read


@block
def fetch(clk, rst, p: RtlParams, insn_addr, insn_count, client: PortClient, rdata, queues, qdata,
          rerr: ErrReport, qstall, chunk_index):
    """``insn_addr``/``insn_count``: the INSN_ADDR and INSN_COUNT registers; ``client``: fetch's
    memory-port client, ``rdata`` the beat's data. ``queues``: the (load, compute, store) command
    queues' :class:`QueuePush`; ``qdata`` the entry pushed. ``rerr``: ERROR bits (bad opcode /
    memory type) raised when routing, with the instruction's index.
    ``qstall``: an instruction is due to be pushed this cycle but its queue has no room.
    ``chunk_index``: index of the first instruction of the chunk being read (or last read)."""
    c = p.config
    C = timing.fetch_chunk(c)
    STEP = c.FETCH_CYCLES_PER_INSN
    IB = INSN_BYTES // p.B          # beats per instruction
    lgIBY = log2(INSN_BYTES)
    lgIB = log2(IB)
    req, desc, grant, rel_me, me_beat = client.req, client.desc, client.grant, client.rel, client.beat
    (room_l, push_l), (room_c, push_c), (room_s, push_s) = ((q.room, q.push) for q in queues)
    err, err_insn = rerr.bits, rerr.insn

    NW = len(insn_count)            # instruction indices and counts: INSN_COUNT's width
    state = Signal(intbv(0)[count_bits(DONE):])
    cbase = Signal(intbv(0)[NW:])
    rpos = Signal(intbv(0)[NW:])
    rend = Signal(intbv(0)[NW:])
    wcnt = Signal(intbv(0)[count_bits(STEP - 1):])
    bcnt = Signal(intbv(0)[count_bits(C * IB):])      # beats of the chunk so far
    slot = Signal(intbv(0)[max(1, log2(C)) + 1:])
    routing = Signal(bool(0))
    want = Signal(bool(0))
    qn = Signal(intbv(0)[NW:])
    insn = Signal(intbv(0)[INSN_BITS:])
    target = Signal(intbv(0)[count_bits(TO_BAD):])
    bad = Signal(intbv(0)[len(err):])
    canpush = Signal(bool(0))
    d_nb = Signal(intbv(0)[ADDR_BITS:])
    d_addr = Signal(intbv(0)[ADDR_BITS:])
    fresh = Signal(bool(0))     # no chunk granted since the core's reset
    n_addr = Signal(intbv(0)[ADDR_BITS:])    # the next chunk (after the first): address, bytes
    one_row = Signal(intbv(1)[ROWS_BITS:])         # undriven: constants of the descriptor
    no_stride = Signal(intbv(0)[ADDR_BITS:])
    lanes = [Signal(intbv(0)[p.B * 8:]) for _ in range(IB)]
    insts = [fetch_lane(clk, j, IB, lgIB, me_beat, bcnt, rdata, slot, lanes[j], C) for j in range(IB)]
    insts.append(route_mem(clk, p, me_beat, bcnt, rdata, slot, target, bad, C, IB, lgIB))
    cat = ConcatSignal(*reversed(lanes)) if IB > 1 else lanes[0]

    @always_comb
    def lanes_out():
        insn.next = cat
        chunk_index.next = cbase

    @always_comb
    def comb():
        routing.next = state == ROUTE or (state == WAIT and rel_me)

    @always(clk.posedge)
    def chunk():
        # the next chunk's address and instruction count (it starts where the last one ended),
        # registered without reset: they follow rend (reset with the core), INSN_ADDR and
        # INSN_COUNT while the core is held
        ad = intbv(0)[NW + lgIBY + 1:]
        ad[:] = insn_addr + (rend << lgIBY)
        n_addr.next = ad[ADDR_BITS:]
        if insn_count - rend > C:
            qn.next = C
        else:
            qn.next = insn_count - rend

    @always_comb
    def comb2():
        want.next = state == REQ or (routing and wcnt == 0 and rpos == rend and rend < insn_count)
        canpush.next = routing and wcnt == 0 and rpos != rend and (
            (target == TO_LOAD and room_l) or (target == TO_COMPUTE and room_c) or (target == TO_STORE and room_s))

    @always_comb
    def dsc():
        # the port descriptor of the next chunk, from registers only: the port registers it
        # in 2 stages (memport's first_burst), and it settles in time: rend changes at a grant
        # (qn and the address one cycle later) and the next request comes 4 cycles after it at
        # the earliest (the chunk's AR, its beats at least MEM_LATENCY >= 1 later, the
        # release, one push). In reset and until the first grant it is the first chunk's,
        # from INSN_ADDR and INSN_COUNT only: a run begins 2 cycles after the reset at the
        # earliest (control.py), when the port's walk of it is ready.
        nb = intbv(0)[NW + lgIBY:]
        nb[:] = qn << lgIBY
        nb0 = intbv(0)[NW + lgIBY:]
        if insn_count > C:
            nb0[:] = C << lgIBY
        else:
            nb0[:] = insn_count << lgIBY
        if rst or fresh:
            d_nb.next = nb0[ADDR_BITS:]
            d_addr.next = insn_addr
        else:
            d_nb.next = nb[ADDR_BITS:]
            d_addr.next = n_addr

    @always_comb
    def outs():
        req.next = want
        push_l.next = canpush and target == TO_LOAD
        push_c.next = canpush and target == TO_COMPUTE
        push_s.next = canpush and target == TO_STORE
        qdata.next = concat(rpos[INDEX_BITS:], insn)
        err.next = 0
        err_insn.next = rpos
        if routing and wcnt == 0 and rpos != rend and target == TO_BAD:
            err.next = bad
        qstall.next = routing and wcnt == 0 and rpos != rend and target != TO_BAD and not canpush

    @always(clk.posedge)
    def first():
        # no chunk granted since the core's reset (set by the reset itself, not a reset value)
        if rst or (want and grant):
            fresh.next = rst

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if me_beat:
            bcnt.next = bcnt + 1
        if want:
            if grant:
                state.next = WAIT
                cbase.next = rend
                rpos.next = rend
                slot.next = 0
                rend.next = rend + qn
                bcnt.next = 0
            else:
                state.next = REQ
        elif routing:
            state.next = ROUTE
            if canpush:
                rpos.next = rpos + 1
                slot.next = slot + 1
                wcnt.next = STEP - 1
            elif wcnt != 0:
                wcnt.next = wcnt - 1
            elif rpos == rend and rend >= insn_count:
                state.next = DONE
    insts += [lanes_out, comb, chunk, comb2, dsc, outs, first, seq, desc_pack(desc, one_row, d_addr, no_stride, d_nb)]
    return insts
