"""Code generation of a tiled, quantized convolution: DRAM plan, per-thread segments.

:func:`plan_dram` places the packed tensors, the micro-op tables and the output in the bundle;
:func:`thread_segments` writes each virtual thread's annotated instructions (see the loop nest
in :mod:`compiler.tensorize.schedule`). Loads are skipped when the thread's buffer already
holds the tile (an input tile reused across output-channel tiles, weights across spatial
tiles, a bias across tiles). The latency-hiding passes turn the segments into the final stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.annotated import Op, Segment, annotate
from compiler.tensorize.schedule import Plan, TileShape
from compiler.tensorize.uops import alu_kernel, alu_row_kernel, gemm_kernel, gemm_row_kernel
from vdla_hw import isa
from vdla_hw.bundle import BundleBuilder
from vdla_hw.config import MEM_TYPES

MT = {mem: index for index, mem in enumerate(MEM_TYPES)}
ALU = {op: index for index, op in enumerate(isa.ALU_OPS)}


@dataclass
class ThreadBuffers:
    """One virtual thread's SRAM slices and micro-op tables."""

    inp: int
    wgt: int
    bias: int            # ACC index of the thread's bias vectors
    acc: int             # ACC index of the thread's output accumulators
    gemm: dict           # shape key -> (uop_bgn, rows)
    alu: dict            # shape key -> (uop_bgn, rows)
    shift: int | None = None    # ACC index of the thread's shift vectors (per-channel shift)
    alu_shift: dict | None = None  # shape key -> (uop_bgn, rows) reading the shift vectors


@dataclass
class DramPlan:
    """Element indices of the bundle's arrays (each in its own memory type's units)."""

    inp: int
    wgt: int
    bias: int
    out: int
    uops: int
    uop_count: int
    zeros: int | None = None
    shift: int | None = None


def thread_buffers(plan: Plan) -> list[ThreadBuffers]:
    """SRAM slices and micro-op tables of every thread; tables are packed from uop index 0."""
    threads, next_uop = [], 0
    for t in range(plan.schedule.vthreads):
        inp, wgt, acc0 = t * plan.inp_part, t * plan.wgt_part, t * plan.acc_part
        toc = plan.schedule.toc
        bias, shift, acc = acc0, acc0 + toc if plan.vectors > 1 else None, acc0 + plan.vectors * toc
        gemm, alu, alu_shift = {}, {}, {} if shift is not None else None
        row_loop = plan.schedule.row_loop
        for key, shape in plan.shapes.items():
            rows = (gemm_row_kernel if row_loop else gemm_kernel)(plan, shape, acc=acc, inp=inp, wgt=wgt)
            gemm[key], next_uop = (next_uop, rows), next_uop + len(rows)
            rows = (alu_row_kernel if row_loop else alu_kernel)(shape, acc=acc, bias=bias)
            alu[key], next_uop = (next_uop, rows), next_uop + len(rows)
            if shift is not None:
                rows = (alu_row_kernel if row_loop else alu_kernel)(shape, acc=acc, bias=shift)
                alu_shift[key], next_uop = (next_uop, rows), next_uop + len(rows)
        threads.append(ThreadBuffers(inp, wgt, bias, acc, gemm, alu, shift, alu_shift))
    return threads


def plan_dram(builder: BundleBuilder, plan: Plan, packed: dict, buffers: list[ThreadBuffers]) -> DramPlan:
    """Place packed input, weights, bias, micro-ops and the output array in the image."""
    tables = sorted((bgn, len(rows), rows) for tb in buffers for table in (tb.gemm, tb.alu, tb.alu_shift or {})
                    for bgn, rows in table.values())
    uop_rows = np.concatenate([rows for _, _, rows in tables])
    dram = DramPlan(
        inp=builder.array("inp", "inp", packed["inp"]),
        wgt=builder.array("wgt", "wgt", packed["wgt"]),
        bias=builder.array("bias", "acc", packed["bias"]),
        out=builder.alloc("out", "out", plan.nb * plan.ocb * plan.oh * plan.ow),
        uops=builder.uops("uops", uop_rows), uop_count=len(uop_rows),
        shift=builder.array("shift", "acc", packed["shift"]) if "shift" in packed else None)
    if any(_zero_tile_needed(plan, item, _shape_of(plan, item)) for item in plan.items()):
        dram.zeros = builder.alloc("zeros", "inp", max(sh.in_rows * sh.in_cols for sh in plan.shapes.values()))
    return dram


def _shape_of(plan: Plan, item) -> TileShape:
    _, ty, tx, _ = item
    s = plan.schedule
    return plan.shapes[(min(s.th, plan.oh - ty * s.th), min(s.tw, plan.ow - tx * s.tw))]


def _input_window(plan: Plan, item, shape: TileShape, ky0: int = 0):
    """Valid input rows/columns of a tile (kernel rows from ``ky0``) and its padding:
    (ya, ny, top, bottom, xa, nx, left, right)."""
    layer = plan.layer
    _, ty, tx, _ = item
    oh0, ow0 = ty * plan.schedule.th, tx * plan.schedule.tw
    if plan.row_step > 1:
        return oh0 * layer.stride, shape.th, 0, 0, ow0 * layer.stride, shape.in_cols, 0, 0
    y0, x0 = oh0 * layer.stride - layer.pad + ky0, ow0 * layer.stride - layer.pad
    ya, yb = max(y0, 0), min(y0 + shape.in_rows, layer.h)
    xa, xb = max(x0, 0), min(x0 + shape.in_cols, layer.w)
    ny, nx = max(yb - ya, 0), max(xb - xa, 0)
    top, left = ya - y0, xa - x0
    return ya, ny, top, shape.in_rows - top - ny, xa, nx, left, shape.in_cols - left - nx


def _zero_tile_needed(plan: Plan, item, shape: TileShape) -> bool:
    for kt in range(plan.n_tiles_ky):
        _, ny, _, _, _, nx, _, _ = _input_window(plan, item, shape, kt * plan.tky)
        if ny == 0 or nx == 0:
            return True
    return False


class Emitter:
    """Writes one thread's segments, remembering what its buffers hold.

    Subclasses may override :meth:`op` (what one instruction becomes) and :meth:`segment` (what
    a run of them becomes): the cost estimate (:mod:`compiler.tensorize.estimate`) walks the very
    same instructions without annotating them. ``lead`` ops go first in the first segment."""

    def __init__(self, plan: Plan, dram: DramPlan, tb: ThreadBuffers, thread: int):
        self.plan, self.dram, self.tb, self.thread = plan, dram, tb, thread
        self.held = {"inp": None, "wgt": None, "bias": None}
        self.segments: list = []
        self.lead: list = []

    def op(self, ops: list, kind: str, uops=None, tag: str = "", **fields) -> None:
        ops.append(annotate(isa.Insn(kind, **fields), uops, thread=self.thread, tag=tag))

    def segment(self, ops: list) -> None:
        if self.lead and not self.segments:
            ops = self.lead + ops
        self.segments.append(Segment(ops))

    def item(self, item) -> None:
        plan, tb, sched = self.plan, self.tb, self.plan.schedule
        n, ty, tx, to = item
        shape = _shape_of(plan, item)
        key = (shape.th, shape.tw)
        o0 = to * sched.toc
        toc = min(sched.toc, plan.ocb - o0)
        g_bgn, g_rows = tb.gemm[key]
        a_bgn, a_rows = tb.alu[key]
        tile_in = shape.in_rows * shape.in_cols
        steps = [(ti, kt) for ti in range(plan.n_tiles_ic) for kt in range(plan.n_tiles_ky)]
        for ti, kt in steps:
            ops: list[Op] = []
            c0, ky0 = ti * sched.tic, kt * plan.tky
            tic = min(sched.tic, plan.icb - c0)
            if self.held["inp"] != (n, ty, tx, ti, kt):
                self.load_inp(ops, item, shape, c0, tic, ky0)
                self.held["inp"] = (n, ty, tx, ti, kt)
            if self.held["wgt"] != (to, ti, kt):
                self.load_wgt(ops, o0, toc, c0, tic, ky0)
                self.held["wgt"] = (to, ti, kt)
            if (ti, kt) == (0, 0):
                if self.held["bias"] != to:
                    self.op(ops, "LOAD", tag="load bias", memory_type=MT["acc"], sram_base=tb.bias,
                            dram_base=self.dram.bias + o0, y_size=1, x_size=toc, x_stride=toc)
                    if tb.shift is not None:
                        self.op(ops, "LOAD", tag="load shift", memory_type=MT["acc"], sram_base=tb.shift,
                                dram_base=self.dram.shift + o0, y_size=1, x_size=toc, x_stride=toc)
                    self.held["bias"] = to
                if sched.row_loop:  # the table's first row of uops (c, ky, kx = 0): the tile's first row
                    self.op(ops, "GEMM", g_rows[:shape.tw], tag="reset", reset=1, uop_bgn=g_bgn,
                            uop_end=g_bgn + shape.tw, iter_out=toc, iter_in=shape.th,
                            dst_factor_out=shape.group, dst_factor_in=shape.tw)
                else:
                    self.op(ops, "GEMM", g_rows[:shape.group], tag="reset", reset=1, uop_bgn=g_bgn,
                            uop_end=g_bgn + shape.group, iter_out=toc, iter_in=1, dst_factor_out=shape.group)
            if sched.row_loop:
                self.op(ops, "GEMM", g_rows, tag="gemm", uop_bgn=g_bgn, uop_end=g_bgn + len(g_rows),
                        iter_out=toc, iter_in=shape.th, dst_factor_out=shape.group, dst_factor_in=shape.tw,
                        src_factor_in=shape.in_cols * (1 if plan.row_step > 1 else plan.layer.stride),
                        wgt_factor_out=tic * plan.kstep)
            else:
                self.op(ops, "GEMM", g_rows, tag="gemm", uop_bgn=g_bgn, uop_end=g_bgn + len(g_rows),
                        iter_out=toc, iter_in=tic, dst_factor_out=shape.group, src_factor_in=tile_in,
                        wgt_factor_out=tic * plan.kstep, wgt_factor_in=plan.kstep)
            self.segment(ops)
        ops = []
        self.requantize(ops, a_bgn, a_rows, toc, shape, tb.alu_shift[key] if tb.alu_shift else None)
        self.store(ops, item, shape, o0, toc)
        self.segment(ops)

    def load_wgt(self, ops, o0: int, toc: int, c0: int, tic: int, ky0: int) -> None:
        """Weights of oc blocks o0.. and ic blocks c0.., kernel rows ky0..ky0+tky, packed
        (o, c, ky, kx) in the thread's slice: one 2-D load, or one per oc block if rows are split."""
        plan, k = self.plan, self.plan.layer.k
        base = self.dram.wgt + (o0 * plan.icb + c0) * plan.kk + ky0 * k
        if plan.tky == k:
            self.op(ops, "LOAD", tag="load wgt", memory_type=MT["wgt"], sram_base=self.tb.wgt, dram_base=base,
                    y_size=toc, x_size=tic * plan.kk, x_stride=plan.icb * plan.kk)
            return
        for o in range(toc):
            self.op(ops, "LOAD", tag="load wgt", memory_type=MT["wgt"], sram_base=self.tb.wgt + o * tic * plan.kstep,
                    dram_base=base + o * plan.icb * plan.kk, y_size=tic, x_size=plan.kstep, x_stride=plan.kk)

    def load_inp(self, ops, item, shape: TileShape, c0: int, tic: int, ky0: int) -> None:
        plan, layer = self.plan, self.plan.layer
        n = item[0]
        ya, ny, top, bottom, xa, nx, left, right = _input_window(plan, item, shape, ky0)
        tile_in = shape.in_rows * shape.in_cols
        for c in range(tic):
            sram = self.tb.inp + c * tile_in
            if ny == 0 or nx == 0:  # the tile lies entirely in the padding: copy zeros
                self.op(ops, "LOAD", tag="load inp zeros", memory_type=MT["inp"], sram_base=sram,
                        dram_base=self.dram.zeros, y_size=1, x_size=tile_in, x_stride=tile_in)
                continue
            plane = (n * plan.icb + c0 + c) * layer.h * layer.w
            self.op(ops, "LOAD", tag="load inp", memory_type=MT["inp"], sram_base=sram,
                    dram_base=self.dram.inp + plane + ya * layer.w + xa, y_size=ny, x_size=nx,
                    x_stride=layer.w * plan.row_step, y_pad_top=top, y_pad_bottom=bottom,
                    x_pad_left=left, x_pad_right=right)

    def requantize(self, ops, a_bgn, a_rows, toc: int, shape: TileShape, shift_table=None) -> None:
        """acc = clip((acc + bias) >> shift, lo, hi), one ALU instruction per step; a per-channel
        shift is a vector SHR whose operand is each output-channel block's shift vector."""
        layer = self.plan.layer
        loops = dict(uop_bgn=a_bgn, uop_end=a_bgn + len(a_rows), iter_out=toc, iter_in=1,
                     dst_factor_out=shape.group, src_factor_out=1)
        if self.plan.schedule.row_loop:  # a one-row table, stepped over the tile's rows
            loops.update(iter_in=shape.th, dst_factor_in=shape.tw)
        self.op(ops, "ALU", a_rows, tag="alu add bias", alu_opcode=ALU["add"], **loops)
        if shift_table is not None:
            s_bgn, s_rows = shift_table
            self.op(ops, "ALU", s_rows, tag="alu shr vector", alu_opcode=ALU["shr"],
                    **{**loops, "uop_bgn": s_bgn, "uop_end": s_bgn + len(s_rows)})
        elif layer.shift:
            self.op(ops, "ALU", a_rows, tag="alu shr", alu_opcode=ALU["shr"], use_imm=1, imm=layer.shift, **loops)
        self.op(ops, "ALU", a_rows, tag="alu max", alu_opcode=ALU["max"], use_imm=1, imm=layer.lo, **loops)
        self.op(ops, "ALU", a_rows, tag="alu min", alu_opcode=ALU["min"], use_imm=1, imm=layer.hi, **loops)

    def store(self, ops, item, shape: TileShape, o0: int, toc: int) -> None:
        plan = self.plan
        n, ty, tx, _ = item
        oh0, ow0 = ty * plan.schedule.th, tx * plan.schedule.tw
        plane = plan.oh * plan.ow
        base = self.dram.out + (n * plan.ocb + o0) * plane + oh0 * plan.ow + ow0
        if shape.pixels == plane and shape.group == shape.pixels:
            self.op(ops, "STORE", tag="store", memory_type=MT["out"], sram_base=self.tb.acc, dram_base=base,
                    y_size=toc, x_size=plane, x_stride=plane)
            return
        for o in range(toc):
            if shape.tw == plan.ow:
                rows = dict(y_size=1, x_size=shape.pixels, x_stride=shape.pixels)
            else:
                rows = dict(y_size=shape.th, x_size=shape.tw, x_stride=plan.ow)
            self.op(ops, "STORE", tag="store", memory_type=MT["out"], sram_base=self.tb.acc + o * shape.group,
                    dram_base=base + o * plane, **rows)


def thread_segments(plan: Plan, dram: DramPlan, buffers: list[ThreadBuffers], emitter=None) -> list[list]:
    """Every thread's segments; the first one starts by loading all micro-op tables.
    ``emitter``: an :class:`Emitter` subclass (default: annotated :class:`Segment` lists)."""
    threads = []
    for t, items in enumerate(plan.thread_items()):
        em = (emitter or Emitter)(plan, dram, buffers[t], t)
        if t == 0:
            em.op(em.lead, "LOAD", tag="load uops", memory_type=MT["uop"], sram_base=0, dram_base=dram.uops,
                  y_size=1, x_size=dram.uop_count, x_stride=dram.uop_count)
        for item in items:
            em.item(item)
        threads.append(em.segments)
    return threads
