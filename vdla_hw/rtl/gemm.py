"""The arithmetic cores: the BATCH x BLOCK_IN x BLOCK_OUT int8 GEMM core and the int32 ALU.

GEMM: two int8 multiplies that share the input operand are packed into one multiplier,
((w1 << 16) + w2) * x, 25 x 8 bits (one DSP48E1 25x18 multiplier). The DSP's post-adder adds
2**15 into the P register, so the low 16 bits of P are w2*x + 2**15 (in [0, 2**16): no borrow
from the high half) and bits 16..31 are w1*x as 16-bit two's complement; inverting their top
bit makes them w1*x + 2**15. Both products leave as "offset binary" unsigned 16-bit values and
the split is wiring (and one inverter). The adder tree behind P adds these unsigned offset
values and is registered once; with BLOCK_IN (a power of two) terms the offsets total 2**(W-1) for the tree's W-bit sum,
so inverting the sum's top bit makes it the signed sum (no subtractor, no sign extension in the
tree). ``sums`` lane (b, o) at bits 32*(b*BLOCK_OUT+o) is sum_i inp[b][i]*wgt[o][i] of the
operands presented 2 cycles earlier (rtl/params.py GEMM_WRITE_CYCLES counts these stages).

ALU: per int32 lane, MIN, MAX, ADD, SHR (amount clamped to [-31, 31]; negative shifts left)
and MUL by the operand's low 8 bits as int8 (docs/spec.md section 4). Two stages: the shift
amount and the comparisons are registered with the operands (in a cycle with the stage's
enable high), then the operation and the result select.
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always, always_comb, block, intbv, modbv

from vdla_hw import alu
from vdla_hw.rtl.params import RtlParams

# The results an ALU lane computes, in the order of its select chain (the last is the chain's
# else): a if a < b else b, a if a > b else b, a + b, the clamped shift, a * int8(b). Each op of
# the ALU table (vdla_hw/alu.py) selects one; a new op needing a new result adds it here.
ALU_SELECTS = ("a_if_lt", "a_if_gt", "sum", "shift", "product")


def _select_opcodes() -> dict[str, int]:
    """select -> the opcode of the ALU table's op that selects it; every select used exactly once."""
    unknown = [f"{op.name} ({op.rtl})" for op in alu.OPS if op.rtl not in ALU_SELECTS]
    if unknown:
        raise ValueError(f"ALU ops select results the RTL lane does not compute: {', '.join(unknown)}; "
                         f"add them to vdla_hw/rtl/gemm.py alu_lane (computes {', '.join(ALU_SELECTS)})")
    codes = {op.rtl: op.opcode for op in alu.OPS}
    if sorted(codes) != sorted(ALU_SELECTS) or len(codes) != len(alu.OPS):
        raise ValueError(f"every RTL ALU select ({', '.join(ALU_SELECTS)}) must be chosen by exactly one "
                         f"ALU op; the table selects {', '.join(op.rtl for op in alu.OPS)}")
    return codes


ALU_SELECT_OPCODE = _select_opcodes()

def _s(bits):
    return Signal(intbv(0, min=-(1 << (bits - 1)), max=1 << (bits - 1)))


@block
def mul_pair(clk, en, x, w1, w2, lo, hi):
    """lo = w2*x + 2**15, hi = w1*x + 2**15 (x, w1, w2 int8 bit patterns; lo, hi unsigned
    16 bits) of the operands of the last cycle with ``en`` high (the P register's clock enable,
    the DSP48E1's CEP): one packed multiply whose post-adder adds 2**15 (the low half's offset;
    w1*x fits 16 bits, so the high half is offset by inverting its top bit). Widths follow
    the operands': a product of PB = 16 bits (int8 x int8), packed PB bits apart, 25 x 8 bits."""
    PB = len(lo)                        # bits of one offset product
    assert PB == len(x) + len(w1) == len(hi)
    HALF = 1 << (PB - 1)                # 2**15
    prod = Signal(modbv(0)[2 * PB:])    # the P register's low 2*PB bits: both offset halves

    @always(clk.posedge)
    def preg():
        if en:        # pre-adder (w1 << PB) + w2, multiplier, post-adder, P register
            prod.next = ((w1.signed() << PB) + w2.signed()) * x.signed() + HALF

    @always_comb
    def outs():
        lo.next = prod[PB:0]
        hi.next = prod[2 * PB:PB] ^ HALF
    return preg, outs


@block
def add2(a, b, s):
    @always_comb
    def comb():
        s.next = a + b
    return comb


@block
def _lane_reg(clk, en, total, lane):
    """lane = the signed value of the offset-binary ``total`` (top bit inverted), sign-extended,
    taken in the last cycle with ``en`` high."""
    TOP = len(total) - 1
    val = _s(len(total))

    @always_comb
    def flip():
        t = intbv(0)[len(total):]
        t[:] = total
        t[TOP] = not total[TOP]
        val.next = t.signed()

    @always(clk.posedge)
    def seq():
        if en:
            lane.next = val
    return flip, seq


@block
def gemm_core(clk, p: RtlParams, en_prod, en_sum, inp, wgt, sums):
    """``sums`` lane (b, o) = sum_i inp[b][i] * wgt[o][i] (int8 elements, int32 lanes) of the
    operands present when ``en_prod`` was high, one cycle before ``en_sum`` (the two pipeline
    registers' clock enables: idle stages hold, which saves switching on the FPGA and evaluation
    in the compiled simulation)."""
    c = p.config
    IB, WB, AB = c.inp_bits, c.wgt_bits, c.acc_bits
    PB = IB + WB                        # an offset product from mul_pair, unsigned
    insts = []
    BI, BO = p.block_in, p.block_out
    assert BI & (BI - 1) == 0, "the tree's offsets total 2**(W-1) only for a power-of-two BLOCK_IN"
    lanes = []
    for b in range(p.batch):
        prods = [[None] * BI for _ in range(BO)]
        for i in range(BI):
            x = inp((b * BI + i) * IB + IB, (b * BI + i) * IB)
            for k in range(BO // 2):
                o2, o1 = 2 * k, 2 * k + 1
                w2 = wgt((o2 * BI + i) * WB + WB, (o2 * BI + i) * WB)
                w1 = wgt((o1 * BI + i) * WB + WB, (o1 * BI + i) * WB)
                lo, hi = Signal(intbv(0)[PB:]), Signal(intbv(0)[PB:])
                insts.append(mul_pair(clk, en_prod, x, w1, w2, lo, hi))
                prods[o2][i], prods[o1][i] = lo, hi
        for o in range(BO):
            terms = prods[o]
            while len(terms) > 1:
                nxt = []
                for j in range(0, len(terms), 2):
                    s = Signal(intbv(0)[len(terms[j]) + 1:])
                    insts.append(add2(terms[j], terms[j + 1], s))
                    nxt.append(s)
                terms = nxt
            lane = _s(AB)
            insts.append(_lane_reg(clk, en_sum, terms[0], lane))
            lanes.append(lane)
    cat = ConcatSignal(*[l(AB, 0) for l in reversed(lanes)]) if len(lanes) > 1 else lanes[0]

    @always_comb
    def out():
        sums.next = cat
    insts.append(out)
    return insts


@block
def alu_lane(clk, en, op, a, b, b8, res):
    """res = op(a, b) on int32 bit patterns of the operands of the last cycle with ``en`` high
    (stage 1's clock enable); ``op`` an ``alu_opcode`` (vdla_hw/alu.py: each op names the
    result of :data:`ALU_SELECTS` it selects). Stage 1 registers the operands with the clamped shift amount
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
    # the result keeps a lane's low AB bits: the sum, product and left shift wrap at AB bits
    # (modbv), so the compiled simulation computes them in 32-bit words, not 64
    total = Signal(modbv(0)[AB:])
    prod = Signal(modbv(0)[AB:])
    shl = Signal(modbv(0)[AB:])
    shr = _s(AB)

    @always(clk.posedge)
    def stage1():
        t = intbv(0)[AB:]
        if en:
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

    # the opcode of each result select, from the ALU table; the last select is the chain's else
    # (opcodes no op has never reach here: the decoder refuses them)
    OP_LT, OP_GT, OP_SUM, OP_SHIFT = (ALU_SELECT_OPCODE[name] for name in ALU_SELECTS[:-1])

    @always_comb
    def sel():
        if op == OP_LT:
            if lt:
                res.next = a1
            else:
                res.next = b1
        elif op == OP_GT:
            if gt:
                res.next = a1
            else:
                res.next = b1
        elif op == OP_SUM:
            res.next = total
        elif op == OP_SHIFT:
            if left:
                res.next = shl
            else:
                res.next = shr[AB:0]
        else:
            res.next = prod
    return stage1, arith, sel


@block
def alu_core(clk, p: RtlParams, en, op, a, b, res):
    """Every int32 lane of an accumulator element through :func:`alu_lane` (operands taken when
    ``en`` is high); MUL takes the low int8 (an INP element's width) of its operand lane."""
    n = p.batch * p.block_out
    AB, MB = p.config.acc_bits, p.config.inp_bits
    outs = [Signal(intbv(0)[AB:]) for _ in range(n)]
    insts = [alu_lane(clk, en, op, a(AB * k + AB, AB * k), b(AB * k + AB, AB * k), b(AB * k + MB, AB * k), outs[k])
             for k in range(n)]
    cat = ConcatSignal(*reversed(outs))

    @always_comb
    def out():
        res.next = cat
    insts.append(out)
    return insts
