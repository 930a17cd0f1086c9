"""Micro-op kernels of a convolution tile, folded into the GEMM/ALU two-level loops.

GEMM kernel of a tile shape (one table per thread and shape; rows are (dst, src, wgt))::

    for ky < tky, kx:                # kernel offsets of one reduction step, in the table
        for p in range(G):           # output pixels (p >= pixels: scratch), in the table
            dst = acc + p
            src = inp + row(y, ky) * in_cols + x * stride + kx      # (y, x) = divmod(p, tw)
            wgt = wgt + ky * K + kx
    instruction loops: i over output-channel blocks (dst += G, wgt += tic*tky*K)
                       j over input-channel blocks  (src += in_rows*in_cols, wgt += tky*K)

Consecutive uops write accumulators p, p+1, ... (mod G >= HAZARD_DISTINCT), and loop steps move
dst by 0 or G, so no uop writes an accumulator written by one of the GEMM_HAZARD_DISTANCE uops
before it (the GEMM hazard rule). The ALU kernel walks the tile's real pixels once: dst = acc + p, src = the bias
vector (loop i: dst += G, src += 1), strictly increasing destinations.
"""

from __future__ import annotations

import numpy as np

from compiler.tensorize.schedule import Plan, TileShape


def gemm_kernel(plan: Plan, shape: TileShape, *, acc: int, inp: int, wgt: int) -> np.ndarray:
    """(K*K*G, 3) rows of the GEMM table of ``shape`` for a thread with the given SRAM bases."""
    k, s = plan.layer.k, plan.layer.stride
    p = np.arange(shape.group)
    y, x = np.divmod(np.where(p < shape.pixels, p, 0), shape.tw)
    rows = []
    for ky in range(plan.tky):
        row = y if plan.row_step > 1 else y * s + ky
        for kx in range(k):
            src = inp + row * shape.in_cols + x * s + kx
            rows.append(np.stack([acc + p, src, np.full_like(p, wgt + ky * k + kx)], axis=1))
    return np.concatenate(rows).astype(np.int64)


def alu_kernel(shape: TileShape, *, acc: int, bias: int) -> np.ndarray:
    """(pixels, 3) rows of the ALU table: every real pixel of one output-channel block."""
    p = np.arange(shape.pixels)
    return np.stack([acc + p, np.full_like(p, bias), np.zeros_like(p)], axis=1).astype(np.int64)
