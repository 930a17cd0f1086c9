"""The arithmetic of the simulator: SRAM state and the effect of each instruction, with numpy on
whole loop nests (never a Python loop per uop on the fast paths).

The results equal the reference semantics (``vdla_hw.semantics``) exactly:

* GEMM: int8 x int8 products summed in float64 are exact (a dot product of BLOCK_IN terms is
  far below 2**53), converted to int64, summed per accumulator and wrapped to int32 once;
  wrap-around addition commutes, so the order of a uop loop does not matter. The loop nest is
  turned into as few matrix products as its factors allow (:func:`_gemm_products`).
* ALU: the loop is run in "waves" -- the largest chunks of consecutive uops (whole instruction,
  one outer iteration, one inner iteration, one uop) in which no accumulator is written twice
  and none is read after an earlier uop of the chunk wrote it -- so each wave equals
  sequential execution.
"""

from __future__ import annotations

import numpy as np

from vdla_hw import isa, program, timing
from vdla_hw.config import Config
from vdla_hw.semantics import Counters, Srams, alu_op, wrap32
from vdla_sim.errors import HazardError
from vdla_sim.races import RaceTracker

_NONE = np.iinfo(np.int64).max


class Datapath:
    """SRAMs, the DRAM image and counters; :meth:`execute` applies one instruction."""

    def __init__(self, config: Config, dram: np.ndarray, races: RaceTracker | None = None):
        self.config = config
        self.dram = dram
        self.srams = Srams(config)
        self.counters = Counters()
        self.races = races
        self.views = {}
        for mem in ("uop", "wgt", "inp", "acc", "out"):
            size = config.elem_bytes(mem)
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
    def _rows(self, insn: isa.Insn) -> np.ndarray:
        rows = insn.dram_base + np.arange(insn.y_size, dtype=np.int64) * insn.x_stride
        return rows[:, None] + np.arange(insn.x_size, dtype=np.int64)[None, :]

    def load(self, insn: isa.Insn, index: int) -> None:
        if not program.moves_data(insn):
            return
        mem, cfg = insn.mem, self.config
        rows, cols = program.footprint(insn)
        n = rows * cols
        base = insn.sram_base
        if self.races is not None and mem in ("inp", "wgt"):
            self.races.write_elems(mem, slice(base, base + n), index)
        view, target = self.views[mem], self.srams.of(mem)
        if insn.y_size == 1 or insn.x_stride == insn.x_size:
            data = view[insn.dram_base:insn.dram_base + insn.y_size * insn.x_size]
            data = data.reshape(insn.y_size, insn.x_size, *data.shape[1:])
        else:
            data = view[self._rows(insn)]
        if n != insn.y_size * insn.x_size:
            tile = np.zeros((rows, cols, *cfg.elem_shape(mem)), dtype=cfg.elem_dtype(mem))
            tile[insn.y_pad_top:insn.y_pad_top + insn.y_size, insn.x_pad_left:insn.x_pad_left + insn.x_size] = data
            data = tile
        target[base:base + n] = data.reshape(target[base:base + n].shape)
        self.counters.load_bytes[mem] += insn.y_size * insn.x_size * cfg.elem_bytes(mem)

    def store(self, insn: isa.Insn, index: int) -> None:
        if not program.moves_data(insn):
            return
        n = insn.y_size * insn.x_size
        base = insn.sram_base
        if self.races is not None:
            self.races.read_elems("out", slice(base, base + n), index)
        data = self.srams.out[base:base + n]
        view = self.views["out"]
        if insn.y_size == 1 or insn.x_stride == insn.x_size:
            view[insn.dram_base:insn.dram_base + n] = data
        else:
            view[self._rows(insn)] = data.reshape(insn.y_size, insn.x_size, *data.shape[1:])
        self.counters.store_bytes += n * self.config.elem_bytes("out")

    # --- GEMM / ALU -------------------------------------------------------------------------
    def _uops(self, insn: isa.Insn, index: int) -> np.ndarray:
        program.check_uop_range(insn, self.config, index)
        uops = isa.decode_uops(self.srams.uop[insn.uop_bgn:insn.uop_end], self.config)
        program.check_loop_ranges(insn, uops, self.config, index)
        return uops

    def _write_acc(self, dst: np.ndarray, values: np.ndarray, index: int) -> None:
        """acc[dst] = values (dst unique) and mirror the low bytes to OUT."""
        acc = self.srams.acc
        acc[dst] = values
        self.srams.out[dst] = acc[dst].astype(np.int8)

    def _unique(self, dst: np.ndarray) -> bool:
        """True when no index repeats in ``dst`` (leaves the scratch array clean)."""
        pos = np.arange(dst.size, dtype=np.int64)
        self.mark[dst] = pos
        ok = bool((self.mark[dst] == pos).all())
        self.mark[dst] = _NONE
        return ok

    def gemm(self, insn: isa.Insn, index: int) -> None:
        uops = self._uops(insn, index)
        n = timing.uop_count(insn)
        self.counters.gemm_uops += n
        if n == 0:
            return
        dst, src, wgt = program.loop_indices(insn, uops)
        if self.races is not None:
            if not insn.reset:
                self.races.read_elems("inp", src, index)
                self.races.read_elems("wgt", wgt, index)
            self.races.write_elems("out", dst, index)
        if insn.reset:
            self.srams.acc[dst] = 0
            self.srams.out[dst] = 0
            return
        bad = timing.gemm_hazard(dst)
        if bad >= 0:
            prev = bad - 1 if dst[bad - 1] == dst[bad] else bad - 2
            raise HazardError(index, "GEMM", "uop", f"uop {bad} of the loop writes acc[{dst[bad]}], which uop {prev} "
                              f"also writes {bad - prev} uop(s) earlier; the GEMM pipeline needs "
                              f"{timing.GEMM_HAZARD_DISTANCE} other accumulators in between")
        out_dst, products = _gemm_products(insn, uops, self.srams.inp, self.srams.wgt)
        if not self._unique(out_dst):
            order = np.argsort(out_dst, kind="stable")
            sd = out_dst[order]
            starts = np.flatnonzero(np.r_[True, sd[1:] != sd[:-1]])
            products = np.add.reduceat(products[order], starts, axis=0)
            out_dst = sd[starts]
        acc = self.srams.acc
        self._write_acc(out_dst, wrap32(acc[out_dst].astype(np.int64) + products), index)

    def alu(self, insn: isa.Insn, index: int) -> None:
        uops = self._uops(insn, index)
        n = timing.uop_count(insn)
        self.counters.alu_uops += n
        if n == 0:
            return
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


def _gemm_products(insn: isa.Insn, uops: np.ndarray, inp: np.ndarray, wgt: np.ndarray):
    """(dst, products): int64 products (n, BATCH, BLOCK_OUT) to add to acc[dst] (dst may repeat).

    Loop axes are a = outer (i) and b = inner (j), each with a count and (dst, src, wgt)
    factors. Three plans, the first that applies:

    * dense: one axis r is a pure reduction (its dst factor is 0) and the weights do not move
      along the other axis p, and every uop reads the same src: one matrix product
      (Np*BATCH x Nr*BLOCK_IN) @ (Nr*BLOCK_IN x U*BLOCK_OUT);
    * shared weight: the weights do not move along axis q: a batch of products, one per
      (other axis, uop), each (Nq*BATCH x BLOCK_IN) @ (BLOCK_IN x BLOCK_OUT);
    * per uop: a batch of vector-matrix products.
    """
    d_u, s_u, w_u = (uops[:, k].astype(np.int64) for k in range(3))
    nu = len(uops)
    axes = {"a": (insn.iter_out, insn.dst_factor_out, insn.src_factor_out, insn.wgt_factor_out),
            "b": (insn.iter_in, insn.dst_factor_in, insn.src_factor_in, insn.wgt_factor_in)}
    batch, bi = inp.shape[1], inp.shape[2]
    bo = wgt.shape[1]
    same_src = bool((s_u == s_u[0]).all())
    for r, p in (("a", "b"), ("b", "a")):
        nr, dr, sr, wr = axes[r]
        np_, dp, sp, wp = axes[p]
        if same_src and (dr == 0 or nr == 1) and (wp == 0 or np_ == 1):
            kr, kp = np.arange(nr, dtype=np.int64), np.arange(np_, dtype=np.int64)
            x = inp[s_u[0] + kp[:, None] * sp + kr[None, :] * sr]          # (Np, Nr, B, BI)
            x = x.transpose(0, 2, 1, 3).reshape(np_ * batch, nr * bi).astype(np.float64)
            w = wgt[w_u[None, :] + kr[:, None] * wr]                      # (Nr, U, BO, BI)
            w = w.transpose(0, 3, 1, 2).reshape(nr * bi, nu * bo).astype(np.float64)
            prod = (x @ w).reshape(np_, batch, nu, bo).transpose(0, 2, 1, 3).reshape(-1, batch, bo)
            dst = (d_u[None, :] + kp[:, None] * dp).reshape(-1)
            return dst, prod.astype(np.int64)
    for q, o in (("b", "a"), ("a", "b")):
        nq, dq, sq, wq = axes[q]
        no, do, so, wo = axes[o]
        if wq == 0 or nq == 1:
            kq, ko = np.arange(nq, dtype=np.int64), np.arange(no, dtype=np.int64)
            grid = ko[:, None, None], kq[None, None, :]
            x = inp[s_u[None, :, None] + grid[0] * so + grid[1] * sq]       # (No, U, Nq, B, BI)
            x = x.reshape(no * nu, nq * batch, bi).astype(np.float64)
            w = wgt[w_u[None, :] + ko[:, None] * wo].reshape(no * nu, bo, bi).astype(np.float64)
            prod = (x @ w.transpose(0, 2, 1)).reshape(-1, batch, bo)
            dst = (d_u[None, :, None] + grid[0] * do + grid[1] * dq).reshape(-1)
            return dst, prod.astype(np.int64)
    dst, src, wi = program.loop_indices(insn, uops)
    x = inp[src].astype(np.float64)                                       # (E, B, BI)
    w = wgt[wi].astype(np.float64)                                        # (E, BO, BI)
    return dst, (x @ w.transpose(0, 2, 1)).astype(np.int64)
