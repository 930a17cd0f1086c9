"""Fixed programs of the foundation tests, built with the bundle builder.

Each function returns ``(bundle, expected)`` where ``expected`` maps an output symbol to the
array plain numpy says it must hold. The simulator and RTL tests run the same corpus.
"""

from __future__ import annotations

import numpy as np

from vdla_hw import alu, isa
from vdla_hw.bundle import Bundle, BundleBuilder

ALU = alu.OPCODE  # mnemonic -> alu_opcode (the ALU table)
INP, WGT, ACC, OUT, UOP = (isa.MEM_TYPES.index(m) for m in ("inp", "wgt", "acc", "out", "uop"))  # memory_type values


def _sync_store(b: BundleBuilder, **store) -> None:
    """Hand the compute results to store and wait for it: push c2s on a no-op, STORE pops it."""
    b.emit("LOAD", memory_type=ACC, push_next=1)  # x_size 0: carries the compute -> store token
    b.emit("STORE", memory_type=OUT, pop_prev=1, push_prev=1, **store)
    b.emit("FINISH", pop_next=1)


def load_store_round_trip(preset: str, rows: int = 3, cols: int = 5, stride: int = 7, seed: int = 0):
    """ACC tile -> ALU add 0 (mirrors to OUT) -> strided STORE; DRAM gets the low bytes."""
    b = BundleBuilder(preset)
    rng = np.random.default_rng(seed)
    shape = b.config.elem_shape("acc")
    data = rng.integers(-128, 128, size=(rows * cols, *shape))
    src = b.array("src", "acc", data)
    dst = b.alloc("dst", "out", rows * stride)
    b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=b.symbols["k"].index, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=ACC, dram_base=src, y_size=rows, x_size=cols, x_stride=cols)
    b.emit("ALU", alu_opcode=ALU["add"], uop_end=1, iter_out=rows * cols, iter_in=1, dst_factor_out=1,
           src_factor_out=1, use_imm=1, imm=0)
    _sync_store(b, dram_base=dst, y_size=rows, x_size=cols, x_stride=stride)
    expected = np.zeros((rows, stride, *shape), dtype=np.int8)
    expected[:, :cols] = data.reshape(rows, cols, *shape)
    return b.build(), {"dst": expected.reshape(rows * stride, *shape)}


def padded_load(preset: str, pads=(1, 2, 3, 1), rows: int = 2, cols: int = 3, seed: int = 1):
    """INP tile with zero padding -> GEMM with identity weights -> STORE the padded tile."""
    b = BundleBuilder(preset)
    c = b.config
    rng = np.random.default_rng(seed)
    data = rng.integers(-128, 128, size=(rows * cols, c.batch, c.block_in))
    top, bottom, left, right = pads
    prow, pcol = top + rows + bottom, left + cols + right
    n = prow * pcol
    src = b.array("src", "inp", data)
    ident = b.array("ident", "wgt", np.eye(c.block_out, c.block_in, dtype=np.int8)[None])
    dst = b.alloc("dst", "out", n)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=WGT, dram_base=ident, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=INP, dram_base=src, y_size=rows, x_size=cols, x_stride=cols,
           y_pad_top=top, y_pad_bottom=bottom, x_pad_left=left, x_pad_right=right, push_next=1)
    b.emit("GEMM", reset=1, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1)
    b.emit("GEMM", pop_prev=1, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1)
    _sync_store(b, dram_base=dst, y_size=1, x_size=n, x_stride=n)
    tile = np.pad(data.reshape(rows, cols, c.batch, c.block_in), ((top, bottom), (left, right), (0, 0), (0, 0)))
    return b.build(), {"dst": tile.reshape(n, c.batch, c.block_out).astype(np.int8)}


def blocked_matmul(preset: str, m_blocks: int = 3, k_blocks: int = 3, n_blocks: int = 2, seed: int = 2):
    """out = A @ W.T as a GEMM over a two-level loop: i over output blocks, j over k blocks,
    uops over rows of A; reset first. Uses two-level loops and multi-uop kernels. With m_blocks >= 3
    (or k_blocks = 1) consecutive uops write different accumulators, as the GEMM pipeline needs."""
    b = BundleBuilder(preset)
    c = b.config
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=(m_blocks, c.batch, k_blocks * c.block_in))
    w = rng.integers(-128, 128, size=(n_blocks * c.block_out, k_blocks * c.block_in))
    # inp element (m, k) at m*k_blocks + k; wgt element (n, k) at n*k_blocks + k; acc (m, n) at n*m_blocks + m.
    a_blk = a.reshape(m_blocks, c.batch, k_blocks, c.block_in).transpose(0, 2, 1, 3)
    w_blk = w.reshape(n_blocks, c.block_out, k_blocks, c.block_in).transpose(0, 2, 1, 3)
    src = b.array("a", "inp", a_blk.reshape(-1, c.batch, c.block_in))
    wts = b.array("w", "wgt", w_blk.reshape(-1, c.block_out, c.block_in))
    dst = b.alloc("out", "out", m_blocks * n_blocks)
    k = b.uops("k", [(m, m * k_blocks, 0) for m in range(m_blocks)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=m_blocks, x_stride=m_blocks)
    b.emit("LOAD", memory_type=WGT, dram_base=wts, y_size=1, x_size=n_blocks * k_blocks, x_stride=n_blocks * k_blocks)
    b.emit("LOAD", memory_type=INP, dram_base=src, y_size=1, x_size=m_blocks * k_blocks,
           x_stride=m_blocks * k_blocks, push_next=1)
    b.emit("GEMM", reset=1, uop_end=m_blocks, iter_out=n_blocks, iter_in=1, dst_factor_out=m_blocks)
    b.emit("GEMM", pop_prev=1, uop_end=m_blocks, iter_out=n_blocks, iter_in=k_blocks,
           dst_factor_out=m_blocks, dst_factor_in=0, src_factor_out=0, src_factor_in=1,
           wgt_factor_out=k_blocks, wgt_factor_in=1)
    n_out = m_blocks * n_blocks
    _sync_store(b, dram_base=dst, y_size=1, x_size=n_out, x_stride=n_out)
    full = a.reshape(m_blocks * c.batch, -1).astype(np.int64) @ w.T.astype(np.int64)
    blocks = full.reshape(m_blocks, c.batch, n_blocks, c.block_out).transpose(2, 0, 1, 3)
    return b.build(), {"out": blocks.reshape(n_out, c.batch, c.block_out).astype(np.int8)}, full


def alu_program(preset: str, op: str, *, imm: int | None, seed: int = 3, n: int = 6,
                acc_values=None, operand_values=None):
    """acc[0:n] = op(acc[0:n], imm or acc[n:2n]) with a two-level loop, then STORE."""
    b = BundleBuilder(preset)
    c = b.config
    rng = np.random.default_rng(seed)
    shape = (n, *c.elem_shape("acc"))
    x = rng.integers(-(1 << 31), 1 << 31, size=shape) if acc_values is None else np.broadcast_to(acc_values, shape)
    y = rng.integers(-(1 << 31), 1 << 31, size=shape) if operand_values is None else np.broadcast_to(operand_values, shape)
    src = b.array("x", "acc", np.concatenate([x, y]))
    dst = b.alloc("out", "out", n)
    k = b.uops("k", [(0, n, 0), (1, n + 1, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=2, x_stride=2)
    b.emit("LOAD", memory_type=ACC, dram_base=src, y_size=1, x_size=2 * n, x_stride=2 * n)
    fields = dict(alu_opcode=ALU[op], uop_end=2, iter_out=n // 2, iter_in=1, dst_factor_out=2, src_factor_out=2)
    if imm is not None:
        fields.update(use_imm=1, imm=imm)
    b.emit("ALU", **fields)
    _sync_store(b, dram_base=dst, y_size=1, x_size=n, x_stride=n)
    return b.build(), np.asarray(x, dtype=np.int64), np.asarray(y if imm is None else np.full(shape, imm), dtype=np.int64)


def requantize_program(preset: str, shift: int, lo: int, n: int = 4, seed: int = 4):
    """y = clip(acc >> shift, lo, 127) with ALU SHR, MAX, MIN (ReLU when lo = 0)."""
    b = BundleBuilder(preset)
    rng = np.random.default_rng(seed)
    x = rng.integers(-(1 << 20), 1 << 20, size=(n, *b.config.elem_shape("acc")))
    src = b.array("x", "acc", x)
    dst = b.alloc("out", "out", n)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=ACC, dram_base=src, y_size=1, x_size=n, x_stride=n)
    loop = dict(uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1, use_imm=1)
    b.emit("ALU", alu_opcode=ALU["shr"], imm=shift, **loop)
    b.emit("ALU", alu_opcode=ALU["max"], imm=lo, **loop)
    b.emit("ALU", alu_opcode=ALU["min"], imm=127, **loop)
    _sync_store(b, dram_base=dst, y_size=1, x_size=n, x_stride=n)
    return b.build(), {"out": np.clip(x >> shift, lo, 127).astype(np.int8)}


def _loaded_acc(b: BundleBuilder, n: int, seed: int) -> tuple[np.ndarray, int]:
    """Emit the LOADs of one uop (0, 0, 0) and of ``n`` random accumulators; returns (their
    values, the element index of an ``n``-element OUT array "out")."""
    x = np.random.default_rng(seed).integers(-100, 100, size=(n, *b.config.elem_shape("acc")))
    src = b.array("x", "acc", x)
    dst = b.alloc("out", "out", n)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=ACC, dram_base=src, y_size=1, x_size=n, x_stride=n)
    return x, dst


def alu_reset_program(preset: str, n: int = 4, imm: int = 5, seed: int = 5):
    """ALU ADD imm with the reset bit set: VTA's ALU ignores the bit, so acc + imm (not 0) is stored."""
    b = BundleBuilder(preset)
    x, dst = _loaded_acc(b, n, seed)
    b.emit("ALU", reset=1, alu_opcode=ALU["add"], uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1,
           src_factor_out=1, use_imm=1, imm=imm)
    _sync_store(b, dram_base=dst, y_size=1, x_size=n, x_stride=n)
    return b.build(), {"out": (x + imm).astype(np.int8)}


def pad_rows_only(preset: str, mem: str, pads=(1, 2, 1, 1), cols: int = 2, seed: int = 6):
    """A LOAD with y_size 0 and y padding writes its zero rows (x_size > 0): INP (through an
    identity GEMM) or ACC (through ALU ADD 0) is first filled with data, the padding-only LOAD
    zeroes (top + bottom) * (left + cols + right) elements from element 1, then all is stored."""
    b = BundleBuilder(preset)
    c = b.config
    rng = np.random.default_rng(seed)
    top, bottom, left, right = pads
    zeros = (top + bottom) * (left + cols + right)
    n = zeros + 2
    elem = c.elem_shape(mem)
    data = rng.integers(-100, 100, size=(n, *elem))
    src = b.array("src", mem, data)
    dst = b.alloc("dst", "out", n)
    k = b.uops("k", [(0, 0, 0)])
    pad = dict(y_size=0, x_size=cols, x_stride=cols, y_pad_top=top, y_pad_bottom=bottom, x_pad_left=left,
               x_pad_right=right, sram_base=1, dram_base=src)
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    if mem == "inp":
        ident = b.array("ident", "wgt", np.eye(c.block_out, c.block_in, dtype=np.int8)[None])
        b.emit("LOAD", memory_type=WGT, dram_base=ident, y_size=1, x_size=1, x_stride=1)
        b.emit("LOAD", memory_type=INP, dram_base=src, y_size=1, x_size=n, x_stride=n)
        b.emit("LOAD", memory_type=INP, push_next=1, **pad)
        b.emit("GEMM", reset=1, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1)
        b.emit("GEMM", pop_prev=1, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1)
        expect = data[:, :, :c.block_out]
    else:
        b.emit("LOAD", memory_type=ACC, dram_base=src, y_size=1, x_size=n, x_stride=n)
        b.emit("LOAD", memory_type=ACC, **pad)
        b.emit("ALU", alu_opcode=ALU["add"], uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1,
               src_factor_out=1, use_imm=1, imm=0)
        expect = data
    _sync_store(b, dram_base=dst, y_size=1, x_size=n, x_stride=n)
    expected = np.array(expect, dtype=np.int64)
    expected[1:1 + zeros] = 0
    return b.build(), {"dst": expected.astype(np.int8)}


def token_wait_program(preset: str, n: int = 3, seed: int = 7):
    """A STORE placed before the ALU that pushes its token: every model waits for the token (the
    reference semantics runs the ALU first), as VTA's fsim and HLS do."""
    b = BundleBuilder(preset)
    x, dst = _loaded_acc(b, n, seed)
    b.emit("STORE", memory_type=OUT, dram_base=dst, y_size=1, x_size=n, x_stride=n, pop_prev=1, push_prev=1)
    b.emit("ALU", alu_opcode=ALU["add"], uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1,
           use_imm=1, imm=1, push_next=1)
    b.emit("FINISH", pop_next=1)
    return b.build(), {"out": (x + 1).astype(np.int8)}


def fixed_corpus(preset: str) -> list[tuple[str, Bundle]]:
    """Every fixed program of the foundation tests, by name, for cross-model tests."""
    corpus = [("load_store", load_store_round_trip(preset)[0]),
              ("matmul", blocked_matmul(preset)[0]),
              ("relu", requantize_program(preset, 0, 0)[0]),
              ("shift_clip", requantize_program(preset, 5, -128)[0])]
    for pads in [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1), (1, 2, 3, 1)]:
        corpus.append((f"pad_{'_'.join(map(str, pads))}", padded_load(preset, pads)[0]))
    for op in ALU:
        corpus.append((f"alu_{op}_imm", alu_program(preset, op, imm=-7 if op != "shr" else 3)[0]))
        corpus.append((f"alu_{op}_vec", alu_program(preset, op, imm=None)[0]))
    corpus += [("alu_reset_ignored", alu_reset_program(preset)[0]),
               ("pad_rows_only_inp", pad_rows_only(preset, "inp")[0]),
               ("pad_rows_only_acc", pad_rows_only(preset, "acc")[0]),
               ("pad_rows_only_top", pad_rows_only(preset, "inp", pads=(2, 0, 0, 1))[0]),
               ("token_wait", token_wait_program(preset)[0])]
    return corpus
