"""The simulator's grouped GEMM numerics (vdla_sim/gemm.py) vs a plain numpy loop over the uops
(the reference semantics' formula: acc = wrap32(acc + inp[src] @ wgt[wgt]^T), one uop at a time
in loop order), on Hypothesis-generated loop nests and SRAM contents, and at the bounds of the
float32 exactness argument and of the int32 wrap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla_hw import isa
from vdla_hw.config import load_config
from vdla_hw.semantics import wrap32
from vdla_sim import gemm

INT32 = np.iinfo(np.int32)


def reference(insn, uops, inp, wgt, acc):
    """acc after the loop, uop by uop in execution order (plain numpy, int64 then wrap32)."""
    acc = acc.copy()
    for i in range(insn.iter_out):
        for j in range(insn.iter_in):
            for d0, s0, w0 in uops:
                d = d0 + i * insn.dst_factor_out + j * insn.dst_factor_in
                s = s0 + i * insn.src_factor_out + j * insn.src_factor_in
                w = w0 + i * insn.wgt_factor_out + j * insn.wgt_factor_in
                product = inp[s].astype(np.int64) @ wgt[w].astype(np.int64).T
                acc[d] = wrap32(acc[d].astype(np.int64) + product)
    return acc


def planned(insn, uops, config, inp, wgt, acc):
    """acc after the loop as the simulator computes it (one plan, its products added mod 2**32)."""
    plan = gemm.GemmPlan(insn, np.asarray(uops, dtype=np.int64).reshape(-1, 3), config)
    acc = acc.copy()
    acc[plan.out] = acc[plan.out] + plan.products(inp, wgt)
    return acc, plan.kind


def srams(config, rng, n_inp, n_wgt, n_acc, values="random"):
    b, bi, bo = config.batch, config.block_in, config.block_out
    if values == "extreme":  # products of 2**14 and one odd 127 * 127 per tap, accumulators near the int32 top
        inp = np.full((n_inp, b, bi), -128, np.int8)
        wgt = np.full((n_wgt, bo, bi), -128, np.int8)
        inp[..., 0] = wgt[..., 0] = 127
        acc = np.full((n_acc, b, bo), INT32.max - 5, np.int32)
    else:
        inp = rng.integers(-128, 128, size=(n_inp, b, bi), dtype=np.int8)
        wgt = rng.integers(-128, 128, size=(n_wgt, bo, bi), dtype=np.int8)
        acc = rng.integers(INT32.min, INT32.max, size=(n_acc, b, bo), dtype=np.int32, endpoint=True)
    return inp, wgt, acc


@st.composite
def loops(draw):
    """(config, GEMM instruction, uop rows, SRAM contents): small SRAMs, any factors."""
    config = load_config(draw(st.sampled_from(("tiny", "osdi18", "vta-pynq"))))
    n_uops = draw(st.integers(1, 12))
    io, ii = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    factors = {f"{a}_factor_{b}": draw(st.integers(0, 4)) for a in ("dst", "src", "wgt") for b in ("out", "in")}
    regular = draw(st.booleans())  # a convolution-like table (shared sources or weights) or any uops
    if regular:
        taps, outs = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        uops = [(o, draw(st.integers(0, 3)) + t, t) for o in range(outs) for t in range(taps)][:n_uops]
    else:
        uops = [(draw(st.integers(0, 15)), draw(st.integers(0, 15)), draw(st.integers(0, 15))) for _ in range(n_uops)]
    top = {k: max(u[c] for u in uops) + (io - 1) * factors[f"{k}_factor_out"] + (ii - 1) * factors[f"{k}_factor_in"] + 1
           for c, k in enumerate(("dst", "src", "wgt"))}
    insn = isa.Insn("GEMM", uop_bgn=0, uop_end=len(uops), iter_out=io, iter_in=ii, **factors)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = draw(st.sampled_from(("random", "extreme")))
    return config, insn, uops, srams(config, rng, top["src"], top["wgt"], top["dst"], values)


@settings(max_examples=300, deadline=None)
@given(loops())
def test_grouped_gemm_equals_the_uop_loop(case):
    config, insn, uops, (inp, wgt, acc) = case
    got, _ = planned(insn, uops, config, inp, wgt, acc)
    assert np.array_equal(got, reference(insn, uops, inp, wgt, acc))


def conv_loop(taps: int, pixels: int, blocks: int):
    """A convolution's loop: ``pixels`` outputs x ``taps`` uops each (sources shifted per tap),
    iter_out over ``blocks`` output-channel blocks (dst and weights move, sources do not)."""
    uops = [(p, p + t, t) for p in range(pixels) for t in range(taps)]
    insn = isa.Insn("GEMM", uop_end=len(uops), iter_out=blocks, iter_in=1, dst_factor_out=pixels,
                    wgt_factor_out=taps)
    return insn, uops, (pixels + taps, blocks * taps, blocks * pixels)


@pytest.mark.parametrize("case, kind", [
    ("dense", "dense"), ("conv", "grouped"), ("irregular", "entry")])
def test_every_plan_kind_equals_the_uop_loop(case, kind):
    config = load_config("osdi18")
    rng = np.random.default_rng(7)
    if case == "dense":  # blocked GEMM: reduction over iter_out, rows over iter_in, columns over uops
        uops = [(u, 0, 3 * u) for u in range(4)]
        insn = isa.Insn("GEMM", uop_end=4, iter_out=3, iter_in=5, dst_factor_in=4, src_factor_out=1,
                        src_factor_in=3, wgt_factor_out=1)
        sizes = (15, 12, 20)
    elif case == "conv":
        insn, uops, sizes = conv_loop(9, 20, 3)
    else:  # every accumulator its own weight sequence: more groups than MAX_GROUPS
        n = gemm.MAX_GROUPS + 10
        uops = [(d, int(rng.integers(0, 8)), int(rng.integers(0, 30))) for d in range(n) for _ in range(3)]
        insn = isa.Insn("GEMM", uop_end=len(uops), iter_out=1, iter_in=1)
        sizes = (8, 30, n)
    inp, wgt, acc = srams(config, rng, *sizes)
    got, planned_kind = planned(insn, uops, config, inp, wgt, acc)
    assert planned_kind == kind
    assert np.array_equal(got, reference(insn, uops, inp, wgt, acc))


@pytest.mark.parametrize("taps", [gemm.F32_EXACT_TERMS // 16, gemm.F32_EXACT_TERMS // 16 + 1, 200])
def test_longest_float32_sums_and_float64_beyond_are_exact(taps):
    """osdi18 (BLOCK_IN 16): 64 taps = 1024 terms (sum 16,760,896 < 2**24), the float32 limit;
    65 taps (an odd sum past 2**24, which float32 cannot hold) go to float64. Accumulators start
    near the int32 top, so every sum wraps."""
    config = load_config("osdi18")
    insn, uops, sizes = conv_loop(taps, 6, 2)
    inp, wgt, acc = srams(config, None, *sizes, values="extreme")
    plan = gemm.GemmPlan(insn, np.asarray(uops, dtype=np.int64), config)
    assert plan.kind == "grouped"
    assert plan.ftypes == [gemm.float_type(taps * 16)]
    assert gemm.float_type(taps * 16) == (np.float32 if taps * 16 <= gemm.F32_EXACT_TERMS else np.float64)
    got, _ = planned(insn, uops, config, inp, wgt, acc)
    want = reference(insn, uops, inp, wgt, acc)
    assert np.array_equal(got, want)
    assert int(want.reshape(-1)[0]) == int(wrap32(np.int64(INT32.max - 5 + taps * (127 * 127 + 15 * 2**14))))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12), st.integers(1, 4), st.integers(0, 2**31))
def test_unique_rows_equals_numpy_unique(n, k, values, seed):
    rows = np.random.default_rng(seed).integers(0, values, size=(n, k)).astype(np.int64)
    patterns, inverse = gemm.unique_rows(rows)
    want, want_inverse = np.unique(rows, axis=0, return_inverse=True)
    assert np.array_equal(patterns, want) and np.array_equal(inverse, want_inverse.reshape(-1))


def test_unique_rows_survives_hash_collisions(monkeypatch):
    """Every row hashing alike (zero weights) must still give numpy's exact answer."""
    monkeypatch.setattr(gemm, "_row_weights", lambda k: np.zeros(k, dtype=np.int64))
    rows = np.array([[3, 1], [0, 2], [3, 1], [0, 0]], dtype=np.int64)
    patterns, inverse = gemm.unique_rows(rows)
    assert patterns.tolist() == [[0, 0], [0, 2], [3, 1]] and inverse.tolist() == [2, 1, 2, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1 << 20), max_size=60))
def test_distinct_equals_numpy_unique(values):
    index = np.asarray(values, dtype=np.int64)
    got, want = gemm.distinct(index), np.unique(index)
    assert np.array_equal(got, want) and got.dtype == want.dtype
