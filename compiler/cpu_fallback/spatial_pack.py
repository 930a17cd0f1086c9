"""TVM's spatial-pack knobs and the loop nest they describe: shared by the FP32 and int8 convs.

The knobs are those of TVM's ``arm_cpu`` conv2d template ``direct`` (``_decl_spatial_pack`` /
``_schedule_spatial_pack`` in topi/python/topi/arm_cpu/conv2d.py, apache/tvm d3ca9c248e of
2018-08-02, unchanged in v0.5; VTA's int8 CPU convs of that time reuse it:
vta/python/vta/top/arm_conv2d.py, "Reuse conv2d schedule from ARM CPU"). TVM's facts, carried
here without its code:

- ``tile_co``, ``tile_oh``, ``tile_ow`` split co, oh, ow in two; the inner factors are VC, VH, VW
  (our spec fields ``vc``, ``vh``, ``vw``).
- ``reorder_0`` orders the ten loops ``[n, co, oh, ow, ci, kh, kw, vh, vw, vc]`` (indices 0..9),
  with ``policy='candidate'``: only the identity and ``[n, co, oh, ow, ci, kh, kw, vc, vh, vw]``
  (logged as ``[0, 1, 2, 3, 4, 5, 6, 9, 7, 8]``) are in the space.
- ``ann_reduce`` annotates (kh, kw) with ``none``/``unroll`` (``try_unroll``); ``ann_spatial``
  annotates (vh, vw, vc) with ``none``/``unroll``/``vec``, at most one ``vec``
  (``try_unroll_vec``); unrolling an axis longer than ``max_unroll=16`` is an invalid config.
  ``ann_spatial`` also applies to the output stage's (vh, vw, vc) when an op is fused into it.

How we generate them (:class:`SpatialPackNest`): ``none`` is a runtime loop, ``unroll`` a loop
unrolled when the IR is built, ``vec`` (vc only: we refuse it on vh or vw) makes the VC lanes one
LLVM vector. A ``none`` reduction loop (kh, kw) carries ``llvm.loop.unroll.disable``: TVM emits it
as a serial loop, and whether TVM's LLVM of 2018 unrolled it cannot be rerun; ours does, and
then keeps kh*kw weight vectors live beside the VH*VW accumulators and spills (r24: 9 + 7 quad
registers, all of the A9's 16), which the board's rates on those records (0.7-0.9 MAC/cycle per
core, near the A9's peak) leave no room for. A ``none`` spatial loop (vh, vw) is left to LLVM,
which fully unrolls such tiny constant loops and then keeps the accumulators in registers (SROA);
rolled, each MAC would load and store its accumulator. This choice was made with the records in
view (docs/reproduction.md says so), not fitted to any number. An axis of extent 1 is no loop whatever its annotation (TVM's ``MakeLoopNest``
binds such an axis to its minimum instead of emitting a loop). When vc is a vector, TVM's vectoriser keeps the vh/vw loops inside the vector body,
so both orders give the same code; they differ when vc is a loop. The accumulators of one tile
are VH x VW vectors while vh and vw are unrolled and vc a vector (registers), else one stack
array of VH*VW*VC elements indexed by the loops. Each value is loaded once its loops are bound
(the weights' VC vector once kh and kw are, as LLVM's loop-invariant code motion would).
"""

import dataclasses

from .errors import KernelParamError
from .spec import out_size

AXES = ("n", "co", "oh", "ow", "ci", "kh", "kw", "vh", "vw", "vc")
"""TVM's ten loops of the spatial-pack conv, in reorder_0's index order."""
REORDERS = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (0, 1, 2, 3, 4, 5, 6, 9, 7, 8))
"""reorder_0's two candidates (TVM's policy='candidate')."""
ANN_REDUCE = ("none", "unroll")
ANN_SPATIAL = ("none", "unroll", "vec")
MAX_UNROLL = 16  # TVM's max_unroll of both annotations

DEFAULT_KNOBS = {"reorder": REORDERS[0], "ann_reduce": ("none", "unroll"), "ann_spatial": ("unroll", "unroll", "vec")}
"""The knobs of our kernel before they were parameters: kh a loop, kw, vh and vw unrolled, vc a
vector, TVM's default order. Specs omit knobs at these values from ``describe()``, so those
kernels keep their symbols and their cached analyses."""


def check_knobs(spec):
    """One-line KernelParamError unless ``spec``'s reorder/ann_reduce/ann_spatial are in TVM's
    space and generated here (vec on vc only)."""
    f = spec.family
    if not isinstance(spec.reorder, tuple) or spec.reorder not in REORDERS:
        raise KernelParamError(f"{f}: reorder={list(spec.reorder)} is not one of reorder_0's two candidates "
                               f"{[list(r) for r in REORDERS]}")
    for name, anns, choices, lens in (("ann_reduce", spec.ann_reduce, ANN_REDUCE, (spec.kh, spec.kw)),
                                      ("ann_spatial", spec.ann_spatial, ANN_SPATIAL, (spec.vh, spec.vw, spec.vc))):
        if not isinstance(anns, tuple) or len(anns) != len(lens) or any(a not in choices for a in anns):
            raise KernelParamError(f"{f}: {name}={anns!r} must be a tuple of {len(lens)} of {choices}")
        for ann, length in zip(anns, lens):
            if ann == "unroll" and length > MAX_UNROLL:
                raise KernelParamError(f"{f}: {name}={anns!r} unrolls an axis of {length} > {MAX_UNROLL} "
                                       f"(TVM's max_unroll)")
    if "vec" in spec.ann_spatial[:2]:
        raise KernelParamError(f"{f}: ann_spatial={spec.ann_spatial!r}: only vc is vectorised here (vec on vh "
                               f"or vw is not generated)")


class SpatialPackNest:
    """Spatial-pack NCHW conv under TVM's knobs, a mixin of the conv specs: per image the packed
    input windows (``data_vec``), then per channel block and output tile the reduction in the
    knobs' loop order and the stores.

    The spec has the fields ``n, c, h, w, oc, kh, kw, stride, pad, vh, vw, vc, reorder,
    ann_reduce, ann_spatial`` and the hooks ``_types(L)`` -> (data, weight, accumulator = output)
    LLVM element types; ``_widen(b, L, value)`` -> a data or weight value in the accumulator type;
    ``_mac(b, L, acc, d, w)`` -> acc + d * w (``w`` a VC vector: ``d`` in every lane);
    ``_tile_prologue(b, L, ob, extra)`` -> state, once per channel block before its tiles;
    ``_tile_epilogue(b, L, value, ob, k, extra, state)`` -> the value stored (the VC vector when
    ``k`` is None, else lane ``k``).
    """

    def describe(self):
        """``Name(field=value, ...)`` with the knobs at their defaults left out (so a spec of
        today's default kernel keeps the description, and the cache key, it had before the knobs)."""
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                          if not (f.name in DEFAULT_KNOBS and tuple(getattr(self, f.name)) == DEFAULT_KNOBS[f.name]))
        return f"{type(self).__name__}({shown})"

    @property
    def oh(self):
        return out_size(self.h, self.kh, self.stride, self.pad)

    @property
    def ow(self):
        return out_size(self.w, self.kw, self.stride, self.pad)

    @property
    def blocks(self):
        """(output-channel blocks, tile rows, tile columns)."""
        return -(-self.oc // self.vc), -(-self.oh // self.vh), -(-self.ow // self.vw)

    @property
    def window(self):
        """(rows, columns) of one tile's packed input window: TVM's ``dvshape``, ``VH*HSTR + KH-1``
        by ``VW*WSTR + KW-1`` (``_decl_spatial_pack``). Above stride 1 that is ``stride - 1``
        more than the taps read (a 1x1 stride-2 tile of VW=2 packs 2 x 4 values and reads 2): the
        extra values are packed, never multiplied, and spread the reduction's reads over more lines."""
        return self.vh * self.stride + self.kh - 1, self.vw * self.stride + self.kw - 1

    def _emit_pack(self, b, L, inp, data_vec, n):
        """data_vec of image ``n``: every tile's input window, zeros in the padding."""
        _, hb_n, wb_n = self.blocks
        dh, dw = self.window
        s, p = self.stride, self.pad
        from llvmlite import ir
        data_ty, _, _ = self._types(L)
        zero = ir.Constant(data_ty, 0)
        with L.loop(b, 0, hb_n, "phb") as hb, L.loop(b, 0, wb_n, "pwb") as wb, \
                L.loop(b, 0, self.c, "pc") as c, L.loop(b, 0, dh, "pdy") as dy:
            iy = L.madd(b, (hb, self.vh * s), dy, -p)
            dst = L.madd(b, (hb, wb_n * self.c * dh * dw), (wb, self.c * dh * dw), (c, dh * dw), (dy, dw))
            x0 = L.madd(b, (wb, self.vw * s), -p)
            row_ok = L.in_range(b, iy, 0, self.h)
            src = L.madd(b, (n, self.c * self.h * self.w), (c, self.h * self.w), (iy, self.w))
            with L.loop(b, 0, dw, "pdx") as dx:
                ix = b.add(x0, dx)
                ok = b.and_(row_ok, L.in_range(b, ix, 0, self.w))
                with b.if_else(ok) as (inside, outside):
                    with inside:
                        v = L.load(b, inp, b.add(src, ix), data_ty)
                        L.store(b, v, data_vec, L.madd(b, dst, dx), data_ty)
                    with outside:
                        L.store(b, zero, data_vec, L.madd(b, dst, dx), data_ty)

    def _emit_tiles(self, b, L, wgt, out, data_vec, n, ob, extra=None):
        """Every output tile of image ``n``, channel block ``ob``: zero, reduce, then the spec's
        ``_tile_epilogue`` per (vh, vw) and the stores (``extra``: the epilogue's buffer)."""
        _, hb_n, wb_n = self.blocks
        dh, dw = self.window
        accs = self._alloc_accs(b, L)
        state = self._tile_prologue(b, L, ob, extra)
        with L.loop(b, 0, hb_n, "hb") as hb, L.loop(b, 0, wb_n, "wb") as wb:
            self._zero_accs(b, L, accs)
            tile = L.madd(b, (hb, wb_n * self.c * dh * dw), (wb, self.c * dh * dw))
            self._emit_reduction(b, L, wgt, data_vec, accs, tile, ob)
            for y, x, k, load in self._tile_values(b, L, accs):
                oy, ox = L.madd(b, (hb, self.vh), y), L.madd(b, (wb, self.vw), x)
                v = self._tile_epilogue(b, L, load(), ob, k, extra, state)
                ok = None
                if self.oh % self.vh:
                    ok = b.icmp_signed("<", oy, L.const(self.oh))
                if self.ow % self.vw:
                    in_x = b.icmp_signed("<", ox, L.const(self.ow))
                    ok = in_x if ok is None else b.and_(ok, in_x)
                if ok is None:
                    self._store_lanes(b, L, out, v, n, ob, oy, ox, k)
                else:
                    with L.when(b, ok):
                        self._store_lanes(b, L, out, v, n, ob, oy, ox, k)

    def _store_lanes(self, b, L, out, v, n, ob, oy, ox, lane=None):
        """Lane k of ``v`` to out[n, ob*VC + k, oy, ox] (lanes beyond oc not stored); with
        ``lane``, ``v`` is that lane's scalar."""
        _, _, out_ty = self._types(L)
        plane = self.oh * self.ow
        for k in (range(self.vc) if lane is None else (lane,)):
            o = L.madd(b, (ob, self.vc), k)
            index = L.madd(b, (n, self.oc * plane), (o, plane), (oy, self.ow), ox)
            value = b.extract_element(v, L.const(k)) if lane is None else v
            if self.oc % self.vc:
                with L.when(b, b.icmp_signed("<", o, L.const(self.oc))):
                    L.store(b, value, out, index, out_ty)
            else:
                L.store(b, value, out, index, out_ty)


    def _vec(self):
        return self.ann_spatial[2] == "vec"

    def _registers(self):
        """Whether the accumulators are VH x VW vectors (vh, vw unrolled or of extent 1, vc a
        vector)."""
        vh, vw, vc = self.ann_spatial
        return (vh != "none" or self.vh == 1) and (vw != "none" or self.vw == 1) and vc == "vec"

    def _alloc_accs(self, b, L):
        """The accumulators of one tile: a VH x VW list of vector slots, or one flat array."""
        _, _, acc_ty = self._types(L)
        if self._registers():
            vec = L.vector(acc_ty, self.vc)
            return [[L.entry_alloca(b, vec, f"acc{i}_{j}") for j in range(self.vw)] for i in range(self.vh)]
        return L.entry_alloca(b, acc_ty, "acc", count=self.vh * self.vw * self.vc)

    def _zero_accs(self, b, L, accs):
        from llvmlite import ir
        _, _, acc_ty = self._types(L)
        zero = 0.0 if isinstance(acc_ty, ir.FloatType) else 0
        if self._registers():
            for row in accs:
                for slot in row:
                    b.store(L.splat_const(zero, acc_ty, self.vc), slot)
        else:
            with L.loop(b, 0, self.vh * self.vw * self.vc, "zacc") as k:
                L.store(b, ir.Constant(acc_ty, zero), accs, k, acc_ty)

    def _spatial(self, b, L, name, extent, ann, unroll=True):
        """Yield the values of one axis: ints (unroll, vec), or one loop variable (none; an
        axis of extent 1 is no loop, as TVM's loop nests bind it to its minimum)."""
        if ann == "none" and extent > 1:
            with L.loop(b, 0, extent, name, unroll=unroll) as value:
                yield value
        else:
            yield from range(extent)

    def _emit_reduction(self, b, L, wgt, data_vec, accs, tile, ob):
        """acc[vh][vw][vc] += data_vec[tile, c, vh*s + kh, vw*s + kw] * wgt[ob, c, kh, kw, vc]
        over c, kh, kw, in the spec's loop order and annotations."""
        dh, dw = self.window
        vc = self.vc
        ann_kh, ann_kw = self.ann_reduce
        with L.loop(b, 0, self.c, "c") as c:
            for i in self._spatial(b, L, "i", self.kh, ann_kh, unroll=False):
                window = L.madd(b, tile, (c, dh * dw), (i, dw))
                taps = L.madd(b, (ob, self.c * self.kh * self.kw * vc), (c, self.kh * self.kw * vc), (i, self.kw * vc))
                for j in self._spatial(b, L, "j", self.kw, ann_kw, unroll=False):
                    self._emit_taps(b, L, wgt, data_vec, accs, window, taps, j)

    def _emit_taps(self, b, L, wgt, data_vec, accs, window, taps, j):
        """The spatial loops of one (c, kh, kw): TVM's order, vc a vector or a loop."""
        _, dw = self.window
        s, vc = self.stride, self.vc
        data_ty, wgt_ty, acc_ty = self._types(L)
        ann_vh, ann_vw, ann_vc = self.ann_spatial

        def d_load(y, x):
            at = _affine(b, L, window, ((y, s * dw), (x, s), (j, 1)))
            return self._widen(b, L, L.load(b, data_vec, at, data_ty))

        def acc_at(y, x, k=0):
            return _affine(b, L, None, ((y, self.vw * vc), (x, vc), (k, 1)))

        if self._vec():
            w = self._widen(b, L, L.load_vector(b, wgt, _affine(b, L, taps, ((j, vc),)), wgt_ty, vc))
            for y in self._spatial(b, L, "vh", self.vh, ann_vh):
                for x in self._spatial(b, L, "vw", self.vw, ann_vw):
                    d = d_load(y, x)
                    if self._registers():
                        slot = accs[y][x]
                        b.store(self._mac(b, L, b.load(slot, typ=L.vector(acc_ty, vc)), d, w), slot)
                    else:
                        ptr = _acc_vector(b, L, accs, acc_at(y, x), acc_ty, vc)
                        b.store(self._mac(b, L, b.load(ptr, align=L.element_align(acc_ty)), d, w), ptr,
                                align=L.element_align(acc_ty))
            return

        def scalar(y, x, k, d):
            w = self._widen(b, L, L.load(b, wgt, _affine(b, L, taps, ((j, vc), (k, 1))), wgt_ty))
            at = acc_at(y, x, k)
            L.store(b, self._mac(b, L, L.load(b, accs, at, acc_ty), d, w), accs, at, acc_ty)

        if tuple(self.reorder) == REORDERS[0]:  # ..., vh, vw, vc
            for y in self._spatial(b, L, "vh", self.vh, ann_vh):
                for x in self._spatial(b, L, "vw", self.vw, ann_vw):
                    d = d_load(y, x)
                    for k in self._spatial(b, L, "vc", vc, ann_vc):
                        scalar(y, x, k, d)
        else:  # ..., vc, vh, vw
            for k in self._spatial(b, L, "vc", vc, ann_vc):
                for y in self._spatial(b, L, "vh", self.vh, ann_vh):
                    for x in self._spatial(b, L, "vw", self.vw, ann_vw):
                        scalar(y, x, k, d_load(y, x))

    def _tile_values(self, b, L, accs):
        """Yield (y, x, k, load) of the finished tile, following ann_spatial: ``load()`` emits
        the load of the VC vector (``k`` None) when vc is a vector, else of lane ``k``'s scalar."""
        _, _, acc_ty = self._types(L)
        ann_vh, ann_vw, ann_vc = self.ann_spatial
        vc = self.vc
        for y in self._spatial(b, L, "svh", self.vh, ann_vh):
            for x in self._spatial(b, L, "svw", self.vw, ann_vw):
                if self._registers():
                    yield y, x, None, lambda y=y, x=x: b.load(accs[y][x], typ=L.vector(acc_ty, vc))
                elif self._vec():
                    yield y, x, None, lambda y=y, x=x: b.load(_acc_vector(
                        b, L, accs, _affine(b, L, None, ((y, self.vw * vc), (x, vc))), acc_ty, vc),
                        align=L.element_align(acc_ty))
                else:
                    for k in self._spatial(b, L, "svc", vc, ann_vc):
                        yield y, x, k, lambda y=y, x=x, k=k: L.load(
                            b, accs, _affine(b, L, None, ((y, self.vw * vc), (x, vc), (k, 1))), acc_ty)


def _acc_vector(b, L, accs, at, acc_ty, vc):
    """Pointer to the VC accumulators at element ``at`` of the stack array, as a vector pointer;
    its accesses take the element's alignment (the array has no more: LLVM would otherwise assume
    the whole vector's, and a host JIT's aligned vector move faults on it once a loop keeps it in
    memory)."""
    return b.bitcast(L.element_ptr(b, accs, at, acc_ty), L.vector(acc_ty, vc).as_pointer())


def _affine(b, L, base, terms):
    """``base`` + sum of value * factor over ``terms``: loop variables as terms, ints folded into
    one constant (last, as the unrolled kernels always had it)."""
    dyn = [t for t in terms if not isinstance(t[0], int)]
    const = sum(v * f for v, f in terms if isinstance(v, int))
    return L.madd(b, *([] if base is None else [base]), *dyn, const)
