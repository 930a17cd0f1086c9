"""int8 x int8 -> int32 spatial-pack conv2d with TVM's knobs: the CPU convs of VTA's 2018 logs.

VTA's CPU convolutions of 2018 (tlc-pack/tophub vta_v0.02.log, target ``vtacpu``) are TVM's
``arm_cpu`` conv2d ``direct`` template on int8 data and weights with ``out_dtype='int32'``:
vta/python/vta/top/arm_conv2d.py ("Reuse conv2d schedule from ARM CPU", apache/tvm d3ca9c248e
of 2018-08-02) registers topi's arm_cpu conv2d for ``vtacpu``, whose compute widens both
operands to the output type (``data_vec[...].astype(out_dtype) * kernel_vec[...].astype(out_dtype)``,
topi/python/topi/arm_cpu/conv2d.py). Our own generator of that structure, as
:class:`.fp32.Fp32Conv2dSpec` (the loop nest and the knobs: :mod:`.spatial_pack`)::

    data_vec[hb, wb, c, dy, dx] = pad(inp)[n, c, hb*VH*s + dy - p, wb*VW*s + dx - p]   (int8, 0 in the padding)
                                  (dy < VH*s + kh - 1, dx < VW*s + kw - 1: TVM's dvshape)
    wgt (pre-packed): [oc/VC, c, kh, kw, VC] int8
    out[n, o, y, x] = sum_{c, i, j} int32(data_vec[..]) * int32(wgt[o/VC, c, i, j, o%VC])   (int32)

No bias, requantization or activation: the logged workload is the conv alone. The int32 sums
cannot wrap for ResNet's shapes (|product| <= 2**14, at most 2**16 taps below 2**31 in total
is checked). This kernel is for the cost model and the board-record replay
(:mod:`.tvm_knobs`); ``vdla run``'s int8 conv is :mod:`.conv`.
"""

import dataclasses

from .errors import KernelParamError
from .spatial_pack import DEFAULT_KNOBS, MAX_UNROLL, SpatialPackNest, check_knobs
from .spec import ArgSpec, KernelSpec, Work, check_positive, check_range, check_window

MAX_TAPS = 1 << 17  # c * kh * kw: 2**17 * 2**14 = 2**31 bounds the int32 sum


@dataclasses.dataclass(frozen=True, kw_only=True)
class Int8PackConv2dSpec(SpatialPackNest, KernelSpec):
    """Spatial-pack int8 conv2d -> int32: (n, c, h, w) int8 input, int8 weights pre-packed
    (oc/VC, c, kh, kw, VC), (n, oc, oh, ow) int32 output; square stride, symmetric pad (zeros);
    tile vh x vw x vc and TVM's knobs (:mod:`.spatial_pack`)."""

    family = "int8_pack_conv2d"
    n: int
    c: int
    h: int
    w: int
    oc: int
    kh: int
    kw: int
    stride: int = 1
    pad: int = 0
    vh: int = 1
    vw: int = 2
    vc: int = 8
    reorder: tuple = DEFAULT_KNOBS["reorder"]
    ann_reduce: tuple = DEFAULT_KNOBS["ann_reduce"]
    ann_spatial: tuple = DEFAULT_KNOBS["ann_spatial"]

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w, oc=self.oc, kh=self.kh, kw=self.kw,
                       stride=self.stride)
        check_range(self.family, "kw", self.kw, 1, MAX_UNROLL)
        check_range(self.family, "kh", self.kh, 1, MAX_UNROLL)
        check_range(self.family, "pad", self.pad, 0, max(self.kh, self.kw) - 1)
        check_range(self.family, "vh", self.vh, 1, MAX_UNROLL)
        check_range(self.family, "vw", self.vw, 1, MAX_UNROLL)
        check_range(self.family, "vc", self.vc, 1, MAX_UNROLL)
        if self.c * self.kh * self.kw > MAX_TAPS:
            raise KernelParamError(f"{self.family}: c*kh*kw={self.c * self.kh * self.kw} taps could wrap the int32 "
                                   f"sum (at most {MAX_TAPS})")
        check_knobs(self)
        check_window(self, self.h, self.w, self.kh, self.kw, self.stride, self.pad)
        super().__post_init__()

    def args(self):
        ob, hb, wb = self.blocks
        dh, dw = self.window
        return (ArgSpec("inp", "int8", (self.n, self.c, self.h, self.w)),
                ArgSpec("wgt", "int8", (ob, self.c, self.kh, self.kw, self.vc)),
                ArgSpec("out", "int32", (self.n, self.oc, self.oh, self.ow), output=True),
                ArgSpec("data_vec", "int8", (hb * wb * self.c * dh * dw,), scratch=True))

    def work(self):
        read, written = self.io_bytes()
        outputs = self.n * self.oc * self.oh * self.ow
        # Padded taps are multiply-adds too (the packed window holds zeros there).
        return Work(macs=outputs * self.c * self.kh * self.kw, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, wgt, out, data_vec = ptrs
        ob_n, _, _ = self.blocks
        with L.loop(b, 0, self.n, "n") as n:
            self._emit_pack(b, L, inp, data_vec, n)
            with L.loop(b, 0, ob_n, "ob") as ob:
                self._emit_tiles(b, L, wgt, out, data_vec, n, ob)

    def _types(self, L):
        return L.I8, L.I8, L.I32

    def _widen(self, b, L, value):
        ty = L.vector(L.I32, value.type.count) if hasattr(value.type, "count") else L.I32
        return b.sext(value, ty)

    def _mac(self, b, L, acc, d, w):
        if hasattr(w.type, "count"):  # w the VC vector: d in every lane
            return b.add(acc, b.mul(L.splat(b, d, w.type.count), w))
        return b.add(acc, b.mul(d, w))

    def _tile_prologue(self, b, L, ob, extra):
        return None

    def _tile_epilogue(self, b, L, value, ob, k, extra, state):
        return value


def pack_int8_weights(spec: Int8PackConv2dSpec, wgt):
    """(oc, c, kh, kw) int8 weights -> the spec's packed ``wgt`` (oc/VC, c, kh, kw, VC), zeros
    beyond ``oc`` (numpy)."""
    import numpy as np

    ob, _, _ = spec.blocks
    padded = np.zeros((ob * spec.vc, spec.c, spec.kh, spec.kw), np.int8)
    padded[:spec.oc] = wgt
    return padded.reshape(ob, spec.vc, spec.c, spec.kh, spec.kw).transpose(0, 2, 3, 4, 1).copy()
