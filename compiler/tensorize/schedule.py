"""Schedules: how a convolution is cut into tiles, and the buffer plan that follows from it.

A :class:`Schedule` names the tile sizes (output rows ``th`` and columns ``tw``, output-channel
blocks ``toc`` and input-channel blocks ``tic`` per tile), the number of virtual threads and
the order of the outer tile loops. :class:`Plan` checks it against a layer and a configuration
and derives everything the code generator needs: tile shapes (full tiles and the remainders at
the edges), each thread's slice of the INP/WGT/ACC buffers and the micro-op tables.

Loop nest of a compiled convolution (``order="spatial"``; ``"oc"`` swaps the two middle loops)::

    for n-block, tile row, tile column, oc tile:      <- split over the virtual threads
        for ic tile, kernel-row tile (tky rows of the kernel; tky = K unless split):
                       load inp (+pad), load wgt, GEMM (reset on the first)
        ALU add bias, shr (by an immediate or the shift vectors), max lo, min hi; store

Per thread, ACC holds ``toc`` bias vectors (then ``toc`` shift vectors for a per-channel shift)
then ``toc`` groups of ``G`` accumulators, one per
output pixel of the tile (``G = max(pixels, 3)``: the GEMM hazard rule needs three distinct
accumulators in rotation, spare ones are scratch).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re

from compiler.layers import Conv2D, LayerError
from compiler.layout import blocks
from vdla_hw import isa, timing
from vdla_hw.config import Config

ORDERS = ("spatial", "oc")
BUFFERS = ("inp", "wgt", "acc", "uop")
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

    def text(self) -> str:
        return (f"th={self.th},tw={self.tw},toc={self.toc},tic={self.tic},vthreads={self.vthreads},order={self.order}"
                + (f",tky={self.tky}" if self.tky else ""))

    @classmethod
    def parse(cls, text: str, layer: str = "schedule") -> Schedule:
        """``th=7,tw=14,toc=2,tic=4[,vthreads=2][,order=spatial]`` -> Schedule."""
        values: dict = {}
        for part in filter(None, re.split(r"[,\s]+", text.strip())):
            key, sep, value = part.partition("=")
            if not sep or key not in ("th", "tw", "toc", "tic", "vthreads", "order", "tky"):
                raise ScheduleError(layer, "schedule", f"bad item {part!r}; expected th=, tw=, toc=, tic=, "
                                    "vthreads=, order=, tky= (e.g. th=7,tw=14,toc=2,tic=4)")
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


class Plan:
    """A schedule checked against a layer and a configuration, with derived sizes."""

    def __init__(self, layer: Conv2D, config: Config, schedule: Schedule):
        self.layer, self.config, self.schedule = layer, config, schedule
        s, name = schedule, layer.name
        for key in ("th", "tw", "toc", "tic", "vthreads"):
            value = getattr(s, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ScheduleError(name, f"schedule.{key}", f"must be a positive integer, got {value!r}")
        if s.order not in ORDERS:
            raise ScheduleError(name, "schedule.order", f"{s.order!r} is not one of {', '.join(ORDERS)}")
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
        self.shapes = {(th, tw): self._shape(th, tw)
                       for th, tw in itertools.product(self._sizes(s.th, self.oh), self._sizes(s.tw, self.ow))}
        self.kk = layer.k * layer.k
        self.kstep = self.tky * layer.k  # kernel offsets per reduction step
        T = s.vthreads
        self.inp_part = s.tic * max(sh.in_rows * sh.in_cols for sh in self.shapes.values())
        self.wgt_part = s.toc * s.tic * self.kstep
        self.vectors = 2 if layer.per_channel_shift else 1  # bias (and shift) vectors per oc block
        self.acc_part = s.toc * self.vectors + s.toc * max(sh.group for sh in self.shapes.values())
        self.uop_per_thread = sum(self.kstep * sh.group + self.vectors * sh.pixels for sh in self.shapes.values())
        depth = depths(config)
        for mem, part in (("inp", self.inp_part), ("wgt", self.wgt_part), ("acc", self.acc_part),
                          ("uop", self.uop_per_thread)):
            if part * T > depth[mem]:
                raise ScheduleError(name, "schedule", f"{s.text()} needs {part * T} {mem} elements "
                                    f"({T} thread(s) x {part}) but the {mem} buffer of {config.name} holds "
                                    f"{depth[mem]}; use smaller tiles or fewer threads")
        self._check_fields(name)
        self.n_tiles_h = blocks(self.oh, s.th)
        self.n_tiles_w = blocks(self.ow, s.tw)
        self.n_tiles_oc = blocks(self.ocb, s.toc)
        self.n_tiles_ic = blocks(self.icb, s.tic)
        self.n_tiles_ky = layer.k // self.tky

    def _check_fields(self, name: str) -> None:
        """The loop factors the code generator emits must fit their instruction fields (a wide
        reduction, e.g. a dense layer with 2048 inputs, needs several input-channel tiles)."""
        s = self.schedule
        big = max(self.shapes.values(), key=lambda sh: sh.group)
        fields = isa.layout("GEMM", self.config)
        for field, value in (("dst_factor_out", big.group), ("src_factor_in", big.in_rows * big.in_cols),
                             ("wgt_factor_out", s.tic * self.kstep), ("wgt_factor_in", self.kstep)):
            if value > fields[field].high:
                raise ScheduleError(name, "schedule", f"{s.text()}: GEMM {field} {value} does not fit its "
                                    f"{fields[field].width}-bit field (at most {fields[field].high}); use "
                                    "smaller tiles")

    @staticmethod
    def _sizes(tile: int, total: int) -> list[int]:
        return [tile] + ([total % tile] if total % tile else [])

    def _shape(self, th: int, tw: int) -> TileShape:
        layer = self.layer
        rows = th if self.row_step > 1 else (th - 1) * layer.stride + self.tky
        cols = (tw - 1) * layer.stride + layer.k
        return TileShape(th, tw, rows, cols, max(th * tw, HAZARD_DISTINCT))

    def items(self) -> list[tuple[int, int, int, int]]:
        """The outer loop's iterations (n block, tile row, tile column, oc tile) in order."""
        nb, th, tw, to = range(self.nb), range(self.n_tiles_h), range(self.n_tiles_w), range(self.n_tiles_oc)
        if self.schedule.order == "spatial":
            return [(n, y, x, o) for n in nb for y in th for x in tw for o in to]
        return [(n, y, x, o) for n in nb for o in to for y in th for x in tw]
