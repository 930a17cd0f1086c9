"""Hand-built workloads for timing tests and benchmarks: a blocked int8 GEMM, single or double
buffered, built with :class:`vdla_hw.bundle.BundleBuilder`.

``C = A @ B`` with A (M x K) and B (K x N) int8; the int32 result's low bytes are stored (the
OUT buffer is int8). In BATCH x BLOCK elements: A element (mb, kb) at mb*KB + kb, B^T element
(nb, kb) at nb*KB + kb (one weight block holds B[kb, nb]^T), C element (mb, nb) at mb*NB + nb.

Output tiles of tm x tn elements are computed over k steps of tk: per step one LOAD of the A
tile (2-D, tm rows of tk elements), one LOAD of the B tile and one GEMM whose loop is the real
matrix product: iter_out over the tk reduction (dst factor 0), iter_in over the tm rows, the
tn uops over output columns (one sweep writes tn distinct accumulators, so no tile breaks the
GEMM hazard rule, ``timing.gemm_hazard``). With ``buffers=2`` the inp/wgt buffers alternate per step and the
acc/out buffers per tile (latency hiding); with 1 every step waits for the previous one.
"""

from __future__ import annotations

import numpy as np

from vdla_hw import isa
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.config import Config, load_config

INP, WGT, ACC, OUT, UOP = (isa.MEM_TYPES.index(m) for m in ("inp", "wgt", "acc", "out", "uop"))  # memory_type values


def blocked_gemm(config: str | Config, m: int, k: int, n: int, tile: tuple[int, int, int], *,
                 buffers: int = 2, seed: int = 0, with_expected: bool = True) -> tuple[Bundle, np.ndarray | None]:
    """(bundle, expected C as int8 elements or None). ``tile`` = (tm, tk, tn) in elements."""
    c = load_config(config)
    bb = BundleBuilder(c)
    mb, kb, nb = m // c.batch, k // c.block_in, n // c.block_out
    tm, tk, tn = tile
    if mb * c.batch != m or kb * c.block_in != k or nb * c.block_out != n:
        raise ValueError(f"shape {m}x{k}x{n} is not a multiple of BATCH x BLOCK ({c.batch}x{c.block_in})")
    if mb % tm or kb % tk or nb % tn:
        raise ValueError(f"tile {tile} must divide {mb}x{kb}x{nb} elements")
    for mem, need in (("inp", tm * tk), ("wgt", tn * tk), ("acc", tm * tn)):
        if need * buffers > c.depth(mem):
            raise ValueError(f"{buffers} {mem} tiles of {need} elements exceed the {mem} SRAM ({c.depth(mem)})")
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    b = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
    a_el = a.reshape(mb, c.batch, kb, c.block_in).transpose(0, 2, 1, 3)
    b_el = b.reshape(kb, c.block_in, nb, c.block_out).transpose(2, 0, 3, 1)  # (nb, kb, out, in)
    a_sym = bb.array("a", "inp", a_el.reshape(-1, c.batch, c.block_in))
    b_sym = bb.array("b", "wgt", b_el.reshape(-1, c.block_out, c.block_in))
    c_sym = bb.alloc("c", "out", mb * nb)
    # uop tables: one per (inp/wgt buffer, acc buffer); column u -> dst u, src 0, wgt u*tk.
    table, tables = [], {}
    for s in range(buffers):
        for t in range(buffers):
            tables[s, t] = len(table)
            table += [(t * tm * tn + u, s * tm * tk, s * tn * tk + u * tk) for u in range(tn)]
    uops = bb.uops("uops", table)
    bb.emit("LOAD", memory_type=UOP, dram_base=uops, y_size=1, x_size=len(table), x_stride=len(table))
    step = 0
    tiles = [(i, j) for i in range(mb // tm) for j in range(nb // tn)]
    for tile_no, (i, j) in enumerate(tiles):
        t = tile_no % buffers
        for kk in range(kb // tk):
            s = step % buffers
            last_k = kk == kb // tk - 1
            bb.emit("LOAD", memory_type=INP, sram_base=s * tm * tk, dram_base=a_sym + i * tm * kb + kk * tk,
                    y_size=tm, x_size=tk, x_stride=kb, pop_next=int(step >= buffers))
            bb.emit("LOAD", memory_type=WGT, sram_base=s * tn * tk, dram_base=b_sym + j * tn * kb + kk * tk,
                    y_size=tn, x_size=tk, x_stride=kb, push_next=1)
            u0 = tables[s, t]
            if kk == 0:
                bb.emit("GEMM", reset=1, uop_bgn=u0, uop_end=u0 + tn, iter_out=tm, iter_in=1,
                        dst_factor_out=tn, pop_next=int(tile_no >= buffers))
            bb.emit("GEMM", uop_bgn=u0, uop_end=u0 + tn, iter_out=tk, iter_in=tm,
                    dst_factor_out=0, dst_factor_in=tn, src_factor_out=1, src_factor_in=tk,
                    wgt_factor_out=1, wgt_factor_in=0, pop_prev=1, push_prev=1, push_next=int(last_k))
            step += 1
        bb.emit("STORE", memory_type=OUT, sram_base=t * tm * tn, dram_base=c_sym + i * tm * nb + j * tn,
                y_size=tm, x_size=tn, x_stride=nb, pop_prev=1, push_prev=1)
    for _ in range(min(len(tiles), buffers) - 1):
        bb.emit("LOAD", memory_type=ACC, pop_next=1)
    bb.emit("FINISH", pop_next=1)
    bb.meta = {"producer": "vdla_sim.workloads.blocked_gemm", "shape": [m, k, n], "tile": list(tile),
               "buffers": buffers}
    bundle = bb.build()
    expected = None
    if with_expected:
        full = a.astype(np.int64) @ b.astype(np.int64)
        expected = full.reshape(mb, c.batch, nb, c.block_out).transpose(0, 2, 1, 3).astype(np.int8)
        expected = expected.reshape(mb * nb, c.batch, c.block_out)
    return bundle, expected
