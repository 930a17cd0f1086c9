"""int8 2-D convolution (NCHW x OIHW -> NCHW) with int32 accumulation and requantization.

Semantics (the same as the accelerator path)::

    acc[n, o, y, x] = bias[o] + sum_{c, i, j} inp[n, c, y*s + i - p, x*s + j - p] * wgt[o, c, i, j]
    out = clip(acc >> shift, 0 if relu else -128, 127)          (int32 wrap, arithmetic shift)

with zero padding ``p`` on all four sides and stride ``s`` in both directions.

The generated code is written the way a good int8 NEON kernel is (register blocking):

1. **Pad and widen** image ``n`` into the workspace: int16, zero padding on every side, and for
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
4. **Requantize** the accumulators (shift, clamp, narrow: vector ops) and store 8 bytes per
   channel; the last block of a row stores only the pixels that exist. (When it holds at most
   4, LLVM drops the unused half and broadcasts the weight with ``vdup`` instead.)

The workspace (``work``, a scratch argument the caller allocates; ``workspace_layout``) holds
the padded image and one packed weight block. Padding taps and the spare lanes of a row's last
block are computed and discarded; ``work()`` counts the convolution's MACs (valid taps only).
"""

import dataclasses

from .spec import (ArgSpec, KernelSpec, Work, check_bool, check_positive, check_range,
                   check_window, out_size, valid_range)

LANES = 4      # int32 lanes of one 128-bit vector register (a NEON quad register)
PIXELS = 8     # output pixels per register block (two vectors)
CHANNELS = 4   # output channels per register block (lanes of one packed weight vector)
UNROLLED_TAPS = 3  # at most this many kernel columns per loop body: more would spill registers


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

    def workspace_layout(self):
        """(padded rows HP, parity row length WQ, int16 elements of the packed weight block, of
        the padded image) of the workspace. WQ also covers the spare lanes of a row's last block."""
        s, p = self.stride, self.pad
        blocks = -(-self.ow // PIXELS)
        wq = max(-(-(self.w + 2 * p) // s), blocks * PIXELS + (self.kw - 1) // s)
        hp = self.h + 2 * p
        return hp, wq, self.c * self.kh * self.kw * CHANNELS, self.c * hp * s * wq

    def args(self):
        _, _, packed, padded = self.workspace_layout()
        return (ArgSpec("inp", "int8", (self.n, self.c, self.h, self.w)),
                ArgSpec("wgt", "int8", (self.oc, self.c, self.kh, self.kw)),
                ArgSpec("bias", "int32", (self.oc,)),
                ArgSpec("out", "int8", (self.n, self.oc, self.oh, self.ow), output=True),
                ArgSpec("work", "int16", (packed + padded,), scratch=True))

    def work(self):
        outputs = self.n * self.oc * self.oh * self.ow
        read, written = self.io_bytes()
        # The convolution's MACs (valid taps; the code also multiplies padding, see above).
        taps_y = sum(hi - lo for lo, hi in (valid_range(i, self.stride, self.pad, self.h, self.oh)
                                            for i in range(self.kh)))
        taps_x = sum(hi - lo for lo, hi in (valid_range(j, self.stride, self.pad, self.w, self.ow)
                                            for j in range(self.kw)))
        macs = self.n * self.oc * self.c * taps_y * taps_x
        # Per output: bias init, shift, two clamps, narrow.
        return Work(macs=macs, elem_ops=5 * outputs, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, wgt, bias, out, work = ptrs
        _, _, packed_size, _ = self.workspace_layout()
        packed, padded = work, L.element_ptr(b, work, packed_size, L.I16)
        full, rest = divmod(self.oc, CHANNELS)
        with L.loop(b, 0, self.n, "n") as n:
            self._emit_pad(b, L, inp, padded, n)
            if full:
                with L.loop(b, 0, full, "ob") as ob:
                    self._emit_channel_block(b, L, wgt, bias, out, packed, padded, n,
                                             b.mul(ob, L.const(CHANNELS)), CHANNELS)
            if rest:
                self._emit_channel_block(b, L, wgt, bias, out, packed, padded, n,
                                         L.const(full * CHANNELS), rest)

    def _emit_pad(self, b, L, inp, padded, n):
        """Step 1: image ``n`` -> int16, zero-padded, parity-split rows."""
        s, p = self.stride, self.pad
        hp, wq, _, _ = self.workspace_layout()
        zero = L.const(0, L.I16)
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

    def _emit_channel_block(self, b, L, wgt, bias, out, packed, padded, n, o0, count):
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
                    self._emit_pixel_block(b, L, packed, padded, out, n, o0, biases, y,
                                           b.mul(xb, L.const(PIXELS)), PIXELS)
            if rest:
                self._emit_pixel_block(b, L, packed, padded, out, n, o0, biases, y,
                                       L.const(full * PIXELS), rest)

    def _emit_pixel_block(self, b, L, packed, padded, out, n, o0, biases, y, x0, valid):
        """Step 3-4: ``len(biases)`` channels x PIXELS pixels from ``x0`` of output row ``y``;
        the first ``valid`` pixels are stored."""
        s = self.stride
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
        lo, hi = L.splat_const(0 if self.relu else -128, L.I32, LANES), L.splat_const(127, L.I32, LANES)
        for k, row_k in enumerate(accs):
            parts = []
            for slot in row_k:
                acc = b.load(slot, typ=acc_ty)
                if self.shift:
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
