"""Program-level rules shared by every model: decoding a bundle's stream, FINISH placement, and
the SRAM/DRAM ranges an instruction touches (docs/spec.md section 4).

The reference semantics, the simulator and the driver all call these, so a malformed program
gets the same error, naming the same instruction and field, wherever it runs.
"""

from __future__ import annotations

import numpy as np

from vdla_hw import isa
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config
from vdla_hw.errors import ProgramError


def decode_checked(bundle: Bundle) -> list[isa.Insn]:
    """The bundle's instructions, each statically checked in program order: its fields, FINISH
    the last and only one, and the SRAM/DRAM ranges of transfers and micro-op ranges. Both the
    reference semantics and the simulator check here before any work, so no cost or loop of an
    out-of-range instruction is ever computed (a transfer in range is bounded by its SRAM)."""
    insns = bundle.insns()
    for index, insn in enumerate(insns):
        isa.check_insn(insn, bundle.config, index)
        if insn.kind == "FINISH" and index != len(insns) - 1:
            raise ProgramError(index, "FINISH", "opcode", f"FINISH must be the last instruction, "
                               f"but {len(insns) - 1 - index} instruction(s) follow it", error_bit="bad_flag")
    if insns[-1].kind != "FINISH":
        raise ProgramError(len(insns) - 1, insns[-1].kind, "opcode",
                           "the stream ends without FINISH (a program ends with exactly one FINISH)",
                           error_bit="bad_flag")
    for index, insn in enumerate(insns):
        if insn.kind in ("LOAD", "STORE"):
            check_transfer(insn, bundle.config, bundle.dram.size, index)
        elif insn.kind in ("GEMM", "ALU"):
            check_uop_range(insn, bundle.config, index)
    return insns


def moves_data(insn: isa.Insn) -> bool:
    """A LOAD/STORE with x_size 0 or y_size 0 moves no DRAM data (no port transaction)."""
    return insn.x_size > 0 and insn.y_size > 0


def footprint(insn: isa.Insn) -> tuple[int, int]:
    """(rows, columns) of SRAM elements a LOAD writes, padding included (a STORE: y_size, x_size).
    x_size 0 writes nothing; y_size 0 with x_size > 0 writes its y padding rows only (as VTA's
    HLS load_pad_2d and its fsim do: docs/spec.md section 4); (0, 0) when nothing is written."""
    if insn.x_size == 0:
        return 0, 0
    rows = insn.y_pad_top + insn.y_size + insn.y_pad_bottom
    if rows == 0:
        return 0, 0
    return rows, insn.x_pad_left + insn.x_size + insn.x_pad_right


def check_transfer(insn: isa.Insn, config: Config, dram_bytes: int, index: int) -> None:
    """A LOAD/STORE's SRAM footprint must lie inside its SRAM and its DRAM rows inside the image
    (a LOAD of padding rows only reads no DRAM: its SRAM footprint alone is checked)."""
    y, x = insn.y_size, insn.x_size
    if not x:
        return
    mem = insn.mem
    rows = insn.y_pad_top + y + insn.y_pad_bottom  # footprint, inlined: this runs for every transfer
    if not rows:
        return
    cols = insn.x_pad_left + x + insn.x_pad_right
    depth = config.depth(mem)
    if insn.sram_base + rows * cols > depth:
        raise ProgramError(index, insn.kind, "sram_base", f"{mem} SRAM elements {insn.sram_base}.."
                           f"{insn.sram_base + rows * cols - 1} exceed its depth {depth}", error_bit="sram_range")
    if not y:
        return
    elems = dram_bytes // config.elem_bytes(mem)
    last = insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size
    if last > elems:
        raise ProgramError(index, insn.kind, "dram_base", f"{mem} DRAM elements {insn.dram_base}..{last - 1} "
                           f"exceed the image ({elems} {mem} elements)", error_bit="dram_range")


def loop_indices(insn: isa.Insn, uops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dst, src, wgt) index arrays of a GEMM/ALU in execution order: i over iter_out, j over
    iter_in, u over [uop_bgn, uop_end). ``uops`` is the decoded (n, 3) table of the range."""
    i = np.arange(insn.iter_out, dtype=np.int64)[:, None, None]
    j = np.arange(insn.iter_in, dtype=np.int64)[None, :, None]
    shape = (insn.iter_out, insn.iter_in, len(uops))
    dst = np.broadcast_to(uops[None, None, :, 0] + i * insn.dst_factor_out + j * insn.dst_factor_in, shape)
    src = np.broadcast_to(uops[None, None, :, 1] + i * insn.src_factor_out + j * insn.src_factor_in, shape)
    wgt = np.broadcast_to(uops[None, None, :, 2] + i * insn.wgt_factor_out + j * insn.wgt_factor_in, shape)
    return dst.reshape(-1), src.reshape(-1), wgt.reshape(-1)


def loop_chunks(insn: isa.Insn, uops: np.ndarray, max_uops: int):
    """Split a GEMM/ALU loop nest into consecutive pieces of at most ``max_uops`` uops (whole
    inner loops when one fits; never less than one pass over the uop range, which the uop SRAM
    bounds), so a model never materialises more indices than that:
    yields ``(piece, piece_uops, first)`` in execution order, where ``piece`` is the instruction
    with the piece's trip counts, ``piece_uops`` the uop table with the piece's starting offsets
    added, and ``first`` the flattened position of the piece's first uop in the whole loop."""
    n_u = len(uops)
    if n_u == 0 or insn.iter_out == 0 or insn.iter_in == 0:
        return
    names = ("dst_factor", "src_factor", "wgt_factor")
    f_out = np.array([insn.fields.get(f + "_out", 0) for f in names], dtype=np.int64)
    f_in = np.array([insn.fields.get(f + "_in", 0) for f in names], dtype=np.int64)
    per_row = insn.iter_in * n_u
    if per_row <= max_uops:
        rows = max(1, max_uops // per_row)
        for i0 in range(0, insn.iter_out, rows):
            i1 = min(insn.iter_out, i0 + rows)
            yield insn.replace(iter_out=i1 - i0), uops + i0 * f_out, i0 * per_row
        return
    cols = max(1, max_uops // n_u)
    for i in range(insn.iter_out):
        for j0 in range(0, insn.iter_in, cols):
            j1 = min(insn.iter_in, j0 + cols)
            yield insn.replace(iter_out=1, iter_in=j1 - j0), uops + i * f_out + j0 * f_in, i * per_row + j0 * n_u


def check_uop_range(insn: isa.Insn, config: Config, index: int) -> None:
    if insn.uop_end > config.depth("uop"):
        raise ProgramError(index, insn.kind, "uop_end", f"uop range {insn.uop_bgn}:{insn.uop_end} exceeds "
                           f"the uop SRAM depth {config.depth('uop')}", error_bit="sram_range")


def check_loop_ranges(insn: isa.Insn, uops: np.ndarray, config: Config, index: int) -> None:
    """Every index a GEMM/ALU loop reaches must lie inside its SRAM (factors are non-negative,
    so the largest index is the largest uop field plus the last iteration's offsets)."""
    if len(uops) == 0 or insn.iter_out == 0 or insn.iter_in == 0:
        return
    io, ii = insn.iter_out - 1, insn.iter_in - 1
    targets = [("dst_idx", "dst_factor", 0, "acc"),
               ("src_idx", "src_factor", 1, "inp" if insn.kind == "GEMM" else "acc")]
    if insn.kind == "GEMM":
        targets.append(("wgt_idx", "wgt_factor", 2, "wgt"))
    for name, factor, col, mem in targets:
        top = int(uops[:, col].max()) + io * insn.fields.get(factor + "_out", 0) + ii * insn.fields.get(factor + "_in", 0)
        if top >= config.depth(mem):
            raise ProgramError(index, insn.kind, f"uop.{name}/{factor}_*", f"reaches {mem} element {top}, "
                               f"past the {mem} SRAM depth {config.depth(mem)}", error_bit="sram_range")
