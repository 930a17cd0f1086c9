"""FP32 Winograd F(4x4, 3x3) conv2d with TVM's knobs: the ``winograd`` records of the PYNQ-Z1 logs.

The structure of TVM's ``arm_cpu`` conv2d template ``winograd`` (``_decl_winograd`` /
``_schedule_winograd`` in topi/python/topi/arm_cpu/conv2d.py, apache/tvm d3ca9c248e of
2018-08-02: ``tile_size = 4``, 3x3 kernels, stride 1, pad 1, NCHW), our own generator of it.
With m = 4, alpha = m + 2 = 6, nH x nW tiles of m x m outputs, P = nH * nW tiles (batch 1)::

    U  (pre-computed, as TVM's alter-layout does): [alpha, alpha, K/VK, C, VK] = G g G^T
    for b < P/VP, c < C:                              (runtime loops)
        DD[eps][nu][0:VP] = pad(inp)[c, tile row*m + eps - 1, tile col*m + nu - 1]   (each tile's window)
        V[eps][nu][b][c][0:VP] = sum_{r_eps, r_nu} DD[r_eps][r_nu] * B[r_eps][eps] * B[r_nu][nu]
                                 (eps, nu, r_eps, r_nu unrolled, zero terms dropped, VP lanes a vector)
    for kb < K/VK:                                    (TVM's parallel axis)
        for eps, nu, xo < P/VP:  M[eps][nu][k][xo*VP + xi] = 0;
            for co < C/VCI, k < VK, ci < VCI, xi < VP:
                M[eps][nu][k][xo*VP + xi] += U[eps][nu][kb][co*VCI + ci][k] * V[eps][nu][xo][co*VCI + ci][xi]
        for k < VK, tile (th, tw):
            Y[vh][vw] = sum_{r_eps, r_nu} M[r_eps][r_nu][k][tile] * A[r_eps][vh] * A[r_nu][vw]   (unrolled)
            out[0, kb*VK + k, th*m + vh, tw*m + vw] = Y[vh][vw]  (inside the output only)

Knobs (TVM's): ``tile_p`` = (P/VP, VP), ``tile_k`` = (K/VK, VK), ``tile_c`` = (C/VCI, VCI), each
inner factor at most 16 and dividing its axis; ``ann_reduce`` annotates ci (none/unroll);
``ann_spatial`` annotates (k, xi) with none/unroll/vec, at most one vec. A vectorised k reads
and writes M with a stride of P (lane by lane, as TVM's code generator scalarises a strided
ramp), a vectorised xi contiguously. The transform matrices are the standard F(4x4, 3x3) ones
(Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016; interpolation
points 0, 1, -1, 2, -2, infinity), as in TVM's file. Not generated: TVM's ``MM`` copy of M
(``cache_read``) and batches above 1.
"""

import dataclasses

import numpy as np

from .errors import KernelParamError
from .spec import ArgSpec, KernelSpec, Work, check_positive

M_OUT, R = 4, 3
ALPHA = M_OUT + R - 1
MAX_SPLIT = 16  # TVM's filter on the inner factors of tile_p, tile_k, tile_c
B_T = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64)
A_T = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64)
G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
              [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64)
ANN = ("none", "unroll", "vec")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fp32WinogradConv2dSpec(KernelSpec):
    """Winograd F(4x4, 3x3) FP32 conv2d, 3x3, stride 1, pad 1, batch 1: (1, c, h, w) input,
    transformed weights (6, 6, oc/VK, c, VK) (:func:`transform_weights`), (1, oc, h, w) output;
    TVM's tiles ``vp``, ``vk``, ``vci`` and annotations ``ann_reduce`` (ci), ``ann_spatial`` (k, xi)."""

    family = "fp32_winograd_conv2d"
    c: int
    h: int
    w: int
    oc: int
    vp: int
    vk: int
    vci: int
    ann_reduce: tuple = ("none",)
    ann_spatial: tuple = ("vec", "none")

    def __post_init__(self):
        f = self.family
        check_positive(f, c=self.c, h=self.h, w=self.w, oc=self.oc, vp=self.vp, vk=self.vk, vci=self.vci)
        for name, inner, axis in (("vp", self.vp, self.tiles), ("vk", self.vk, self.oc), ("vci", self.vci, self.c)):
            if inner > MAX_SPLIT or axis % inner:
                raise KernelParamError(f"{f}: {name}={inner} must divide {axis} and be at most {MAX_SPLIT} "
                                       f"(TVM's split)")
        if not (isinstance(self.ann_reduce, tuple) and len(self.ann_reduce) == 1 and self.ann_reduce[0] in ANN[:2]):
            raise KernelParamError(f"{f}: ann_reduce={self.ann_reduce!r} must be a tuple of 1 of {ANN[:2]}")
        if not (isinstance(self.ann_spatial, tuple) and len(self.ann_spatial) == 2
                and all(a in ANN for a in self.ann_spatial) and self.ann_spatial.count("vec") <= 1):
            raise KernelParamError(f"{f}: ann_spatial={self.ann_spatial!r} must be a tuple of 2 of {ANN}, "
                                   f"at most one vec")
        super().__post_init__()

    @property
    def grid(self):
        """(nH, nW): tile rows and columns of m x m outputs."""
        return -(-self.h // M_OUT), -(-self.w // M_OUT)

    @property
    def tiles(self):
        return self.grid[0] * self.grid[1]

    def args(self):
        a2, p = ALPHA * ALPHA, self.tiles
        return (ArgSpec("inp", "float32", (1, self.c, self.h, self.w)),
                ArgSpec("wgt", "float32", (ALPHA, ALPHA, self.oc // self.vk, self.c, self.vk)),
                ArgSpec("out", "float32", (1, self.oc, self.h, self.w), output=True),
                ArgSpec("v", "float32", (a2 * p * self.c,), scratch=True),
                ArgSpec("m", "float32", (a2 * self.vk * p,), scratch=True))

    def work(self):
        read, written = self.io_bytes()
        a2, p = ALPHA * ALPHA, self.tiles
        return Work(macs=a2 * self.oc * self.c * p, elem_ops=2 * a2 * p * (self.c + self.oc),
                    bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L
        inp, wgt, out, v, m = ptrs
        self._emit_input_transform(b, L, inp, v)
        with L.loop(b, 0, self.oc // self.vk, "kb") as kb:
            self._emit_batched_gemm(b, L, wgt, v, m, kb)
            self._emit_inverse_transform(b, L, m, out, kb)

    def _emit_input_transform(self, b, L, inp, v):
        """V of every tile block and channel: the windows gathered (DD), then B^T d B."""
        from llvmlite import ir
        nh, nw = self.grid
        vp, p = self.vp, self.tiles
        dd = L.entry_alloca(b, L.F32, "dd", count=ALPHA * ALPHA * vp)
        zero = ir.Constant(L.F32, 0.0)
        with L.loop(b, 0, p // vp, "vb") as blk, L.loop(b, 0, self.c, "vc") as c:
            with L.loop(b, 0, ALPHA, "deps") as eps, L.loop(b, 0, ALPHA, "dnu") as nu, L.loop(b, 0, vp, "dbb") as bb:
                tile = L.madd(b, (blk, vp), bb)
                y = L.madd(b, (b.udiv(tile, L.const(nw)), M_OUT), eps, -1)
                x = L.madd(b, (b.urem(tile, L.const(nw)), M_OUT), nu, -1)
                ok = b.and_(L.in_range(b, y, 0, self.h), L.in_range(b, x, 0, self.w))
                at = L.madd(b, (eps, ALPHA * vp), (nu, vp), bb)
                with b.if_else(ok) as (inside, outside):
                    with inside:
                        src = L.madd(b, (c, self.h * self.w), (y, self.w), x)
                        L.store(b, L.load(b, inp, src, L.F32), dd, at, L.F32)
                    with outside:
                        L.store(b, zero, dd, at, L.F32)
            rows = [[_vload(b, L, dd, (r * ALPHA + s) * vp, vp) for s in range(ALPHA)] for r in range(ALPHA)]
            for eps in range(ALPHA):
                for nu in range(ALPHA):
                    acc = L.splat_const(0.0, L.F32, vp)
                    for r in range(ALPHA):
                        for s in range(ALPHA):
                            if B_T[eps, r] and B_T[nu, s]:
                                term = b.fmul(b.fmul(rows[r][s], _splat(L, B_T[eps, r], vp)), _splat(L, B_T[nu, s], vp))
                                acc = b.fadd(acc, term)
                    at = L.madd(b, ((eps * ALPHA + nu) * (p // vp) * self.c * vp), (blk, self.c * vp), (c, vp))
                    _vstore(b, L, acc, v, at)

    def _emit_batched_gemm(self, b, L, wgt, v, m, kb):
        """M[eps][nu][k][p] of output-channel block ``kb``, in TVM's order eps, nu, xo, co, k, ci, xi."""
        from llvmlite import ir
        vp, vk, vci, p, c_n = self.vp, self.vk, self.vci, self.tiles, self.c
        ann_k, ann_xi = self.ann_spatial
        kb_n = self.oc // vk
        with L.loop(b, 0, ALPHA * ALPHA, "en") as en, L.loop(b, 0, p // vp, "xo") as xo:
            m_base = L.madd(b, (en, vk * p), (xo, vp))          # M[eps][nu][0][xo*VP]
            u_base = L.madd(b, (en, kb_n * c_n * vk), (kb, c_n * vk))
            v_base = L.madd(b, (en, (p // vp) * c_n * vp), (xo, c_n * vp))
            for k, lanes_k in _axis(b, L, "ik", vk, ann_k):
                for xi, lanes_x in _axis(b, L, "ixi", vp, ann_xi):
                    _m_store(b, L, m, m_base, k, xi, lanes_k or lanes_x, p, lanes_k is not None,
                             L.splat_const(0.0, L.F32, lanes_k or lanes_x) if (lanes_k or lanes_x) else
                             ir.Constant(L.F32, 0.0))
            with L.loop(b, 0, c_n // vci, "co") as co:
                for k, lanes_k in _axis(b, L, "k", vk, ann_k):
                    for ci, _ in _axis(b, L, "ci", vci, self.ann_reduce[0]):
                        c = L.madd(b, (co, vci), ci)
                        if lanes_k:
                            u = _vload(b, L, wgt, L.madd(b, u_base, (c, vk)), vk)
                        else:
                            u = L.load(b, wgt, L.madd(b, u_base, (c, vk), k), L.F32)
                        for xi, lanes_x in _axis(b, L, "xi", vp, ann_xi):
                            if lanes_x:
                                vv = _vload(b, L, v, L.madd(b, v_base, (c, vp)), vp)
                                prod = b.fmul(L.splat(b, u, vp), vv)
                            else:
                                vv = L.load(b, v, L.madd(b, v_base, (c, vp), xi), L.F32)
                                prod = b.fmul(u, L.splat(b, vv, vk)) if lanes_k else b.fmul(u, vv)
                            lanes = lanes_k or lanes_x
                            old = _m_load(b, L, m, m_base, k, xi, lanes, p, lanes_k is not None)
                            _m_store(b, L, m, m_base, k, xi, lanes, p, lanes_k is not None, b.fadd(old, prod))

    def _emit_inverse_transform(self, b, L, m, out, kb):
        """Y = A^T M A of every tile of block ``kb``'s channels, stored inside the output."""
        from llvmlite import ir
        nh, nw = self.grid
        vk, p = self.vk, self.tiles
        with L.loop(b, 0, vk, "yk") as k, L.loop(b, 0, nh, "th") as th, L.loop(b, 0, nw, "tw") as tw:
            tile = L.madd(b, (th, nw), tw)
            vals = [[L.load(b, m, L.madd(b, ((r * ALPHA + s) * vk * p), (k, p), tile), L.F32) for s in range(ALPHA)]
                    for r in range(ALPHA)]
            o = L.madd(b, (kb, vk), k)
            for vh in range(M_OUT):
                for vw in range(M_OUT):
                    acc = ir.Constant(L.F32, 0.0)
                    for r in range(ALPHA):
                        for s in range(ALPHA):
                            if A_T[vh, r] and A_T[vw, s]:
                                term = b.fmul(b.fmul(vals[r][s], ir.Constant(L.F32, A_T[vh, r])),
                                              ir.Constant(L.F32, A_T[vw, s]))
                                acc = b.fadd(acc, term)
                    y, x = L.madd(b, (th, M_OUT), vh), L.madd(b, (tw, M_OUT), vw)
                    at = L.madd(b, (o, self.h * self.w), (y, self.w), x)
                    edge = [] if self.h % M_OUT == 0 else [b.icmp_signed("<", y, L.const(self.h))]
                    edge += [] if self.w % M_OUT == 0 else [b.icmp_signed("<", x, L.const(self.w))]
                    if edge:
                        ok = edge[0] if len(edge) == 1 else b.and_(*edge)
                        with L.when(b, ok):
                            L.store(b, acc, out, at, L.F32)
                    else:
                        L.store(b, acc, out, at, L.F32)


def _splat(L, value, lanes):
    return L.splat_const(float(value), L.F32, lanes)


def _vload(b, L, buf, index, lanes):
    return L.load_vector(b, buf, index, L.F32, lanes)


def _vstore(b, L, value, buf, index):
    ptr = b.bitcast(L.element_ptr(b, buf, index, L.F32), L.vector(L.F32, value.type.count).as_pointer())
    b.store(value, ptr, align=4)


def _axis(b, L, name, extent, ann):
    """Yield (index, lanes) of one axis: (0, extent) once for vec, (int, None) for unroll, (loop
    variable, None) for none (no loop for extent 1)."""
    if ann == "vec":
        yield 0, extent
    elif ann == "unroll" or extent == 1:
        for i in range(extent):
            yield i, None
    else:
        with L.loop(b, 0, extent, name) as i:
            yield i, None


def _m_at(b, L, base, k, xi, p):
    return L.madd(b, base, (k, p), xi)


def _m_load(b, L, m, base, k, xi, lanes, p, strided):
    """M at (k, xi): a scalar, a contiguous vector over xi, or lanes over k a stride of P apart."""
    if not lanes:
        return L.load(b, m, _m_at(b, L, base, k, xi, p), L.F32)
    if not strided:
        return _vload(b, L, m, _m_at(b, L, base, k, 0, p), lanes)
    vec = L.splat_const(0.0, L.F32, lanes)
    for lane in range(lanes):
        vec = b.insert_element(vec, L.load(b, m, _m_at(b, L, base, lane, xi, p), L.F32), L.const(lane))
    return vec


def _m_store(b, L, m, base, k, xi, lanes, p, strided, value):
    if not lanes:
        L.store(b, value, m, _m_at(b, L, base, k, xi, p), L.F32)
    elif not strided:
        _vstore(b, L, value, m, _m_at(b, L, base, k, 0, p))
    else:
        for lane in range(lanes):
            L.store(b, b.extract_element(value, L.const(lane)), m, _m_at(b, L, base, lane, xi, p), L.F32)


def transform_weights(spec: Fp32WinogradConv2dSpec, wgt):
    """(oc, c, 3, 3) weights -> U = G g G^T in the spec's layout (6, 6, oc/VK, c, VK) (numpy)."""
    u = np.einsum("er,ocrs,ns->enoc", G, wgt.astype(np.float64), G)           # (6, 6, oc, c)
    u = u.reshape(ALPHA, ALPHA, spec.oc // spec.vk, spec.vk, spec.c).transpose(0, 1, 2, 4, 3)
    return np.ascontiguousarray(u, dtype=np.float32)
