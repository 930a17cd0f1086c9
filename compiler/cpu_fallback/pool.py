"""int8 pooling on NCHW: max pool (any window/stride/pad) and global average pool.

Max pool::

    out[n, c, y, x] = max over valid (i, j) of inp[n, c, y*s + i - p, x*s + j - p]

Padded positions are ignored (as if -inf); ``pad < kernel`` guarantees every window holds at
least one real element. Loop nest: for each output row, ``out_row[:] = -128``, then for every
window row ``i`` whose input row is in range and every window column ``j`` (unrolled, constant
x range), ``out_row[x] = max(out_row[x], inp_row[x*s + j - p])`` - a vectorised int8 max.

Global average pool (H x W -> 1 x 1), rounding half up::

    out[n, c] = floor((sum_{y,x} inp[n, c, y, x] + (H*W) // 2) / (H*W))

computed as an unsigned division of ``sum + 128*H*W + (H*W)//2`` (never negative) by the
constant ``H*W``, minus 128, so LLVM emits a multiply instead of a divide (the Cortex-A9 has
no integer divide instruction). The int32 sum is a vectorised reduction.
"""

import dataclasses

from .spec import (ArgSpec, KernelSpec, Work, check_positive, check_range, check_window,
                   out_size, valid_range)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MaxPool2dSpec(KernelSpec):
    """Max pool of an (n, c, h, w) int8 input with a kh x kw window."""

    family = "maxpool2d"
    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    stride: int = 1
    pad: int = 0

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w, kh=self.kh,
                       kw=self.kw, stride=self.stride)
        check_range(self.family, "pad", self.pad, 0, min(self.kh, self.kw) - 1)
        check_window(self, self.h, self.w, self.kh, self.kw, self.stride, self.pad)
        super().__post_init__()

    @property
    def oh(self):
        return out_size(self.h, self.kh, self.stride, self.pad)

    @property
    def ow(self):
        return out_size(self.w, self.kw, self.stride, self.pad)

    def args(self):
        return (ArgSpec("inp", "int8", (self.n, self.c, self.h, self.w)),
                ArgSpec("out", "int8", (self.n, self.c, self.oh, self.ow), output=True))

    def work(self):
        read, written = self.io_bytes()
        # One max per window element per output (int8 lanes, counted as 32-bit-lane ops / 4).
        ops = self.n * self.c * self.oh * self.ow * self.kh * self.kw
        return Work(elem_ops=ops // 4, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, out = ptrs
        s, p, oh_n, ow_n = self.stride, self.pad, self.oh, self.ow
        x_ranges = [valid_range(j, s, p, self.w, ow_n) for j in range(self.kw)]
        with L.loop(b, 0, self.n * self.c, "nc") as nc, L.loop(b, 0, oh_n, "y") as y:
            out_row = L.madd(b, (nc, oh_n * ow_n), (y, ow_n))
            with L.loop(b, 0, ow_n, "x0") as x:
                L.store(b, L.const(-128, L.I8), out, L.madd(b, out_row, x), L.I8)
            with L.loop(b, 0, self.kh, "i") as i:
                iy = L.madd(b, (y, s), i, -p)
                with L.when(b, L.in_range(b, iy, 0, self.h)):
                    in_row = L.madd(b, (nc, self.h * self.w), (iy, self.w))
                    for j, (lo, hi) in enumerate(x_ranges):
                        if lo >= hi:
                            continue
                        base = L.madd(b, in_row, j - p)
                        with L.loop(b, lo, hi, f"x{j}") as x:
                            v = L.load(b, inp, L.madd(b, base, (x, s)), L.I8)
                            o_idx = L.madd(b, out_row, x)
                            m = L.smax(b, L.load(b, out, o_idx, L.I8), v)
                            L.store(b, m, out, o_idx, L.I8)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GlobalAvgPoolSpec(KernelSpec):
    """Global average pool of an (n, c, h, w) int8 input to (n, c) int8, rounding half up."""

    family = "global_avgpool"
    n: int
    c: int
    h: int
    w: int

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w)
        # 255 * H * W must fit in int32 for the offset sum.
        check_range(self.family, "h*w", self.h * self.w, 1, 2**23)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "int8", (self.n, self.c, self.h, self.w)),
                ArgSpec("out", "int8", (self.n, self.c), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(elem_ops=self.n * self.c * self.h * self.w + 4 * self.n * self.c,
                    bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, out = ptrs
        area = self.h * self.w
        total = L.entry_alloca(b, L.I32, "total")
        with L.loop(b, 0, self.n * self.c, "nc") as nc:
            b.store(L.const(128 * area + area // 2), total)
            base = L.madd(b, (nc, area))
            with L.loop(b, 0, area, "k") as k:
                v = b.sext(L.load(b, inp, L.madd(b, base, k), L.I8), L.I32)
                b.store(b.add(b.load(total, typ=L.I32), v, flags=["nsw"]), total)
            mean = b.sub(b.udiv(b.load(total, typ=L.I32), L.const(area)), L.const(128))
            L.store(b, b.trunc(mean, L.I8), out, nc, L.I8)
