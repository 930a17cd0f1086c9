"""The ALU table (vdla_hw/alu.py) against worked examples written out by hand, on full int32 results,
and the models that derive from it (the ISA's opcodes, the assembler, the reference semantics; the
RTL lane's selects: tests/rtl/test_blocks.py).

A new ALU op adds its row to :data:`EXAMPLES`; ``test_every_op_has_examples`` fails until it does.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla_hw import alu, asm, isa, semantics
from vdla_hw.config import load_config

MIN, MAX = alu.INT32_MIN, alu.INT32_MAX

# op -> [(a, b, a op b)]: accumulator, operand, the int32 result (worked out by hand)
EXAMPLES = {
    "min": [(3, -5, -5), (-5, 3, -5), (MIN, MAX, MIN), (7, 7, 7)],
    "max": [(3, -5, 3), (-5, 3, 3), (MIN, MAX, MAX), (-1, -2, -1)],
    "add": [(1, 2, 3), (MAX, 1, MIN), (MIN, -1, MAX), (-7, 7, 0)],
    "shr": [(-8, 1, -4), (1 << 20, 8, 1 << 12), (-1, 31, -1), (5, 100, 0), (MIN, 40, -1),
            (3, -2, 12), (1, -31, MIN), (1, -40, MIN), (3, -31, MIN), (-(1 << 20), -12, 0)],
    "mul": [(3, 4, 12), (3, 255, -3), (3, 0x180, -384), (-2, 0x7F, -254), (1 << 30, 4, 0),
            (MAX, 2, -2), (5, -1, -5), (1000, 0x12345680, -128000)],
}


def test_every_op_has_examples():
    assert set(EXAMPLES) == set(alu.NAMES), "give each ALU op worked examples here"


@pytest.mark.parametrize("op", alu.NAMES)
def test_op_matches_its_worked_examples(op):
    a, b, want = (np.array(col, dtype=np.int64) for col in zip(*EXAMPLES[op]))
    got = alu.apply(op, a.astype(np.int32), b.astype(np.int32))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(semantics.alu_op(op, a.astype(np.int32), b.astype(np.int32)), want)


def test_opcodes_are_the_isa_encoding():
    """alu_opcode n decodes to op n of the table; opcodes are 0..n-1, fit the field, mnemonics distinct."""
    assert isa.ALU_OPS == tuple(alu.BY_CODE[k].name for k in range(len(alu.OPS)))
    assert len(alu.OPS) <= 1 << isa.layout("ALU", load_config("tiny"))["alu_opcode"].width
    assert sorted(op.opcode for op in alu.OPS) == list(range(len(alu.OPS)))


@pytest.mark.parametrize("op", alu.NAMES)
def test_assembler_round_trips_each_op(op):
    """Each op's mnemonic assembles to its opcode and disassembles back."""
    config = load_config("tiny")
    insn = isa.Insn("ALU", alu_opcode=alu.OPCODE[op], uop_end=1, iter_out=1, iter_in=1, use_imm=1, imm=-3)
    line = asm.format_insn(insn, config)
    assert line.split()[1] == op
    assert isa.decode(isa.encode(insn, config), config) == insn


def test_unknown_op_is_refused():
    with pytest.raises(ValueError, match="unknown ALU op 'no_such_op'"):
        alu.apply("no_such_op", np.zeros(1, np.int32), np.zeros(1, np.int32))

