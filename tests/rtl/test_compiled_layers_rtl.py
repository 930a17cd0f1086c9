"""Compiled layers on the RTL: the compiler's bundles (convolutions with and without virtual
threads, a dense layer, a residual add on the ALU) give the simulator's image and cycle count
exactly, and the layer output equals plain numpy."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.accel import compile_layer, layer_output, random_tensors
from compiler.layers import Conv2D, Dense
from compiler.network.alu_add import compile_add
from compiler.quantize import reference as quant_ref
from vdla_hw.config import load_config
from vdla_hw.rtl.compare import diverge
from vdla_sim import simulate

pytestmark = pytest.mark.rtl

LAYERS = {
    "conv3x3_s1_vt1": (Conv2D(name="a", h=6, w=5, ic=6, oc=5, k=3, stride=1, pad=1, shift=7, relu=True), 1),
    "conv3x3_s1_vt2": (Conv2D(name="b", h=6, w=5, ic=6, oc=5, k=3, stride=1, pad=1, shift=7, relu=True), 2),
    "conv1x1_s2": (Conv2D(name="c", h=7, w=7, ic=8, oc=4, k=1, stride=2, pad=0, shift=5, relu=False), 2),
    "conv5x5_p2": (Conv2D(name="d", h=5, w=5, ic=3, oc=4, k=5, stride=1, pad=2, shift=8, relu=False), 1),
    "dense": (Dense(name="e", n=1, ic=12, oc=7, shift=6, relu=False), 1),
}


@pytest.fixture(scope="module")
def runs():
    from driver.rtl_run import run_bundles

    config = load_config("tiny")
    bundles = {name: compile_layer(layer, config, vthreads=vt, seed=3) for name, (layer, vt) in LAYERS.items()}
    rng = np.random.default_rng(9)
    a, b = (rng.integers(-128, 128, (1, 6, 3, 4), dtype=np.int8) for _ in range(2))
    bundles["alu_add"] = compile_add(a, b, a_shift=1, b_shift=0, shift=1, relu=True, config=config)
    names = list(bundles)
    sims = [simulate(bundles[n]) for n in names]
    rtls = run_bundles([bundles[n] for n in names], "verilator", budgets=[s.cycles * 2 + 1000 for s in sims])
    return {n: (bundles[n], s, r) for n, s, r in zip(names, sims, rtls)}


@pytest.mark.parametrize("name", [*LAYERS, "alu_add"])
def test_compiled_layer_rtl_matches_sim(runs, name):
    bundle, sim, rtl = runs[name]
    assert diverge(sim, rtl) is None, f"{name}: {diverge(sim, rtl)}"
    if name in LAYERS:
        layer = LAYERS[name][0]
        t = random_tensors(layer, seed=3)  # the tensors compile_layer made for seed=3
        x, w, bias = t["input"], t["weight"], t["bias"]
        if isinstance(layer, Dense):
            want = quant_ref.dense(x, w, bias, shift=layer.shift, relu=layer.relu)
        else:
            want = quant_ref.conv2d(x, w, bias, stride=layer.stride, pad=layer.pad, shift=layer.shift, relu=layer.relu)
        np.testing.assert_array_equal(layer_output(bundle, rtl.dram), want)
