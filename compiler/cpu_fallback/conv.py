"""int8 2-D convolution (NCHW x OIHW -> NCHW, grouped) with int32 accumulation and requantization.

Semantics (``compiler.quantize.reference.conv2d``)::

    acc[n, o, y, x] = bias[o] + sum_{c in group(o), i, j} inp[n, c, y*sh + i - pt, x*sw + j - pl] * wgt[o, c, i, j]
    out = clip(acc >> shift[o], lo, hi)           (int32 wrap, arithmetic shift)

Padded positions (``pads`` = top, left, bottom, right) hold ``pad_value`` (the input's zero
point). ``groups`` splits the channels (depthwise: ``groups == c == oc``). ``shift`` is one int,
or with ``per_channel`` a (oc,) int32 buffer argument. ``wide`` keeps the int32 result
(clipped to ``[lo, hi]`` in int32's range) instead of int8.

Most convolutions (``blocked``: one group, equal strides, equal pads on every side, int8 output)
run code written the way a good int8 NEON kernel is (register blocking):

1. **Pad and widen** image ``n`` into the workspace: int16, ``pad_value`` on every side, and for
   stride ``s`` each row split by column parity (``u*s + r`` stored at ``r*WQ + u``), so every
   tap reads consecutive elements. Done once per image, O(input).
2. For each block of ``K = 4`` output channels, **pack** their weights into the workspace as
   int16 ``[c][kh][kw][K]``: one 4-lane vector per tap. Done once per block, O(weights).
3. For each output row and block of ``X = 8`` output pixels, hold ``K x X`` int32 accumulators
   (eight 4-lane vectors: eight NEON quad registers) across the whole reduction::

       acc[k][:] = bias[o + k]
       for c, i:                                        (runtime loops)
           for r < s, q < ceil((kw - r) / s):           (kernel column j = q*s + r)
               v = padded[c, y*s + i, r, x0 + q : +8]   one 8 x int16 load
               w = packed[c, i, j, 0:4]                 one 4 x int16 load
               acc[k][half] += sext(v[half]) * sext(w[k])               8 widening MACs

   The q loop is unrolled by LLVM up to ``UNROLLED_TAPS`` columns and kept a loop beyond
   (the stem's 4 even columns would otherwise need more registers than NEON has). On ARMv7
   NEON each of the eight MACs is one ``vmlal.s16 q, d, d[k]`` (4 int16 x int16 -> int32
   multiply-accumulates, the weight taken from a lane: no broadcast). Products of two int8
   values fit int16 x int16 -> int32 exactly and the int32 sums wrap, as the semantics say;
   int16 is only ever a multiplicand, never an accumulator.
4. **Requantize** the accumulators (shift, per channel or not; clamp; narrow: vector ops) and store 8 bytes per
   channel; the last block of a row stores only the pixels that exist. (When it holds at most
   4, LLVM drops the unused half and broadcasts the weight with ``vdup`` instead.)

The workspace (``work``, a scratch argument the caller allocates; ``workspace_layout``) holds
the padded image and one packed weight block. Padding taps and the spare lanes of a row's last
block are computed and discarded; ``work()`` counts the convolution's MACs (valid taps only, unless
``pad_value`` is not 0: then padded taps are real multiply-adds).

The other convolutions (grouped, rectangular strides, asymmetric pads, int32 output) run a row
kernel (``row`` is an int32 scratch row of OW accumulators)::

    for n, o, y:
        row[:] = bias[o]
        for c in the group of o, i:
            if row y*sh+i-pt is padding: row[:] += pad_value * sum_j wgt[o, c, i, j]   (pad_value != 0)
            else for j (unrolled at code-generation time, so the x range is constant):
                w = wgt[o, c, i, j]
                for x in valid(j): row[x] += w * inp[n, c, y*sh+i-pt, x*sw+j-pl]   <- vectorised
                for x outside valid(j): row[x] += w * pad_value                     (pad_value != 0)
        for x: out[n, o, y, x] = requant(row[x])                                      <- vectorised

The innermost loop has a constant trip count and a constant input stride, so LLVM's loop
vectoriser turns it into widened loads (interleaved for sw > 1), multiplies and adds.
"""
import dataclasses

from .errors import KernelParamError
from .spec import (ArgSpec, KernelSpec, Window, Work, as_tuple, check_bool, check_clip, check_positive, check_range,
                   check_stack_row, check_unrolled, check_values_in, check_window, valid_range)

LANES = 4      # int32 lanes of one 128-bit vector register (a NEON quad register)
PIXELS = 8     # output pixels per register block (two vectors)
CHANNELS = 4   # output channels per register block (lanes of one packed weight vector)
UNROLLED_TAPS = 3  # at most this many kernel columns per loop body: more would spill registers


@dataclasses.dataclass(frozen=True, kw_only=True)
class Conv2dSpec(Window, KernelSpec):
    """Conv2d of an (n, c, h, w) int8 input with (oc, c/groups, kh, kw) int8 weights and int32 bias.

    ``stride`` is an int or (sh, sw); ``pad`` an int or (top, left, bottom, right); both are
    stored as tuples. ``lo`` defaults to 0 with ``relu``, else the output type's minimum.
    """

    family = "conv2d"
    n: int
    c: int
    h: int
    w: int
    oc: int
    kh: int
    kw: int
    stride: tuple = 1
    pad: tuple = 0
    groups: int = 1
    pad_value: int = 0
    shift: int = 0
    per_channel: bool = False
    relu: bool = False
    lo: int = None
    hi: int = None
    wide: bool = False

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w, oc=self.oc, kh=self.kh, kw=self.kw,
                       groups=self.groups)
        sh, sw = as_tuple(self, "stride", 2)
        pads = as_tuple(self, "pad", 4)
        check_positive(self.family, stride_h=sh, stride_w=sw)
        check_unrolled(self.family, kw=self.kw, stride_h=sh, stride_w=sw)
        for name, value in zip(("pad top", "pad left", "pad bottom", "pad right"), pads):
            check_range(self.family, name, value, 0, max(self.kh, self.kw) - 1)
        if self.c % self.groups or self.oc % self.groups:
            raise KernelParamError(f"{self.family}: groups={self.groups} must divide c={self.c} and oc={self.oc}")
        check_range(self.family, "pad_value", self.pad_value, -128, 127)
        check_range(self.family, "shift", self.shift, 0, 31)
        for name in ("relu", "per_channel", "wide"):
            check_bool(self.family, name, getattr(self, name))
        check_clip(self, self.wide, self.relu)
        check_window(self, self.h, self.w, self.kh, self.kw, self.stride, self.pad)
        if not self.blocked:
            check_stack_row(self.family, self.ow)
        super().__post_init__()

    def check_values(self, arrays):
        if self.per_channel and "shift" in arrays:
            check_values_in(self.family, "shift", arrays["shift"], 0, 31)

    @property
    def cg(self):
        """Input channels per group."""
        return self.c // self.groups

    @property
    def blocked(self):
        """Whether the register-blocked code runs (else the row kernel; see the module's docstring)."""
        return self.groups == 1 and len(set(self.stride)) == 1 and len(set(self.pad)) == 1 and not self.wide

    def workspace_layout(self):
        """(padded rows HP, parity row length WQ, int16 elements of the packed weight block, of
        the padded image) of the blocked code's workspace. WQ also covers the spare lanes of a
        row's last block."""
        s, p = self.stride[0], self.pad[0]
        blocks = -(-self.ow // PIXELS)
        wq = max(-(-(self.w + 2 * p) // s), blocks * PIXELS + (self.kw - 1) // s)
        hp = self.h + 2 * p
        return hp, wq, self.c * self.kh * self.kw * CHANNELS, self.c * hp * s * wq

    def args(self):
        shift = (ArgSpec("shift", "int32", (self.oc,)),) if self.per_channel else ()
        work = ()
        if self.blocked:
            _, _, packed, padded = self.workspace_layout()
            work = (ArgSpec("work", "int16", (packed + padded,), scratch=True),)
        return (ArgSpec("inp", "int8", (self.n, self.c, self.h, self.w)),
                ArgSpec("wgt", "int8", (self.oc, self.cg, self.kh, self.kw)),
                ArgSpec("bias", "int32", (self.oc,)), *shift,
                ArgSpec("out", "int32" if self.wide else "int8", (self.n, self.oc, self.oh, self.ow), output=True),
                *work)

    def work(self):
        outputs = self.n * self.oc * self.oh * self.ow
        read, written = self.io_bytes()
        rows, cols = self.ranges()
        if self.pad_value:  # padded taps are multiply-adds too
            macs = outputs * self.cg * self.kh * self.kw
        else:  # MACs actually performed (padding skipped): valid taps per output position
            macs = self.n * self.oc * self.cg * sum(hi - lo for lo, hi in rows) * sum(hi - lo for lo, hi in cols)
        # Per output: bias init, shift, two clamps, narrow.
        return Work(macs=macs, elem_ops=5 * outputs, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        ptrs = list(ptrs)
        work = ptrs.pop() if self.blocked else None
        if self.per_channel:
            inp, wgt, bias, shifts, out = ptrs
        else:
            (inp, wgt, bias, out), shifts = ptrs, None
        if self.blocked:
            self._emit_blocked(b, L, inp, wgt, bias, shifts, out, work)
        else:
            self._emit_rows(b, L, inp, wgt, bias, shifts, out)

    def _emit_rows(self, b, L, inp, wgt, bias, shifts, out):
        """The row kernel (any convolution)."""
        (sh, sw), (pt, pl, _, _) = self.stride, self.pad
        oh_n, ow_n, cg, og = self.oh, self.ow, self.cg, self.oc // self.groups
        pv = L.const(self.pad_value)
        row = L.entry_alloca(b, L.I32, "row", count=ow_n)
        _, x_ranges = self.ranges()
        plane = self.h * self.w
        with L.loop(b, 0, self.n, "n") as n, L.loop(b, 0, self.oc, "o") as o:
            bias_o = L.load(b, bias, o, L.I32)
            c0 = b.mul(b.sdiv(o, L.const(og)), L.const(cg)) if self.groups > 1 else L.const(0)
            with L.loop(b, 0, oh_n, "y") as y:
                with L.loop(b, 0, ow_n, "x0") as x:
                    L.store(b, bias_o, row, x, L.I32)
                with L.loop(b, 0, cg, "c") as c, L.loop(b, 0, self.kh, "i") as i:
                    iy = L.madd(b, (y, sh), i, -pt)
                    w_row = L.madd(b, (o, cg * self.kh * self.kw), (c, self.kh * self.kw), (i, self.kw))
                    inside = L.in_range(b, iy, 0, self.h)
                    with b.if_else(inside) as (then, otherwise):
                        with then:
                            in_row = L.madd(b, (n, self.c * plane), (b.add(c0, c), plane), (iy, self.w))
                            for j, (lo, hi) in enumerate(x_ranges):
                                wv = b.sext(L.load(b, wgt, L.madd(b, w_row, j), L.I8), L.I32)
                                if lo < hi:
                                    base = L.madd(b, in_row, j - pl)
                                    with L.loop(b, lo, hi, f"x{j}") as x:
                                        xv = L.load(b, inp, L.madd(b, base, (x, sw)), L.I8)
                                        L.store(b, b.add(L.load(b, row, x, L.I32), b.mul(wv, b.sext(xv, L.I32))),
                                                row, x, L.I32)
                                if self.pad_value:
                                    for a, z in ((0, lo), (hi, ow_n)):
                                        if a < z:
                                            self._add_const(b, L, row, b.mul(wv, pv), a, z, f"p{j}")
                        with otherwise:
                            if self.pad_value:
                                total = L.const(0)
                                for j in range(self.kw):
                                    total = b.add(total, b.sext(L.load(b, wgt, L.madd(b, w_row, j), L.I8), L.I32))
                                self._add_const(b, L, row, b.mul(total, pv), 0, ow_n, "pr")
                out_row = L.madd(b, (n, self.oc * oh_n * ow_n), (o, oh_n * ow_n), (y, ow_n))
                shift = L.load(b, shifts, o, L.I32) if self.per_channel else self.shift
                with L.loop(b, 0, ow_n, "x1") as x:
                    acc = L.load(b, row, x, L.I32)
                    if self.wide:
                        if not isinstance(shift, int) or shift:
                            acc = b.ashr(acc, L.as_value(shift))
                        acc = L.smin(b, L.smax(b, acc, L.const(self.lo)), L.const(self.hi))
                        L.store(b, acc, out, L.madd(b, out_row, x), L.I32)
                    else:
                        L.store(b, L.requantize(b, acc, shift, lo=self.lo, hi=self.hi), out,
                                L.madd(b, out_row, x), L.I8)

    def _emit_blocked(self, b, L, inp, wgt, bias, shifts, out, work):
        """The register-blocked code (``blocked`` convolutions)."""
        _, _, packed_size, _ = self.workspace_layout()
        packed, padded = work, L.element_ptr(b, work, packed_size, L.I16)
        full, rest = divmod(self.oc, CHANNELS)
        with L.loop(b, 0, self.n, "n") as n:
            self._emit_pad(b, L, inp, padded, n)
            if full:
                with L.loop(b, 0, full, "ob") as ob:
                    self._emit_channel_block(b, L, wgt, bias, shifts, out, packed, padded, n,
                                             b.mul(ob, L.const(CHANNELS)), CHANNELS)
            if rest:
                self._emit_channel_block(b, L, wgt, bias, shifts, out, packed, padded, n,
                                         L.const(full * CHANNELS), rest)

    @staticmethod
    def _add_const(b, L, row, value, start, stop, name):
        with L.loop(b, start, stop, name) as x:
            L.store(b, b.add(L.load(b, row, x, L.I32), value), row, x, L.I32)

    def _emit_pad(self, b, L, inp, padded, n):
        """Step 1: image ``n`` -> int16, zero-padded, parity-split rows."""
        s, p = self.stride[0], self.pad[0]
        hp, wq, _, _ = self.workspace_layout()
        zero = L.const(self.pad_value, L.I16)  # the input's zero point
        with L.loop(b, 0, self.c, "pc") as c, L.loop(b, 0, hp, "py") as yy:
            dst = L.madd(b, (c, hp * s * wq), (yy, s * wq))
            iy = L.madd(b, yy, -p)
            with b.if_else(L.in_range(b, iy, 0, self.h)) as (inside, outside):
                with inside:
                    src = L.madd(b, (n, self.c * self.h * self.w), (c, self.h * self.w), (iy, self.w))
                    for r in range(s):
                        lo, hi = valid_range(r, s, p, self.w, wq)
                        row = L.madd(b, dst, r * wq)
                        _fill(b, L, padded, row, 0, lo, zero, f"pl{r}")
                        with L.loop(b, lo, hi, f"pu{r}") as u:
                            v = L.load(b, inp, L.madd(b, src, (u, s), r - p), L.I8)
                            L.store(b, b.sext(v, L.I16), padded, L.madd(b, row, u), L.I16)
                        _fill(b, L, padded, row, hi, wq, zero, f"pr{r}")
                with outside:
                    _fill(b, L, padded, dst, 0, s * wq, zero, "pz")

    def _emit_channel_block(self, b, L, wgt, bias, shifts, out, packed, padded, n, o0, count):
        """Steps 2-4 for output channels ``o0 .. o0+count-1`` (count <= CHANNELS)."""
        taps = self.c * self.kh * self.kw
        with L.loop(b, 0, taps, "wt") as t:
            for k in range(CHANNELS):
                if k < count:
                    v = b.sext(L.load(b, wgt, L.madd(b, (b.add(o0, L.const(k)), taps), t), L.I8), L.I16)
                else:
                    v = L.const(0, L.I16)
                L.store(b, v, packed, L.madd(b, (t, CHANNELS), k), L.I16)
        biases = [L.load(b, bias, b.add(o0, L.const(k)), L.I32) for k in range(count)]
        full, rest = divmod(self.ow, PIXELS)
        with L.loop(b, 0, self.oh, "y") as y:
            if full:
                with L.loop(b, 0, full, "xb") as xb:
                    self._emit_pixel_block(b, L, packed, padded, shifts, out, n, o0, biases, y,
                                           b.mul(xb, L.const(PIXELS)), PIXELS)
            if rest:
                self._emit_pixel_block(b, L, packed, padded, shifts, out, n, o0, biases, y,
                                       L.const(full * PIXELS), rest)

    def _emit_pixel_block(self, b, L, packed, padded, shifts, out, n, o0, biases, y, x0, valid):
        """Step 3-4: ``len(biases)`` channels x PIXELS pixels from ``x0`` of output row ``y``;
        the first ``valid`` pixels are stored."""
        s = self.stride[0]
        hp, wq, _, _ = self.workspace_layout()
        halves = PIXELS // LANES
        acc_ty = L.vector(L.I32, LANES)
        accs = [[L.entry_alloca(b, acc_ty, f"acc{k}_{h}") for h in range(halves)]
                for k in range(len(biases))]
        for bias_k, row in zip(biases, accs):
            for slot in row:
                b.store(L.splat(b, bias_k, LANES), slot)
        with L.loop(b, 0, self.c, "c") as c, L.loop(b, 0, self.kh, "i") as i:
            row = L.madd(b, (c, hp * s * wq), (L.madd(b, (y, s), i), s * wq), x0)
            taps = L.madd(b, (c, self.kh * self.kw * CHANNELS), (i, self.kw * CHANNELS))
            for r in range(min(s, self.kw)):  # kernel columns j = q*s + r read parity r
                columns = -(-(self.kw - r) // s)
                with L.loop(b, 0, columns, f"q{r}", unroll=columns <= UNROLLED_TAPS) as q:
                    v = L.load_vector(b, padded, L.madd(b, row, r * wq, q), L.I16, PIXELS)
                    # Widen the pixels as a whole, then split: this operand order is what lets
                    # LLVM's ARM back end take the weight from a lane (vmlal.s16 q, d, d[k]).
                    wide = b.sext(v, L.vector(L.I32, PIXELS))
                    parts = [L.lanes(b, wide, h * LANES, LANES) for h in range(halves)]
                    w = L.load_vector(b, packed, L.madd(b, taps, (q, s * CHANNELS), r * CHANNELS),
                                      L.I16, CHANNELS)
                    for k, row_k in enumerate(accs):
                        wk = b.sext(L.lane_splat(b, w, k, LANES), acc_ty)
                        for part, slot in zip(parts, row_k):
                            b.store(b.add(b.load(slot, typ=acc_ty), b.mul(part, wk)), slot)
        lo, hi = L.splat_const(self.lo, L.I32, LANES), L.splat_const(self.hi, L.I32, LANES)
        for k, row_k in enumerate(accs):
            parts = []
            for slot in row_k:
                acc = b.load(slot, typ=acc_ty)
                if self.per_channel:
                    acc = b.ashr(acc, L.splat(b, L.load(b, shifts, b.add(o0, L.const(k)), L.I32), LANES))
                elif self.shift:
                    acc = b.ashr(acc, L.splat_const(self.shift, L.I32, LANES))
                acc = L.smin(b, L.smax(b, acc, lo), hi)
                parts.append(b.trunc(acc, L.vector(L.I8, LANES)))
            q = L.concat(b, parts)
            base = L.madd(b, (n, self.oc * self.oh * self.ow),
                          (b.add(o0, L.const(k)), self.oh * self.ow), (y, self.ow), x0)
            if valid == PIXELS:
                L.store_vector(b, q, out, base)
            else:
                for lane in range(valid):
                    L.store(b, b.extract_element(q, L.const(lane)), out, L.madd(b, base, lane), L.I8)


def _fill(b, L, buffer, base, start, stop, value, name):
    """buffer[base + x] = value for x in [start, stop) (codegen-time bounds; nothing if empty)."""
    if start < stop:
        with L.loop(b, start, stop, name) as x:
            L.store(b, value, buffer, L.madd(b, base, x), value.type)
