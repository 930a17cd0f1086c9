"""Activity counts of a program: what the accelerator does that costs energy.

Counted from the instruction stream (the loop nests of docs/spec.md section 4; no simulation
needed), per run of the program:

- ``macs``: int8 multiply-accumulates of non-reset GEMM micro-ops (BATCH x BLOCK_IN x BLOCK_OUT each);
- ``alu_ops``: int32 lane operations of ALU micro-ops (BATCH x BLOCK_OUT each);
- ``sram_reads`` / ``sram_writes``: element accesses per buffer (uop, inp, wgt, acc, out). A LOAD
  writes its whole SRAM footprint, padding included; a STORE reads OUT; each GEMM/ALU micro-op
  reads its uop; a GEMM reads one inp and one wgt element and reads and writes one acc element
  (a reset GEMM only writes); an ALU reads its destination and, unless immediate, its source;
  GEMM and ALU mirror every written accumulator into OUT;
- ``dram_bytes``: bytes the LOADs read and the STOREs write, plus the instruction fetch.

The counts of loaded/stored bytes and micro-ops equal the reference semantics' counters (tested).
"""

from __future__ import annotations

from vdla_hw import timing
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config
from vdla_hw.program import footprint, moves_data

BUFFERS = ("uop", "inp", "wgt", "acc", "out")


def empty() -> dict:
    return {"macs": 0, "alu_ops": 0, "dram_bytes": 0,
            "sram_reads": {b: 0 for b in BUFFERS}, "sram_writes": {b: 0 for b in BUFFERS}}


def program_activity(bundle: Bundle) -> dict:
    """Activity counts of one run of ``bundle`` (see the module docstring)."""
    c: Config = bundle.config
    act = empty()
    reads, writes = act["sram_reads"], act["sram_writes"]
    lanes = c.batch * c.block_out
    insns = bundle.insns()
    act["dram_bytes"] += len(insns) * c.insn_bytes
    for insn in insns:
        kind = insn.kind
        if kind == "LOAD" and footprint(insn)[0]:  # padding rows only (y_size 0) are written too
            rows, cols = footprint(insn)
            writes[insn.mem] += rows * cols
            act["dram_bytes"] += insn.y_size * insn.x_size * c.elem_bytes(insn.mem)
        elif kind == "STORE" and moves_data(insn):
            reads["out"] += insn.y_size * insn.x_size
            act["dram_bytes"] += insn.y_size * insn.x_size * c.elem_bytes("out")
        elif kind in ("GEMM", "ALU"):
            n = timing.uop_count(insn)
            reads["uop"] += n
            writes["acc"] += n
            writes["out"] += n
            if kind == "GEMM" and not insn.reset:
                reads["inp"] += n
                reads["wgt"] += n
                reads["acc"] += n
                act["macs"] += n * c.batch * c.block_in * c.block_out
            elif kind == "ALU":
                reads["acc"] += n * (1 if insn.use_imm else 2)
                act["alu_ops"] += n * lanes
    return act


def add(total: dict, part: dict, times: int = 1) -> dict:
    """``total`` += ``times`` x ``part`` (activity dicts), in place; returns ``total``."""
    for key in ("macs", "alu_ops", "dram_bytes"):
        total[key] += times * part[key]
    for side in ("sram_reads", "sram_writes"):
        for b in BUFFERS:
            total[side][b] += times * part[side][b]
    return total
