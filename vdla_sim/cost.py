"""The simulator's work estimate, priced from the GEMM plan it will run (vdla_hw/limits.py,
"Work bounds"; issue 45): cheap (no simulation) and, for each plan, an upper bound on its time.

Work is counted in multiply-add equivalents, 1 / ``limits.SIM_WORK_PER_S`` seconds each (the
time of one multiply-add of the slowest GEMM plan). Each instruction costs ``SIM_INSN_WORK``
plus its loop's price under the plan ``vdla_sim.gemm.GemmPlan`` will choose for it:

* ``reset``: a reset GEMM (it writes zeros, whatever its uops), ``SIM_GEMM_RESET_UOPS_PER_S``;
* ``product``: a loop certainly planned as ``dense`` or ``grouped`` (a few BLAS products), at
  ``SIM_GEMM_PRODUCT_UOPS_PER_S`` per uop plus ``SIM_GEMM_PRODUCT_MACS_PER_S`` per multiply-add,
  plus ``SIM_GEMM_PIECE_WORK`` per piece the loop runs in (its plan's set-up and up to
  ``gemm.MAX_GROUPS`` products); pieces are those of ``program.loop_chunks``, each planned anew;
* ``entry``: everything else (one vector-matrix product per uop, or uops that cannot be known
  before the run), ``work.simulator_units``: BATCH x BLOCK_IN x BLOCK_OUT (at least
  ``SIM_GEMM_UOP_WORK``) per uop, the slowest plan's rate. ALU uops keep their slowest-wave
  price (``SIM_ALU_UOP_WORK``).

Why each price bounds its plan's time: its rates are the slowest ``benchmarks/work_bounds.py``
measures for that plan on its worst pattern (planning included: a piece is planned anew, never
taken from the plan cache); the product plans' time is a per-uop part (indices, sort, gathers)
plus a per-multiply-add part (BLAS), and the uop rate is measured where the first dominates
(``tiny``, 16 multiply-adds per uop) and the multiply-add rate where the second does
(``osdi18``, 256, float64 products), so each rate alone already covers the other part there.

Which plan: a GEMM's uops come from the uop SRAM, which LOADs fill from the DRAM image; both run
on the compute module in program order, so they are followed here instruction by instruction
(the SRAM at START included). A uop
LOAD reading DRAM bytes that some STORE of the program writes gives uops unknown until the run
(priced ``entry``). For known uops, :func:`product_plan` decides from the uop rows alone
(O(U log U) for U rows, never the loop's trip counts) when ``GemmPlan`` cannot fall back to
per-uop products: the ``dense`` conditions, or a bound on its weight patterns (groups) of at
most ``MAX_GROUPS``. Analyses are cached per uop rows and loop fields; at most
``ANALYSIS_ROWS`` rows are analysed and ``READ_ROWS`` decoded or keyed per program (past that,
GEMMs are ``entry``), so the estimate's own time is bounded whatever the program: numpy work
within those budgets and a few microseconds per instruction, as decoding it costs.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from vdla_hw import isa, limits, program, timing, work
from vdla_hw.config import Config
from vdla_sim import gemm
from vdla_sim.datapath import dram_rows, loop_chunk

ANALYSIS_ROWS = 1 << 22   # uop rows analysed per program at most (a few hundred ms of numpy)
READ_ROWS = 1 << 25       # uop rows decoded or keyed per program at most (the largest layers of VGG-11
                          # and fcn_resnet50 read 2-4 M; 32 M take well under a second)


class Prices:
    """The price of each GEMM plan for one configuration, in multiply-add equivalents."""

    def __init__(self, config: Config):
        self.macs = config.batch * config.block_in * config.block_out
        self.entry = max(limits.SIM_GEMM_UOP_WORK, self.macs)
        self.chunk = loop_chunk(config)
        rate = limits.SIM_WORK_PER_S
        self.product = rate / limits.SIM_GEMM_PRODUCT_UOPS_PER_S + rate * self.macs / limits.SIM_GEMM_PRODUCT_MACS_PER_S
        self.reset = rate / limits.SIM_GEMM_RESET_UOPS_PER_S

    def pieces(self, insn: isa.Insn) -> int:
        """How many pieces ``program.loop_chunks`` cuts the loop into."""
        n_u = insn.uop_end - insn.uop_bgn
        if n_u <= 0 or insn.iter_out == 0 or insn.iter_in == 0:
            return 0
        per_row = insn.iter_in * n_u
        if per_row <= self.chunk:
            return -(-insn.iter_out // max(1, self.chunk // per_row))
        return insn.iter_out * -(-insn.iter_in // max(1, self.chunk // n_u))

    def gemm(self, insn: isa.Insn, plan: str) -> int:
        """Units of one GEMM under ``plan`` ('reset', 'product' or 'entry')."""
        uops = timing.uop_count(insn)
        if plan == "entry":
            return limits.SIM_INSN_WORK + self.entry * uops
        per_uop = self.reset if plan == "reset" else self.product
        return limits.SIM_INSN_WORK + self.pieces(insn) * limits.SIM_GEMM_PIECE_WORK + math.ceil(per_uop * uops)

    def worst(self, insn: isa.Insn) -> int:
        """The most any plan of a GEMM costs: a bound that needs no look at its uops."""
        return max(self.gemm(insn, p) for p in ("reset", "product", "entry"))


def worst_units(insns: list[isa.Insn], config: Config) -> int:
    """The program's work with every GEMM at its most expensive plan (no uop looked at): when
    this is within the bound, so is :func:`units`."""
    prices, alu = Prices(config), work.simulator_units(config)
    total = 0
    for insn in insns:
        if insn.kind == "GEMM":
            total += prices.worst(insn)
        else:
            total += alu(work.Step(insn.kind, timing.uop_count(insn) if insn.kind == "ALU" else 0, 0, 0))
    return total


def units(bundle, insns: list[isa.Insn], uop_words: np.ndarray | None = None) -> list[int]:
    """Each instruction's work under the plan it will run (see above); ``uop_words``: the uop
    SRAM's words at START (default: a fresh device's zeros)."""
    config = bundle.config
    prices, alu = Prices(config), work.simulator_units(config)
    depth = config.depth("uop")
    table = np.zeros((depth, 3), dtype=np.int64) if uop_words is None else isa.decode_uops(uop_words, config)
    known = np.ones(depth, dtype=bool)
    stores = _store_extents(insns, config)
    size = config.elem_bytes("uop")
    uop_view = bundle.dram[: bundle.dram.size // size * size].view(config.elem_dtype("uop")).reshape(
        -1, *config.elem_shape("uop"))
    cache: dict = {}
    analyse, read = ANALYSIS_ROWS, READ_ROWS
    out = []
    for insn in insns:
        kind = insn.kind
        if kind == "LOAD" and insn.mem == "uop":
            read -= insn.y_size * insn.x_size
            if read >= 0:
                _load_uops(insn, config, uop_view, table, known, stores)
            else:                 # past the budget: the uop SRAM is no longer followed
                known[:] = False
        if kind != "GEMM":
            out.append(alu(work.Step(kind, timing.uop_count(insn) if kind == "ALU" else 0, 0, 0)))
            continue
        if insn.reset:
            out.append(prices.gemm(insn, "reset"))
            continue
        plan = "entry"
        bgn, end = insn.uop_bgn, insn.uop_end
        if 0 <= bgn < end <= depth and read >= end - bgn and known[bgn:end].all():
            read -= end - bgn
            rows = table[bgn:end]
            key = (rows.tobytes(), insn.iter_out, insn.iter_in, insn.dst_factor_out, insn.dst_factor_in,
                   insn.src_factor_out, insn.src_factor_in, insn.wgt_factor_out, insn.wgt_factor_in)
            fast = cache.get(key)
            if fast is None and analyse >= end - bgn:
                analyse -= end - bgn
                fast = cache[key] = product_plan(insn, rows)
            if fast:
                plan = "product"
        out.append(prices.gemm(insn, plan))
    return out


def product_plan(insn: isa.Insn, uops: np.ndarray) -> bool:
    """True when ``GemmPlan`` certainly plans this non-reset loop, and every piece of it, as
    ``dense`` or ``grouped``: never per-uop products. ``uops``: its (U, 3) rows (dst, src, wgt).

    An axis of one iteration moves nothing. ``dense``: the conditions of ``GemmPlan._dense``,
    with its distinct-accumulator test replaced by a sufficient one (distinct rows, and a
    parallel step longer than their span). ``grouped``: an accumulator's weight sequence is
    that of its table row shifted by the loop, when the loop's accumulators are one-to-one
    with (i, j, row) (steps longer than the spans they cross); a reduction axis (dst step 0)
    adds the same shifts to every row. So the groups are at most the table's distinct weight
    patterns times the distinct shifts. A piece of the loop is a sub-range of it, with at most
    as many groups, and the dense conditions hold for it too."""
    d, s, w = (uops[:, k] for k in range(3))
    axes = [(insn.iter_out, insn.dst_factor_out, insn.src_factor_out, insn.wgt_factor_out),
            (insn.iter_in, insn.dst_factor_in, insn.src_factor_in, insn.wgt_factor_in)]
    axes = [a if a[0] > 1 else (a[0], 0, 0, 0) for a in axes]
    span = int(d.max() - d.min())
    rows_distinct = gemm.distinct(d).size == d.size
    if (s == s[0]).all():  # GemmPlan._dense, in its order: the first matching axis pair decides
        for r, p in ((0, 1), (1, 0)):
            (nr, dr, _, _), (np_, dp, _, wp) = axes[r], axes[p]
            if (dr == 0 or nr == 1) and (wp == 0 or np_ == 1):
                if rows_distinct and (np_ == 1 or abs(dp) > span):
                    return True
                break
    moving = sorted((a for a in axes if a[1] != 0), key=lambda a: abs(a[1]))
    reach = span
    for n, df, _, _ in moving:  # one-to-one: each step passes every accumulator the smaller ones reach
        if abs(df) <= reach:
            return False
        reach += abs(df) * (n - 1)
    shifts = math.prod(n for n, df, _, wf in axes if df != 0 and wf != 0)  # a reduction axis shifts all alike
    return _patterns(d, w) * shifts <= gemm.MAX_GROUPS


def _patterns(d: np.ndarray, w: np.ndarray) -> int:
    """The distinct weight sequences (sorted) of the table's accumulators: GemmPlan._grouped's
    count on one sweep of the table."""
    order = np.lexsort((w, d))
    sd, sw = d[order], w[order]
    starts = np.flatnonzero(np.r_[True, sd[1:] != sd[:-1]])
    counts = np.diff(np.r_[starts, sd.size])
    total = 0
    for k in np.unique(counts):
        rows = starts[counts == k]
        pos = rows[:, None] + np.arange(k, dtype=np.int64)[None, :]
        total += len(gemm.unique_rows(sw[pos])[0])
    return total


def _store_extents(insns: list[isa.Insn], config: Config) -> tuple[list[int], list[int]]:
    """The DRAM byte ranges [lo, hi) that the program's STOREs may write, merged and sorted
    (starts, ends)."""
    size = config.elem_bytes("out")
    spans = sorted((i.dram_base * size, (i.dram_base + (i.y_size - 1) * i.x_stride + i.x_size) * size)
                   for i in insns if i.kind == "STORE" and i.x_size and i.y_size)
    starts, ends = [], []
    for lo, hi in spans:
        if ends and lo <= ends[-1]:
            ends[-1] = max(ends[-1], hi)
        else:
            starts.append(lo)
            ends.append(hi)
    return starts, ends


def _load_uops(insn: isa.Insn, config: Config, view: np.ndarray, table: np.ndarray, known: np.ndarray,
               stores: tuple[list[int], list[int]]) -> None:
    """Apply a uop LOAD to the tracked table (as ``Datapath.load`` does); its rows are unknown
    when a STORE may write the DRAM bytes it reads, or when they are out of the image (the run
    raises then)."""
    y, x = insn.y_size, insn.x_size
    rows = insn.y_pad_top + y + insn.y_pad_bottom
    cols = insn.x_pad_left + x + insn.x_pad_right
    base, n = insn.sram_base, rows * cols
    if not (x and rows) or base + n > table.shape[0]:
        return
    if not y:
        table[base:base + n] = 0
        known[base:base + n] = True
        return
    size = view.itemsize * int(np.prod(view.shape[1:]))
    lo, hi = insn.dram_base * size, (insn.dram_base + (y - 1) * insn.x_stride + x) * size
    starts, ends = stores
    k = bisect.bisect_right(starts, hi - 1) - 1
    if (k >= 0 and ends[k] > lo) or hi > len(view) * size:
        known[base:base + n] = False
        return
    words = np.zeros((rows, cols, *view.shape[1:]), dtype=view.dtype)
    words[insn.y_pad_top:insn.y_pad_top + y, insn.x_pad_left:insn.x_pad_left + x] = dram_rows(view, insn)
    table[base:base + n] = isa.decode_uops(words.reshape(n, *view.shape[1:]), config)
    known[base:base + n] = True


def program_work(bundle, uop_words: np.ndarray | None = None) -> int:
    """The simulator work of ``bundle`` as priced here: the number ``max_work`` bounds (a
    program runs exactly when this is at most ``max_work``)."""
    return sum(units(bundle, program.decode_checked(bundle), uop_words))


def check(bundle, insns: list[isa.Insn], limit: int, uop_words: np.ndarray | None = None) -> int:
    """Refuse (LimitError, one line) a program whose :func:`units` pass ``limit``, naming the
    first instruction past it; returns the program's work."""
    return work.check_counts([i.kind for i in insns], units(bundle, insns, uop_words), limit, model="the simulator",
                             unit="multiply-add equivalents", rate=limits.SIM_WORK_PER_S, option="--max-work")
