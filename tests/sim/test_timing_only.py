"""The simulator's timing-only mode (``simulate(..., data=False)``) vs its data mode: the same
cycles, retire list, busy/stall/occupancy and byte and uop counters, on compiled layers and
random programs (tests/sim/test_golden.py checks both modes against pinned results too),
without computing a value."""

from __future__ import annotations

import pytest

from compiler.accel import compile_layer
from compiler.layers import Conv2D, Dense
from vdla_sim import datapath, simulate
from vdla_sim.progen import random_program

LAYERS = [Conv2D(name="c3", h=14, w=14, ic=32, oc=48, k=3, pad=1, shift=6, relu=True),
          Conv2D(name="c1s2", h=16, w=16, ic=16, oc=32, k=1, stride=2, shift=5),
          Dense(name="fc", n=1, ic=64, oc=40, shift=4)]


def same_timing(bundle):
    data, timing = simulate(bundle), simulate(bundle, data=False)
    assert timing.dram is None and data.dram is not None
    for name in ("cycles", "modules", "queue_occupancy", "bytes", "retire", "tokens_left", "last_retire",
                 "port_busy", "gemm_mac_uops"):
        assert getattr(timing, name) == getattr(data, name), name
    assert timing.counters.as_dict() == data.counters.as_dict()
    summary = data.as_dict()
    summary["dram_sha256"] = None
    assert timing.as_dict() == summary
    return timing


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("preset", ["osdi18", "tiny"])
@pytest.mark.parametrize("vthreads", [1, 2])
def test_compiled_layers_time_alike_with_and_without_data(layer, preset, vthreads):
    same_timing(compile_layer(layer, preset, vthreads=vthreads))


@pytest.mark.parametrize("seed", range(30))
def test_random_programs_time_alike_with_and_without_data(seed):
    same_timing(random_program(seed, ("osdi18", "tiny", "vta-pynq")[seed % 3], threads=1 + seed % 2))


def test_timing_only_computes_no_value(monkeypatch):
    def never(*args):
        raise AssertionError("the datapath ran")

    monkeypatch.setattr(datapath.Datapath, "execute", never)
    assert simulate(random_program(3, "tiny"), data=False).cycles > 0
    with pytest.raises(AssertionError, match="the datapath ran"):
        simulate(random_program(3, "tiny"))


def test_the_race_check_needs_the_data_mode():
    bundle = random_program(0, "tiny")
    with pytest.raises(ValueError, match="race check reads the uops"):
        simulate(bundle, data=False, race_check=True)
    assert simulate(bundle, data=False, race_check=False).cycles == simulate(bundle).cycles
