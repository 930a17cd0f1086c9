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

def _s(bits):
    return Signal(intbv(0, min=-(1 << (bits - 1)), max=1 << (bits - 1)))


@block
def mul_pair(clk, x, w1, w2, lo, hi):
    """lo = w2*x, hi = w1*x (x, w1, w2 int8 bit patterns) of the operands one cycle earlier:
    one packed multiply whose DSP48E1 post-adder adds 2**15 into the P register. With the low
    product in [-2**15, 2**15) the bias never borrows from the high half, so hi is P[33:16]
    and lo is P[16:0] with bit 15 inverted (no carry chain after the DSP). Widths follow the
    operands': a product of PB = 16 bits (int8 x int8), packed 16 bits apart, 25 x 8 bits."""
    PB = len(x) + len(w1)               # bits of one product
    BIAS = 1 << (PB - 1)                # added in the DSP's post-adder: makes the split exact
    pk = _s(PB + len(w1) + 1)           # (w1 << PB) + w2
    prod = _s(len(pk) + len(x) + 1)     # pk * x + BIAS
    TOP = len(prod) - 1                 # hi = prod[TOP:PB], a product's PB + 1 signed bits
    low = Signal(intbv(0)[PB:])

    @always_comb
    def pack():
        pk.next = (w1.signed() << PB) + w2.signed()

    @always(clk.posedge)
    def preg():
        prod.next = pk * x.signed() + BIAS

    @always_comb
    def split():
        low.next = prod[PB:0] ^ BIAS

    @always_comb
    def outs():
        lo.next = low.signed()
        hi.next = prod[TOP:PB].signed()
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
    """``sums`` lane (b, o) = sum_i inp[b][i] * wgt[o][i] (int8 elements, int32 lanes)."""
    c = p.config
    IB, WB, AB = c.inp_bits, c.wgt_bits, c.acc_bits
    PW = IB + WB + 1                    # a product from mul_pair, signed
    insts = []
    BI, BO = p.block_in, p.block_out
    lanes = []
    for b in range(p.batch):
        prods = [[None] * BI for _ in range(BO)]
        for i in range(BI):
            x = inp((b * BI + i) * IB + IB, (b * BI + i) * IB)
            for k in range(BO // 2):
                o2, o1 = 2 * k, 2 * k + 1
                w2 = wgt((o2 * BI + i) * WB + WB, (o2 * BI + i) * WB)
                w1 = wgt((o1 * BI + i) * WB + WB, (o1 * BI + i) * WB)
                lo, hi = _s(PW), _s(PW)
                insts.append(mul_pair(clk, x, w1, w2, lo, hi))
                prods[o2][i], prods[o1][i] = lo, hi
        for o in range(BO):
            terms = prods[o]
            width = PW
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
            lane = _s(AB)
            insts.append(_reg(clk, terms[0], lane))
            lanes.append(lane)
    cat = ConcatSignal(*[l(AB, 0) for l in reversed(lanes)]) if len(lanes) > 1 else lanes[0]

    @always_comb
    def out():
        sums.next = cat
    insts.append(out)
    return insts


@block
def alu_lane(clk, op, a, b, b8, res):
    """res = op(a, b) on int32 bit patterns of the operands one cycle earlier; op: 0 min,
    1 max, 2 add, 3 shr, 4 mul. Stage 1 registers the operands with the clamped shift amount
    and the comparisons; stage 2 (combinational into the caller's write) operates and selects.
    Widths follow the lane's (AB = 32) and the MUL operand's (``b8``, 8 bits)."""
    AB = len(a)
    MAXSH = AB - 1                      # the shift amount is clamped to [-MAXSH, MAXSH]
    AMTB = MAXSH.bit_length() + 1       # holds MAXSH and the low bits of b
    a1 = Signal(intbv(0)[AB:])
    b1 = Signal(intbv(0)[AB:])
    b81 = Signal(intbv(0)[len(b8):])
    amt = Signal(intbv(0)[AMTB:])
    left = Signal(bool(0))
    lt = Signal(bool(0))
    gt = Signal(bool(0))
    total = Signal(intbv(0)[AB + 1:])
    prod = _s(AB + len(b8) + 1)
    shl = Signal(intbv(0)[2 * AB:])
    shr = _s(AB)

    @always(clk.posedge)
    def stage1():
        t = intbv(0)[AB:]
        t[:] = b
        a1.next = a
        b1.next = b
        b81.next = b8
        lt.next = a.signed() < b.signed()
        gt.next = a.signed() > b.signed()
        if b.signed() > MAXSH:
            amt.next = MAXSH
            left.next = 0
        elif b.signed() < -MAXSH:
            amt.next = MAXSH
            left.next = 1
        elif b.signed() < 0:
            amt.next = -b.signed()
            left.next = 1
        else:
            amt.next = t[AMTB:0]
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
            res.next = total[AB:0]
        elif op == 3:
            if left:
                res.next = shl[AB:0]
            else:
                res.next = shr[AB:0]
        else:
            res.next = prod[AB:0]
    return stage1, arith, sel


@block
def alu_core(clk, p: RtlParams, op, a, b, res):
    """Every int32 lane of an accumulator element through :func:`alu_lane`; MUL takes the low
    int8 (an INP element's width) of its operand lane."""
    n = p.batch * p.block_out
    AB, MB = p.config.acc_bits, p.config.inp_bits
    outs = [Signal(intbv(0)[AB:]) for _ in range(n)]
    insts = [alu_lane(clk, op, a(AB * k + AB, AB * k), b(AB * k + AB, AB * k), b(AB * k + MB, AB * k), outs[k])
             for k in range(n)]
    cat = ConcatSignal(*reversed(outs))

    @always_comb
    def out():
        res.next = cat
    insts.append(out)
    return insts
