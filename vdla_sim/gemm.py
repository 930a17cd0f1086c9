"""A GEMM loop nest as a few exact matrix products (the simulator's arithmetic of GEMM).

Semantics (docs/spec.md section 3, ``vdla_hw.semantics``): every non-reset uop of the loop
``for i < iter_out, j < iter_in, u in [uop_bgn, uop_end)`` does
``acc[dst] = wrap32(acc[dst] + inp[src] @ wgt[wgt]^T)`` with int8 operands. Wrap-around addition
is associative and commutative, so the loop equals one update per accumulator with the sum of
all its products, in any order, as long as each product and each partial sum is exact; every
integer sum here is done modulo 2**32 (int32 wraps like wrap32) and every float sum is exact:

* one int8 x int8 product has magnitude at most 128 * 128 = 2**14;
* a float32 dot product of at most ``F32_EXACT_TERMS`` = 2**10 such products is exact: every
  partial sum, in whatever order or blocking the BLAS uses (with or without FMA), is an integer
  of magnitude at most 2**10 * 2**14 = 2**24, and every integer up to 2**24 is a float32;
* longer dot products use float64, exact up to 2**53 / 2**14 = 2**39 terms (a loop has fewer
  than 2**28 uops of at most 64 terms).

A :class:`GemmPlan` is built once per loop (fields and uop contents) and applied to the SRAMs
each time the instruction runs. The first kind that applies:

* ``dense``: one loop axis is a pure reduction (its dst factor is 0), the weights do not move
  along the other axis and every uop reads the same src: one product
  (Np*BATCH x Nr*BLOCK_IN) @ (Nr*BLOCK_IN x U*BLOCK_OUT) (the blocked GEMM of a dense layer);
* ``grouped`` (im2col): the loop's (dst, src, wgt) triples sorted by accumulator; accumulators
  whose sorted weight sequences are equal form a group (a convolution's output pixels share
  their taps), and each group is one product (n*BATCH x K*BLOCK_IN) @ (K*BLOCK_IN x BLOCK_OUT)
  of its gathered inputs with its K stacked weights; every accumulator is in one group, and
  consecutive groups gathering the same inputs (output-channel blocks) share one product;
* ``entry``: too many groups (irregular uops): one vector-matrix product per uop in one batched
  call, summed per accumulator.
"""

from __future__ import annotations

import functools

import numpy as np

from vdla_hw import isa, program, timing

F32_EXACT_TERMS = 1 << 10      # int8 products summed exactly in float32 (see above)
MAX_GROUPS = 64                # more weight patterns than this: per-uop products instead
# OpenBLAS splits a product of more than 64**3 = 2**18 multiply-adds over threads (interface/
# gemm.c: threads only when M*N*K > SMP_THRESHOLD_MIN 65536 x GEMM_MULTITHREAD_THRESHOLD 4); on a
# machine shared with other jobs that is many times slower than one thread for these small
# products, so products are cut into row blocks of at most this size.
BLAS_SERIAL = 1 << 18


def float_type(terms: int):
    """The float type whose dot products of ``terms`` int8 x int8 products are exact."""
    return np.float32 if terms <= F32_EXACT_TERMS else np.float64


def serial_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w in row blocks small enough for BLAS to run single-threaded."""
    rows = max(1, BLAS_SERIAL // (x.shape[1] * w.shape[1]))
    if x.shape[0] <= rows:
        return x @ w
    out = np.empty((x.shape[0], w.shape[1]), dtype=x.dtype)
    for r in range(0, x.shape[0], rows):
        np.matmul(x[r:r + rows], w, out=out[r:r + rows])
    return out


def as_slice(index: np.ndarray) -> slice | np.ndarray:
    """``index`` as the equal slice when it is an ascending range (cheaper to read and write)."""
    if index.size and int(index[-1]) - int(index[0]) == index.size - 1 and \
            (index.size == 1 or bool((np.diff(index) == 1).all())):
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


def distinct(index: np.ndarray) -> np.ndarray:
    """``np.unique(index)`` of SRAM indices (non-negative integers), by a mask over their range
    (no sort) when the range is not much wider than the array."""
    if index.size == 0:
        return np.unique(index)
    lo, hi = int(index.min()), int(index.max())
    if lo < 0 or hi - lo > 8 * index.size + (1 << 16):
        return np.unique(index)
    mask = np.zeros(hi - lo + 1, dtype=bool)
    mask[index - lo] = True
    return np.flatnonzero(mask).astype(np.int64) + lo


@functools.lru_cache(maxsize=64)
def _row_weights(k: int) -> np.ndarray:
    return np.random.default_rng(k).integers(1, 1 << 62, size=k, dtype=np.int64)


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of a 2-D int64 array (patterns in
    lexicographic order, and each row's pattern number), found by hashing each row to one int64
    (a dot product wrapping modulo 2**64) and checked exactly: on any hash collision the rows
    are sorted the slow way instead."""
    n, k = rows.shape
    if n == 0 or k == 0:
        patterns, inverse = np.unique(rows, axis=0, return_inverse=True)
        return patterns, inverse.reshape(-1)
    keys = rows @ _row_weights(k)  # int64 arithmetic wraps: a hash, verified below
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    reps = rows[first]
    inverse = inverse.reshape(-1)
    if not np.array_equal(reps[inverse], rows):  # two patterns share a hash
        patterns, inverse = np.unique(rows, axis=0, return_inverse=True)
        return patterns, inverse.reshape(-1)
    order = np.lexsort(reps.T[::-1])  # the first column most significant
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return reps[order], rank[inverse]


def take(sram: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``sram[index]`` for an integer index array: the elements gathered along the first axis
    (``np.take``, several times faster than indexing for the SRAMs' multi-dimensional elements)."""
    return np.take(sram, index, axis=0)


def to_int32(products: np.ndarray) -> np.ndarray:
    """Exact integer float products as int32 modulo 2**32 (float64 ones may pass 2**31)."""
    if products.dtype == np.float32:  # |value| <= 2**24
        return products.astype(np.int32)
    return products.astype(np.int64).astype(np.int32)  # int64 -> int32 keeps the low 32 bits


def hazard_message(insn: isa.Insn, dst: np.ndarray) -> str | None:
    """The accumulator-hazard message of a non-reset GEMM whose uop list writes the accumulators
    ``dst`` (one sweep; every sweep adds the same offsets), or None (timing.gemm_hazard)."""
    bad = timing.gemm_hazard(dst)
    if bad < 0:
        return None
    d = 1 if dst[bad - 1] == dst[bad] else 2
    return (f"uop {insn.uop_bgn + bad} writes the accumulator of uop {insn.uop_bgn + bad - d}, {d} uop(s) earlier in "
            f"the same sweep of the uop list (acc[{int(dst[bad])}] in the first sweep): VTA's GEMM pipeline would read it "
            f"before that write lands; put {timing.GEMM_HAZARD_DISTANCE} other accumulators between them (repeats "
            f"across iter_in/iter_out sweeps are allowed)")


class GemmPlan:
    """Index arrays of one GEMM loop (or piece of one) and how to compute its products.

    ``dst``/``src``/``wgt``: the distinct elements it touches (for the race tracker; a slice
    when they form a range);
    ``hazard``: the message of its first accumulator hazard (within one sweep) or None; ``out``: the distinct
    accumulators it updates, in the order of :meth:`products`' rows; ``where``: ``out`` as a
    slice when it is a range (a blocked GEMM's tile), else ``out``.
    """

    def __init__(self, insn: isa.Insn, uops: np.ndarray, config):
        """``insn``/``uops``: the loop, or one piece of it (whole sweeps of the uop list:
        ``program.loop_chunks``), with ``uops`` its uop rows plus the piece's offsets."""
        dst, src, wgt = program.loop_indices(insn, uops)
        self.dst, self.src, self.wgt = (as_slice(distinct(a)) for a in (dst, src, wgt))
        self.hazard = None
        if not insn.reset and dst.size:
            self.hazard = hazard_message(insn, uops[:, 0])
        self.order = self.starts = None
        self.kind = "reset"
        if insn.reset or not dst.size:
            return
        self.batch, self.bi, self.bo = config.batch, config.block_in, config.block_out
        self.nu = len(uops)
        if not (self._dense(insn, uops) or self._grouped(dst, src, wgt)):
            self.kind, self.xi, self.wi = "entry", src, wgt
            order = np.argsort(dst, kind="stable")
            sd = dst[order]
            self.starts = np.flatnonzero(np.r_[True, sd[1:] != sd[:-1]])
            self.order, self.out = order, sd[self.starts]
        self.where = as_slice(self.out)

    # --- planning -----------------------------------------------------------------------
    def _dense(self, insn, uops) -> bool:
        d_u, s_u, w_u = (uops[:, k].astype(np.int64) for k in range(3))
        if not (s_u == s_u[0]).all():
            return False
        axes = {"a": (insn.iter_out, insn.dst_factor_out, insn.src_factor_out, insn.wgt_factor_out),
                "b": (insn.iter_in, insn.dst_factor_in, insn.src_factor_in, insn.wgt_factor_in)}
        for r, p in (("a", "b"), ("b", "a")):
            nr, dr, sr, wr = axes[r]
            np_, dp_, sp, wp = axes[p]
            if (dr == 0 or nr == 1) and (wp == 0 or np_ == 1):
                kr, kp = np.arange(nr, dtype=np.int64), np.arange(np_, dtype=np.int64)
                out = (d_u[None, :] + kp[:, None] * dp_).reshape(-1)
                if distinct(out).size != out.size:  # rows sharing an accumulator: not one product
                    return False
                self.kind, self.shape, self.out = "dense", (np_, nr), out
                self.xi = s_u[0] + kp[:, None] * sp + kr[None, :] * sr      # (Np, Nr)
                rows = as_slice(self.xi.reshape(-1))  # a tile of consecutive inputs: no gather
                if isinstance(rows, slice):
                    self.xi = (rows, np_, nr)
                self.wi = w_u[None, :] + kr[:, None] * wr                   # (Nr, U)
                self.ftype = float_type(nr * self.bi)
                return True
        return False

    def _grouped(self, dst, src, wgt) -> bool:
        order = np.lexsort((wgt, dst))
        sd, ss, sw = dst[order], src[order], wgt[order]
        starts = np.flatnonzero(np.r_[True, sd[1:] != sd[:-1]])
        counts = np.diff(np.r_[starts, sd.size])
        groups = []  # (accumulators (n,), sources (n, K), weights (K,)) per weight pattern
        for k in np.unique(counts):
            rows = starts[counts == k]
            pos = rows[:, None] + np.arange(k, dtype=np.int64)[None, :]
            patterns, inverse = unique_rows(sw[pos])
            if len(groups) + len(patterns) > MAX_GROUPS:
                return False
            inverse = inverse.reshape(-1)
            for g in range(len(patterns)):
                sel = np.flatnonzero(inverse == g)
                groups.append((sd[rows[sel]], ss[pos[sel]], patterns[g]))
        # groups reading the same sources (a convolution's output-channel blocks) share one
        # product: their weights side by side, (n*BATCH x K*BLOCK_IN) @ (K*BLOCK_IN x G*BLOCK_OUT)
        merged = []  # (accumulators (G, n), sources (n, K), weights (G, K))
        for acc, srcs, wgts in groups:
            last = merged[-1] if merged else None
            if last is not None and last[1].shape == srcs.shape and np.array_equal(last[1], srcs):
                last[0].append(acc)
                last[2].append(wgts)
            else:
                merged.append(([acc], srcs, [wgts]))
        self.groups = [(np.stack(a), s, np.stack(w)) for a, s, w in merged]
        self.kind = "grouped"
        self.out = np.concatenate([a.reshape(-1) for a, _, _ in self.groups])
        self.ftypes = [float_type(s.shape[1] * self.bi) for _, s, _ in self.groups]
        return True

    # --- execution ----------------------------------------------------------------------
    def products(self, inp: np.ndarray, wgt: np.ndarray) -> np.ndarray:
        """int32 (modulo 2**32) sums of products (len(out), BATCH, BLOCK_OUT) to add to acc[out]."""
        b, bi, bo = self.batch, self.bi, self.bo
        if self.kind == "dense":
            np_, nr = self.shape
            nu, f = self.nu, self.ftype
            x = inp[self.xi[0]].reshape(np_, nr, b, bi) if isinstance(self.xi, tuple) else take(inp, self.xi)
            x = x.transpose(0, 2, 1, 3).reshape(np_ * b, nr * bi).astype(f)
            w = take(wgt, self.wi).transpose(0, 3, 1, 2).reshape(nr * bi, nu * bo).astype(f)
            prod = serial_matmul(x, w).reshape(np_, b, nu, bo).transpose(0, 2, 1, 3).reshape(-1, b, bo)
            return to_int32(prod)
        if self.kind == "grouped":
            out = np.empty((self.out.size, b, bo), dtype=np.int32)
            at = 0
            for (accs, srcs, wgts), f in zip(self.groups, self.ftypes):
                (g, n), k = accs.shape, srcs.shape[1]
                x = take(inp, srcs)                                       # (n, K, B, BI)
                if b > 1:
                    x = x.transpose(0, 2, 1, 3)
                x = x.reshape(n * b, k * bi).astype(f)
                w = take(wgt, wgts).transpose(1, 3, 0, 2).reshape(k * bi, g * bo).astype(f)  # (K*BI, G*BO)
                prod = serial_matmul(x, w)
                # into out in one pass: (n, B, G, BO) as (G, n, B, BO); float32 sums cast exactly
                target = out[at:at + g * n].reshape(g, n, b, bo)
                target[...] = (prod if f == np.float32 else to_int32(prod)).reshape(n, b, g, bo).transpose(2, 0, 1, 3)
                at += g * n
            return out
        x = take(inp, self.xi).astype(np.float32)                         # (E, B, BI)
        w = take(wgt, self.wi).astype(np.float32)                         # (E, BO, BI)
        prod = to_int32(x @ w.transpose(0, 2, 1))                         # BI <= 64 terms: exact
        return np.add.reduceat(prod[self.order], self.starts, axis=0)     # int32: wraps modulo 2**32
