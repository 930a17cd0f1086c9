"""Fixed GEMM programs whose accumulators repeat across sweeps of the micro-op list (the repeats
the hazard rule allows, docs/spec.md section 5) and ones that repeat within a sweep (refused).

A sweep is one (i, j) iteration of a GEMM's loop nest: one pass over its uop list. Each program
here loads a bias into the accumulators, runs one non-reset GEMM whose every uop reads its own
input and weight, and stores the accumulators; ``expected`` is what a plain Python loop over the
flattened nest gives (acc[dst] += inp[src] @ wgt[wgt]^T in loop order, low bytes to OUT).
"""

from __future__ import annotations

import numpy as np

from vdla_hw import isa
from vdla_hw.bundle import BundleBuilder

INP, WGT, ACC, OUT, UOP = (isa.MEM_TYPES.index(m) for m in ("inp", "wgt", "acc", "out", "uop"))  # memory_type values

# name: (uop dst fields, iter_out, iter_in, dst_factor_out, dst_factor_in) -- what repeats where
SWEEP_REPEATS = {
    "sum_over_iter_in": ([0], 1, 5, 0, 0),          # one accumulator summed over 5 inputs: distance 1
    "d2_across_sweeps": ([0, 1], 1, 3, 0, 0),       # 0 1 | 0 1 | 0 1: distance 2 across each boundary
    "d1_across_sweeps": ([0, 1], 1, 3, 0, 1),       # 0 1 | 1 2 | 2 3: distance 1 across each boundary
    "d1_across_iter_out": ([0, 1], 3, 2, 1, 0),     # 0 1 | 0 1 || 1 2 | 1 2: distance 1 at the iter_out step
    "d2_across_iter_out": ([0], 3, 2, 0, 1),        # 0 | 1 || 0 | 1: distance 2 across each iter_out step
    "rotation_of_three": ([2, 0, 1], 2, 3, 0, 1),   # 2 0 1 | 3 1 2 | 4 2 3: distance 2 across sweeps
    "no_repeat_within_3": ([0, 1, 2], 2, 2, 0, 0),  # distance 3: never a hazard (control)
}
# name: (uop dst fields, iter_out, iter_in, dst_factor_out, dst_factor_in, first bad uop, distance)
SWEEP_HAZARDS = {
    "d1_in_sweep": ([0, 0], 1, 1, 0, 0, 1, 1),
    "d2_in_sweep": ([0, 1, 0], 1, 1, 0, 0, 2, 2),
    "d2_in_sweep_of_a_sum": ([3, 1, 4, 1], 2, 3, 0, 0, 3, 2),   # legal across sweeps, not inside one
    "d1_in_sweep_late": ([0, 1, 2, 3, 3], 1, 2, 0, 8, 4, 1),
}


def sweep_program(preset: str, dsts, iter_out: int, iter_in: int, dst_factor_out: int, dst_factor_in: int,
                  *, uop_base: int = 3, seed: int = 7, reset: bool = False):
    """(bundle, expected) of one GEMM with uop dst fields ``dsts`` (placed at uop SRAM address
    ``uop_base``) over the loop ``iter_out`` x ``iter_in`` with the given dst factors; every
    flattened uop reads its own input and weight element; ``reset``: a reset GEMM (every touched
    accumulator becomes 0; ``dsts`` should cover 0..max); ``expected``: {"out": ...}."""
    b = BundleBuilder(preset)
    c = b.config
    rng = np.random.default_rng(seed)
    nu = len(dsts)
    n_src, n_wgt = nu * iter_in * iter_out, nu * iter_in
    assert n_src <= c.depth("inp") and n_wgt <= c.depth("wgt"), "program too large for the preset"
    n_acc = max(dsts) + (iter_out - 1) * dst_factor_out + (iter_in - 1) * dst_factor_in + 1
    inp = rng.integers(-128, 128, size=(n_src, c.batch, c.block_in))
    wgt = rng.integers(-128, 128, size=(n_wgt, c.block_out, c.block_in))
    bias = rng.integers(-1000, 1000, size=(n_acc, c.batch, c.block_out))
    a_inp, a_wgt, a_bias = b.array("inp", "inp", inp), b.array("wgt", "wgt", wgt), b.array("bias", "acc", bias)
    dst = b.alloc("out", "out", n_acc)
    # uop u reads input u + j*nu + i*nu*iter_in and weight u + j*nu: all distinct within (i, j)
    k = b.uops("k", [(0, 0, 0)] * uop_base + [(d, u, u) for u, d in enumerate(dsts)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=uop_base + nu, x_stride=uop_base + nu)
    b.emit("LOAD", memory_type=ACC, dram_base=a_bias, y_size=1, x_size=n_acc, x_stride=n_acc)
    b.emit("LOAD", memory_type=WGT, dram_base=a_wgt, y_size=1, x_size=n_wgt, x_stride=n_wgt)
    b.emit("LOAD", memory_type=INP, dram_base=a_inp, y_size=1, x_size=n_src, x_stride=n_src, push_next=1)
    b.emit("GEMM", pop_prev=1, reset=int(reset), uop_bgn=uop_base, uop_end=uop_base + nu, iter_out=iter_out, iter_in=iter_in,
           dst_factor_out=dst_factor_out, dst_factor_in=dst_factor_in, src_factor_out=nu * iter_in,
           src_factor_in=nu, wgt_factor_out=0, wgt_factor_in=nu)
    b.emit("LOAD", memory_type=ACC, push_next=1)  # x_size 0: carries the compute -> store token
    b.emit("STORE", memory_type=OUT, pop_prev=1, push_prev=1, dram_base=dst, y_size=1, x_size=n_acc, x_stride=n_acc)
    b.emit("FINISH", pop_next=1)
    acc = bias.astype(np.int64)
    if reset:
        acc[:] = 0
    for i in range(iter_out):
        for j in range(iter_in):
            for u, d in enumerate(dsts):
                a = d + i * dst_factor_out + j * dst_factor_in
                s, w = u + j * nu + i * nu * iter_in, u + j * nu
                if not reset:
                    acc[a] = (acc[a] + inp[s].astype(np.int64) @ wgt[w].T.astype(np.int64)) % (1 << 32)
    return b.build(), {"out": acc.astype(np.uint32).astype(np.uint8).view(np.int8)}


def sweep_corpus(preset: str) -> list[tuple[str, object]]:
    """The allowed programs of SWEEP_REPEATS, then those of SWEEP_HAZARDS (which run with
    ``simulate(..., allow_vta_hazards=True)``: the machine computes them, VTA's pipeline would
    not), as (name, bundle)."""
    return [(f"sweep_{name}", sweep_program(preset, *spec)[0]) for name, spec in SWEEP_REPEATS.items()] + \
        [(f"hazard_{name}", sweep_program(preset, *spec[:5])[0]) for name, spec in SWEEP_HAZARDS.items()]
