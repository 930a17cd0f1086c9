"""Schedules: how a convolution is cut into tiles, and the buffer plan that follows from it.

A :class:`Schedule` names the tile sizes (output rows ``th`` and columns ``tw``, output-channel
blocks ``toc`` and input-channel blocks ``tic`` per tile), the number of virtual threads and
the order of the outer tile loops. :class:`Plan` checks it against a layer and a configuration
and derives everything the code generator needs: tile shapes (full tiles and the remainders at
the edges), each thread's slice of the INP/WGT/ACC buffers and the micro-op tables.

Loop nest of a compiled convolution (``order="spatial"``; ``"oc"`` puts the oc tile loop first,
``"vta"`` between tile row and tile column as VTA's conv2d schedule does)::

    for n-block, tile row, tile column, oc tile:      <- split over the virtual threads
        for ic tile, kernel-row tile (tky rows of the kernel; tky = K unless split):
                       load inp (+pad), load wgt, GEMM (reset on the first)
        ALU add bias, shr (by an immediate or the shift vectors), max lo, min hi; store

Per thread, ACC holds ``toc`` bias vectors (then ``toc`` shift vectors for a per-channel shift)
then ``toc`` groups of ``G`` accumulators, one per
output pixel of the tile (``G = max(pixels, HAZARD_DISTINCT)``: the GEMM hazard rule needs
``timing.GEMM_HAZARD_DISTANCE + 1`` distinct accumulators in rotation, spare ones are scratch).
"""

from __future__ import annotations

import dataclasses
import functools
import re

from compiler.latency_hiding.threads import split
from compiler.layers import Conv2D, LayerError
from compiler.layout import blocks
from vdla_hw import isa, timing
from vdla_hw.config import Config

ORDERS = ("spatial", "oc")   # the orders the search tries
# VTA's conv2d order (n, tile row, oc tile, tile column: x_bo, x_i0, x_co0, x_j0 in TVM v0.6.0's
# vta/python/vta/top/vta_conv2d.py); compiler.tensorize.vta_schedule maps VTA's knobs to it
VTA_ORDER = "vta"
BUFFERS = ("inp", "wgt", "acc", "uop")
# The parameters that size the on-chip buffers. A plan reads them only to check that its slices fit
# (``misfit``: the depths and, through the index widths, the GEMM fields); its sizes, tile shapes,
# instructions and estimates come from the schedule. compiler.tensorize.search and compiler.accel
# share work across configurations that differ only in these.
BUFFER_SIZE_PARAMS = frozenset({"LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE", "LOG_ACC_BUFF_SIZE"})
# a GEMM uop may not write an accumulator written by any of the previous GEMM_HAZARD_DISTANCE uops
# (the timing contract's rule), so a tile cycles through at least one more accumulator than that
HAZARD_DISTINCT = timing.GEMM_HAZARD_DISTANCE + 1


class ScheduleError(LayerError):
    """A schedule that does not fit the layer or the configuration's buffers."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Schedule:
    """Tile sizes and thread count of one compiled convolution."""

    th: int
    tw: int
    toc: int
    tic: int
    vthreads: int = 1
    order: str = "spatial"
    tky: int = 0  # kernel rows per reduction step: 0 = the whole kernel, 1 = one row at a time
    # how the outer items go to the threads: 0 = round robin over items(); h >= 1 = VTA's virtual
    # threads: h threads split the tile rows (row y to y mod h), vthreads/h the oc tiles (o mod)
    h_threads: int = 0
    # 1: the GEMM/ALU micro-op tables hold one tile row (and every ic block of a step) and the
    # instructions' inner loop steps over the tile rows (smaller tables, a folded kernel like VTA's);
    # 0: the tables hold every pixel of the tile and the inner loop steps over the ic blocks
    row_loop: int = 0

    def text(self) -> str:
        return (f"th={self.th},tw={self.tw},toc={self.toc},tic={self.tic},vthreads={self.vthreads},order={self.order}"
                + (f",tky={self.tky}" if self.tky else "") + (f",h_threads={self.h_threads}" if self.h_threads else "")
                + (f",row_loop={self.row_loop}" if self.row_loop else ""))

    @classmethod
    def parse(cls, text: str, layer: str = "schedule") -> Schedule:
        """``th=7,tw=14,toc=2,tic=4[,vthreads=2][,order=spatial][,tky=1][,h_threads=1][,row_loop=1]``
        -> Schedule."""
        values: dict = {}
        for part in filter(None, re.split(r"[,\s]+", text.strip())):
            key, sep, value = part.partition("=")
            if not sep or key not in ("th", "tw", "toc", "tic", "vthreads", "order", "tky", "h_threads",
                                                "row_loop"):
                raise ScheduleError(layer, "schedule", f"bad item {part!r}; expected th=, tw=, toc=, tic=, "
                                    "vthreads=, order=, tky=, h_threads=, row_loop= (e.g. th=7,tw=14,toc=2,tic=4)")
            if key == "order":
                values[key] = value
            else:
                try:
                    values[key] = int(value)
                except ValueError:
                    raise ScheduleError(layer, f"schedule.{key}", f"{value!r} is not an integer") from None
        missing = [k for k in ("th", "tw", "toc", "tic") if k not in values]
        if missing:
            raise ScheduleError(layer, f"schedule.{missing[0]}", "missing (a schedule names th, tw, toc and tic)")
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class TileShape:
    """Geometry of one output-tile shape: rows, columns and what follows from them."""

    th: int
    tw: int
    in_rows: int    # input rows in SRAM
    in_cols: int    # input columns in SRAM
    group: int      # accumulators per output-channel block (pixels, at least HAZARD_DISTINCT)

    @property
    def pixels(self) -> int:
        return self.th * self.tw


@functools.lru_cache(maxsize=16)
def depths(config: Config) -> dict[str, int]:
    """Elements of each on-chip buffer (cached: the search builds thousands of plans)."""
    return {mem: config.depth(mem) for mem in BUFFERS}


@functools.lru_cache(maxsize=4096)
def tile_shape(stride: int, k: int, row_step: int, tky: int, th: int, tw: int) -> TileShape:
    """The :class:`TileShape` of a ``th`` x ``tw`` output tile (cached: shapes repeat over plans)."""
    rows = th if row_step > 1 else (th - 1) * stride + tky
    cols = (tw - 1) * stride + k
    return TileShape(th, tw, rows, cols, max(th * tw, HAZARD_DISTINCT))


def tile_sizes_of(tile: int, total: int) -> tuple[int, ...]:
    """The tile and, if ``tile`` does not divide ``total``, the remainder at the edge."""
    return (tile, total % tile) if total % tile else (tile,)


def shape_set(layer: Conv2D, row_step: int, tky: int, th: int, tw: int) -> dict:
    """(th, tw) -> TileShape of every tile shape of a ``th`` x ``tw`` tiling (full tile first)."""
    return {(h, w): tile_shape(layer.stride, layer.k, row_step, tky, h, w)
            for h in tile_sizes_of(th, layer.oh) for w in tile_sizes_of(tw, layer.ow)}


def shape_summary(shapes: dict, kstep: int, vectors: int) -> tuple[int, int, int, TileShape]:
    """What the buffer checks read of a tiling's shapes: (largest input tile in elements, largest
    accumulator group, uops per thread, the first shape with the largest group)."""
    values = shapes.values()
    big = max(values, key=lambda sh: sh.group)
    return (max(sh.in_rows * sh.in_cols for sh in values), big.group,
            sum(kstep * sh.group + vectors * sh.pixels for sh in values), big)


@functools.lru_cache(maxsize=16)
def gemm_field_highs(config: Config) -> dict[str, tuple[int, int]]:
    """GEMM field -> (largest value, width) for the loop factors :func:`misfit` checks."""
    fields = isa.layout("GEMM", config)
    return {f: (fields[f].high, fields[f].width)
            for f in ("dst_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in")}


def misfit(config: Config, threads: int, parts: tuple[int, int, int, int], big: TileShape, tic: int,
           kstep: int) -> tuple | None:
    """The first reason a tiling does not fit, or None: ("buffer", mem, part) when ``threads``
    slices of ``part`` elements (parts: inp, wgt, acc, uop per thread) exceed the buffer, then
    ("field", field, value, high, width) when a GEMM loop factor exceeds its instruction field
    (a wide reduction, e.g. a dense layer with 2048 inputs, needs several input-channel tiles)."""
    depth = depths(config)
    for mem, part in zip(BUFFERS, parts):
        if part * threads > depth[mem]:
            return ("buffer", mem, part)
    highs = gemm_field_highs(config)
    for field, value in (("dst_factor_out", big.group), ("src_factor_in", big.in_rows * big.in_cols),
                         ("wgt_factor_out", tic * kstep), ("wgt_factor_in", kstep)):
        if value > highs[field][0]:
            return ("field", field, value, *highs[field])
    return None


class Plan:
    """A schedule checked against a layer and a configuration, with derived sizes."""

    def __init__(self, layer: Conv2D, config: Config, schedule: Schedule):
        self.layer, self.config, self.schedule = layer, config, schedule
        s, name = schedule, layer.name
        for key in ("th", "tw", "toc", "tic", "vthreads"):
            value = getattr(s, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ScheduleError(name, f"schedule.{key}", f"must be a positive integer, got {value!r}")
        if s.order not in ORDERS + (VTA_ORDER,):
            raise ScheduleError(name, "schedule.order", f"{s.order!r} is not one of {', '.join(ORDERS + (VTA_ORDER,))}")
        if isinstance(s.h_threads, bool) or not isinstance(s.h_threads, int) or s.h_threads < 0:
            raise ScheduleError(name, "schedule.h_threads", f"must be a non-negative integer, got {s.h_threads!r}")
        if s.row_loop not in (0, 1):
            raise ScheduleError(name, "schedule.row_loop", f"must be 0 or 1, got {s.row_loop!r}")
        if s.tky not in (0, 1, layer.k):
            raise ScheduleError(name, "schedule.tky", f"{s.tky!r} must be 1 or the kernel size {layer.k} "
                                "(or 0 for the whole kernel)")
        self.tky = s.tky or layer.k
        self.nb = blocks(layer.n, config.batch)
        self.icb = blocks(layer.ic, config.block_in)
        self.ocb = blocks(layer.oc, config.block_out)
        self.oh, self.ow = layer.oh, layer.ow
        for key, value, limit in (("th", s.th, self.oh), ("tw", s.tw, self.ow), ("toc", s.toc, self.ocb),
                                  ("tic", s.tic, self.icb)):
            if value > limit:
                raise ScheduleError(name, f"schedule.{key}", f"{value} exceeds the layer's {limit} "
                                    f"({'output rows' if key == 'th' else 'output columns' if key == 'tw' else 'channel blocks'})")
        # A 1x1 kernel without padding needs only every stride-th input row: load just those.
        self.row_step = layer.stride if layer.k == 1 and layer.pad == 0 else 1
        self.shapes = shape_set(layer, self.row_step, self.tky, s.th, s.tw)
        self.kk = layer.k * layer.k
        self.kstep = self.tky * layer.k  # kernel offsets per reduction step
        T = s.vthreads
        self.vectors = 2 if layer.per_channel_shift else 1  # bias (and shift) vectors per oc block
        max_in, max_group, self.uop_per_thread, big = shape_summary(self.shapes, self.kstep, self.vectors)
        if s.row_loop:
            self._check_row_loop()
            self.uop_per_thread = sum((s.tic * self.kstep + self.vectors) * sh.tw for sh in self.shapes.values())
        self.inp_part = s.tic * max_in
        self.wgt_part = s.toc * s.tic * self.kstep
        self.acc_part = s.toc * self.vectors + s.toc * max_group
        bad = misfit(config, T, (self.inp_part, self.wgt_part, self.acc_part, self.uop_per_thread), big, s.tic,
                     self.kstep)
        if bad and bad[0] == "buffer":
            _, mem, part = bad
            raise ScheduleError(name, "schedule", f"{s.text()} needs {part * T} {mem} elements "
                                f"({T} thread(s) x {part}) but the {mem} buffer of {config.name} holds "
                                f"{depths(config)[mem]}; use smaller tiles or fewer threads")
        if bad:
            _, field, value, high, width = bad
            raise ScheduleError(name, "schedule", f"{s.text()}: GEMM {field} {value} does not fit its "
                                f"{width}-bit field (at most {high}); use smaller tiles")
        self.n_tiles_h = blocks(self.oh, s.th)
        self.n_tiles_w = blocks(self.ow, s.tw)
        self.n_tiles_oc = blocks(self.ocb, s.toc)
        self.n_tiles_ic = blocks(self.icb, s.tic)
        self.n_tiles_ky = layer.k // self.tky
        if s.h_threads:
            self._check_vta_threads()

    def _check_row_loop(self) -> None:
        """A row table needs whole ic tiles (it holds tic blocks) and rows of at least
        HAZARD_DISTINCT pixels (its sweep cycles through a row's accumulators)."""
        s, name = self.schedule, self.layer.name
        if self.icb % s.tic:
            raise ScheduleError(name, "schedule.row_loop", f"tic={s.tic} must divide the {self.icb} input-channel "
                                "blocks")
        narrow = min(sh.tw for sh in self.shapes.values())
        if narrow < HAZARD_DISTINCT:
            raise ScheduleError(name, "schedule.row_loop", f"a tile row of {narrow} pixels is below the "
                                f"{HAZARD_DISTINCT} distinct accumulators the GEMM hazard rule needs")

    def _check_vta_threads(self) -> None:
        """VTA's threads split the tile rows and the oc tiles evenly (the factors divide them)."""
        s, name = self.schedule, self.layer.name
        h = s.h_threads
        if s.vthreads % h:
            raise ScheduleError(name, "schedule.h_threads", f"{h} does not divide vthreads={s.vthreads}")
        if self.n_tiles_h % h:
            raise ScheduleError(name, "schedule.h_threads", f"{h} row threads do not divide the "
                                f"{self.n_tiles_h} tile rows")
        if self.n_tiles_oc % (s.vthreads // h):
            raise ScheduleError(name, "schedule.h_threads", f"{s.vthreads // h} oc threads (vthreads/h_threads) "
                                f"do not divide the {self.n_tiles_oc} oc tiles")

    def items(self) -> list[tuple[int, int, int, int]]:
        """The outer loop's iterations (n block, tile row, tile column, oc tile) in order."""
        nb, th, tw, to = range(self.nb), range(self.n_tiles_h), range(self.n_tiles_w), range(self.n_tiles_oc)
        if self.schedule.order == "spatial":
            return [(n, y, x, o) for n in nb for y in th for x in tw for o in to]
        if self.schedule.order == VTA_ORDER:
            return [(n, y, x, o) for n in nb for y in th for o in to for x in tw]
        return [(n, y, x, o) for n in nb for o in to for y in th for x in tw]

    def thread_items(self) -> list[list[tuple[int, int, int, int]]]:
        """Each virtual thread's items, in :meth:`items` order: round robin (``h_threads`` 0), or
        VTA's split: thread ``(o mod c) * h + (y mod h)`` (h = h_threads, c = vthreads / h)."""
        T, h = self.schedule.vthreads, self.schedule.h_threads
        if not h:
            return split(self.items(), T)
        c = T // h
        threads: list[list] = [[] for _ in range(T)]
        for item in self.items():
            threads[(item[3] % c) * h + item[1] % h].append(item)
        return threads
