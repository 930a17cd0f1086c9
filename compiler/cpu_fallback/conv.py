"""int8 2-D convolution (NCHW x OIHW -> NCHW) with int32 accumulation and requantization.

Semantics (the same as the accelerator path)::

    acc[n, o, y, x] = bias[o] + sum_{c, i, j} inp[n, c, y*s + i - p, x*s + j - p] * wgt[o, c, i, j]
    out = clip(acc >> shift, 0 if relu else -128, 127)          (int32 wrap, arithmetic shift)

with zero padding ``p`` on all four sides and stride ``s`` in both directions.

Loop nest of the generated code (``row`` is an int32 scratch row of OW accumulators)::

    for n, o, y:
        row[:] = bias[o]
        for c, i (rows with y*s+i-p outside [0, H) skipped):
            for j (unrolled at code-generation time, so the x range is constant):
                w = wgt[o, c, i, j]
                for x in valid(j): row[x] += w * inp[n, c, y*s+i-p, x*s+j-p]   <- vectorised
        for x: out[n, o, y, x] = requant(row[x])                                 <- vectorised

The innermost loop has a constant trip count and a constant input stride ``s``, so LLVM's loop
vectoriser turns it into widened loads (interleaved for s > 1), multiplies and adds.
"""

import dataclasses

from .spec import (ArgSpec, KernelSpec, Work, check_bool, check_positive, check_range,
                   check_window, out_size, valid_range)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Conv2dSpec(KernelSpec):
    """Conv2d of an (n, c, h, w) int8 input with (oc, c, kh, kw) int8 weights and int32 bias."""

    family = "conv2d"
    n: int
    c: int
    h: int
    w: int
    oc: int
    kh: int
    kw: int
    stride: int = 1
    pad: int = 0
    shift: int = 0
    relu: bool = False

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w, oc=self.oc,
                       kh=self.kh, kw=self.kw, stride=self.stride)
        check_range(self.family, "pad", self.pad, 0, max(self.kh, self.kw) - 1)
        check_range(self.family, "shift", self.shift, 0, 31)
        check_bool(self.family, "relu", self.relu)
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
                ArgSpec("wgt", "int8", (self.oc, self.c, self.kh, self.kw)),
                ArgSpec("bias", "int32", (self.oc,)),
                ArgSpec("out", "int8", (self.n, self.oc, self.oh, self.ow), output=True))

    def work(self):
        outputs = self.n * self.oc * self.oh * self.ow
        read, written = self.io_bytes()
        # MACs actually performed (padding skipped): count valid taps per output position.
        taps_y = sum(hi - lo for lo, hi in (valid_range(i, self.stride, self.pad, self.h, self.oh)
                                            for i in range(self.kh)))
        taps_x = sum(hi - lo for lo, hi in (valid_range(j, self.stride, self.pad, self.w, self.ow)
                                            for j in range(self.kw)))
        macs = self.n * self.oc * self.c * taps_y * taps_x
        # Per output: bias init, shift, two clamps, narrow.
        return Work(macs=macs, elem_ops=5 * outputs, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, wgt, bias, out = ptrs
        s, p, oh_n, ow_n = self.stride, self.pad, self.oh, self.ow
        row = L.entry_alloca(b, L.I32, "row", count=ow_n)
        x_ranges = [valid_range(j, s, p, self.w, ow_n) for j in range(self.kw)]
        with L.loop(b, 0, self.n, "n") as n, L.loop(b, 0, self.oc, "o") as o:
            bias_o = L.load(b, bias, o, L.I32)
            with L.loop(b, 0, oh_n, "y") as y:
                with L.loop(b, 0, ow_n, "x0") as x:
                    L.store(b, bias_o, row, x, L.I32)
                with L.loop(b, 0, self.c, "c") as c, L.loop(b, 0, self.kh, "i") as i:
                    iy = L.madd(b, (y, s), i, -p)
                    with L.when(b, L.in_range(b, iy, 0, self.h)):
                        in_row = L.madd(b, (n, self.c * self.h * self.w),
                                        (c, self.h * self.w), (iy, self.w))
                        w_row = L.madd(b, (o, self.c * self.kh * self.kw),
                                       (c, self.kh * self.kw), (i, self.kw))
                        for j, (lo, hi) in enumerate(x_ranges):
                            if lo >= hi:
                                continue
                            wv = b.sext(L.load(b, wgt, L.madd(b, w_row, j), L.I8), L.I32)
                            base = L.madd(b, in_row, j - p)
                            with L.loop(b, lo, hi, f"x{j}") as x:
                                xv = L.load(b, inp, L.madd(b, base, (x, s)), L.I8)
                                acc = L.load(b, row, x, L.I32)
                                acc = b.add(acc, b.mul(wv, b.sext(xv, L.I32)))
                                L.store(b, acc, row, x, L.I32)
                out_row = L.madd(b, (n, self.oc * oh_n * ow_n), (o, oh_n * ow_n), (y, ow_n))
                with L.loop(b, 0, ow_n, "x1") as x:
                    q = L.requantize(b, L.load(b, row, x, L.I32), self.shift, self.relu)
                    L.store(b, q, out, L.madd(b, out_row, x), L.I8)

