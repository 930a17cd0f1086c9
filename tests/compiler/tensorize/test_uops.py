"""Micro-op kernels: no GEMM in any compiled program breaks the accumulator hazard rule
(checked with the timing contract's own rule), and kernels address the right elements."""

import numpy as np
from hypothesis import given, settings, strategies as st

from compiler.accel import compile_layer
from compiler.layers import Conv2D, Dense
from vdla_hw import isa, program, timing


def gemm_dsts(bundle):
    table = isa.decode_uops(bundle.read("uops"), bundle.config)
    for insn in bundle.insns():
        if insn.kind == "GEMM" and not insn.reset:
            dst, _, _ = program.loop_indices(insn, table[insn.uop_bgn:insn.uop_end])
            yield dst


@settings(max_examples=25)
@given(h=st.integers(1, 8), w=st.integers(1, 8), k=st.sampled_from([1, 3, 5]), ic=st.integers(1, 20),
       oc=st.integers(1, 20), vthreads=st.integers(1, 2), config=st.sampled_from(["tiny", "vta-pynq"]))
def test_compiled_gemms_have_no_accumulator_hazard(h, w, k, ic, oc, vthreads, config):
    layer = Conv2D(h=h, w=w, ic=ic, oc=oc, k=k, pad=k // 2)
    for dst in gemm_dsts(compile_layer(layer, config, vthreads=vthreads)):
        assert timing.gemm_hazard(dst) == -1


def test_single_pixel_dense_uses_scratch_accumulators():
    bundle = compile_layer(Dense(n=1, ic=8, oc=4), "tiny", schedule="th=1,tw=1,toc=1,tic=2")
    for dst in gemm_dsts(bundle):
        assert len(set(dst.tolist())) >= 3 and timing.gemm_hazard(dst) == -1


def test_gemm_hazard_finds_the_first_repeat_at_any_distance():
    assert timing.gemm_hazard(np.array([0, 1, 2, 0, 1, 2])) == -1
    assert timing.gemm_hazard(np.array([0, 1, 0])) == 2
    assert timing.gemm_hazard(np.array([0, 1, 2, 2])) == 3
    assert timing.gemm_hazard(np.array([0, 1, 0, 0])) == 2  # a distance-2 repeat before a distance-1 one
