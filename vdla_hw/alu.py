"""The ALU operations: one table, :data:`OPS`, holds each op's encoding, mnemonic, semantics and RTL select.

Everything else is derived from it (docs/extending.md walks through adding an op):

- the ISA's ``alu_opcode`` values and names (``isa.ALU_OPS``, the decoder's check, the
  assembler's and disassembler's mnemonics),
- the reference semantics (:func:`apply`, which ``semantics.alu_op`` and the simulator call),
- the RTL's operation select (``vdla_hw/rtl/gemm.py`` ``alu_lane`` compares ``op`` with the
  opcode of each select named here and refuses a table whose selects it does not implement),
- docs/spec.md section 4's ALU table (:func:`markdown`, checked by tests/hw/test_spec_doc.py),
- the tests' opcode numbers and the op lists they sweep (tests/hw/test_alu.py requires worked
  examples for every op).

Semantics: ``fn(a, b)`` takes the accumulator ``a`` and the operand ``b`` (the immediate or the
source accumulator) as int64 arrays of int32 values and returns int64 values that
:func:`apply` wraps to int32 (two's complement).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
SHIFT_MAX = 31  # the SHR amount is clamped to [-SHIFT_MAX, SHIFT_MAX] (an int32 lane's width - 1)


def wrap32(values: np.ndarray) -> np.ndarray:
    """int64 values wrapped to int32 (two's complement)."""
    return ((values.astype(np.int64) - INT32_MIN) % (1 << 32) + INT32_MIN).astype(np.int32)


def _low8(b: np.ndarray) -> np.ndarray:
    """The low 8 bits of ``b`` read as a signed int8 (an INP element's width)."""
    return ((b & 0xFF) ^ 0x80) - 0x80


def _shr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    amount = np.clip(b, -SHIFT_MAX, SHIFT_MAX)
    right = a >> np.maximum(amount, 0)
    left = a << np.maximum(-amount, 0)
    return np.where(amount >= 0, right, left)


@dataclass(frozen=True)
class AluOp:
    """One ALU operation: ``opcode`` (the ``alu_opcode`` field value), ``name`` (the assembler's
    mnemonic), ``fn`` (its semantics, see the module docstring), ``rtl`` (the result the RTL lane
    selects for it, one of ``vdla_hw/rtl/gemm.py``'s ``ALU_SELECTS``) and ``doc`` (its line in
    docs/spec.md section 4)."""

    opcode: int
    name: str
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
    rtl: str
    doc: str


OPS = (
    AluOp(0, "min", np.minimum, "a_if_lt", "the smaller of `a` and `b`, compared as signed int32"),
    AluOp(1, "max", np.maximum, "a_if_gt", "the larger of `a` and `b`, compared as signed int32"),
    AluOp(2, "add", lambda a, b: a + b, "sum", "`a + b`, wrapped to int32"),
    AluOp(3, "shr", _shr, "shift", f"`a` shifted arithmetically right by `b` clamped to [-{SHIFT_MAX}, {SHIFT_MAX}]; a negative "
          "amount shifts left, wrapped to int32 (that is how a left shift is written)"),
    AluOp(4, "mul", lambda a, b: a * _low8(b), "product", "`a` times the low 8 bits of `b` read as a signed "
          "int8, wrapped to int32"),
)

BY_NAME = {op.name: op for op in OPS}
BY_CODE = {op.opcode: op for op in OPS}
NAMES = tuple(op.name for op in sorted(OPS, key=lambda op: op.opcode))  # indexed by opcode
OPCODE = {op.name: op.opcode for op in OPS}

assert sorted(BY_CODE) == list(range(len(OPS))), "ALU opcodes must be 0..n-1, each once"
assert len(BY_NAME) == len(OPS), "ALU mnemonics must be distinct"


def apply(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ALU op ``op`` (a mnemonic) on int32 arrays ``a`` (accumulator) and ``b`` (operand), as int32."""
    if op not in BY_NAME:
        raise ValueError(f"unknown ALU op {op!r}")
    return wrap32(BY_NAME[op].fn(a.astype(np.int64), b.astype(np.int64)))


def markdown() -> str:
    """docs/spec.md section 4's ALU table (`a` the accumulator, `b` the operand)."""
    rows = ["| `alu_opcode` | mnemonic | `acc[dst]` becomes | RTL select |", "|---|---|---|---|"]
    rows += [f"| {op.opcode} | `{op.name}` | {op.doc} | `{op.rtl}` |" for op in sorted(OPS, key=lambda o: o.opcode)]
    return "\n".join(rows)
