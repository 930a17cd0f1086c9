"""Schedule search: the feasible schedule with the fewest estimated cycles.

1. :func:`candidates` enumerates tile sizes (every distinct tile count per dimension), thread
   counts and loop orders, keeping those whose buffers fit (:class:`Plan` checks).
2. :func:`rough_cycles` ranks them in closed form: compute-module cycles and memory-port
   cycles with the reuse the loop order allows, whichever is larger.
3. The best few are timed with :func:`compiler.tensorize.estimate.plan_estimate` (the code
   generator's instructions costed as they are emitted: no annotated segments); the fastest wins
   (ties: fewer instructions). :func:`ranked` does steps 1-2 without a :class:`Plan` per
   candidate; only the winner is encoded (by the compiler).

:func:`searched` memoises the answer by :func:`schedule_key`: the layer fields and configuration
parameters the search reads, so configurations that differ elsewhere (the clock) share it.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from dataclasses import dataclass

from compiler.layers import Conv2D
import numpy as np

from compiler.tensorize.schedule import (BUFFER_SIZE_PARAMS, BUFFERS, HAZARD_DISTINCT, ORDERS, Plan, Schedule,
                                         ScheduleError, depths, gemm_field_highs, misfit, shape_set, shape_summary)
from vdla_hw.config import Config

REFINE = 6
DEFAULT_VTHREADS = (1, 2)


def tile_sizes(total: int) -> list[int]:
    """One tile size per distinct tile count: ceil(total / m) for m = 1..total."""
    return sorted({-(-total // m) for m in range(1, total + 1)}, reverse=True)


def candidates(layer: Conv2D, config: Config, vthreads=DEFAULT_VTHREADS) -> list[Plan]:
    plans = []
    probe = Plan(layer, config, Schedule(th=1, tw=1, toc=1, tic=1, tky=1))
    depth = depths(config)
    for th, tw, toc, tic, t in itertools.product(tile_sizes(probe.oh), tile_sizes(probe.ow), tile_sizes(probe.ocb),
                                                 tile_sizes(probe.icb), vthreads):
        # Split the kernel rows (tky=1) only where the whole kernel does not fit.
        for tky in (0, 1) if layer.k > 1 else (0,):
            if _quick_fit(probe, th, tw, toc, tic, t, tky or layer.k, depth):
                break
        else:
            continue
        for order in ORDERS:
            try:
                plans.append(Plan(layer, config, Schedule(th=th, tw=tw, toc=toc, tic=tic, vthreads=t, order=order,
                                                          tky=tky)))
            except ScheduleError:
                break
    return plans


def _quick_fit(probe: Plan, th, tw, toc, tic, t, tky, depth: dict) -> bool:
    """Necessary buffer conditions, checked before building a Plan."""
    layer = probe.layer
    rows = th if probe.row_step > 1 else (th - 1) * layer.stride + tky
    cols = (tw - 1) * layer.stride + layer.k
    return (t * tic * rows * cols <= depth["inp"] and t * toc * tic * tky * layer.k <= depth["wgt"]
            and t * toc * ((2 if layer.per_channel_shift else 1) + max(th * tw, HAZARD_DISTINCT)) <= depth["acc"])


def rough_cycles(plan: Plan) -> float:
    """Closed-form max(compute, memory) cycles of a plan (reuse approximated)."""
    s = plan.schedule
    return _rough(_constants(plan.config), plan.layer.shift > 0, plan.shapes[(s.th, s.tw)], plan.nb,
                  plan.n_tiles_h, plan.n_tiles_w, plan.n_tiles_oc, plan.n_tiles_ic * plan.n_tiles_ky, plan.oh,
                  plan.ow, plan.ocb, plan.icb, plan.kk, plan.kstep, s.th, s.tw, s.toc, s.tic, s.vthreads, s.order)


@functools.lru_cache(maxsize=16)
def _constants(c: Config) -> tuple:
    """The configuration's numbers :func:`_rough` reads (integers: precomputing them changes no bit)."""
    return (c.ALU_CYCLES_PER_UOP, 2 * c.INSN_OVERHEAD + 2 * c.GEMM_PIPELINE_DEPTH,
            4 * (c.INSN_OVERHEAD + c.ALU_PIPELINE_DEPTH), c.MEM_BYTES_PER_BEAT, c.elem_bytes("inp"),
            c.elem_bytes("wgt"), c.elem_bytes("out"), c.MEM_LATENCY)


def _rough(consts: tuple, shifts: bool, full, nb, n_tiles_h, n_tiles_w, n_tiles_oc, steps, oh, ow, ocb, icb, kk,
           kstep, th, tw, toc, tic, vthreads, order) -> float:
    """:func:`rough_cycles` from the plan's numbers (the search ranks candidates without plans)."""
    alu_per_uop, step_overhead, item_overhead, bpb, inp_bytes, wgt_bytes, out_bytes, latency = consts
    n_sp = nb * n_tiles_h * n_tiles_w
    items = n_sp * n_tiles_oc
    pixels = nb * oh * ow
    # compute: GEMM over every (pixel-group, oc block, ic block, kernel offset), reset, 3-4 ALU passes
    group_ratio = full.group / full.pixels
    gemm = pixels * ocb * icb * kk * group_ratio
    alu = pixels * ocb * (3 + shifts) * alu_per_uop
    overhead = items * steps * step_overhead
    overhead += items * item_overhead
    compute = gemm + pixels * ocb * group_ratio + alu + overhead
    # memory: how often each input / weight tile is loaded
    share_inp = steps == 1 and order == "spatial" and n_tiles_oc > vthreads
    share_wgt = steps == 1 and order == "oc" and n_sp > vthreads
    inp_loads = n_sp * steps * (min(vthreads, n_tiles_oc) if share_inp else n_tiles_oc)
    wgt_loads = n_tiles_oc * steps * (min(vthreads, n_sp) if share_wgt else n_sp)
    inp_rows = inp_loads * tic * full.in_rows
    inp_beats = inp_rows * -(-full.in_cols * inp_bytes // bpb)
    wgt_beats = wgt_loads * toc * -(-tic * kstep * wgt_bytes // bpb)
    out_rows = items * toc * (1 if tw == ow else th)
    out_beats = pixels * ocb * out_bytes / bpb
    memory = (inp_beats + wgt_beats + out_beats
              + (inp_rows + wgt_loads * toc + out_rows) * latency)
    if vthreads == 1:
        return compute + memory * 0.5
    return max(compute, memory) + 0.05 * min(compute, memory)


def _rough_arrays(consts: tuple, shifts: bool, group, full_pixels, full_in_rows, full_in_cols, nb, n_tiles_h,
                  n_tiles_w, n_tiles_oc, steps, oh, ow, ocb, icb, kk, kstep, th, tw, toc, tic, vthreads,
                  order) -> np.ndarray:
    """:func:`_rough` of many candidates at once (int64 and float64 arrays), bit for bit: the same
    operations in the same order (integers exact, every float operation on the same operands;
    tests/compiler/tensorize/test_search_shared.py compares it with ``_ranked``)."""
    alu_per_uop, step_overhead, item_overhead, bpb, inp_bytes, wgt_bytes, out_bytes, latency = consts
    n_sp = nb * n_tiles_h * n_tiles_w
    items = n_sp * n_tiles_oc
    pixels = nb * oh * ow
    group_ratio = group / full_pixels
    gemm = pixels * ocb * icb * kk * group_ratio
    alu = pixels * ocb * (3 + shifts) * alu_per_uop
    overhead = items * steps * step_overhead
    overhead = overhead + items * item_overhead
    compute = gemm + pixels * ocb * group_ratio + alu + overhead
    share_inp = (steps == 1) & (order == "spatial") & (n_tiles_oc > vthreads)
    share_wgt = (steps == 1) & (order == "oc") & (n_sp > vthreads)
    inp_loads = n_sp * steps * np.where(share_inp, np.minimum(vthreads, n_tiles_oc), n_tiles_oc)
    wgt_loads = n_tiles_oc * steps * np.where(share_wgt, np.minimum(vthreads, n_sp), n_sp)
    inp_rows = inp_loads * tic * full_in_rows
    inp_beats = inp_rows * -(-full_in_cols * inp_bytes // bpb)
    wgt_beats = wgt_loads * toc * -(-tic * kstep * wgt_bytes // bpb)
    out_rows = items * toc * np.where(tw == ow, 1, th)
    out_beats = pixels * ocb * out_bytes / bpb
    memory = (inp_beats + wgt_beats + out_beats
              + (inp_rows + wgt_loads * toc + out_rows) * latency)
    return np.where(vthreads == 1, compute + memory * 0.5,
                    np.maximum(compute, memory) + 0.05 * np.minimum(compute, memory))


def ranked(layer: Conv2D, config: Config, vthreads=DEFAULT_VTHREADS) -> list[tuple[float, Schedule]]:
    """(rough cycles, schedule) of every candidate, in :func:`candidates`' order, without building
    a :class:`Plan` per candidate: the same checks (:func:`misfit`) and :func:`_rough` on numbers
    computed once per tiling shape. ``[(rough_cycles(p), p.schedule) for p in candidates(...)]``."""
    return [(r, _schedule(args)) for r, args in _ranked(layer, config, vthreads)]


def _schedule(args: tuple) -> Schedule:
    th, tw, toc, tic, t, order, tky = args
    return Schedule(th=th, tw=tw, toc=toc, tic=tic, vthreads=t, order=order, tky=tky)


def _ranked(layer: Conv2D, config: Config, vthreads) -> list[tuple[float, tuple]]:
    out = []
    probe = Plan(layer, config, Schedule(th=1, tw=1, toc=1, tic=1, tky=1))
    depth = depths(config)
    nb, oh, ow, ocb, icb, kk = probe.nb, probe.oh, probe.ow, probe.ocb, probe.icb, probe.kk
    tilings: dict = {}
    consts, shifts = _constants(config), layer.shift > 0
    for th, tw, toc, tic, t in itertools.product(tile_sizes(oh), tile_sizes(ow), tile_sizes(ocb), tile_sizes(icb),
                                                 vthreads):
        for tky in (0, 1) if layer.k > 1 else (0,):
            if _quick_fit(probe, th, tw, toc, tic, t, tky or layer.k, depth):
                break
        else:
            continue
        rows = tky or layer.k
        tiling = tilings.get((th, tw, rows))
        if tiling is None:
            shapes = shape_set(layer, probe.row_step, rows, th, tw)
            kstep = rows * layer.k
            tiling = tilings[(th, tw, rows)] = (shapes[(th, tw)], kstep,
                                                shape_summary(shapes, kstep, probe.vectors), layer.k // rows)
        full, kstep, (max_in, max_group, uops, big), n_ky = tiling
        parts = (tic * max_in, toc * tic * kstep, toc * probe.vectors + toc * max_group, uops)
        if misfit(config, t, parts, big, tic, kstep):
            continue
        n_h, n_w, n_oc, n_ic = -(-oh // th), -(-ow // tw), -(-ocb // toc), -(-icb // tic)
        for order in ORDERS:
            out.append((_rough(consts, shifts, full, nb, n_h, n_w, n_oc, n_ic * n_ky, oh, ow, ocb, icb, kk, kstep,
                               th, tw, toc, tic, t, order),
                        (th, tw, toc, tic, t, order, tky)))
    return out


@dataclass(frozen=True)
class Searched:
    """The search's answer for one layer shape: the schedule and its pipeline estimate
    (:func:`compiler.tensorize.estimate.plan_estimate` cycles, DRAM bases 0)."""

    schedule: Schedule
    cycles: int


# Layer fields the search reads (the schedule does not depend on the name, the clip bounds, relu or
# the shift's value: only on whether there is a shift instruction).
LAYER_FIELDS = ("n", "h", "w", "ic", "oc", "k", "stride", "pad", "per_channel_shift")
# Configuration parameters the search never reads (the clock, the PS port, the queues' depths and
# latencies: the estimate models none of them); every other parameter, including any added later,
# is part of the key. tests/compiler/tensorize/test_search_fast.py checks that the search reads none
# of these.
UNREAD_PARAMS = frozenset({"CLOCK_MHZ", "MEM_PORT", "CMD_QUEUE_DEPTH", "TOKEN_QUEUE_DEPTH", "FETCH_CYCLES_PER_INSN",
                           "QUEUE_LATENCY"})


def schedule_key(layer: Conv2D, config: Config) -> tuple:
    """Everything :func:`best_schedule` depends on: the layer fields and configuration parameters
    it reads, so configurations that share them share one search."""
    return (tuple(getattr(layer, f) for f in LAYER_FIELDS) + (layer.shift > 0,),
            tuple(sorted((p, v) for p, v in config.stored_params().items() if p not in UNREAD_PARAMS)))


_SEARCHED: dict = {}   # (schedule_key, thread counts, refine) -> Searched, in this process


def searched(layer: Conv2D, config: Config, *, vthreads=None, refine: int = REFINE, progress=None) -> Searched:
    """:func:`best_schedule`'s schedule and estimate, memoised by :func:`schedule_key` in-process
    and on disk (``vdla_hw.cache``, kind "schedule")."""
    from vdla_hw.cache import cached

    counts = DEFAULT_VTHREADS if vthreads is None else (vthreads,)
    key = (schedule_key(layer, config), counts, refine)
    hit = _SEARCHED.get(key)
    if hit is None:
        hit = _SEARCHED[key] = cached("schedule", key, lambda: _search(layer, config, counts, refine, progress))
    return hit


def _search(layer: Conv2D, config: Config, counts: tuple, refine: int, progress) -> Searched:
    say = progress or (lambda message: None)
    say(f"schedule search: {layer.oh}x{layer.ow} outputs, {layer.ic} -> {layer.oc} channels, k={layer.k}: "
        "ranking candidates")
    Plan(layer, config, Schedule(th=1, tw=1, toc=1, tic=1, tky=1))  # _ranked's probe: its error, if any
    found, top = _table(layer, config, counts).best(config, refine)
    if not found:
        raise ScheduleError(layer.name, "schedule", f"no tiling fits the buffers of {config.name} "
                            f"with {'/'.join(map(str, counts))} virtual thread(s)")
    best, best_key = None, None
    for index, args in enumerate(top):
        say(f"schedule search: {found} candidates, timing the best {len(top)}: {index + 1}/{len(top)}")
        plan = Plan(layer, config, _schedule(args))
        key = _estimate(plan)
        if best_key is None or key < best_key:
            best, best_key = plan, key
    return Searched(best.schedule, best_key[0])


# --- sharing across buffer sizes -----------------------------------------------------------------
# The buffer sizes (BUFFER_SIZE_PARAMS) only decide which candidates fit: the tiling shapes, the
# rough cycles and the pipeline estimate of a schedule never read them. So one table of every
# tiling (both kernel-row splits) with its buffer needs and rough cycles serves all buffer sizes
# of a layer and the other parameters (a sweep over buffer sizes builds it once), and estimates are
# kept by schedule. ``_search`` through them gives exactly the answer of ``_ranked`` +
# ``plan_estimate`` (tests/compiler/tensorize/test_search_shared.py).

_TABLES: dict = {}      # (layer fields, parameters but the buffer sizes, thread counts) -> _Table
_ESTIMATES: dict = {}   # (layer fields, schedule, parameters but the buffer sizes) -> (cycles, instructions)
_MEMO_LIMIT = 4096      # entries of each before it is emptied (a long search over many networks)


def _shared_key(layer: Conv2D, config: Config) -> tuple:
    layer_part, params = schedule_key(layer, config)
    return layer_part, tuple((p, v) for p, v in params if p not in BUFFER_SIZE_PARAMS)


def _remember(memo: dict, key, value):
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


def _estimate(plan: Plan) -> tuple[int, int]:
    """(pipeline-estimate cycles, instructions) of ``plan``, kept by schedule (see above)."""
    from compiler.tensorize.estimate import plan_estimate

    key = (_shared_key(plan.layer, plan.config), plan.schedule.text())
    hit = _ESTIMATES.get(key)
    if hit is None:
        est, count = plan_estimate(plan)
        hit = _remember(_ESTIMATES, key, (est.cycles, count))
    return hit


def _table(layer: Conv2D, config: Config, counts: tuple) -> "_Table":
    key = (_shared_key(layer, config), counts)
    table = _TABLES.get(key)
    if table is None:
        table = _remember(_TABLES, key, _Table(layer, config, counts))
    return table


class _Table:
    """Every (th, tw, toc, tic, threads) tiling of a layer with, for each kernel-row split the
    search may take (whole kernel, then one row), its buffer needs (``_quick_fit``'s and
    ``misfit``'s), GEMM field values and rough cycles per loop order, in ``_ranked``'s order."""

    def __init__(self, layer: Conv2D, config: Config, counts: tuple):
        probe = Plan(layer, config, Schedule(th=1, tw=1, toc=1, tic=1, tky=1))
        nb, oh, ow, ocb, icb, kk = probe.nb, probe.oh, probe.ow, probe.ocb, probe.icb, probe.kk
        consts, shifts = _constants(config), layer.shift > 0
        splits = (0, 1) if layer.k > 1 else (0,)
        acc_vectors = 2 if layer.per_channel_shift else 1
        sizes = [tile_sizes(oh), tile_sizes(ow), tile_sizes(ocb), tile_sizes(icb), counts]
        # itertools.product's order (the last factor fastest) as flat arrays, with the indices of th, tw
        index = [a.ravel() for a in np.meshgrid(*[np.arange(len(v)) for v in sizes], indexing="ij")]
        th, tw, toc, tic, t = (np.asarray(v, dtype=np.int64)[i] for v, i in zip(sizes, index))
        self.args = list(zip(*(a.tolist() for a in (th, tw, toc, tic, t))))
        self.splits = splits
        n_h, n_w, n_oc, n_ic = -(-oh // th), -(-ow // tw), -(-ocb // toc), -(-icb // tic)
        quick, parts, fields, rough = [], [], [], []
        for tky in splits:
            rows = tky or layer.k
            kstep = rows * layer.k
            in_rows = th if probe.row_step > 1 else (th - 1) * layer.stride + rows
            cols = (tw - 1) * layer.stride + layer.k
            quick.append(np.stack([t * tic * in_rows * cols, t * toc * tic * rows * layer.k,
                                   t * toc * (acc_vectors + np.maximum(th * tw, HAZARD_DISTINCT))], axis=-1))
            # per (th, tw): the full tile's shape and what the buffer checks read of the tiling
            shape = np.zeros((len(sizes[0]), len(sizes[1]), 9), dtype=np.int64)
            for i, h in enumerate(sizes[0]):
                for j, w in enumerate(sizes[1]):
                    shapes = shape_set(layer, probe.row_step, rows, h, w)
                    full = shapes[(h, w)]
                    max_in, max_group, uops, big = shape_summary(shapes, kstep, probe.vectors)
                    shape[i, j] = (full.group, full.pixels, full.in_rows, full.in_cols, max_in, max_group, uops,
                                   big.group, big.in_rows * big.in_cols)
            (group, pixels, full_rows, full_cols, max_in, max_group, uops, big_group,
             big_in) = np.moveaxis(shape[index[0], index[1]], -1, 0)
            parts.append(np.stack([tic * max_in * t, toc * tic * kstep * t, (toc * probe.vectors + toc * max_group) * t,
                                   uops * t], axis=-1))
            fields.append(np.stack([big_group, big_in, tic * kstep, np.full_like(tic, kstep)], axis=-1))
            rough.append(np.stack([_rough_arrays(consts, shifts, group, pixels, full_rows, full_cols, nb, n_h, n_w,
                                                 n_oc, n_ic * (layer.k // rows), oh, ow, ocb, icb, kk, kstep, th, tw,
                                                 toc, tic, t, order) for order in ORDERS], axis=-1))
        self.quick = np.stack(quick, axis=1)        # (tilings, splits, 3)
        self.parts = np.stack(parts, axis=1)        # (tilings, splits, 4)
        self.fields = np.stack(fields, axis=1)      # (tilings, splits, 4)
        self.rough = np.stack(rough, axis=1)        # (tilings, splits, orders)

    def ranked(self, config: Config) -> list[tuple[float, tuple]]:
        """``_ranked(layer, config, counts)`` from the table (tests compare them)."""
        rows, split, rough = self._fitting(config)
        return [(float(rough[i]), self._args(rows, split, i)) for i in range(len(rough))]

    def _fitting(self, config: Config):
        """The tilings that fit ``config`` (and their split) and their candidates' rough cycles,
        (tiling, order) flattened row-major: ``_ranked``'s order."""
        depth = depths(config)
        n = len(self.args)
        quick_depth = np.array([depth["inp"], depth["wgt"], depth["acc"]], dtype=np.int64)
        fits_quick = (self.quick <= quick_depth).all(axis=2)              # (tilings, splits)
        split = np.argmax(fits_quick, axis=1)                            # the first split that fits
        rows = np.flatnonzero(fits_quick[np.arange(n), split])
        split = split[rows]
        parts, fields = self.parts[rows, split], self.fields[rows, split]
        highs = gemm_field_highs(config)
        field_high = np.array([highs[f][0] for f in ("dst_factor_out", "src_factor_in", "wgt_factor_out",
                                                     "wgt_factor_in")], dtype=np.int64)
        buffer_depth = np.array([depth[mem] for mem in BUFFERS], dtype=np.int64)
        ok = (parts <= buffer_depth).all(axis=1) & (fields <= field_high).all(axis=1)
        rows, split = rows[ok], split[ok]
        return rows, split, self.rough[rows, split].ravel()

    def _args(self, rows, split, index: int) -> tuple:
        row, order = divmod(int(index), len(ORDERS))
        th, tw, toc, tic, t = self.args[rows[row]]
        return (th, tw, toc, tic, t, ORDERS[order], self.splits[split[row]])

    def best(self, config: Config, refine: int) -> tuple[int, list[tuple]]:
        """(how many candidates fit ``config``, the args of the ``refine`` with the fewest rough
        cycles, ties in ``_ranked``'s order): ``heapq.nsmallest(refine, _ranked(...))``."""
        rows, split, rough = self._fitting(config)
        return len(rough), [self._args(rows, split, i) for i in np.argsort(rough, kind="stable")[:refine]]


def best_schedule(layer: Conv2D, config: Config, *, vthreads=None, refine: int = REFINE) -> Plan:
    """The plan with the fewest estimated cycles (``vthreads`` fixes the thread count)."""
    return Plan(layer, config, searched(layer, config, vthreads=vthreads, refine=refine).schedule)
