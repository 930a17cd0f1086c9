"""Schedule search: the feasible schedule with the fewest estimated cycles.

1. :func:`candidates` enumerates tile sizes (every distinct tile count per dimension), thread
   counts and loop orders, keeping those whose buffers fit (:class:`Plan` checks).
2. :func:`rough_cycles` ranks them in closed form: compute-module cycles and memory-port
   cycles with the reuse the loop order allows, whichever is larger.
3. The best few are generated (segments, no tokens) and timed with
   :func:`compiler.tensorize.estimate.estimate`; the fastest wins (ties: fewer instructions).
"""

from __future__ import annotations

import itertools

from compiler.layers import Conv2D
from compiler.tensorize.schedule import ORDERS, Plan, Schedule, ScheduleError, depths
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
            and t * toc * ((2 if layer.per_channel_shift else 1) + max(th * tw, 3)) <= depth["acc"])


def rough_cycles(plan: Plan) -> float:
    """Closed-form max(compute, memory) cycles of a plan (reuse approximated)."""
    c, s, layer = plan.config, plan.schedule, plan.layer
    full = plan.shapes[(s.th, s.tw)]
    n_sp = plan.nb * plan.n_tiles_h * plan.n_tiles_w
    items = n_sp * plan.n_tiles_oc
    pixels = plan.nb * plan.oh * plan.ow
    # compute: GEMM over every (pixel-group, oc block, ic block, kernel offset), reset, 3-4 ALU passes
    group_ratio = full.group / full.pixels
    gemm = pixels * plan.ocb * plan.icb * plan.kk * group_ratio
    alu = pixels * plan.ocb * (3 + (layer.shift > 0)) * c.ALU_CYCLES_PER_UOP
    steps = plan.n_tiles_ic * plan.n_tiles_ky
    overhead = items * steps * (2 * c.INSN_OVERHEAD + 2 * c.GEMM_PIPELINE_DEPTH)
    overhead += items * 4 * (c.INSN_OVERHEAD + c.ALU_PIPELINE_DEPTH)
    compute = gemm + pixels * plan.ocb * group_ratio + alu + overhead
    # memory: how often each input / weight tile is loaded
    share_inp = steps == 1 and s.order == "spatial" and plan.n_tiles_oc > s.vthreads
    share_wgt = steps == 1 and s.order == "oc" and n_sp > s.vthreads
    inp_loads = n_sp * steps * (min(s.vthreads, plan.n_tiles_oc) if share_inp else plan.n_tiles_oc)
    wgt_loads = plan.n_tiles_oc * steps * (min(s.vthreads, n_sp) if share_wgt else n_sp)
    bpb = c.MEM_BYTES_PER_BEAT
    inp_rows = inp_loads * s.tic * full.in_rows
    inp_beats = inp_rows * -(-full.in_cols * c.elem_bytes("inp") // bpb)
    wgt_beats = wgt_loads * s.toc * -(-s.tic * plan.kstep * c.elem_bytes("wgt") // bpb)
    out_rows = items * s.toc * (1 if s.tw == plan.ow else s.th)
    out_beats = pixels * plan.ocb * c.elem_bytes("out") / bpb
    memory = (inp_beats + wgt_beats + out_beats
              + (inp_rows + wgt_loads * s.toc + out_rows) * c.MEM_LATENCY)
    if s.vthreads == 1:
        return compute + memory * 0.5
    return max(compute, memory) + 0.05 * min(compute, memory)


def best_schedule(layer: Conv2D, config: Config, *, vthreads=None, refine: int = REFINE) -> Plan:
    """The plan with the fewest estimated cycles (``vthreads`` fixes the thread count)."""
    from compiler.tensorize.conv2d import DramPlan, thread_buffers, thread_segments
    from compiler.tensorize.estimate import estimate

    counts = DEFAULT_VTHREADS if vthreads is None else (vthreads,)
    plans = candidates(layer, config, counts)
    if not plans:
        raise ScheduleError(layer.name, "schedule", f"no tiling fits the buffers of {config.name} "
                            f"with {'/'.join(map(str, counts))} virtual thread(s)")
    plans.sort(key=rough_cycles)
    best, best_key = None, None
    dummy = DramPlan(inp=0, wgt=0, bias=0, out=0, uops=0, uop_count=1, zeros=0, shift=0)
    for plan in plans[:refine]:
        segments = thread_segments(plan, dummy, thread_buffers(plan))
        est = estimate(segments, config)
        key = (est.cycles, sum(len(seg.ops) for t in segments for seg in t))
        if best_key is None or key < best_key:
            best, best_key = plan, key
    return best
