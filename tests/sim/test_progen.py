"""The random program generator: deterministic per seed, every instruction kind, and programs the
reference semantics accepts."""

import numpy as np

from vdla_hw import isa
from vdla_sim.progen import random_program


def test_same_seed_same_bundle():
    a, b = random_program(11, "osdi18"), random_program(11, "osdi18")
    assert np.array_equal(a.dram, b.dram) and a.insn_offset == b.insn_offset
    assert not np.array_equal(a.dram, random_program(12, "osdi18").dram)


def test_programs_cover_the_instruction_set():
    seen = set()
    for seed in range(60):
        for insn in random_program(seed, "tiny").insns():
            seen.add(insn.kind)
            if insn.kind in ("LOAD", "STORE"):
                seen.add(f"{insn.kind}:{insn.mem}")
                if insn.y_pad_top or insn.y_pad_bottom or insn.x_pad_left or insn.x_pad_right:
                    seen.add(f"pad:{insn.mem}")
                if not insn.x_size:
                    seen.add("flag carrier")
            if insn.kind in ("GEMM", "ALU") and insn.iter_out > 1 and insn.iter_in > 1:
                seen.add("two-level loop")
            if insn.kind == "GEMM" and insn.reset:
                seen.add("reset")
            if insn.kind == "ALU":
                seen.add(f"alu:{isa.ALU_OPS[insn.alu_opcode]}:{insn.use_imm}")
            for q in isa.pops(insn) + isa.pushes(insn):
                seen.add(f"token:{q}")
    expected = {"LOAD", "STORE", "GEMM", "ALU", "FINISH", "LOAD:uop", "LOAD:inp", "LOAD:wgt", "LOAD:acc", "STORE:out",
                "pad:inp", "pad:acc", "flag carrier", "two-level loop", "reset"}
    expected |= {f"alu:{op}:{imm}" for op in isa.ALU_OPS for imm in (0, 1)}
    expected |= {f"token:{q}" for q in isa.TOKEN_QUEUES}
    assert expected <= seen, expected - seen
