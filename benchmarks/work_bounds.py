"""Measured rates behind the work bounds of ``vdla_hw/limits.py``: how fast each backend gets
through the work it is bounded by, on the slowest patterns a program can ask for.

* reference semantics: micro-ops per second (GEMM loops of 3 uops, ALU loops of 1);
* simulator: micro-ops per second for a GEMM whose products cannot be batched (the "per uop"
  plan: src and wgt move along both loops) and for an ALU loop whose uops all write one
  accumulator (one uop per wave, the slowest ALU case), per configuration.

Each figure is one run of a loop of ``--uops`` micro-ops (the reference: ``--ref-uops``). Run
one benchmark at a time and say the load (``uptime``) with the figures:

    .venv/bin/python benchmarks/work_bounds.py [--configs tiny,osdi18] [--uops 400000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vdla_hw import alu
from vdla_hw.bundle import BundleBuilder
from vdla_hw.semantics import execute
from vdla_sim import simulate

UNBOUNDED = 1 << 62


def loop(config: str, kind: str, uops: int, pattern: str):
    """GEMM/ALU loops of about ``uops`` micro-ops in all, after the loads they need."""
    b = BundleBuilder(config)
    c = b.config
    rng = np.random.default_rng(0)
    n_in, n_wgt = min(c.depth("inp"), 256), min(c.depth("wgt"), 256)
    x = b.array("x", "inp", rng.integers(-128, 128, size=(n_in, c.batch, c.block_in)))
    w = b.array("w", "wgt", rng.integers(-128, 128, size=(n_wgt, c.block_out, c.block_in)))
    a = b.array("a", "acc", rng.integers(-1000, 1000, size=(4, c.batch, c.block_out)))
    if pattern == "per-uop":   # src and wgt move along both loops: one vector-matrix product per uop
        side = min(n_in, n_wgt) // 2
        width = min(c.depth("uop"), c.depth("acc"), 64)
        k = b.uops("k", [(u, 0, 0) for u in range(width)])
        fields = dict(uop_end=width, iter_out=side, iter_in=side, src_factor_out=1, src_factor_in=1,
                      wgt_factor_out=1, wgt_factor_in=1)
    elif kind == "GEMM":       # three uops on acc 0, 1, 2 (the fewest without a pipeline hazard)
        k = b.uops("k", [(0, 0, 0), (1, 0, 0), (2, 0, 0)])
        fields = dict(uop_end=3, iter_out=min(16383, max(1, uops // 192)), iter_in=64)
    else:                      # one uop on acc[0]: one uop per wave, the ALU's slowest case
        k = b.uops("k", [(0, 0, 0)])
        fields = dict(uop_end=1, iter_out=min(16383, max(1, uops // 64)), iter_in=64, alu_opcode=alu.OPCODE["add"], use_imm=1,
                      imm=1)
    b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=fields["uop_end"], x_stride=fields["uop_end"])
    b.emit("LOAD", memory_type=2, dram_base=x, y_size=1, x_size=n_in, x_stride=n_in)
    b.emit("LOAD", memory_type=3, dram_base=a, y_size=1, x_size=4, x_stride=4)
    b.emit("LOAD", memory_type=1, dram_base=w, y_size=1, x_size=n_wgt, x_stride=n_wgt, push_next=1)
    per = fields["iter_out"] * fields["iter_in"] * fields["uop_end"]
    reps = max(1, uops // per)
    for r in range(reps):
        b.emit(kind, pop_prev=int(r == 0), **fields)
    return b.build(), reps * per


def rate(run, bundle, n: int) -> float:
    start = time.perf_counter()
    run(bundle)
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="tiny,osdi18")
    parser.add_argument("--uops", type=int, default=400_000, help="micro-ops per simulator loop")
    parser.add_argument("--ref-uops", type=int, default=20_000, help="micro-ops per reference loop")
    args = parser.parse_args()
    ref = lambda bundle: execute(bundle, max_cycles=UNBOUNDED, max_uops=UNBOUNDED)
    sim = lambda bundle: simulate(bundle, max_cycles=UNBOUNDED, max_work=UNBOUNDED)
    for config in args.configs.split(","):
        for kind in ("GEMM", "ALU"):
            bundle, n = loop(config, kind, args.ref_uops, "few")
            print(f"{config:<8} reference {kind:<4} {n:>9,} uops {rate(ref, bundle, n):>12,.0f} uops/s", flush=True)
        for kind, pattern in (("GEMM", "per-uop"), ("GEMM", "few"), ("ALU", "few")):
            bundle, n = loop(config, kind, args.uops if kind == "GEMM" else args.uops // 10, pattern)
            print(f"{config:<8} simulator {kind:<4} {n:>9,} uops {rate(sim, bundle, n):>12,.0f} uops/s  ({pattern})",
                  flush=True)


if __name__ == "__main__":
    main()
