"""The arithmetic cores: the BATCH x BLOCK_IN x BLOCK_OUT int8 GEMM core and the int32 ALU.

GEMM: two int8 multiplies that share the input operand are packed into one multiplier,
((w1 << 16) + w2) * x, 25 x 8 bits (one DSP48E1 25x18 multiplier): the low 16 bits, signed,
are w2*x and the rest is w1*x. Products are registered (latency 1); the adder tree is
combinational behind them. ``sums`` lane (b, o) at bits 32*(b*BLOCK_OUT+o) is
sum_i inp[b][i]*wgt[o][i] of the operands presented one cycle earlier.

ALU: per int32 lane, MIN, MAX, ADD, SHR (amount clamped to [-31, 31]; negative shifts left)
and MUL by the operand's low 8 bits as int8 (docs/spec.md section 4); combinational.
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always, always_comb, block, intbv

from vdla_hw.rtl.params import RtlParams


def _s(bits):
    return Signal(intbv(0, min=-(1 << (bits - 1)), max=1 << (bits - 1)))


@block
def mul_pair(clk, x, w1, w2, lo, hi):
    """lo = w2*x, hi = w1*x (x, w1, w2 int8 bit patterns), one packed multiply, registered."""
    pk = _s(25)
    prod = _s(33)
    low = _s(17)

    @always_comb
    def pack():
        pk.next = (w1.signed() << 16) + w2.signed()

    @always(clk.posedge)
    def mul():
        prod.next = pk * x.signed()

    @always_comb
    def split():
        low.next = prod[16:0].signed()

    @always_comb
    def outs():
        lo.next = low
        hi.next = (prod - low) >> 16
    return pack, mul, split, outs


@block
def add2(a, b, s):
    @always_comb
    def comb():
        s.next = a + b
    return comb


@block
def _extend(a, s):
    @always_comb
    def comb():
        s.next = a
    return comb


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
            insts.append(_extend(terms[0], lane))
            lanes.append(lane)
    cat = ConcatSignal(*[l(32, 0) for l in reversed(lanes)]) if len(lanes) > 1 else lanes[0]

    @always_comb
    def out():
        sums.next = cat
    insts.append(out)
    return insts


@block
def alu_lane(op, a, b, b8, res):
    """res = op(a, b) on int32 bit patterns; op: 0 min, 1 max, 2 add, 3 shr, 4 mul."""
    total = Signal(intbv(0)[33:])
    prod = _s(41)
    shl = Signal(intbv(0)[64:])
    shr = _s(32)
    amt = Signal(intbv(0)[6:])
    left = Signal(bool(0))

    @always_comb
    def amount():
        t = intbv(0)[32:]
        t[:] = b
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
        total.next = a + b
        prod.next = a.signed() * b8.signed()
        shl.next = a << amt
        shr.next = a.signed() >> amt

    @always_comb
    def sel():
        if op == 0:
            if a.signed() < b.signed():
                res.next = a
            else:
                res.next = b
        elif op == 1:
            if a.signed() > b.signed():
                res.next = a
            else:
                res.next = b
        elif op == 2:
            res.next = total[32:0]
        elif op == 3:
            if left:
                res.next = shl[32:0]
            else:
                res.next = shr[32:0]
        else:
            res.next = prod[32:0]
    return amount, arith, sel


@block
def alu_core(p: RtlParams, op, a, b, res):
    """Every int32 lane of an accumulator element through :func:`alu_lane`."""
    n = p.batch * p.block_out
    outs = [Signal(intbv(0)[32:]) for _ in range(n)]
    insts = [alu_lane(op, a(32 * k + 32, 32 * k), b(32 * k + 32, 32 * k), b(32 * k + 8, 32 * k), outs[k])
             for k in range(n)]
    cat = ConcatSignal(*reversed(outs))

    @always_comb
    def out():
        res.next = cat
    insts.append(out)
    return insts
