"""FP32 kernels in the style of TVM's ARM CPU schedules of 2018: the VTA paper's A9 baseline.

They exist for the cost model (``CpuModel(cpu, baseline="fp32")`` prices every CPU op by the
FP32 kernel of the same shape, see :mod:`.cost.baselines`); the functional path of ``vdla run``
stays int8. They are generated with llvmlite and checked under qemu-arm against numpy like the
int8 kernels (tests/compiler/cpu_fallback/test_fp32.py). Our own generator, written after the
structure of TVM's ``conv2d`` spatial-pack schedule for ``arm_cpu`` (topi/python/topi/arm_cpu,
TVM v0.5), not its code.

Convolution (``Fp32Conv2dSpec``), spatial pack, NCHW, output tile VH x VW x VC::

    data_vec[hb, wb, c, dy, dx] = pad(inp)[n, c, hb*VH*s + dy - p, wb*VW*s + dx - p]
                                  (dy < VH*s + kh - 1, dx < VW*s + kw - 1: TVM's dvshape, the
                                  tile's input window and halo, packed per image)
    wgt (pre-packed, as TVM's alter-layout does at compile time): [oc/VC, c, kh, kw, VC]
    for ob, hb, wb:                                              (output tiles)
        acc[vh][vw] = 0                                          VH*VW vectors of VC floats
        for c, i:                                                (runtime loops)
            for j:                                               (unrolled)
                w = wgt[ob, c, i, j, 0:VC]                       one VC-float vector load
                for vh, vw:                                      (unrolled)
                    acc[vh][vw] += data_vec[hb, wb, c, vh*s+i, vw*s+j] * w   (float32x4 NEON)
        out[n, ob*VC + k, hb*VH + vh, wb*VW + vw] = relu(acc[vh][vw][k] + bias[ob*VC + k])

Tiles beyond the output's edge are computed and not stored; ``bias`` is packed to whole
VC blocks (zeros beyond ``oc``). The tile is a parameter; its value for the baseline is data
(compiler/data/baselines/fp32.json, with its source).

The other ops of ResNet: ``Fp32MaxPoolSpec`` (window max, the loop vectoriser makes NEON of
the column loop), ``Fp32GlobalAvgPoolSpec`` (sum of a plane in float32x4, times 1/(h*w)),
``Fp32EltwiseSpec`` (a + b, optionally relu; or relu alone) and ``Fp32DenseSpec`` (dot product
per output in float32x4, plus bias). Every reduction in a vector sums lanes in a fixed order, so
a kernel's result is the same on every target (numpy's order differs by rounding only).
"""

import dataclasses

from .errors import KernelParamError
from .spatial_pack import DEFAULT_KNOBS, SpatialPackNest, check_knobs
from .spec import ArgSpec, KernelSpec, Work, check_bool, check_positive, check_range, check_window, out_size

LANES = 4  # float32 lanes of one NEON quad register
MAX_TILE = 8  # VH and VW are unrolled; VC is a vector of at most 16 floats (four quad registers)


def _float(value):
    from llvmlite import ir

    from . import ir as L
    return ir.Constant(L.F32, float(value))


def _fmax(b, a, c):
    return b.select(b.fcmp_ordered(">", a, c), a, c)


def _relu(b, L, value):
    zero = L.splat_const(0.0, L.F32, value.type.count) if hasattr(value.type, "count") else _float(0.0)
    return _fmax(b, value, zero)


def _vector_sum(b, L, buf, base, count, name):
    """Sum of ``count`` floats from element ``base`` of ``buf``: float32x4 chunks, then the tail;
    the four lanes are added in a fixed order."""
    acc_ty = L.vector(L.F32, LANES)
    acc = L.entry_alloca(b, acc_ty, f"{name}.acc")
    tail = L.entry_alloca(b, L.F32, f"{name}.tail")
    b.store(L.splat_const(0.0, L.F32, LANES), acc)
    b.store(_float(0.0), tail)
    chunks = count // LANES
    if chunks:
        with L.loop(b, 0, chunks, f"{name}.v") as k:
            v = L.load_vector(b, buf, L.madd(b, base, (k, LANES)), L.F32, LANES)
            b.store(b.fadd(b.load(acc, typ=acc_ty), v), acc)
    for r in range(chunks * LANES, count):
        b.store(b.fadd(b.load(tail, typ=L.F32), L.load(b, buf, L.madd(b, base, r), L.F32)), tail)
    vec = b.load(acc, typ=acc_ty)
    lanes = [b.extract_element(vec, L.const(i)) for i in range(LANES)]
    return b.fadd(b.fadd(b.fadd(lanes[0], lanes[1]), b.fadd(lanes[2], lanes[3])), b.load(tail, typ=L.F32))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fp32Conv2dSpec(SpatialPackNest, KernelSpec):
    """Spatial-pack FP32 conv2d: (n, c, h, w) input, weights pre-packed (oc/VC, c, kh, kw, VC),
    bias (oc/VC * VC,), square stride and symmetric pad, optional relu; tile vh x vw x vc; TVM's
    knobs ``reorder`` (reorder_0), ``ann_reduce``, ``ann_spatial`` (:mod:`.spatial_pack`; the
    defaults are the kernel's code before they were knobs)."""

    family = "fp32_conv2d"
    n: int
    c: int
    h: int
    w: int
    oc: int
    kh: int
    kw: int
    stride: int = 1
    pad: int = 0
    relu: bool = False
    vh: int = 1
    vw: int = 2
    vc: int = 8
    reorder: tuple = DEFAULT_KNOBS["reorder"]
    ann_reduce: tuple = DEFAULT_KNOBS["ann_reduce"]
    ann_spatial: tuple = DEFAULT_KNOBS["ann_spatial"]

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w, oc=self.oc, kh=self.kh, kw=self.kw,
                       stride=self.stride)
        check_range(self.family, "kw", self.kw, 1, 16)
        check_range(self.family, "pad", self.pad, 0, max(self.kh, self.kw) - 1)
        check_range(self.family, "vh", self.vh, 1, MAX_TILE)
        check_range(self.family, "vw", self.vw, 1, MAX_TILE)
        check_range(self.family, "vc", self.vc, LANES, 4 * LANES)
        if self.vc % LANES:
            raise KernelParamError(f"{self.family}: vc={self.vc} must be a multiple of {LANES} (float32x4 vectors)")
        check_bool(self.family, "relu", self.relu)
        check_knobs(self)
        check_window(self, self.h, self.w, self.kh, self.kw, self.stride, self.pad)
        super().__post_init__()

    def args(self):
        ob, hb, wb = self.blocks
        dh, dw = self.window
        return (ArgSpec("inp", "float32", (self.n, self.c, self.h, self.w)),
                ArgSpec("wgt", "float32", (ob, self.c, self.kh, self.kw, self.vc)),
                ArgSpec("bias", "float32", (ob * self.vc,)),
                ArgSpec("out", "float32", (self.n, self.oc, self.oh, self.ow), output=True),
                ArgSpec("data_vec", "float32", (hb * wb * self.c * dh * dw,), scratch=True))

    def work(self):
        read, written = self.io_bytes()
        outputs = self.n * self.oc * self.oh * self.ow
        # Padded taps are multiply-adds too (the packed window holds zeros there).
        return Work(macs=outputs * self.c * self.kh * self.kw, elem_ops=2 * outputs,
                    bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, wgt, bias, out, data_vec = ptrs
        ob_n, _, _ = self.blocks
        with L.loop(b, 0, self.n, "n") as n:
            self._emit_pack(b, L, inp, data_vec, n)
            with L.loop(b, 0, ob_n, "ob") as ob:
                self._emit_tiles(b, L, wgt, out, data_vec, n, ob, bias)

    def _types(self, L):
        return L.F32, L.F32, L.F32

    def _widen(self, b, L, value):
        return value

    def _mac(self, b, L, acc, d, w):
        if hasattr(w.type, "count"):  # w the VC vector: d in every lane
            return b.fadd(acc, b.fmul(L.splat(b, d, w.type.count), w))
        return b.fadd(acc, b.fmul(d, w))

    def _tile_prologue(self, b, L, ob, bias):
        """The bias of the block's channels: one VC vector when vc is a vector."""
        return L.load_vector(b, bias, L.madd(b, (ob, self.vc)), L.F32, self.vc) if self._vec() else None

    def _tile_epilogue(self, b, L, value, ob, k, bias, bias_v):
        """acc + bias (then relu) of one (vh, vw): the VC vector (``k`` None) or lane ``k``."""
        if k is None:
            value = b.fadd(value, bias_v)
        else:
            value = b.fadd(value, L.load(b, bias, L.madd(b, (ob, self.vc), k), L.F32))
        return _relu(b, L, value) if self.relu else value

def pack_conv_weights(spec: Fp32Conv2dSpec, wgt, bias):
    """(oc, c, kh, kw) weights and (oc,) bias -> the spec's packed ``wgt`` and ``bias`` (numpy)."""
    import numpy as np

    ob, _, _ = spec.blocks
    padded = np.zeros((ob * spec.vc, spec.c, spec.kh, spec.kw), np.float32)
    padded[:spec.oc] = wgt
    packed = padded.reshape(ob, spec.vc, spec.c, spec.kh, spec.kw).transpose(0, 2, 3, 4, 1).copy()
    full_bias = np.zeros(ob * spec.vc, np.float32)
    full_bias[:spec.oc] = bias
    return packed, full_bias


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fp32MaxPoolSpec(KernelSpec):
    """Max pool of an (n, c, h, w) float input, square k x k window, stride, symmetric pad (the
    padding is ignored: every window holds a real element)."""

    family = "fp32_maxpool2d"
    n: int
    c: int
    h: int
    w: int
    k: int
    stride: int = 1
    pad: int = 0

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w, k=self.k, stride=self.stride)
        check_range(self.family, "k", self.k, 1, 16)
        check_range(self.family, "pad", self.pad, 0, self.k - 1)
        check_window(self, self.h, self.w, self.k, self.k, self.stride, self.pad)
        if (self.oh - 1) * self.stride - self.pad >= self.h or (self.ow - 1) * self.stride - self.pad >= self.w:
            raise KernelParamError(f"{self.family}: a window lies entirely in the padding ({self.describe()})")
        super().__post_init__()

    @property
    def oh(self):
        return out_size(self.h, self.k, self.stride, self.pad)

    @property
    def ow(self):
        return out_size(self.w, self.k, self.stride, self.pad)

    def args(self):
        return (ArgSpec("inp", "float32", (self.n, self.c, self.h, self.w)),
                ArgSpec("out", "float32", (self.n, self.c, self.oh, self.ow), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(elem_ops=self.n * self.c * self.oh * self.ow * self.k * self.k, bytes_read=read,
                    bytes_written=written)

    def emit(self, b, ptrs):
        from llvmlite import ir

        from . import ir as L
        from .spec import valid_range
        inp, out = ptrs
        s, p = self.stride, self.pad
        lowest = ir.Constant(L.F32, float("-inf"))
        with L.loop(b, 0, self.n * self.c, "nc") as nc, L.loop(b, 0, self.oh, "y") as y:
            out_row = L.madd(b, (nc, self.oh * self.ow), (y, self.ow))
            with L.loop(b, 0, self.ow, "x0") as x:
                L.store(b, lowest, out, L.madd(b, out_row, x), L.F32)
            with L.loop(b, 0, self.k, "i") as i:
                iy = L.madd(b, (y, s), i, -p)
                with L.when(b, L.in_range(b, iy, 0, self.h)):
                    in_row = L.madd(b, (nc, self.h * self.w), (iy, self.w))
                    for j in range(self.k):
                        lo, hi = valid_range(j, s, p, self.w, self.ow)
                        if lo < hi:
                            with L.loop(b, lo, hi, f"x{j}") as x:
                                v = L.load(b, inp, L.madd(b, in_row, (x, s), j - p), L.F32)
                                at = L.madd(b, out_row, x)
                                L.store(b, _fmax(b, L.load(b, out, at, L.F32), v), out, at, L.F32)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fp32GlobalAvgPoolSpec(KernelSpec):
    """Mean of each (h, w) plane of an (n, c, h, w) float input -> (n, c)."""

    family = "fp32_global_avgpool"
    n: int
    c: int
    h: int
    w: int

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "float32", (self.n, self.c, self.h, self.w)),
                ArgSpec("out", "float32", (self.n, self.c), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(elem_ops=self.n * self.c * (self.h * self.w + 1), bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L
        inp, out = ptrs
        plane = self.h * self.w
        with L.loop(b, 0, self.n * self.c, "nc") as nc:
            total = _vector_sum(b, L, inp, L.madd(b, (nc, plane)), plane, "s")
            L.store(b, b.fmul(total, _float(1.0 / plane)), out, nc, L.F32)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fp32EltwiseSpec(KernelSpec):
    """``inputs=2``: out = a + b; ``inputs=1``: out = a; then max(., 0) with ``relu``."""

    family = "fp32_eltwise"
    size: int
    inputs: int = 2
    relu: bool = False

    def __post_init__(self):
        check_positive(self.family, size=self.size)
        check_range(self.family, "inputs", self.inputs, 1, 2)
        check_bool(self.family, "relu", self.relu)
        if self.inputs == 1 and not self.relu:
            raise KernelParamError(f"{self.family}: one input without relu is a copy ({self.describe()})")
        super().__post_init__()

    def args(self):
        names = ("a", "b")[:self.inputs]
        return (*(ArgSpec(name, "float32", (self.size,)) for name in names),
                ArgSpec("out", "float32", (self.size,), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(elem_ops=self.size * (self.inputs - 1 + int(self.relu)), bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L
        *ins, out = ptrs
        with L.loop(b, 0, self.size, "k") as k:
            v = L.load(b, ins[0], k, L.F32)
            if self.inputs == 2:
                v = b.fadd(v, L.load(b, ins[1], k, L.F32))
            if self.relu:
                v = _relu(b, L, v)
            L.store(b, v, out, k, L.F32)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fp32DenseSpec(KernelSpec):
    """out[r, o] = bias[o] + sum_k inp[r, k] * wgt[o, k] (float; optional relu)."""

    family = "fp32_dense"
    n: int
    k: int
    m: int
    relu: bool = False

    def __post_init__(self):
        check_positive(self.family, n=self.n, k=self.k, m=self.m)
        check_range(self.family, "k", self.k, 1, 1 << 16)
        check_bool(self.family, "relu", self.relu)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "float32", (self.n, self.k)), ArgSpec("wgt", "float32", (self.m, self.k)),
                ArgSpec("bias", "float32", (self.m,)), ArgSpec("out", "float32", (self.n, self.m), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(macs=self.n * self.m * self.k, elem_ops=self.n * self.m, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L
        inp, wgt, bias, out = ptrs
        acc_ty = L.vector(L.F32, LANES)
        acc = L.entry_alloca(b, acc_ty, "acc")
        tail = L.entry_alloca(b, L.F32, "tail")
        chunks = self.k // LANES
        with L.loop(b, 0, self.n, "r") as r, L.loop(b, 0, self.m, "o") as o:
            x_row, w_row = L.madd(b, (r, self.k)), L.madd(b, (o, self.k))
            b.store(L.splat_const(0.0, L.F32, LANES), acc)
            b.store(_float(0.0), tail)
            if chunks:
                with L.loop(b, 0, chunks, "kv") as kv:
                    xv = L.load_vector(b, inp, L.madd(b, x_row, (kv, LANES)), L.F32, LANES)
                    wv = L.load_vector(b, wgt, L.madd(b, w_row, (kv, LANES)), L.F32, LANES)
                    b.store(b.fadd(b.load(acc, typ=acc_ty), b.fmul(xv, wv)), acc)
            for t in range(chunks * LANES, self.k):
                prod = b.fmul(L.load(b, inp, L.madd(b, x_row, t), L.F32), L.load(b, wgt, L.madd(b, w_row, t), L.F32))
                b.store(b.fadd(b.load(tail, typ=L.F32), prod), tail)
            vec = b.load(acc, typ=acc_ty)
            lanes = [b.extract_element(vec, L.const(i)) for i in range(LANES)]
            total = b.fadd(b.fadd(b.fadd(lanes[0], lanes[1]), b.fadd(lanes[2], lanes[3])), b.load(tail, typ=L.F32))
            total = b.fadd(total, L.load(b, bias, o, L.F32))
            if self.relu:
                total = _relu(b, L, total)
            L.store(b, total, out, L.madd(b, (r, self.m), o), L.F32)


FP32_FAMILIES = (Fp32Conv2dSpec, Fp32DenseSpec, Fp32EltwiseSpec, Fp32GlobalAvgPoolSpec, Fp32MaxPoolSpec)
