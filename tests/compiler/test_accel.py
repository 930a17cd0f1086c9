"""Compiled conv2d / dense layers, run by the simulator (and the reference semantics), against the
the project's numpy reference (compiler.quantize.reference): bit-exact, race-free, balanced tokens."""

import csv
from importlib import resources

import numpy as np
import pytest
from hypothesis import assume, event, given, settings, strategies as st

import vdla_sim
from compiler.accel import compile_layer, layer_output, random_tensors
from compiler.layers import Conv2D, Dense, LayerError
from vdla_hw.semantics import execute

from compiler.quantize import reference as ref

PRESETS = ("osdi18", "vta-pynq", "tiny")


def expected(layer, t):
    if isinstance(layer, Dense):
        return ref.dense(t["input"], t["weight"], t["bias"], shift=layer.shift, lo=layer.lo, hi=layer.hi)
    return ref.conv2d(t["input"], t["weight"], t["bias"], stride=layer.stride, pad=layer.pad, shift=layer.shift,
                      lo=layer.lo, hi=layer.hi)


def run_sim(layer, config, seed=0, **kw):
    t = random_tensors(layer, seed)
    bundle = compile_layer(layer, config, tensors=t, **kw)
    result = vdla_sim.simulate(bundle)  # raises on races, deadlocks, hazards, bad accesses
    assert not any(result.tokens_left.values()), result.tokens_left
    return bundle, layer_output(bundle, result.dram), expected(layer, t)


def resnet18_convs():
    """Distinct (IC, OC, K, stride, pad) of ResNet-18's convolutions except the 3-channel stem."""
    text = resources.files("compiler").joinpath("data/resnet18_layers.csv").read_text()
    rows = list(csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#")))
    seen = {}
    for r in rows:
        if r["name"] in ("conv1", "fc"):
            continue
        key = tuple(int(r[k]) for k in ("IC", "OC", "K", "stride", "pad"))
        seen.setdefault(key, r["name"])
    return [(name, *key) for key, name in seen.items()]


def test_conv2d_reference_semantics_vs_numpy():
    for config, layer in (("tiny", Conv2D(h=5, w=6, ic=5, oc=6, k=3, stride=1, pad=1, shift=4, relu=True)),
                          ("tiny", Conv2D(h=3, w=3, ic=4, oc=4, k=1, pad=3, shift=3)),
                          ("osdi18", Conv2D(h=4, w=5, ic=20, oc=17, k=3, stride=2, pad=1, shift=7))):
        t = random_tensors(layer, 3)
        bundle = compile_layer(layer, config, tensors=t, vthreads=2)
        result = execute(bundle)
        assert (layer_output(bundle, result.dram) == expected(layer, t)).all()
        assert not any(result.tokens_left.values())


@pytest.mark.parametrize("name, ic, oc, k, stride, pad", resnet18_convs(), ids=lambda v: str(v))
@pytest.mark.parametrize("config", ["osdi18", "vta-pynq"])
def test_resnet18_conv_small_input_sim_vs_numpy(config, name, ic, oc, k, stride, pad):
    layer = Conv2D(name=name, h=7, w=7, ic=ic, oc=oc, k=k, stride=stride, pad=pad, shift=10, relu=True)
    for vthreads in (1, 2):
        _, got, want = run_sim(layer, config, vthreads=vthreads)
        assert (got == want).all(), f"{name} on {config} with {vthreads} thread(s)"


@pytest.mark.parametrize("name, ic, oc, k, stride, pad", [c for c in resnet18_convs() if c[1] <= 64],
                         ids=lambda v: str(v))
def test_resnet18_conv_tiny_preset_sim_vs_numpy(name, ic, oc, k, stride, pad):
    layer = Conv2D(name=name, h=4, w=5, ic=ic, oc=oc, k=k, stride=stride, pad=pad, shift=10)
    _, got, want = run_sim(layer, "tiny", vthreads=2)
    assert (got == want).all()


@pytest.mark.parametrize("config", PRESETS)
def test_dense_sim_vs_numpy(config):
    for layer in (Dense(n=1, ic=40, oc=35, shift=6, relu=True), Dense(n=3, ic=17, oc=5, shift=4)):
        for vthreads in (1, 2):
            _, got, want = run_sim(layer, config, vthreads=vthreads)
            assert got.shape == layer.output_shape and (got == want).all()


def test_resnet18_fc_sim_vs_numpy():
    layer = Dense(name="fc", n=1, ic=512, oc=1000, shift=9)
    _, got, want = run_sim(layer, "vta-pynq")
    assert (got == want).all()


@settings(max_examples=60)
@given(config=st.sampled_from(PRESETS), h=st.integers(1, 11), w=st.integers(1, 11), k=st.sampled_from([1, 3, 5, 7]),
       stride=st.integers(1, 2), pad=st.integers(0, 3), ic=st.integers(1, 37), oc=st.integers(1, 37),
       shift=st.integers(0, 14), relu=st.booleans(), vthreads=st.integers(1, 3), seed=st.integers(0, 9))
def test_conv2d_generated_shapes_sim_vs_numpy(config, h, w, k, stride, pad, ic, oc, shift, relu, vthreads, seed):
    assume(h + 2 * pad >= k and w + 2 * pad >= k)
    layer = Conv2D(h=h, w=w, ic=ic, oc=oc, k=k, stride=stride, pad=pad, shift=shift, relu=relu)
    try:
        _, got, want = run_sim(layer, config, seed, vthreads=vthreads)
    except LayerError as err:  # e.g. a 7x7 kernel with many channels and 3 threads on tiny
        assert "schedule" in str(err) and config == "tiny"
        event("no schedule fits tiny")
        return
    assert (got == want).all()


@settings(max_examples=15)
@given(h=st.integers(2, 9), w=st.integers(2, 9), k=st.sampled_from([1, 3]), stride=st.integers(1, 2),
       ic=st.integers(1, 40), oc=st.integers(1, 40), vthreads=st.integers(2, 4))
def test_latency_hiding_never_changes_results(h, w, k, stride, ic, oc, vthreads):
    layer = Conv2D(h=h, w=w, ic=ic, oc=oc, k=k, stride=stride, pad=k // 2, shift=5)
    t = random_tensors(layer, 1)
    outs = []
    for vt in (1, vthreads):
        try:
            bundle = compile_layer(layer, "tiny", tensors=t, vthreads=vt)
        except LayerError:
            return
        outs.append(layer_output(bundle, vdla_sim.simulate(bundle).dram))
    assert (outs[0] == outs[1]).all()


def test_batch_of_two_conv_sim_vs_numpy():
    layer = Conv2D(n=2, h=5, w=4, ic=18, oc=20, k=3, pad=1, shift=6)
    _, got, want = run_sim(layer, "osdi18", vthreads=2)
    assert (got == want).all()


def test_fixed_schedule_is_used():
    layer = Conv2D(h=8, w=8, ic=32, oc=32, k=3, pad=1, shift=6)
    bundle, got, want = run_sim(layer, "vta-pynq", schedule="th=3,tw=8,toc=1,tic=2,vthreads=2,order=oc")
    assert bundle.meta["schedule"] == "th=3,tw=8,toc=1,tic=2,vthreads=2,order=oc"
    assert (got == want).all()


def test_bad_tensors_name_layer_and_field():
    layer = Conv2D(name="convX", h=4, w=4, ic=3, oc=2, k=3)
    t = random_tensors(layer)
    t["weight"] = t["weight"][:, :2]
    with pytest.raises(LayerError, match=r"layer convX: weight: shape"):
        compile_layer(layer, "tiny", tensors=t)
    t = random_tensors(layer)
    t["input"] = t["input"].astype(np.int32) * 300
    with pytest.raises(LayerError, match=r"layer convX: input: values outside the int8"):
        compile_layer(layer, "tiny", tensors=t)


@pytest.mark.parametrize("k", [5, 7])
def test_large_kernel_on_tiny_splits_kernel_rows_sim_vs_numpy(k):
    layer = Conv2D(h=9, w=8, ic=7, oc=6, k=k, stride=2, pad=3, shift=7, relu=True)
    bundle, got, want = run_sim(layer, "tiny", vthreads=2)
    assert "tky=1" in bundle.meta["schedule"] and (got == want).all()


@pytest.mark.parametrize("ic,oc", [(2048, 10), (4096, 40)])
def test_wide_dense_layers_are_tiled_so_every_field_fits(ic, oc):
    """ResNet-50's and VGG's classifiers: the reduction is split over input-channel tiles."""
    layer = Dense(name="fc", n=1, ic=ic, oc=oc, shift=12)
    bundle, got, want = run_sim(layer, "osdi18")
    np.testing.assert_array_equal(got, want)
    assert "tic=" in bundle.meta["schedule"] and int(bundle.meta["schedule"].split("tic=")[1].split(",")[0]) < ic // 16


def test_clip_bounds_are_applied_on_the_accelerator():
    """A fused Clip (e.g. ReLU6 in codes -128..(6 * 2**frac - 128)) narrows the ALU's MAX/MIN."""
    layer = Conv2D(name="c", h=6, w=6, ic=16, oc=16, k=3, pad=1, shift=9, clip_lo=-100, clip_hi=40)
    _, got, want = run_sim(layer, "osdi18")
    np.testing.assert_array_equal(got, want)
    assert got.min() >= -100 and got.max() <= 40
