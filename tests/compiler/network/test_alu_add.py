"""Residual add on the ALU against numpy, on every preset, through the simulator."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vdla_sim
from compiler.network.alu_add import add_output, compile_add
from vdla_hw.config import load_config
from vdla_hw.semantics import execute


def numpy_add(a, b, a_shift, b_shift, shift, relu):
    total = (a.astype(np.int64) << a_shift) + (b.astype(np.int64) << b_shift)
    return np.clip(total >> shift, 0 if relu else -128, 127).astype(np.int8)


@pytest.mark.parametrize("preset", ["tiny", "osdi18", "vta-pynq"])
@settings(max_examples=8)
@given(data=st.data())
def test_alu_add_vs_numpy(preset, data):
    c, h, w = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    a_shift, b_shift = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    shift, relu = data.draw(st.integers(0, 4)), data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a, b = (rng.integers(-128, 128, (1, c, h, w), dtype=np.int8) for _ in range(2))
    bundle = compile_add(a, b, a_shift=a_shift, b_shift=b_shift, shift=shift, relu=relu, config=load_config(preset))
    np.testing.assert_array_equal(add_output(bundle, vdla_sim.simulate(bundle).dram),
                                  numpy_add(a, b, a_shift, b_shift, shift, relu))


def test_alu_add_reference_semantics_agree_on_many_tiles():
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-128, 128, (1, 8, 9, 9), dtype=np.int8) for _ in range(2))
    bundle = compile_add(a, b, a_shift=1, b_shift=2, shift=2, relu=False, config=load_config("tiny"))
    assert sum(i.kind == "STORE" for i in bundle.insns()) > 2  # several double-buffered tiles
    np.testing.assert_array_equal(add_output(bundle, execute(bundle).dram), numpy_add(a, b, 1, 2, 2, False))
