"""Simulator speed on a double-buffered blocked int8 GEMM (default 1024 x 1024 x 1024, 1 G MAC).

Prints the simulated cycles, the CPU and wall seconds of ``vdla_sim.simulate`` (arithmetic and
race check on; the least of ``--repeat`` runs), simulated cycles per CPU second (target, issue
24: >= 15 M) and per wall second, the timing-only mode's CPU seconds (``data=False``), peak
memory (max RSS of the process), the load average, and the reference interpreter's time on a
smaller GEMM for scale. Run one benchmark at a time:

    .venv/bin/python benchmarks/sim_gemm.py [--size 1024] [--config osdi18] [--repeat 3] [--record]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
import record

from vdla_hw.semantics import execute
from vdla_sim import simulate
from vdla_sim.workloads import blocked_gemm

TARGET_M_CYCLES_PER_S = 15.0  # issue 24
# what --record writes (benchmarks/record.py)
FIGURES = {"cycles_per_cpu_s": "M cycles/s: simulated cycles per CPU second, with data",
           "timing_cycles_per_cpu_s": "M cycles/s: simulated cycles per CPU second, timing only"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="M = K = N (multiple of 128)")
    parser.add_argument("--config", default="osdi18")
    parser.add_argument("--tile", default="128,8,8", help="tm,tk,tn in elements")
    parser.add_argument("--repeat", type=int, default=3, help="simulations; the least time counts")
    parser.add_argument("--ref-size", type=int, default=128, help="GEMM size for the reference interpreter")
    record.add_option(parser)
    args = parser.parse_args()
    load_before = record.load_average()
    tile = tuple(int(v) for v in args.tile.split(","))
    n = args.size

    t0 = time.perf_counter()
    bundle, expected = blocked_gemm(args.config, n, n, n, tile, buffers=2)
    build = time.perf_counter() - t0
    wall = cpu = timing_cpu = float("inf")
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = simulate(bundle)
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        c0 = time.process_time()
        timing = simulate(bundle, data=False)
        timing_cpu = min(timing_cpu, time.process_time() - c0)
    ok = bool(np.array_equal(bundle.read("c", result.dram), expected))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    small, small_expected = blocked_gemm(args.config, args.ref_size, args.ref_size, args.ref_size,
                                         (min(tile[0], args.ref_size), 2, 2), buffers=2)
    t0 = time.perf_counter()
    ref = execute(small)
    ref_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim_small = simulate(small)
    sim_small_wall = time.perf_counter() - t0
    ref_ok = bool(np.array_equal(small.read("c", ref.dram), small_expected)) and bool(
        np.array_equal(sim_small.dram, ref.dram))
    macs = n ** 3
    ref_macs = args.ref_size ** 3

    print(f"blocked int8 GEMM {n}x{n}x{n} ({macs / 1e9:.2f} G MAC), config {args.config}, tile {tile}, "
          f"double-buffered, {bundle.insn_count} instructions (built in {build:.1f} s)")
    print(f"  simulated cycles        {result.cycles}")
    print(f"  simulated time          {result.seconds * 1e3:.3f} ms at {bundle.config.CLOCK_MHZ:g} MHz, "
          f"{result.gops:.1f} GOPS, GEMM utilisation {100 * result.gemm_utilization:.1f}%")
    print(f"  CPU seconds             {cpu:.3f} (load average {os.getloadavg()[0]:.2f})")
    print(f"  cycles per CPU second   {result.cycles / cpu / 1e6:.1f} M (target >= {TARGET_M_CYCLES_PER_S:g} M)")
    print(f"  wall seconds            {wall:.3f}")
    print(f"  cycles per wall second  {result.cycles / wall / 1e6:.1f} M")
    print(f"  timing-only CPU seconds {timing_cpu:.3f} ({timing.cycles / timing_cpu / 1e6:.1f} M cycles/s, "
          f"same cycles: {timing.cycles == result.cycles})")
    print(f"  peak memory (max RSS)   {rss_mb:.0f} MB")
    print(f"  result equals numpy     {ok}")
    print(f"reference interpreter, {args.ref_size}^3 GEMM ({ref_macs / 1e6:.2f} M MAC): {ref_wall:.3f} s "
          f"({ref_macs / ref_wall / 1e6:.2f} M MAC/s); simulator on it: {sim_small_wall:.3f} s; images equal: {ref_ok}")
    print(f"  simulator vs reference throughput: {(macs / wall) / (ref_macs / ref_wall):.0f}x")
    if args.record:
        record.write("sim_gemm", FIGURES, {"cycles_per_cpu_s": round(result.cycles / cpu / 1e6, 1),
                                           "timing_cycles_per_cpu_s": round(timing.cycles / timing_cpu / 1e6, 1)},
                     load_before, {"cycles_per_cpu_s": (">=", TARGET_M_CYCLES_PER_S)})


if __name__ == "__main__":
    main()
