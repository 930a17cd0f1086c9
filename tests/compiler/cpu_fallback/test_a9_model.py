"""Cortex-A9 time model (modelled, not measured): calibration and its Fig. 21 comparison."""

import dataclasses

import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback import a9_model, resnet18


def test_calibration_reproduces_the_stem_conv_time():
    params = a9_model.calibrate(resnet18.stem_spec(), 0.151)
    assert 0 < params.efficiency <= 1
    assert a9_model.seconds(resnet18.stem_spec(), params) == pytest.approx(0.151, rel=1e-12)
    assert a9_model.kernel_time(resnet18.stem_spec(), params).bound == "compute"


def test_fig21_comparison_rows():
    params, rows = resnet18.fig21_comparison()
    table = {group: (modelled, paper) for group, modelled, paper, _ in rows}
    assert set(table) == {"layer0", "conv", "other", "total"}
    assert table["layer0"][0] == pytest.approx(0.151)
    assert table["conv"][1] == 2.867 and table["other"][1] == 0.232
    # The model is a prediction, not a fit: it lands within a factor of two on the other convs.
    assert 0.5 < table["conv"][0] / table["conv"][1] < 2
    assert table["total"][0] == pytest.approx(sum(table[g][0] for g in ("layer0", "conv", "other")))


def test_resnet18_workload_matches_the_layer_table():
    workload = resnet18.cpu_workload()
    macs = sum(s.work().macs for s in workload["layer0"] + workload["conv"])
    # Table total 1,813.56 M MAC counts padding taps; the kernels skip them.
    assert 0.9 * 1813.56e6 < macs <= 1813.56e6
    adds = [s for s in workload["other"] if s.family == "add"]
    assert sum(s.size for s in adds) == 752_640


def test_memory_bound_kernels_use_the_bandwidth_roof():
    params = a9_model.A9Params(efficiency=1.0)
    copy = cf.UnpackSpec(n=1, c=64, h=56, w=56)
    timing = a9_model.kernel_time(copy, params)
    assert timing.bound == "memory"
    assert timing.seconds == pytest.approx(params.call_overhead_s + 2 * 64 * 56 * 56
                                           / params.dram_bytes_per_s)


def test_model_time_grows_with_work():
    small = cf.Conv2dSpec(n=1, c=16, h=14, w=14, oc=16, kh=3, kw=3, pad=1)
    large = dataclasses.replace(small, oc=32)
    assert a9_model.seconds(large) > a9_model.seconds(small)


def test_model_rejects_bad_parameters():
    with pytest.raises(ValueError, match="A9Params: clock_hz must be positive"):
        a9_model.A9Params(clock_hz=0)
    with pytest.raises(ValueError, match="efficiency is a fraction"):
        a9_model.A9Params(efficiency=2)
    with pytest.raises(ValueError, match="would need"):
        a9_model.calibrate(resnet18.stem_spec(), 1e-3)
