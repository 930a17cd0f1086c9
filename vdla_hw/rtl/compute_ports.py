"""Named interfaces between the compute module's blocks (docs/rtl.md, "Blocks"): small groups of
signals passed whole instead of positional lists, like :class:`vdla_hw.rtl.axi.AxiMaster`.
Every width comes from the configuration (:class:`RtlParams`) or the ISA layout (decode)."""

from __future__ import annotations

from myhdl import Signal, intbv

from vdla_hw.rtl.decode import field_reg
from vdla_hw.rtl.params import RtlParams


def _vec(width: int) -> Signal:
    return Signal(intbv(0)[width:])


def count_bits(top: int) -> int:
    """Bits of a down-counter that starts at ``top``."""
    return max(1, top.bit_length())


class ReadPort:
    """An element read port of an SRAM: ``re``, ``addr``; ``data`` one cycle after ``re``."""

    def __init__(self, re, addr, data):
        self.re, self.addr, self.data = re, addr, data


class WritePort:
    """An element write port of an SRAM: ``we``, ``addr``, ``data``."""

    def __init__(self, we, addr, data):
        self.we, self.addr, self.data = we, addr, data

    @classmethod
    def new(cls, addr_bits: int, data_bits: int) -> "WritePort":
        return cls(Signal(bool(0)), _vec(addr_bits), _vec(data_bits))


class ComputeMode:
    """The running GEMM/ALU instruction's mode, registered at its start (uop_loop):
    ``is_alu``, ``reset`` (a reset GEMM: write zeros; an ALU ignores the bit), the ALU's ``alu_opcode``, ``use_imm`` and raw ``imm``."""

    def __init__(self, gi, ai):
        self.is_alu = Signal(bool(0))
        self.reset = field_reg(gi.reset)
        self.alu_opcode = field_reg(ai.alu_opcode)
        self.use_imm = field_reg(ai.use_imm)
        self.imm = field_reg(ai.imm)


class UopIssue:
    """The uop loop's output: ``iss`` issues uop ``uop`` (an address of the uop SRAM) with the
    loop offsets ``dst``/``src``/``wgt`` (index widths of acc, of the wider of inp and acc, of
    wgt: the sums wrap there, as the SRAM index does); ``seq_done`` ends the instruction."""

    def __init__(self, p: RtlParams, uf):
        self.iss = Signal(bool(0))
        self.seq_done = Signal(bool(0))
        self.uop = _vec(p.mems["uop"].ibits)
        self.dst = _vec(len(uf.dst_idx))
        self.src = _vec(len(uf.src_idx))
        self.wgt = _vec(len(uf.wgt_idx))


class UopStages:
    """A uop behind its issue cycle a: ``v1``..``v4`` valid at a+1..a+4; ``dst2``/``dst4``
    its acc index at a+2/a+4; ``src2`` its ALU source index at a+2."""

    def __init__(self, p: RtlParams):
        accb = p.mems["acc"].ibits
        self.v1, self.v2, self.v3, self.v4 = (Signal(bool(0)) for _ in range(4))
        self.dst2, self.dst3, self.dst4, self.src2 = (_vec(accb) for _ in range(4))
