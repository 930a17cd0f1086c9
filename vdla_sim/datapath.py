"""The arithmetic of the simulator: SRAM state and the effect of each instruction, with numpy on
whole loop nests (never a Python loop per uop on the fast paths).

The results equal the reference semantics (``vdla_hw.semantics``) exactly:

* GEMM: int8 x int8 products summed in float64 are exact (a dot product of BLOCK_IN terms is
  far below 2**53), converted to int64, summed per accumulator and wrapped to int32 once;
  wrap-around addition commutes, so the order of a uop loop does not matter. The loop nest is
  turned into as few matrix products as its factors allow (:func:`_gemm_products`).
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

from vdla_hw import isa, program, timing
from vdla_hw.config import Config
from vdla_hw.limits import LOOP_CHUNK_BYTES
from vdla_hw.semantics import Counters, Srams, alu_op
from vdla_sim.errors import HazardError
from vdla_sim.races import RaceTracker

_NONE = np.iinfo(np.int64).max
PLAN_CACHE_CHUNKS = 8
# OpenBLAS splits a product of more than 64**3 multiply-adds over threads; on a machine shared
# with other jobs that is many times slower than one thread for these small products, so
# products are cut into row blocks below this size.
_BLAS_SERIAL = 1 << 17


def _serial_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w in row blocks small enough for BLAS to run single-threaded."""
    rows = max(1, _BLAS_SERIAL // (x.shape[1] * w.shape[1]))
    if x.shape[0] <= rows:
        return x @ w
    out = np.empty((x.shape[0], w.shape[1]), dtype=np.float64)
    for r in range(0, x.shape[0], rows):
        np.matmul(x[r:r + rows], w, out=out[r:r + rows])
    return out


class Datapath:
    """SRAMs, the DRAM image and counters; :meth:`execute` applies one instruction."""

    def __init__(self, config: Config, dram: np.ndarray, races: RaceTracker | None = None):
        self.config = config
        self.dram = dram
        self.srams = Srams(config)
        self.counters = Counters()
        self.races = races
        self.views, self.elem_bytes = {}, {}
        # decoded (dst, src, wgt) of every uop SRAM word, kept in step with srams.uop by LOAD uop
        self.uop_table = np.zeros((config.depth("uop"), 3), dtype=np.int64)
        self.uop_version = 0
        self.plans: dict = {}
        # uops per loop piece: int64 products of BATCH x BLOCK_OUT (or gathers of BATCH x BLOCK_IN) per uop
        self.chunk = max(1, LOOP_CHUNK_BYTES // (8 * config.batch * max(config.block_in, config.block_out)))
        self.plan_uops = 0  # uops held by the cached plans, at most PLAN_CACHE_CHUNKS chunks
        for mem in ("uop", "wgt", "inp", "acc", "out"):
            size = self.elem_bytes[mem] = config.elem_bytes(mem)
            usable = dram[: dram.size // size * size]
            self.views[mem] = usable.view(config.elem_dtype(mem)).reshape(-1, *config.elem_shape(mem))
        self.mark = np.full(config.depth("acc"), _NONE, dtype=np.int64)

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
        """The DRAM rows of a LOAD/STORE as a (y_size, x_size, *element) view of the image."""
        view = self.views[mem][insn.dram_base:]
        return np.lib.stride_tricks.as_strided(
            view, shape=(insn.y_size, insn.x_size, *view.shape[1:]),
            strides=(insn.x_stride * view.strides[0], *view.strides))

    def load(self, insn: isa.Insn, index: int) -> None:
        if not program.moves_data(insn):
            return
        mem, cfg = insn.mem, self.config
        rows, cols = program.footprint(insn)
        n = rows * cols
        base = insn.sram_base
        if self.races is not None and mem in ("inp", "wgt"):
            self.races.write_elems(mem, slice(base, base + n), index)
        target = self.srams.of(mem)
        data = self._rows(mem, insn)
        if n != insn.y_size * insn.x_size:
            tile = np.zeros((rows, cols, *cfg.elem_shape(mem)), dtype=cfg.elem_dtype(mem))
            tile[insn.y_pad_top:insn.y_pad_top + insn.y_size, insn.x_pad_left:insn.x_pad_left + insn.x_size] = data
            data = tile
        target[base:base + n] = data.reshape(target[base:base + n].shape)
        if mem == "uop":
            self.uop_table[base:base + n] = isa.decode_uops(target[base:base + n], cfg)
            self.uop_version += 1
        self.counters.load_bytes[mem] += insn.y_size * insn.x_size * self.elem_bytes[mem]

    def store(self, insn: isa.Insn, index: int) -> None:
        if not program.moves_data(insn):
            return
        n = insn.y_size * insn.x_size
        base = insn.sram_base
        if self.races is not None:
            self.races.read_elems("out", slice(base, base + n), index)
        data = self.srams.out[base:base + n]
        self._rows("out", insn)[...] = data.reshape(insn.y_size, insn.x_size, *data.shape[1:])
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

    def _unique(self, dst: np.ndarray) -> bool:
        """True when no index repeats in ``dst`` (leaves the scratch array clean)."""
        pos = np.arange(dst.size, dtype=np.int64)
        self.mark[dst] = pos
        ok = bool((self.mark[dst] == pos).all())
        self.mark[dst] = _NONE
        return ok

    def gemm(self, insn: isa.Insn, index: int) -> None:
        n = timing.uop_count(insn)
        self.counters.gemm_uops += n
        if n > self.chunk:
            uops = self._uops(insn, index)
            tail = np.empty(0, dtype=np.int64)
            for piece, piece_uops, first in program.loop_chunks(insn, uops, self.chunk):
                plan = _GemmPlan(piece, piece_uops, self, tail=tail, first=first)
                self._gemm_apply(insn, plan, index)
                tail = plan.tail
            return
        plan = self._plan(insn, index)
        if n:
            self._gemm_apply(insn, plan, index)

    def _gemm_apply(self, insn: isa.Insn, plan: _GemmPlan, index: int) -> None:
        if self.races is not None:
            if not insn.reset:
                self.races.read_elems("inp", plan.src, index)
                self.races.read_elems("wgt", plan.wgt, index)
            self.races.write_elems("out", plan.dst, index)
        if insn.reset:
            self.srams.acc[plan.dst] = 0
            self.srams.out[plan.dst] = 0
            return
        if plan.hazard is not None:
            raise HazardError(index, "GEMM", "uop", plan.hazard)
        products = plan.products(self.srams.inp, self.srams.wgt)
        if plan.order is not None:
            products = np.add.reduceat(products[plan.order], plan.starts, axis=0)
        # int64 -> int32 casting keeps the low 32 bits: the two's complement wrap of wrap32
        self._write_acc(plan.out, (self.srams.acc[plan.out] + products).astype(np.int32), index)

    def _plan(self, insn: isa.Insn, index: int) -> _GemmPlan:
        """The GEMM's index arrays and matrix-product plan, cached per loop and uop contents."""
        key = (self.uop_version, insn.reset, insn.uop_bgn, insn.uop_end, insn.iter_out, insn.iter_in,
               insn.dst_factor_out, insn.dst_factor_in, insn.src_factor_out, insn.src_factor_in,
               insn.wgt_factor_out, insn.wgt_factor_in)
        plan = self.plans.get(key)
        if plan is None:
            uops = self._uops(insn, index)  # range errors are raised here (they repeat with the key)
            n = timing.uop_count(insn)
            if len(self.plans) > 512 or self.plan_uops + n > PLAN_CACHE_CHUNKS * self.chunk:
                self.plans.clear()
                self.plan_uops = 0
            plan = self.plans[key] = _GemmPlan(insn, uops, self)
            self.plan_uops += n
        return plan

    def alu(self, insn: isa.Insn, index: int) -> None:
        uops = self._uops(insn, index)
        n = timing.uop_count(insn)
        self.counters.alu_uops += n
        if n == 0:
            return
        pieces = program.loop_chunks(insn, uops, self.chunk) if n > self.chunk else [(insn, uops, 0)]
        for piece, piece_uops, _ in pieces:  # in execution order: the same as one sequential loop
            self._alu_piece(piece, piece_uops, index)

    def _alu_piece(self, insn: isa.Insn, uops: np.ndarray, index: int) -> None:
        n = timing.uop_count(insn)
        dst, src, _ = program.loop_indices(insn, uops)
        if self.races is not None:
            self.races.write_elems("out", dst, index)
        if insn.reset:
            self.srams.acc[dst] = 0
            self.srams.out[dst] = 0
            return
        op = isa.ALU_OPS[insn.alu_opcode]
        acc = self.srams.acc
        size = 1
        for chunk in sorted({n, insn.iter_in * len(uops), len(uops)}, reverse=True):
            if chunk > 1 and all(self._wave_ok(dst[k:k + chunk], None if insn.use_imm else src[k:k + chunk])
                                 for k in range(0, n, chunk)):
                size = chunk
                break
        for k in range(0, n, size):
            d = dst[k:k + size]
            operand = np.full_like(acc[d], insn.imm) if insn.use_imm else acc[src[k:k + size]]
            self._write_acc(d, alu_op(op, acc[d], operand), index)

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


class _GemmPlan:
    """How to compute one GEMM loop nest with few matrix products (exact int64 results).

    Loop axes are a = outer (i) and b = inner (j), each with a count and (dst, src, wgt)
    factors. The first plan that applies:

    * dense: one axis r is a pure reduction (its dst factor is 0), the weights do not move
      along the other axis p, and every uop reads the same src: one matrix product
      (Np*BATCH x Nr*BLOCK_IN) @ (Nr*BLOCK_IN x U*BLOCK_OUT);
    * shared weight: the weights do not move along axis q: a batch of products, one per
      (other axis, uop), each (Nq*BATCH x BLOCK_IN) @ (BLOCK_IN x BLOCK_OUT);
    * per uop: a batch of vector-matrix products.

    Products are summed in float64 (exact: far below 2**53), then per accumulator in int64.
    """

    def __init__(self, insn: isa.Insn, uops: np.ndarray, dp: Datapath, *, tail: np.ndarray | None = None,
                 first: int = 0):
        """``insn``/``uops``: the loop (or one piece of it, whose first uop is at position
        ``first`` of the whole loop, after the whole loop's last uops ``tail``)."""
        dst, src, wgt = program.loop_indices(insn, uops)
        self.dst, self.src, self.wgt = np.unique(dst), np.unique(src), np.unique(wgt)
        self.hazard = None
        self.tail = dst[-timing.GEMM_HAZARD_DISTANCE:].copy()
        if not insn.reset and dst.size:
            before = np.empty(0, dtype=np.int64) if tail is None else tail
            seq = np.concatenate([before, dst])
            bad = timing.gemm_hazard(seq)
            if bad >= 0:
                prev = bad - 1 if seq[bad - 1] == seq[bad] else bad - 2
                at = first - before.size
                self.hazard = (f"uop {at + bad} of the loop writes acc[{seq[bad]}], which uop {at + prev} also "
                               f"writes {bad - prev} uop(s) earlier; the GEMM pipeline needs "
                               f"{timing.GEMM_HAZARD_DISTANCE} other accumulators in between")
        self.order = self.starts = None
        if insn.reset or not dst.size:
            return
        c = dp.config
        self.batch, self.bi, self.bo = c.batch, c.block_in, c.block_out
        self.nu = len(uops)
        out = self._choose(insn, uops, dst, src, wgt)
        if not dp._unique(out):
            order = np.argsort(out, kind="stable")
            sd = out[order]
            self.order = order
            self.starts = np.flatnonzero(np.r_[True, sd[1:] != sd[:-1]])
            out = sd[self.starts]
        self.out = out

    def _choose(self, insn, uops, dst, src, wgt) -> np.ndarray:
        d_u, s_u, w_u = (uops[:, k].astype(np.int64) for k in range(3))
        axes = {"a": (insn.iter_out, insn.dst_factor_out, insn.src_factor_out, insn.wgt_factor_out),
                "b": (insn.iter_in, insn.dst_factor_in, insn.src_factor_in, insn.wgt_factor_in)}
        same_src = bool((s_u == s_u[0]).all())
        for r, p in (("a", "b"), ("b", "a")):
            nr, dr, sr, wr = axes[r]
            np_, dp_, sp, wp = axes[p]
            if same_src and (dr == 0 or nr == 1) and (wp == 0 or np_ == 1):
                kr, kp = np.arange(nr, dtype=np.int64), np.arange(np_, dtype=np.int64)
                self.kind, self.shape = "dense", (np_, nr)
                self.xi = s_u[0] + kp[:, None] * sp + kr[None, :] * sr      # (Np, Nr)
                self.wi = w_u[None, :] + kr[:, None] * wr                   # (Nr, U)
                return (d_u[None, :] + kp[:, None] * dp_).reshape(-1)
        for q, o in (("b", "a"), ("a", "b")):
            nq, dq, sq, wq = axes[q]
            no, do, so, wo = axes[o]
            if wq == 0 or nq == 1:
                kq, ko = np.arange(nq, dtype=np.int64)[None, None, :], np.arange(no, dtype=np.int64)[:, None, None]
                self.kind, self.shape = "shared", (no, nq)
                self.xi = s_u[None, :, None] + ko * so + kq * sq             # (No, U, Nq)
                self.wi = w_u[None, :] + ko[:, :, 0] * wo                   # (No, U)
                return (d_u[None, :, None] + ko * do + kq * dq).reshape(-1)
        self.kind, self.xi, self.wi = "entry", src, wgt
        return dst

    def products(self, inp: np.ndarray, wgt: np.ndarray) -> np.ndarray:
        """int64 products (n, BATCH, BLOCK_OUT) to add to acc[out] (before the reduction)."""
        b, bi, bo, nu = self.batch, self.bi, self.bo, self.nu
        if self.kind == "dense":
            np_, nr = self.shape
            x = inp[self.xi].transpose(0, 2, 1, 3).reshape(np_ * b, nr * bi).astype(np.float64)
            w = wgt[self.wi].transpose(0, 3, 1, 2).reshape(nr * bi, nu * bo).astype(np.float64)
            prod = _serial_matmul(x, w).reshape(np_, b, nu, bo).transpose(0, 2, 1, 3).reshape(-1, b, bo)
        elif self.kind == "shared":
            no, nq = self.shape
            x = inp[self.xi].reshape(no * nu, nq * b, bi).astype(np.float64)
            w = wgt[self.wi].reshape(no * nu, bo, bi).astype(np.float64)
            prod = (x @ w.transpose(0, 2, 1)).reshape(-1, b, bo)
        else:
            x = inp[self.xi].astype(np.float64)                            # (E, B, BI)
            w = wgt[self.wi].astype(np.float64)                            # (E, BO, BI)
            prod = x @ w.transpose(0, 2, 1)
        return prod.astype(np.int64)
