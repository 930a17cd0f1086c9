"""Measured rates behind the work bounds of ``vdla_hw/limits.py``: how fast each backend gets
through the work it is bounded by, on the slowest patterns a program can ask for.

* reference semantics: micro-ops per second (GEMM loops of 3 uops, ALU loops of 1);
* simulator, per GEMM plan (``vdla_sim/gemm.py``; vdla_sim/cost.py prices each): ``entry``
  (one vector-matrix product per uop: more weight patterns than ``gemm.MAX_GROUPS``; a
  configuration of at most 64 accumulators, like ``tiny``, cannot have that many), the ``product`` plans
  (``grouped``: 32-64 weight patterns with long gathers, a 3-uop reduction of one weight pattern
  and a convolution-like loop; ``dense``: a
  fully connected loop; all with float64 products, the slower kind), ``groups64`` (a small loop of
  64 weight patterns: the cost of one plan piece) and ``reset``; and the ALU's slowest case (a
  loop whose uops all write one accumulator, one uop per wave). The plan cache is turned off,
  so every instruction is planned anew (the worst case: vdla_sim/cost.py prices it so).

Each line gives uops/s and multiply-adds/s, and the plan's price for the run (vdla_sim/cost.py,
from the rates in vdla_hw/limits.py) over the measured time: at least 1 where the price is an
upper bound. ``SIM_GEMM_PRODUCT_UOPS_PER_S`` is the slowest product plan's uops/s on ``tiny``
(16 multiply-adds per uop: the per-uop part dominates), ``SIM_GEMM_PRODUCT_MACS_PER_S`` its
slowest multiply-adds/s on ``osdi18`` (256 per uop), ``SIM_GEMM_PIECE_WORK`` the time of one
``groups64`` instruction, ``SIM_GEMM_RESET_UOPS_PER_S`` the slowest reset rate. Run one
benchmark at a time and say the load (``uptime``) with the figures:

    .venv/bin/python benchmarks/work_bounds.py [--configs tiny,osdi18] [--uops 400000] [--record]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import record

from vdla_hw import alu, limits, timing
from vdla_hw.bundle import BundleBuilder
from vdla_hw.semantics import execute
from vdla_sim import cost, datapath, gemm, simulate
from vdla_sim.prepared import prepare

UNBOUNDED = 1 << 62
# what --record writes (benchmarks/record.py)
FIGURES = {"product_uops_per_s_tiny": "uops/s: the slowest product plan (grouped, dense) on tiny",
           "product_macs_per_s_osdi18": "multiply-adds/s: the slowest product plan on osdi18",
           "entry_macs_per_s_osdi18": "multiply-adds/s: the per-uop (entry) plan on osdi18",
           "groups64_insns_per_s": "instructions/s: a 64-pattern GEMM planned anew, the slower config",
           "reset_uops_per_s": "uops/s: reset GEMMs, the slower config",
           "alu_uops_per_s": "uops/s: an ALU loop on one accumulator, the slower config"}


def _setup(config: str, uops: list[tuple[int, int, int]]):
    """A builder with random inp/wgt/acc SRAMs loaded and ``uops`` in the uop SRAM."""
    b = BundleBuilder(config)
    c = b.config
    rng = np.random.default_rng(0)
    n_in, n_wgt, n_acc = min(c.depth("inp"), 256), min(c.depth("wgt"), 256), min(c.depth("acc"), 256)
    x = b.array("x", "inp", rng.integers(-128, 128, size=(n_in, c.batch, c.block_in)))
    w = b.array("w", "wgt", rng.integers(-128, 128, size=(n_wgt, c.block_out, c.block_in)))
    a = b.array("a", "acc", rng.integers(-1000, 1000, size=(n_acc, c.batch, c.block_out)))
    k = b.uops("k", uops)
    b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=len(uops), x_stride=len(uops))
    b.emit("LOAD", memory_type=2, dram_base=x, y_size=1, x_size=n_in, x_stride=n_in)
    b.emit("LOAD", memory_type=3, dram_base=a, y_size=1, x_size=n_acc, x_stride=n_acc)
    b.emit("LOAD", memory_type=1, dram_base=w, y_size=1, x_size=n_wgt, x_stride=n_wgt, push_next=1)
    return b, (n_in, n_wgt, n_acc)


def workload(config: str, pattern: str, uops: int):
    """(bundle, GEMM/ALU uops) of about ``uops`` micro-ops of ``pattern``, after its loads."""
    c = BundleBuilder(config).config
    n_in, n_wgt = min(c.depth("inp"), 256), min(c.depth("wgt"), 256)
    kind = "GEMM"
    if pattern == "entry":       # 128 weight patterns (> MAX_GROUPS): one vector-matrix product per uop
        side = min(n_in - 64, 96) // 2
        width = min(c.depth("uop"), c.depth("acc"), 256)
        table = [(u, u % 64, u % min(n_wgt, 128)) for u in range(width)]
        fields = dict(iter_out=side, iter_in=side, src_factor_out=1, src_factor_in=1)
    elif pattern == "patterns":  # grouped: 32-64 weight patterns of 2 accumulators, long gathers
        side = min(n_in - 64, 96) // 2
        width = min(c.depth("uop"), c.depth("acc"), 128)
        table = [(u, u % 64, u % min(n_wgt, 64)) for u in range(width)]
        fields = dict(iter_out=side, iter_in=side, src_factor_out=1, src_factor_in=1)
    elif pattern == "reduction":  # grouped: three accumulators, one weight pattern of iter_out x iter_in terms
        table = [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
        fields = dict(iter_out=min(16383, max(1, uops // 192)), iter_in=64)
    elif pattern == "conv":      # grouped: taps x pixels in the table, oc blocks out, repeated ic in
        taps, oc = 4, 4
        pixels = min(c.depth("acc"), 256) // oc
        table = [(p, p + t, t) for t in range(taps) for p in range(pixels)]
        fields = dict(iter_out=oc, iter_in=max(1, uops // (len(table) * oc)), dst_factor_out=pixels,
                      wgt_factor_out=taps)
    elif pattern == "dense":     # dense: U outputs x Np rows, a long reduction (float64 products)
        width = 8
        rows = min(c.depth("acc"), 256) // width
        table = [(u, 0, u) for u in range(width)]
        fields = dict(iter_out=rows, iter_in=max(1, uops // (width * rows)), dst_factor_out=width, src_factor_out=1)
    elif pattern == "groups64":  # 64 weight patterns (distinct src: not dense) in a 2-step loop
        width = min(64, c.depth("acc"), n_wgt)
        table = [(u, u % n_in, u) for u in range(width)]
        fields = dict(iter_out=2, iter_in=1)
    elif pattern == "reset":
        table = [(u, 0, 0) for u in range(min(c.depth("acc"), 64))]
        fields = dict(reset=1, iter_out=max(1, uops // (64 * len(table))), iter_in=64)
    else:                        # alu: one uop on acc[0], one uop per wave, the ALU's slowest case
        kind, table = "ALU", [(0, 0, 0)]
        fields = dict(iter_out=min(16383, max(1, uops // 64)), iter_in=64, alu_opcode=alu.OPCODE["add"], use_imm=1,
                      imm=1)
    b, _ = _setup(config, table)
    per = fields["iter_out"] * fields["iter_in"] * len(table)
    reps = max(1, uops // per) if pattern != "groups64" else max(1, uops // 4096)
    for r in range(reps):
        b.emit(kind, pop_prev=int(r == 0), uop_end=len(table), **fields)
    return b.build(), reps * per


def measure(run, bundle) -> float:
    start = time.process_time()
    run(bundle)
    return time.process_time() - start


def priced_seconds(bundle) -> float:
    """The estimate of vdla_sim/cost.py for the whole program, in seconds."""
    return sum(cost.units(bundle, prepare(bundle).insns)) / limits.SIM_WORK_PER_S


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="tiny,osdi18")
    parser.add_argument("--uops", type=int, default=400_000, help="micro-ops per simulator loop")
    parser.add_argument("--ref-uops", type=int, default=20_000, help="micro-ops per reference loop")
    record.add_option(parser)
    args = parser.parse_args()
    load_before = record.load_average()
    datapath.PlanCache.get = lambda self, key: None  # every instruction planned anew: the worst case
    ref = lambda bundle: execute(bundle, max_cycles=UNBOUNDED, max_uops=UNBOUNDED)
    sim = lambda bundle: simulate(bundle, max_cycles=UNBOUNDED, max_work=UNBOUNDED)
    print(f"CPU seconds; load average before {load_before}")
    rates: dict[tuple[str, str], tuple[float, float, int]] = {}
    for config in args.configs.split(","):
        for kind, pattern in (("GEMM", "reduction"), ("ALU", "alu")):
            bundle, n = workload(config, pattern, args.ref_uops)
            print(f"{config:<8} reference {kind:<4} {n:>10,} uops {n / measure(ref, bundle):>14,.0f} uops/s", flush=True)
        for pattern in ("entry", "patterns", "reduction", "conv", "dense", "groups64", "reset", "alu"):
            if pattern == "entry" and BundleBuilder(config).config.depth("acc") <= gemm.MAX_GROUPS:
                print(f"{config:<8} simulator entry     (none: {config} has too few accumulators for more than "
                      f"{gemm.MAX_GROUPS} weight patterns)")
                continue
            want = args.uops // 10 if pattern in ("entry", "alu") else args.uops
            bundle, n = workload(config, pattern, want)
            seconds = measure(sim, bundle)
            macs = bundle.config.batch * bundle.config.block_in * bundle.config.block_out
            insns = sum(1 for i in prepare(bundle).insns if i.kind in ("GEMM", "ALU"))
            rates[config, pattern] = (n / seconds, n * macs / seconds, insns / seconds)
            print(f"{config:<8} simulator {pattern:<9} {n:>10,} uops {n / seconds:>14,.0f} uops/s "
                  f"{n * macs / seconds:>16,.0f} MAC/s {insns / seconds:>10,.0f} insns/s  "
                  f"priced / measured {priced_seconds(bundle) / seconds:6.2f}", flush=True)
    configs = args.configs.split(",")
    products = ("patterns", "reduction", "conv", "dense")
    figures = {
        "product_uops_per_s_tiny": min(rates["tiny", p][0] for p in products) if "tiny" in configs else math.nan,
        "product_macs_per_s_osdi18": min(rates["osdi18", p][1] for p in products) if "osdi18" in configs else math.nan,
        "entry_macs_per_s_osdi18": rates["osdi18", "entry"][1] if "osdi18" in configs else math.nan,
        "groups64_insns_per_s": min(rates[c, "groups64"][2] for c in configs),
        "reset_uops_per_s": min(rates[c, "reset"][0] for c in configs),
        "alu_uops_per_s": min(rates[c, "alu"][0] for c in configs)}
    for name, value in figures.items():
        print(f"{name:<28} {value:>16,.0f}   {FIGURES[name]}")
    if args.record:
        record.write("work_bounds", FIGURES, {k: round(v) for k, v in figures.items()}, load_before)


if __name__ == "__main__":
    main()
