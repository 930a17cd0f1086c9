"""int8 pooling on NCHW: max pool, global average pool, windowed average pool.

Max pool (``compiler.quantize.reference.max_pool2d``)::

    out[n, c, y, x] = max over valid (i, j) of inp[n, c, y*sh + i - pt, x*sw + j - pl]

Padded positions (``pad`` = top, left, bottom, right; ceil mode is extra bottom/right padding)
are ignored; every window must hold a real element. Loop nest: for each output row,
``out_row[:] = -128``, then for every window row ``i`` whose input row is in range and every
window column ``j`` (unrolled, constant x range), ``out_row[x] = max(out_row[x], inp_row[x*sw + j - pl])``.

Global average pool (H x W -> 1 x 1)::

    out[n, c] = clip(floor(((sum_{y,x} inp[n, c, y, x] << up) + add) / (H*W)), lo, hi)

computed as an unsigned division of a value made non-negative by adding ``H*W*BIAS``, by the
constant ``H*W``, minus ``BIAS``, so LLVM emits a multiply instead of a divide (the Cortex-A9 has
no integer divide instruction). ``add`` defaults to ``H*W // 2`` (rounding half up); it also
holds the zero points. ``out_dtype='int32'`` skips the clip (a wide last layer).

Windowed average pool::

    out[n, c, y, x] = clip(floor(((sum over the window << up) + add[y, x]) / count[y, x]), lo, hi)

with padded positions holding ``pad_value`` and ``count``/``add`` int32 buffers of (OH, OW). The
division by a per-position count is done in double precision (VFP has a divider): both
operands are integers below 2**31 and the quotient is far from the next integer compared with
double's rounding, so truncation gives the exact floor.
"""

import dataclasses

from .spec import (ArgSpec, KernelSpec, Window, Work, as_tuple, check_positive, check_range, check_stack_row,
                   check_unrolled, check_values_in, check_window)

OUT_DTYPES = ("int8", "int32")


def _window_checks(spec):
    check_positive(spec.family, n=spec.n, c=spec.c, h=spec.h, w=spec.w, kh=spec.kh, kw=spec.kw)
    sh, sw = as_tuple(spec, "stride", 2)
    check_positive(spec.family, stride_h=sh, stride_w=sw)
    check_unrolled(spec.family, kw=spec.kw)
    pads = as_tuple(spec, "pad", 4)
    for name, value in zip(("pad top", "pad left", "pad bottom", "pad right"), pads):
        check_range(spec.family, name, value, 0, 1 << 16)
    check_window(spec, spec.h, spec.w, spec.kh, spec.kw, spec.stride, spec.pad)


def emit_window_rows(b, L, spec, inp, nc, y, visit):
    """For output row ``y`` of plane ``nc``: every real input element under the window, as
    ``visit(x, value)`` inside a constant-range loop over the output columns ``x`` (int8 value)."""
    (sh, sw), (pt, pl, _, _) = spec.stride, spec.pad
    _, x_ranges = spec.ranges()
    with L.loop(b, 0, spec.kh, "i") as i:
        iy = L.madd(b, (y, sh), i, -pt)
        with L.when(b, L.in_range(b, iy, 0, spec.h)):
            in_row = L.madd(b, (nc, spec.h * spec.w), (iy, spec.w))
            for j, (lo, hi) in enumerate(x_ranges):
                if lo >= hi:
                    continue
                base = L.madd(b, in_row, j - pl)
                with L.loop(b, lo, hi, f"x{j}") as x:
                    visit(x, L.load(b, inp, L.madd(b, base, (x, sw)), L.I8))


@dataclasses.dataclass(frozen=True, kw_only=True)
class MaxPool2dSpec(Window, KernelSpec):
    """Max pool of an (n, c, h, w) int8 input with a kh x kw window; stride an int or (sh, sw),
    pad an int or (top, left, bottom, right)."""

    family = "maxpool2d"
    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    stride: tuple = 1
    pad: tuple = 0

    def __post_init__(self):
        _window_checks(self)
        # Output row y sees input rows y*sh - pt .. y*sh - pt + kh - 1: every row sees a real one
        # iff the first does (pt < kh) and the last does ((oh - 1) * sh - pt < h); columns alike.
        (sh, sw), (pt, pl, _, _) = self.stride, self.pad
        if not (pt < self.kh and pl < self.kw and (self.oh - 1) * sh - pt < self.h and
                (self.ow - 1) * sw - pl < self.w):
            from .errors import KernelParamError
            raise KernelParamError(f"{self.family}: a window lies entirely in the padding ({self.describe()})")
        super().__post_init__()

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
        oh_n, ow_n = self.oh, self.ow
        with L.loop(b, 0, self.n * self.c, "nc") as nc, L.loop(b, 0, oh_n, "y") as y:
            out_row = L.madd(b, (nc, oh_n * ow_n), (y, ow_n))
            with L.loop(b, 0, ow_n, "x0") as x:
                L.store(b, L.const(-128, L.I8), out, L.madd(b, out_row, x), L.I8)

            def visit(x, v):
                o_idx = L.madd(b, out_row, x)
                L.store(b, L.smax(b, L.load(b, out, o_idx, L.I8), v), out, o_idx, L.I8)

            emit_window_rows(b, L, self, inp, nc, y, visit)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GlobalAvgPoolSpec(KernelSpec):
    """Global average pool of an (n, c, h, w) int8 input to (n, c)."""

    family = "global_avgpool"
    n: int
    c: int
    h: int
    w: int
    up: int = 0
    add: int = None
    lo: int = -128
    hi: int = 127
    out_dtype: str = "int8"

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w)
        check_range(self.family, "up", self.up, 0, 16)
        area = self.h * self.w
        if self.add is None:
            object.__setattr__(self, "add", area // 2)
        check_range(self.family, "add", self.add, -(256 << self.up) * area, (256 << self.up) * area)
        # The offset sum (sum << up) + add + area * BIAS must fit int32 (unsigned division).
        check_range(self.family, "h*w", area, 1, (2**31 - 1) // (4 * self.bias + 1))
        if self.out_dtype not in OUT_DTYPES:
            from .errors import KernelParamError
            raise KernelParamError(f"{self.family}: out_dtype must be one of {OUT_DTYPES}, got {self.out_dtype!r}")
        check_range(self.family, "lo", self.lo, -128, 127)
        check_range(self.family, "hi", self.hi, self.lo, 127)
        super().__post_init__()

    @property
    def bias(self):
        """Multiple of H*W added before the unsigned division so the dividend is never negative."""
        return (256 << self.up) + 256

    def args(self):
        return (ArgSpec("inp", "int8", (self.n, self.c, self.h, self.w)),
                ArgSpec("out", self.out_dtype, (self.n, self.c), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(elem_ops=self.n * self.c * self.h * self.w + 6 * self.n * self.c,
                    bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, out = ptrs
        area = self.h * self.w
        total = L.entry_alloca(b, L.I32, "total")
        with L.loop(b, 0, self.n * self.c, "nc") as nc:
            b.store(L.const(0), total)
            base = L.madd(b, (nc, area))
            with L.loop(b, 0, area, "k") as k:
                v = b.sext(L.load(b, inp, L.madd(b, base, k), L.I8), L.I32)
                b.store(b.add(b.load(total, typ=L.I32), v, flags=["nsw"]), total)
            s = b.load(total, typ=L.I32)
            if self.up:
                s = b.shl(s, L.const(self.up))
            s = b.add(s, L.const(self.add + area * self.bias))
            mean = b.sub(b.udiv(s, L.const(area)), L.const(self.bias))
            if self.out_dtype == "int32":
                L.store(b, mean, out, nc, L.I32)
            else:
                mean = L.smin(b, L.smax(b, mean, L.const(self.lo)), L.const(self.hi))
                L.store(b, b.trunc(mean, L.I8), out, nc, L.I8)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AvgPool2dSpec(Window, KernelSpec):
    """Windowed average pool of an (n, c, h, w) int8 input; ``count`` and ``add`` are (OH, OW)
    int32 buffer arguments (the divisor and the constant term of each output position)."""

    family = "avgpool2d"
    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    stride: tuple = 1
    pad: tuple = 0
    pad_value: int = 0
    up: int = 0
    lo: int = -128
    hi: int = 127

    def __post_init__(self):
        _window_checks(self)
        check_range(self.family, "pad_value", self.pad_value, -128, 127)
        check_range(self.family, "up", self.up, 0, 16)
        taps = self.kh * self.kw
        check_range(self.family, "window", (taps * taps * 1024) << self.up, 1, 2**31 - 1)
        check_range(self.family, "lo", self.lo, -128, 127)
        check_range(self.family, "hi", self.hi, self.lo, 127)
        check_stack_row(self.family, self.ow)
        super().__post_init__()

    def add_range(self):
        """[lo, hi] of ``add``: with a count in 1 .. kh*kw, the dividend plus count*bias is then never
        negative and fits int32, so the double division floors exactly (the quantizer's constant
        terms, ``count // 2 + count * zp_out - (taps * zp_in << up)``, are inside)."""
        taps = self.kh * self.kw
        return -(128 * taps << self.up) - 512, 2**31 - 1 - (127 * taps << self.up) - taps * self.bias

    def check_values(self, arrays):
        if "count" in arrays:
            check_values_in(self.family, "count", arrays["count"], 1, self.kh * self.kw)
        if "add" in arrays:
            check_values_in(self.family, "add", arrays["add"], *self.add_range())

    @property
    def bias(self):
        """Multiple of the count added before the division so the dividend is never negative."""
        return (self.kh * self.kw * 256 << self.up) + 512

    def args(self):
        return (ArgSpec("inp", "int8", (self.n, self.c, self.h, self.w)),
                ArgSpec("count", "int32", (self.oh, self.ow)),
                ArgSpec("add", "int32", (self.oh, self.ow)),
                ArgSpec("out", "int8", (self.n, self.c, self.oh, self.ow), output=True))

    def work(self):
        read, written = self.io_bytes()
        outputs = self.n * self.c * self.oh * self.ow
        return Work(elem_ops=outputs * (self.kh * self.kw + 8), bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from llvmlite import ir

        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, count, add, out = ptrs
        oh_n, ow_n = self.oh, self.ow
        f64 = ir.DoubleType()
        row = L.entry_alloca(b, L.I32, "row", count=ow_n)
        pv = self.pad_value
        with L.loop(b, 0, self.n * self.c, "nc") as nc, L.loop(b, 0, oh_n, "y") as y:
            # Every tap starts as padding; real inputs then add (value - pad_value).
            with L.loop(b, 0, ow_n, "x0") as x:
                L.store(b, L.const(pv * self.kh * self.kw), row, x, L.I32)

            def visit(x, v):
                v = b.sext(v, L.I32)
                if pv:
                    v = b.sub(v, L.const(pv))
                L.store(b, b.add(L.load(b, row, x, L.I32), v), row, x, L.I32)

            emit_window_rows(b, L, self, inp, nc, y, visit)
            out_row = L.madd(b, (nc, oh_n * ow_n), (y, ow_n))
            with L.loop(b, 0, ow_n, "x1") as x:
                pos = L.madd(b, (y, ow_n), x)
                cnt = L.load(b, count, pos, L.I32)
                s = L.load(b, row, x, L.I32)
                if self.up:
                    s = b.shl(s, L.const(self.up))
                s = b.add(b.add(s, L.load(b, add, pos, L.I32)), b.mul(cnt, L.const(self.bias)))
                q = b.fptosi(b.fdiv(b.sitofp(s, f64), b.sitofp(cnt, f64)), L.I32)
                q = b.sub(q, L.const(self.bias))
                q = L.smin(b, L.smax(b, q, L.const(self.lo)), L.const(self.hi))
                L.store(b, b.trunc(q, L.I8), out, L.madd(b, out_row, x), L.I8)
