"""The arithmetic cores: the BATCH x BLOCK_IN x BLOCK_OUT int8 GEMM core and the int32 ALU.

GEMM: two int8 multiplies that share the input operand are packed into one multiplier,
((w1 << 16) + w2) * x, 25 x 8 bits (one DSP48E1 25x18 multiplier). The product plus 2**15
(the DSP's post-adder) is registered in its P register, so the split is wiring: bits 16.. of P
are w1*x and its low 16 bits, bit 15 inverted, are w2*x. The adder tree behind P is registered
once. ``sums`` lane (b, o) at bits 32*(b*BLOCK_OUT+o) is
sum_i inp[b][i]*wgt[o][i] of the operands presented 2 cycles earlier
(rtl/params.py GEMM_WRITE_CYCLES counts these stages).

ALU: per int32 lane, MIN, MAX, ADD, SHR (amount clamped to [-31, 31]; negative shifts left)
and MUL by the operand's low 8 bits as int8 (docs/spec.md section 4). Two stages: the shift
amount and the comparisons are registered with the operands, then the operation and the
result select; ``res`` is the result of the operands presented one
cycle earlier.
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always, always_comb, block, intbv

from vdla_hw.rtl.params import RtlParams

BIAS = 1 << 15            # added in the DSP's post-adder: makes the packed product's split exact


def _s(bits):
    return Signal(intbv(0, min=-(1 << (bits - 1)), max=1 << (bits - 1)))


@block
def mul_pair(clk, x, w1, w2, lo, hi):
    """lo = w2*x, hi = w1*x (x, w1, w2 int8 bit patterns) of the operands one cycle earlier:
    one packed multiply whose DSP48E1 post-adder adds 2**15 into the P register. With the low
    product in [-2**15, 2**15) the bias never borrows from the high half, so hi is P[33:16]
    and lo is P[16:0] with bit 15 inverted (no carry chain after the DSP)."""
    pk = _s(25)
    prod = _s(34)
    low = Signal(intbv(0)[16:])

    @always_comb
    def pack():
        pk.next = (w1.signed() << 16) + w2.signed()

    @always(clk.posedge)
    def preg():
        prod.next = pk * x.signed() + BIAS

    @always_comb
    def split():
        low.next = prod[16:0] ^ BIAS

    @always_comb
    def outs():
        lo.next = low.signed()
        hi.next = prod[33:16].signed()
    return pack, preg, split, outs


@block
def add2(a, b, s):
    @always_comb
    def comb():
        s.next = a + b
    return comb


@block
def _reg(clk, a, s):
    """s = a one cycle later (sign-extending to s's width)."""
    @always(clk.posedge)
    def seq():
        s.next = a
    return seq


@block
def gemm_core(clk, p: RtlParams, inp, wgt, sums):
    insts = []
    BI, BO = p.block_in, p.block_out
    lanes = []
    for b in range(p.batch):
        prods = [[None] * BI for _ in range(BO)]
        for i in range(BI):
            x = inp((b * BI + i) * 8 + 8, (b * BI + i) * 8)
            for k in range(BO // 2):
                o2, o1 = 2 * k, 2 * k + 1
                w2 = wgt((o2 * BI + i) * 8 + 8, (o2 * BI + i) * 8)
                w1 = wgt((o1 * BI + i) * 8 + 8, (o1 * BI + i) * 8)
                lo, hi = _s(17), _s(17)
                insts.append(mul_pair(clk, x, w1, w2, lo, hi))
                prods[o2][i], prods[o1][i] = lo, hi
        for o in range(BO):
            terms = prods[o]
            width = 17
            while len(terms) > 1:
                width += 1
                nxt = []
                for j in range(0, len(terms) - 1, 2):
                    s = _s(width)
                    insts.append(add2(terms[j], terms[j + 1], s))
                    nxt.append(s)
                if len(terms) % 2:
                    nxt.append(terms[-1])
                terms = nxt
            lane = _s(32)
            insts.append(_reg(clk, terms[0], lane))
            lanes.append(lane)
    cat = ConcatSignal(*[l(32, 0) for l in reversed(lanes)]) if len(lanes) > 1 else lanes[0]

    @always_comb
    def out():
        sums.next = cat
    insts.append(out)
    return insts


@block
def alu_lane(clk, op, a, b, b8, res):
    """res = op(a, b) on int32 bit patterns of the operands one cycle earlier; op: 0 min,
    1 max, 2 add, 3 shr, 4 mul. Stage 1 registers the operands with the clamped shift amount
    and the comparisons; stage 2 (combinational into the caller's write) operates and selects."""
    a1 = Signal(intbv(0)[32:])
    b1 = Signal(intbv(0)[32:])
    b81 = Signal(intbv(0)[8:])
    amt = Signal(intbv(0)[6:])
    left = Signal(bool(0))
    lt = Signal(bool(0))
    gt = Signal(bool(0))
    total = Signal(intbv(0)[33:])
    prod = _s(41)
    shl = Signal(intbv(0)[64:])
    shr = _s(32)

    @always(clk.posedge)
    def stage1():
        t = intbv(0)[32:]
        t[:] = b
        a1.next = a
        b1.next = b
        b81.next = b8
        lt.next = a.signed() < b.signed()
        gt.next = a.signed() > b.signed()
        if b.signed() > 31:
            amt.next = 31
            left.next = 0
        elif b.signed() < -31:
            amt.next = 31
            left.next = 1
        elif b.signed() < 0:
            amt.next = -b.signed()
            left.next = 1
        else:
            amt.next = t[6:0]
            left.next = 0

    @always_comb
    def arith():
        total.next = a1 + b1
        prod.next = a1.signed() * b81.signed()
        shl.next = a1 << amt
        shr.next = a1.signed() >> amt

    @always_comb
    def sel():
        if op == 0:
            if lt:
                res.next = a1
            else:
                res.next = b1
        elif op == 1:
            if gt:
                res.next = a1
            else:
                res.next = b1
        elif op == 2:
            res.next = total[32:0]
        elif op == 3:
            if left:
                res.next = shl[32:0]
            else:
                res.next = shr[32:0]
        else:
            res.next = prod[32:0]
    return stage1, arith, sel


@block
def alu_core(clk, p: RtlParams, op, a, b, res):
    """Every int32 lane of an accumulator element through :func:`alu_lane`."""
    n = p.batch * p.block_out
    outs = [Signal(intbv(0)[32:]) for _ in range(n)]
    insts = [alu_lane(clk, op, a(32 * k + 32, 32 * k), b(32 * k + 32, 32 * k), b(32 * k + 8, 32 * k), outs[k])
             for k in range(n)]
    cat = ConcatSignal(*reversed(outs))

    @always_comb
    def out():
        res.next = cat
    insts.append(out)
    return insts
