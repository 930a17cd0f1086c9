"""The arithmetic of the simulator: SRAM state and the effect of each instruction, with numpy on
whole loop nests (never a Python loop per uop on the fast paths).

The results equal the reference semantics (``vdla_hw.semantics``) exactly:

* GEMM: the loop nest is planned once (per loop fields and uop contents) into as few exact
  matrix products as its structure allows (``vdla_sim.gemm``: one dense product, one im2col
  product per group of accumulators sharing their weights, or per-uop products), summed modulo
  2**32 per accumulator; wrap-around addition commutes, so the order of a uop loop does not
  matter.
* Loops longer than a chunk (``vdla_hw.limits.LOOP_CHUNK_BYTES`` of products) run piece by
  piece (``program.loop_chunks``), so memory does not grow with trip counts; the plan cache
  is bounded the same way.
* ALU: the loop is run in "waves" -- the largest chunks of consecutive uops (whole instruction,
  one outer iteration, one inner iteration, one uop) in which no accumulator is written twice
  and none is read after an earlier uop of the chunk wrote it -- so each wave equals
  sequential execution.
"""

from __future__ import annotations

import numpy as np

from vdla_hw import alu, isa, program, timing
from vdla_hw.config import Config
from vdla_hw.limits import LOOP_CHUNK_BYTES
from vdla_hw.semantics import Counters, Srams
from vdla_sim.errors import HazardError
from vdla_sim.gemm import GemmPlan, as_slice
from vdla_sim.races import RaceTracker

_NONE = np.iinfo(np.int64).max
PLAN_CACHE_CHUNKS = 8


def loop_chunk(config: Config) -> int:
    """Uops per loop piece: int64 products of BATCH x BLOCK_OUT (or gathers of BATCH x BLOCK_IN) per uop."""
    return max(1, LOOP_CHUNK_BYTES // (8 * config.batch * max(config.block_in, config.block_out)))


class PlanCache:
    """GEMM plans and ALU waves keyed by their loop fields and the contents of their uop rows
    (pure functions of those and the configuration, so one cache serves every run of a program:
    ``prepared.Prepared.plans``), holding plans of at most ``limit`` uops (cleared when full)."""

    def __init__(self, config: Config):
        self.plans: dict = {}
        self.uops = 0
        self.limit = PLAN_CACHE_CHUNKS * loop_chunk(config)

    def get(self, key: tuple):
        return self.plans.get(key)

    def keep(self, key: tuple, n: int, plan):
        """Cache ``plan`` of ``n`` uops under ``key``; returns it."""
        if len(self.plans) > 512 or self.uops + n > self.limit:
            self.plans.clear()
            self.uops = 0
        self.plans[key] = plan
        self.uops += n
        return plan


def dram_rows(view: np.ndarray, insn: isa.Insn) -> np.ndarray:
    """The DRAM rows of a LOAD/STORE as a (y_size, x_size, *element) view of ``view``, the image
    as elements of its memory type."""
    base, y, x, stride = insn.dram_base, insn.y_size, insn.x_size, insn.x_stride
    if y == 1 or stride == x:
        return view[base:base + y * x].reshape(y, x, *view.shape[1:])
    if base + y * stride <= len(view):
        return view[base:base + y * stride].reshape(y, stride, *view.shape[1:])[:, :x]
    view = view[base:]  # the last row ends within its stride of the image's end
    return np.lib.stride_tricks.as_strided(
        view, shape=(y, x, *view.shape[1:]), strides=(stride * view.strides[0], *view.strides))


class Datapath:
    """SRAMs, the DRAM image and counters; :meth:`execute` applies one instruction."""

    def __init__(self, config: Config, dram: np.ndarray, races: RaceTracker | None, runs,
                 plans: PlanCache | None = None, srams: Srams | None = None, allow_vta_hazards: bool = False):
        """``runs``: per instruction, ``prepared.load_run`` of it (the LOADs copied as one run);
        ``plans``: a cache of loop plans to share (default: a new one); ``srams``: the SRAMs at
        START, updated in place (default zeros: vdla_hw/sram_state.py); ``allow_vta_hazards``:
        run a GEMM that repeats an accumulator within one sweep of its uop list (VTA's pipeline
        would compute it differently; ours computes the reference semantics) instead of
        refusing it (HazardError)."""
        self.allow_vta_hazards = allow_vta_hazards
        self.config = config
        self.runs = runs
        self.dram = dram
        self.srams = Srams(config) if srams is None else srams
        self.counters = Counters()
        self.races = races
        self.views, self.elem_bytes = {}, {}
        # decoded (dst, src, wgt) of every uop SRAM word, kept in step with srams.uop by LOAD uop
        self.uop_table = (np.zeros((config.depth("uop"), 3), dtype=np.int64) if srams is None
                          else isa.decode_uops(self.srams.uop, config))
        self.plans = PlanCache(config) if plans is None else plans
        self.chunk = loop_chunk(config)
        for mem in ("uop", "wgt", "inp", "acc", "out"):
            size = self.elem_bytes[mem] = config.elem_bytes(mem)
            usable = dram[: dram.size // size * size]
            self.views[mem] = usable.view(config.elem_dtype(mem)).reshape(-1, *config.elem_shape(mem))
        self.mark = np.full(config.depth("acc"), _NONE, dtype=np.int64)
        self.sram = {mem: self.srams.of(mem) for mem in isa.MEM_TYPES}
        self.flat = {}  # the bytes of each SRAM a run may target (C-contiguous: a view)
        for mem in ("inp", "wgt", "acc"):
            assert self.sram[mem].dtype == self.views[mem].dtype, mem
            self.flat[mem] = self.sram[mem].reshape(-1).view(np.uint8)

    def execute(self, insn: isa.Insn, index: int) -> None:
        self.counters.insns[insn.kind] += 1
        if insn.kind == "LOAD":
            self.load(insn, index)
        elif insn.kind == "STORE":
            self.store(insn, index)
        elif insn.kind == "GEMM":
            self.gemm(insn, index)
        elif insn.kind == "ALU":
            self.alu(insn, index)

    # --- LOAD / STORE -----------------------------------------------------------------------
    def _rows(self, mem: str, insn: isa.Insn) -> np.ndarray:
        return dram_rows(self.views[mem], insn)

    def load(self, insn: isa.Insn, index: int) -> None:
        run = self.runs[index]
        if run is not None:  # one contiguous run without padding (the common case): a byte copy
            mem, base, n, lo, first = run
            if self.races is not None and mem != "acc":
                self.races.write_run(mem, base, base + n, index)
            nbytes = n * self.elem_bytes[mem]
            # the bytes of elements first.. of the image (self.views) into those of base.. (same dtype)
            self.flat[mem][lo:lo + nbytes] = self.dram[first:first + nbytes]
            self.counters.load_bytes[mem] += nbytes
            return
        y, x = insn.y_size, insn.x_size
        rows = insn.y_pad_top + y + insn.y_pad_bottom   # program.footprint
        if not (x and rows):  # a flag carrier writes nothing
            return
        mem = insn.mem
        base = insn.sram_base
        cols = insn.x_pad_left + x + insn.x_pad_right
        n = rows * cols
        if self.races is not None and mem in ("inp", "wgt"):
            self.races.write_elems(mem, slice(base, base + n), index)
        target = self.sram[mem][base:base + n]
        if not y:  # padding rows only (no DRAM read)
            target[...] = 0
            return
        data = self._rows(mem, insn)
        if n != y * x:
            tile = target.reshape(rows, cols, *data.shape[2:])
            tile[...] = 0
            tile[insn.y_pad_top:insn.y_pad_top + y, insn.x_pad_left:insn.x_pad_left + x] = data
        else:
            target.reshape(y, x, *data.shape[2:])[...] = data
        if mem == "uop":
            self.uop_table[base:base + n] = isa.decode_uops(target, self.config)
        self.counters.load_bytes[mem] += y * x * self.elem_bytes[mem]

    def store(self, insn: isa.Insn, index: int) -> None:
        y, x = insn.y_size, insn.x_size
        if not (x and y):
            return
        n = y * x
        base = insn.sram_base
        if self.races is not None:
            self.races.read_elems("out", slice(base, base + n), index)
        data = self.srams.out[base:base + n]
        self._rows("out", insn)[...] = data.reshape(y, x, *data.shape[1:])
        self.counters.store_bytes += n * self.elem_bytes["out"]

    # --- GEMM / ALU -------------------------------------------------------------------------
    def _uops(self, insn: isa.Insn, index: int) -> np.ndarray:
        program.check_uop_range(insn, self.config, index)
        uops = self.uop_table[insn.uop_bgn:insn.uop_end]
        program.check_loop_ranges(insn, uops, self.config, index)
        return uops

    def _write_acc(self, dst: np.ndarray, values: np.ndarray, index: int) -> None:
        """acc[dst] = values (dst unique) and mirror the low bytes to OUT."""
        self.srams.acc[dst] = values
        self.srams.out[dst] = values.astype(np.int8)

    def gemm(self, insn: isa.Insn, index: int) -> None:
        n = timing.uop_count(insn)
        self.counters.gemm_uops += n
        if n > self.chunk:
            uops = self._uops(insn, index)
            for piece, piece_uops, _ in program.loop_chunks(insn, uops, self.chunk):  # whole sweeps
                self._gemm_apply(insn, GemmPlan(piece, piece_uops, self.config), index)
            return
        plan = self._plan(insn, index)
        if n:
            self._gemm_apply(insn, plan, index)

    def _gemm_apply(self, insn: isa.Insn, plan: GemmPlan, index: int) -> None:
        if self.races is not None:
            if not insn.reset:
                self.races.read_elems("inp", plan.src, index)
                self.races.read_elems("wgt", plan.wgt, index)
            self.races.write_elems("out", plan.dst, index)
        if insn.reset:
            self.srams.acc[plan.dst] = 0
            self.srams.out[plan.dst] = 0
            return
        if plan.hazard is not None and not self.allow_vta_hazards:
            raise HazardError(index, "GEMM", "uop", plan.hazard)
        # int32 + int32 wraps modulo 2**32: wrap32 of the sum (vdla_sim/gemm.py)
        where = plan.where
        self._write_acc(where, self.srams.acc[where] + plan.products(self.srams.inp, self.srams.wgt), index)

    def _plan(self, insn: isa.Insn, index: int) -> GemmPlan:
        """The GEMM's index arrays and matrix-product plan, cached per loop and uop contents."""
        key = ("GEMM", self.uop_table[insn.uop_bgn:insn.uop_end].tobytes(), insn.reset, insn.uop_bgn, insn.uop_end, insn.iter_out, insn.iter_in,
               insn.dst_factor_out, insn.dst_factor_in, insn.src_factor_out, insn.src_factor_in,
               insn.wgt_factor_out, insn.wgt_factor_in)
        plan = self.plans.get(key)
        if plan is None:
            uops = self._uops(insn, index)  # range errors are raised here (they repeat with the key)
            plan = self.plans.keep(key, timing.uop_count(insn), GemmPlan(insn, uops, self.config))
        return plan

    def alu(self, insn: isa.Insn, index: int) -> None:
        n = timing.uop_count(insn)
        if n > self.chunk:
            uops = self._uops(insn, index)
            self.counters.alu_uops += n
            for piece, piece_uops, _ in program.loop_chunks(insn, uops, self.chunk):  # in execution order
                self._alu_apply(piece, self._alu_waves(piece, piece_uops), index)
            return
        key = ("ALU", self.uop_table[insn.uop_bgn:insn.uop_end].tobytes(), insn.uop_bgn, insn.uop_end, insn.iter_out, insn.iter_in,
               insn.dst_factor_out, insn.dst_factor_in, insn.src_factor_out, insn.src_factor_in, insn.use_imm)
        plan = self.plans.get(key)
        if plan is None:
            uops = self._uops(insn, index)  # range errors are raised here (they repeat with the key)
            plan = self.plans.keep(key, n, self._alu_waves(insn, uops) if n else None)
        self.counters.alu_uops += n
        if n:
            self._alu_apply(insn, plan, index)

    def _alu_waves(self, insn: isa.Insn, uops: np.ndarray) -> tuple:
        """(every dst in loop order, [(dst, src or None) per wave]) of an ALU loop (or piece), each
        index an equal slice when it is an ascending range; src is None with an immediate."""
        n = timing.uop_count(insn)
        dst, src, _ = program.loop_indices(insn, uops)
        size = 1
        for chunk in sorted({n, insn.iter_in * len(uops), len(uops)}, reverse=True):
            if chunk > 1 and all(self._wave_ok(dst[k:k + chunk], None if insn.use_imm else src[k:k + chunk])
                                 for k in range(0, n, chunk)):
                size = chunk
                break
        waves = [(as_slice(dst[k:k + size]), None if insn.use_imm else as_slice(src[k:k + size]))
                 for k in range(0, n, size)]
        return as_slice(dst), waves

    def _alu_apply(self, insn: isa.Insn, plan: tuple, index: int) -> None:
        dst, waves = plan
        if self.races is not None:
            self.races.write_elems("out", dst, index)
        op = alu.BY_CODE[insn.alu_opcode].name
        acc = self.srams.acc
        for d, s in waves:
            target = acc[d]
            operand = np.full_like(target, insn.imm) if s is None else acc[s]
            self._write_acc(d, alu.apply(op, target, operand), index)

    def _wave_ok(self, d: np.ndarray, s: np.ndarray | None) -> bool:
        """Vectorising this chunk equals running it in order: no accumulator written twice, and
        no source read after an earlier uop of the chunk wrote it."""
        pos = np.arange(d.size, dtype=np.int64)
        self.mark[d] = pos
        ok = bool((self.mark[d] == pos).all())
        if ok and s is not None:
            ok = bool((self.mark[s] >= pos).all())  # _NONE (not written here) passes
        self.mark[d] = _NONE
        return ok


class Tally:
    """The timing-only stand-in for :class:`Datapath`: the same counters, no SRAMs, no values.

    Timing never depends on values (vdla_hw/timing.py: costs come from the fields and DRAM
    addresses), so a run with a Tally has the cycles and byte counts of a data run; what it
    cannot check are the rules that read memory contents: uop indices out of their SRAM,
    accumulator hazards (uops come from DRAM) and races (their elements come from the uops)."""

    def __init__(self, config: Config):
        self.counters = Counters()
        self.elem_bytes = {mem: config.elem_bytes(mem) for mem in isa.MEM_TYPES}

    def execute(self, insn: isa.Insn, index: int) -> None:
        counters, kind = self.counters, insn.kind
        counters.insns[kind] += 1
        if kind == "LOAD":
            counters.load_bytes[insn.mem] += insn.y_size * insn.x_size * self.elem_bytes[insn.mem]
        elif kind == "STORE":
            counters.store_bytes += insn.y_size * insn.x_size * self.elem_bytes["out"]
        elif kind == "GEMM":
            counters.gemm_uops += timing.uop_count(insn)
        elif kind == "ALU":
            counters.alu_uops += timing.uop_count(insn)

