"""The instruction decoder of the RTL, generated from the ISA table: every field of an
instruction kind as a named signal whose width (and bit position) is ``vdla_hw.isa.layout``'s.

A command-queue entry is {index, instruction}: the instruction in bits [0, INSN_BITS) and its
index (``INDEX_BITS``) above. :func:`insn_fields` gives each field as a read-only slice of the
entry (a MyHDL shadow signal, a Verilog ``assign``: no logic, no delay): one-bit fields as
``bool``, the others as unsigned vectors of the field's width, plus ``index`` when the signal is a
whole entry. A signed field (``imm``) is given raw (its bits); :func:`sign_extend` widens it to a
datapath word, the one place the RTL sign-extends an instruction field."""

from __future__ import annotations

from types import SimpleNamespace

from myhdl import Signal, always_comb, block, intbv

from vdla_hw import isa
from vdla_hw.rtl.params import INDEX_BITS, RtlParams

INSN_BITS = isa.INSN_BITS
INSN_BYTES = INSN_BITS // 8
ENTRY_BITS = INSN_BITS + INDEX_BITS      # a command-queue entry: {index, instruction}


def insn_fields(insn, p: RtlParams, kind: str) -> SimpleNamespace:
    """The fields of a ``kind`` instruction held in ``insn`` (an instruction or a whole
    command-queue entry), by their ISA names."""
    fields = _slices(insn, isa.layout(kind, p.config))
    if len(insn) >= ENTRY_BITS:
        fields["index"] = insn(ENTRY_BITS, INSN_BITS)
    return SimpleNamespace(**fields)


def field_reg(field) -> Signal:
    """A register as wide as the field signal ``field`` (it holds the field past the start cycle)."""
    return Signal(bool(0)) if len(field) == 1 else Signal(intbv(0)[len(field):])


@block
def sign_extend(raw, out):
    """``out`` = the two's-complement value held in the register ``raw`` (a signed field, e.g.
    ``imm``, registered at the start) sign-extended to ``len(out)`` bits. ``raw`` is a signal of
    its own, not a field slice: the converter writes a bit of a slice as invalid Verilog."""
    SIGN = len(raw) - 1
    HIGH = ((1 << len(out)) - 1) ^ ((1 << len(raw)) - 1)    # the bits above the field

    @always_comb
    def ext():
        if raw[SIGN]:
            out.next = raw | HIGH
        else:
            out.next = raw
    return ext


def _slices(word, layout: dict) -> dict:
    """Name -> the read-only slice of ``word`` holding that field of ``layout`` (one-bit fields as
    ``bool``): the one place the RTL slices an ISA layout."""
    return {name: word(f.lo) if f.width == 1 else word(f.lo + f.width, f.lo) for name, f in layout.items()}


def uop_fields(word, p: RtlParams) -> SimpleNamespace:
    """The fields of a micro-op word (``vdla_hw.isa.uop_layout``) by their ISA names."""
    return SimpleNamespace(**_slices(word, isa.uop_layout(p.config)))
