"""Block-level tests of the RTL arithmetic against numpy, in MyHDL's own simulator."""

from __future__ import annotations

import numpy as np
import pytest
from myhdl import Signal, block, delay, instance, intbv

from vdla_hw import alu
from vdla_hw.config import load_config
from vdla_hw.rtl.gemm import alu_core, gemm_core
from vdla_hw.rtl.params import rtl_params
from vdla_hw.semantics import alu_op

pytestmark = pytest.mark.rtl


def _pack(values, bits):
    word = 0
    for k, v in enumerate(np.asarray(values).reshape(-1)):
        word |= (int(v) & ((1 << bits) - 1)) << (bits * k)
    return word


def _unpack(word, n, bits):
    out = [(int(word) >> (bits * k)) & ((1 << bits) - 1) for k in range(n)]
    return np.array([v - (1 << bits) if v >> (bits - 1) else v for v in out], dtype=np.int64)


@pytest.mark.parametrize("preset", ["tiny", "osdi18"])
def test_gemm_core_vs_numpy(preset):
    p = rtl_params(load_config(preset))
    B, BI, BO = p.batch, p.block_in, p.block_out
    clk, ep, es = Signal(bool(0)), Signal(bool(1)), Signal(bool(1))
    inp, wgt = Signal(intbv(0)[B * BI * 8:]), Signal(intbv(0)[BO * BI * 8:])
    sums = Signal(intbv(0)[B * BO * 32:])
    rng = np.random.default_rng(7)
    cases = [(rng.integers(-128, 128, (B, BI)), rng.integers(-128, 128, (BO, BI))) for _ in range(6)]
    cases.append((np.full((B, BI), -128), np.full((BO, BI), -128)))
    cases.append((np.full((B, BI), 127), np.full((BO, BI), -128)))
    got, held, later = [], [], []

    def tick():
        yield delay(1)
        clk.next = 1
        yield delay(1)
        clk.next = 0
        yield delay(1)

    @block
    def bench():
        @instance
        def stim():
            for x, w in cases:
                inp.next, wgt.next = _pack(x, 8), _pack(w, 8)
                for _ in range(2):       # DSP P register, adder-tree register
                    yield from tick()
                got.append(_unpack(sums.val, B * BO, 32).reshape(B, BO))
                # the adder-tree register holds while disabled (the P registers take new operands);
                # then the P registers hold while disabled: the sum is of the operands they took
                es.next, inp.next, wgt.next = 0, _pack(-x, 8), _pack(w[::-1], 8)
                for _ in range(2):
                    yield from tick()
                held.append(_unpack(sums.val, B * BO, 32).reshape(B, BO))
                ep.next, es.next, inp.next = 0, 1, _pack(x, 8)
                for _ in range(2):
                    yield from tick()
                later.append(_unpack(sums.val, B * BO, 32).reshape(B, BO))
                ep.next = 1
        return gemm_core(clk, p, ep, es, inp, wgt, sums), stim
    b = bench()
    b.run_sim(quiet=True)
    b.quit_sim()
    for (x, w), g, h, l in zip(cases, got, held, later):
        np.testing.assert_array_equal(g, x.astype(np.int64) @ w.astype(np.int64).T)
        np.testing.assert_array_equal(h, g)
        neg = (128 - x.astype(np.int64)) % 256 - 128          # -x as int8 (-(-128) wraps)
        np.testing.assert_array_equal(l, neg @ w[::-1].astype(np.int64).T)


def test_alu_selects_cover_the_table():
    """Every op of the ALU table selects a result the RTL lane computes, each result chosen by one
    op (the lane's select chain compares the opcode with these)."""
    from vdla_hw.rtl.gemm import ALU_SELECT_OPCODE, ALU_SELECTS

    assert {op.rtl for op in alu.OPS} == set(ALU_SELECTS)
    assert ALU_SELECT_OPCODE == {op.rtl: op.opcode for op in alu.OPS}


@pytest.mark.parametrize("op", alu.NAMES)
def test_alu_core_vs_numpy(op):
    p = rtl_params(load_config("tiny"))
    n = p.batch * p.block_out
    clk, on = Signal(bool(0)), Signal(bool(1))
    code = Signal(intbv(alu.OPCODE[op])[3:])
    a, b, res = (Signal(intbv(0)[32 * n:]) for _ in range(3))
    rng = np.random.default_rng(3)
    vals = [rng.integers(-(1 << 31), 1 << 31, n) for _ in range(4)] + [rng.integers(-40, 40, n) for _ in range(4)]
    vals += [np.array([(1 << 31) - 1, -(1 << 31), 0, -1] * (n // 4 or 1))[:n]]
    pairs = [(x, y) for x in vals for y in vals[::2]]
    got = []

    @block
    def bench():
        @instance
        def stim():
            for x, y in pairs:
                a.next, b.next = _pack(x, 32), _pack(y, 32)
                yield delay(1)
                clk.next = 1             # the operand stage
                yield delay(1)
                clk.next = 0
                yield delay(1)
                got.append(_unpack(res.val, n, 32))
        return alu_core(clk, p, on, code, a, b, res), stim
    bb = bench()
    bb.run_sim(quiet=True)
    bb.quit_sim()
    for (x, y), g in zip(pairs, got):
        want = alu_op(op, x.astype(np.int32), y.astype(np.int32)).astype(np.int64)
        np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("preset", ["tiny", "osdi18"])
def test_decode_fields_match_the_isa(preset):
    """The decode block's named signals hold, for every field of every kind, the value the ISA
    encoder put there, at the layout's width; the index sits above the instruction; imm
    sign-extends to the accumulator word; the port descriptor unpacks what its clients pack."""
    from myhdl import concat

    from vdla_hw import isa
    from vdla_hw.rtl.decode import ENTRY_BITS, INSN_BITS, insn_fields, sign_extend
    from vdla_hw.rtl.portdesc import DESC_BITS, desc_fields

    config = load_config(preset)
    p = rtl_params(config)
    rng = np.random.default_rng(7)
    for kind in isa.OPCODES:
        lay = isa.layout(kind, config)
        values = {n: int(rng.integers(f.low, f.high + 1)) for n, f in lay.items() if n != "opcode"}
        word = int.from_bytes(isa.encode(isa.Insn(kind, **values), config), "little")
        entry = Signal(intbv((12345 << INSN_BITS) | word)[ENTRY_BITS:])
        d = insn_fields(entry, p, kind)
        assert int(d.index) == 12345 and int(d.opcode) == isa.OPCODES[kind]
        for name, f in lay.items():
            assert len(getattr(d, name)) == f.width, (kind, name)
            want = values.get(name, isa.OPCODES[kind]) & ((1 << f.width) - 1)
            assert int(getattr(d, name)) == want, (kind, name)
    imms, got = (-32768, -1, 1, 0, 32767), []
    raw, out = Signal(intbv(0)[16:]), Signal(intbv(0)[32:])

    @block
    def bench():
        @instance
        def stim():
            for imm in imms:
                raw.next = imm & 0xFFFF
                yield delay(1)
                got.append(int(out))
        return sign_extend(raw, out), stim
    b = bench()
    b.run_sim(quiet=True)
    b.quit_sim()
    assert got == [imm & 0xFFFFFFFF for imm in imms]
    rows, a0, st, nb = Signal(intbv(7)[16:]), Signal(intbv(0x1230)[32:]), Signal(intbv(640)[32:]), Signal(intbv(48)[32:])
    desc = Signal(concat(nb, st, a0, rows))
    assert len(desc) == DESC_BITS
    f = desc_fields(desc, p.lgB)
    assert (int(f.rows), int(f.addr0), int(f.stride), int(f.nbytes)) == (7, 0x1230, 640, 48)
    assert int(f.addr0_beat) == 0x1230 >> p.lgB

