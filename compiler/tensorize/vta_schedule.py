"""VTA's AutoTVM conv2d schedules as data: knob lists -> :class:`Schedule`, instruction counts.

A knob list is an AutoTVM config entity of VTA's ``conv2d`` template exactly as a tuning log
writes it (compiler/data/board_records.csv), e.g.::

    [["tile_b", "sp", [1, 1]], ["tile_h", "sp", [1, 7]], ["tile_w", "sp", [1, 7]],
     ["tile_ci", "sp", [16, 1]], ["tile_co", "sp", [2, 16]], ["oc_nthread", "ot", 2], ["h_nthread", "ot", 1]]

Source of the mapping: apache/tvm v0.6.0 (c6f8c23, 2019-11-26), ``vta/python/vta/top/vta_conv2d.py``
(``_schedule_conv2d``; unchanged since 3818b2a, 2019-06, in the v0.6 line). A split ``[outer, inner]``
cuts an axis of the blocked output into ``outer`` loop iterations of ``inner`` each. The output
loops are reordered to ``x_bo, x_i0, x_co0, x_j0 | x_co1, x_i1, x_j1`` and the convolution, its
element-wise ops and the store (a ``dma_copy`` pragma at ``x_co1``) are computed at ``x_j0``: one
tile = ``tile_co[1]`` oc blocks x ``tile_h[1]`` rows x ``tile_w[1]`` columns. Inside, the
reduction ``k_o`` (input-channel blocks) is split by ``tile_ci``; the input and weight loads sit
at its outer loop, one GEMM per outer step. ``oc_nthread`` splits ``x_co0`` and ``h_nthread``
splits ``x_i0`` by that factor into ``cthread`` virtual threads (thread = the inner part: oc tile
mod oc_nthread, tile row mod h_nthread). ``tile_b`` is defined there but never applied. VTA's
GEMM runs the loops ``k_o.inner, x_j, d_j, d_i, x_co, x_i`` of a reduction step; v0.6.0's
``ir_pass.fold_uop_loop`` folds the two outermost into the instruction's loops and the micro-op
kernel unrolls the rest. With ``tile_ci[1] = 1`` (every logged record; TVM emits no loop of
extent 1, src/op/op_util.cc MakeLoopNest) that is: loops over the tile columns (outer) and the
kernel columns (inner), K x toc x th uops (d_i, x_co, x_i); the reset's kernel is th uops
looped over the tile columns and oc blocks.

Ours: ``th = tile_h[1]``, ``tw = tile_w[1]``, ``toc = tile_co[1]``, ``tic = tile_ci[1]``,
``vthreads = oc_nthread * h_nthread``, ``h_threads = h_nthread`` (VTA's thread split, see
:meth:`Plan.thread_items`), ``order = "vta"`` (n, tile row, oc tile, tile column), whole kernel,
``row_loop = 1`` (a folded kernel like VTA's, though not its loops: one tile row in the table,
tic x K x K x tw uops, looped over oc blocks and rows; the same GEMM uops run, and every record
then fits vta-pynq's micro-op buffer) unless a tile row is narrower than HAZARD_DISTINCT pixels
(then the table holds the whole tile).
:func:`differences` says where the compiled program still differs from VTA's.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

from compiler.layers import Conv2D
from compiler.layout import blocks
from compiler.tensorize.schedule import HAZARD_DISTINCT, VTA_ORDER, Plan, Schedule, ScheduleError
from vdla_hw import isa
from vdla_hw.config import MEM_TYPES, Config, load_config

# knob -> (AutoTVM entity type, what a split's factors multiply to)
KNOBS = {"tile_b": ("sp", "batch blocks"), "tile_h": ("sp", "output rows"), "tile_w": ("sp", "output columns"),
         "tile_ci": ("sp", "input-channel blocks"), "tile_co": ("sp", "output-channel blocks"),
         "oc_nthread": ("ot", None), "h_nthread": ("ot", None)}
# the element-wise ops of AutoTVM's VTA conv2d tuning task (v0.6.0 vta/tutorials/autotvm/
# tune_relay_vta.py, register_vta_tuning_tasks): conv2d -> right_shift 8 -> min 127 -> max 0 -> cast int8
VTA_TASK_ALU = ("shr", "min", "max")
VTA_TASK_SHIFT = 8
COUNT_KEYS = ("load_inp", "load_wgt", "load_acc", "load_uop", "gemm", "alu", "store", "sync", "finish")


@dataclasses.dataclass(frozen=True)
class VtaKnobs:
    """A checked knob list: each split as (outer, inner), the thread counts."""

    tile_b: tuple[int, int]
    tile_h: tuple[int, int]
    tile_w: tuple[int, int]
    tile_ci: tuple[int, int]
    tile_co: tuple[int, int]
    oc_nthread: int
    h_nthread: int

    @property
    def threads(self) -> int:
        return self.oc_nthread * self.h_nthread

    @property
    def tiles(self) -> int:
        """Output tiles of the whole layer (all threads): x_bo x x_i0 x x_co0 x x_j0."""
        return self.tile_b[0] * self.tile_b[1] * self.tile_h[0] * self.tile_co[0] * self.tile_w[0]


def extents(layer: Conv2D, config: Config) -> dict[str, int]:
    """What each split knob's factors multiply to for ``layer`` (blocks of the configuration)."""
    return {"tile_b": blocks(layer.n, config.batch), "tile_h": layer.oh, "tile_w": layer.ow,
            "tile_ci": blocks(layer.ic, config.block_in), "tile_co": blocks(layer.oc, config.block_out)}


def parse_knobs(knobs, layer: Conv2D, config: Config | str | None = "vta-pynq") -> VtaKnobs:
    """``knobs`` (a list as logged, or its JSON text) checked against ``layer``: every knob of
    :data:`KNOBS` exactly once, splits of two positive factors multiplying to the layer's extent,
    thread counts positive and dividing the outer factor they split (oc_nthread: tile_co's,
    h_nthread: tile_h's). Raises a one-line :class:`ScheduleError` naming the knob."""
    config = load_config(config)
    name = layer.name
    if isinstance(knobs, str):
        try:
            knobs = json.loads(knobs)
        except json.JSONDecodeError as err:
            raise ScheduleError(name, "vta-schedule", f"not JSON ({err.msg} at character {err.pos})") from None
    if not isinstance(knobs, list):
        raise ScheduleError(name, "vta-schedule", f"expected a list of [name, type, value] knobs, got "
                            f"{type(knobs).__name__}")
    values: dict = {}
    for entry in knobs:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
            raise ScheduleError(name, "vta-schedule", f"knob {json.dumps(entry)} is not [name, type, value]")
        knob, kind, value = entry
        if knob not in KNOBS:
            raise ScheduleError(name, knob, f"unknown knob (VTA's conv2d knobs: {', '.join(KNOBS)})")
        if knob in values:
            raise ScheduleError(name, knob, "given twice")
        if kind != KNOBS[knob][0]:
            raise ScheduleError(name, knob, f"type {kind!r}, expected {KNOBS[knob][0]!r}")
        values[knob] = value
    missing = [k for k in KNOBS if k not in values]
    if missing:
        raise ScheduleError(name, missing[0], "missing (a VTA conv2d schedule names all of "
                            f"{', '.join(KNOBS)})")
    ext = extents(layer, config)
    for knob, extent in ext.items():
        f = values[knob]
        if not (isinstance(f, list) and len(f) == 2 and all(_positive_int(v) for v in f)):
            raise ScheduleError(name, knob, f"{json.dumps(f)} is not two positive factors [outer, inner]")
        if f[0] * f[1] != extent:
            raise ScheduleError(name, knob, f"factors {f[0]} x {f[1]} = {f[0] * f[1]} but the layer has {extent} "
                                f"{KNOBS[knob][1]}")
        values[knob] = tuple(f)
    for knob, split in (("oc_nthread", "tile_co"), ("h_nthread", "tile_h")):
        v = values[knob]
        if not _positive_int(v):
            raise ScheduleError(name, knob, f"{json.dumps(v)} is not a positive integer")
        if values[split][0] % v:
            raise ScheduleError(name, knob, f"{v} threads do not divide {split}'s outer factor {values[split][0]}")
    return VtaKnobs(**values)


def _positive_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def to_schedule(knobs: VtaKnobs) -> Schedule:
    """Our :class:`Schedule` of VTA's loop nest (see the module docstring)."""
    threads, tw = knobs.threads, knobs.tile_w[1]
    return Schedule(th=knobs.tile_h[1], tw=tw, toc=knobs.tile_co[1], tic=knobs.tile_ci[1],
                    vthreads=threads, order=VTA_ORDER, h_threads=knobs.h_nthread if threads > 1 else 0,
                    row_loop=int(tw >= HAZARD_DISTINCT))


def vta_schedule(knobs, layer: Conv2D, config: Config | str | None = "vta-pynq") -> Schedule:
    """``knobs`` parsed (:func:`parse_knobs`) and mapped (:func:`to_schedule`)."""
    return to_schedule(parse_knobs(knobs, layer, config))


def vta_counts(knobs: VtaKnobs) -> dict:
    """Instructions VTA's runtime would issue for the tuning task's program, by kind.

    Basis: TVM v0.6.0's loop nest (module docstring) with the tuning task's ops; per thread per
    tile: one GEMM reset (the reduction's init), then per ``tile_ci`` outer step one LOAD INP and
    one LOAD WGT (each a single 2-D DMA: ``ir_pass._inject_copy`` lowers a copy only as a 2-D
    pattern) and one GEMM (the lifted ``coproc_uop_scope`` is one ``VTAPushGEMMOp``); then one
    ALU per element-wise op (shr, min, max; no bias: the task has none, so no LOAD ACC) and one
    STORE (``dma_copy`` at ``x_co1``). LOAD UOP: one per micro-op kernel (each thread's reset,
    GEMM and 3 ALU kernels: runtime.cc's ``UopQueue`` loads a kernel once while it stays
    cached; we assume no eviction). FINISH: one. ``sync`` is None: VTA's runtime adds a no-op
    only where a dependency token cannot ride on the stream's last instruction (runtime.cc
    ``DepPush``), which depends on the lowered statement order; not derived here."""
    tiles, steps = knobs.tiles, knobs.tile_ci[0]
    return {"load_inp": tiles * steps, "load_wgt": tiles * steps, "load_acc": 0,
            "load_uop": knobs.threads * (2 + len(VTA_TASK_ALU)), "gemm": tiles * (1 + steps),
            "alu": tiles * len(VTA_TASK_ALU), "store": tiles, "sync": None, "finish": 1}


def our_counts(insns) -> dict:
    """Instructions of a compiled program by kind (:data:`COUNT_KEYS`); ``sync`` counts the
    flag-only no-ops (x_size 0) the token pass emits, ``tokens`` the push flags set."""
    counts = Counter({k: 0 for k in COUNT_KEYS})
    tokens = 0
    for insn in insns:
        tokens += sum(getattr(insn, f, 0) for f in ("push_prev", "push_next"))
        if insn.kind in ("LOAD", "STORE") and insn.x_size == 0:
            counts["sync"] += 1
        elif insn.kind == "LOAD":
            counts["load_" + MEM_TYPES[insn.memory_type]] += 1
        else:
            counts[insn.kind.lower()] += 1
    return {**{k: counts[k] for k in COUNT_KEYS}, "tokens": tokens}


def differences(layer: Conv2D, knobs, config: Config | str | None = "vta-pynq", insns=None) -> dict:
    """Where our program for ``layer`` under VTA's ``knobs`` differs from VTA's: ``ours`` (counts
    of ``insns``, the compiled program; default: ``layer`` compiled with random tensors of seed 0),
    ``vta`` (:func:`vta_counts`), ``delta`` (ours - vta per kind; None where VTA's is not derived)
    and ``notes``, one sentence per structural difference that applies."""
    config = load_config(config)
    k = knobs if isinstance(knobs, VtaKnobs) else parse_knobs(knobs, layer, config)
    plan = Plan(layer, config, to_schedule(k))
    vta = vta_counts(k)
    if insns is None:
        from compiler.accel import compile_layer

        insns = compile_layer(layer, config, schedule=plan.schedule).insns()
    ours = our_counts(insns)
    notes = ["bias: ours loads each oc tile's bias (LOAD ACC) and adds it (one more ALU per tile); "
             "VTA's tuning task has no bias (conv2d -> shr 8 -> min 127 -> max 0 -> cast int8)",
             "uops: ours loads every micro-op table once, before the first tile (one LOAD UOP); VTA's "
             "runtime loads each kernel at its first use"]
    vta_kernel = (f"K x toc x th = {layer.k * k.tile_co[1] * k.tile_h[1]} uops looped over tile columns and "
                  "kernel columns" if k.tile_ci[1] == 1 else
                  f"K x K x toc x th = {layer.k ** 2 * k.tile_co[1] * k.tile_h[1]} uops looped over ic blocks and "
                  "tile columns")
    notes.append(f"kernels: VTA's GEMM kernel is {vta_kernel}; ours "
                 + (f"{k.tile_ci[1] * layer.k * layer.k * k.tile_w[1]} uops (one tile row) looped over oc blocks "
                    "and rows" if plan.schedule.row_loop else "the whole tile's uops looped over oc and ic blocks")
                 + ": the same GEMM uops run, the tables differ in size")
    if not plan.schedule.row_loop:
        notes.append(f"kernels: a tile row of {k.tile_w[1]} pixels is too narrow for a one-row GEMM table "
                     "(hazard rule): ours unrolls the whole tile into uops, VTA loops over its rows")
    if plan.oh * plan.ow != plan.schedule.th * plan.schedule.tw:
        notes.append(f"stores: ours writes a tile smaller than the plane with one STORE per oc block "
                     f"({plan.schedule.toc} per tile); VTA one 2-D STORE per tile"
                     + ("" if plan.schedule.tw == plan.ow or 1 in (k.tile_co[1], k.tile_h[1]) else
                        " (a tile of several oc blocks and rows with tw < OW has no 2-D pattern: VTA's "
                        "ir_pass._inject_copy cannot lower this schedule)"))
    if k.tile_ci[1] > 1:
        notes.append(f"input loads: ours one LOAD INP per input-channel block ({k.tile_ci[1]} per step); "
                     "VTA one DMA per step, which needs a 2-D pattern (ir_pass._inject_copy; a padded tile of "
                     "several blocks has none, so VTA would not lower it)")
    if k.tile_ci[0] == 1:
        notes.append("reuse: with one reduction step ours skips the loads a thread's buffer still holds; "
                     "VTA reloads input and weights for every tile")
    if any(sh.group > sh.pixels for sh in plan.shapes.values()):
        notes.append("accumulators: a tile of fewer pixels than the GEMM hazard distance + 1 cycles "
                     "through scratch accumulators in ours (more GEMM uops); VTA has no such rule")
    if k.threads > 1:
        notes.append(f"threads: {k.threads} virtual threads own the same tiles as VTA's cthreads; ours "
                     "interleaves them per segment (a reduction step, or ALU + store), VTA per statement")
    notes.append("sync: ours counts its flag-only no-ops; VTA's are not derived (None)")
    delta = {key: (None if vta[key] is None else ours[key] - vta[key]) for key in COUNT_KEYS}
    return {"schedule": plan.schedule.text(), "ours": ours, "vta": vta, "delta": delta, "notes": notes}
