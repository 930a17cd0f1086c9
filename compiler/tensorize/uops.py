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

With ``Schedule.row_loop`` (a folded kernel, smaller tables) the tables hold one tile row instead: GEMM rows
(c < tic, ky, kx, x < tw), loop i over oc blocks, loop j over the tile's rows (dst += tw, src +=
one input row step, wgt += 0); ALU rows x < tw, loop j over the rows.
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


def gemm_row_kernel(plan: Plan, shape: TileShape, *, acc: int, inp: int, wgt: int) -> np.ndarray:
    """(tic*tky*K*tw, 3) rows of a ``row_loop`` GEMM table: one tile row, every ic block of a
    step (c, ky, kx, x; x fastest, so a sweep cycles through tw >= HAZARD_DISTINCT accumulators);
    the instruction's inner loop steps over the rows (dst += tw, src += one row's input)."""
    k, s, tic = plan.layer.k, plan.layer.stride, plan.schedule.tic
    x = np.arange(shape.tw)
    tile_in = shape.in_rows * shape.in_cols
    rows = []
    for c in range(tic):
        for ky in range(plan.tky):
            row = 0 if plan.row_step > 1 else ky
            for kx in range(k):
                src = inp + c * tile_in + row * shape.in_cols + x * s + kx
                rows.append(np.stack([acc + x, src, np.full_like(x, wgt + c * plan.kstep + ky * k + kx)], axis=1))
    return np.concatenate(rows).astype(np.int64)


def alu_row_kernel(shape: TileShape, *, acc: int, bias: int) -> np.ndarray:
    """(tw, 3) rows of a ``row_loop`` ALU table: one tile row (the inner loop steps over rows)."""
    x = np.arange(shape.tw)
    return np.stack([acc + x, np.full_like(x, bias), np.zeros_like(x)], axis=1).astype(np.int64)
