"""Hypothesis strategies for instructions of any kind, with every field inside its width."""

from __future__ import annotations

from hypothesis import strategies as st

from vdla_hw import isa
from vdla_hw.config import MEM_TYPES, Config

PRESET_NAMES = ("osdi18", "vta-pynq", "tiny")


def insns(config: Config, kind: str | None = None, canonical: bool = True) -> st.SearchStrategy[isa.Insn]:
    """Any instruction of ``kind`` (default: any kind) whose fields fit their widths.

    ``canonical`` keeps ``imm`` zero when ``use_imm`` is clear, as the assembler writes it.
    """
    kinds = [kind] if kind else list(isa.OPCODES)

    @st.composite
    def build(draw):
        k = draw(st.sampled_from(kinds))
        fields = {}
        for name, f in isa.layout(k, config).items():
            if name == "opcode":
                continue
            if name == "memory_type":
                fields[name] = draw(st.integers(0, len(MEM_TYPES) - 1))
            elif name == "alu_opcode":
                fields[name] = draw(st.integers(0, len(isa.ALU_OPS) - 1))
            else:
                fields[name] = draw(st.integers(f.low, f.high))
        if canonical and k == "ALU" and not fields["use_imm"]:
            fields["imm"] = 0
        return isa.Insn(k, **fields)

    return build()
