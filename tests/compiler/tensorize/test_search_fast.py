"""The fast schedule search gives the answers of the plain one: candidates ranked without a Plan
each (``ranked``), the best timed without annotated segments (``plan_estimate``), the same
schedules, estimates and programs on ResNet-18's layers as the code before the change (pinned),
one search per :func:`schedule_key`, and a disk-cache hit giving the same program."""

import hashlib
import random

import pytest
from hypothesis import given, settings, strategies as st

from compiler.accel import compile_layer
from compiler.layers import Conv2D
from compiler.tensorize import search
from compiler.tensorize.conv2d import thread_buffers, thread_segments
from compiler.tensorize.estimate import SEARCH_DRAM, estimate, plan_estimate
from compiler.tensorize.search import best_schedule, candidates, ranked, rough_cycles, schedule_key
from vdla_hw.config import Config, load_config

B32 = dict(LOG_BLOCK=5, LOG_INP_BUFF_SIZE=15, LOG_WGT_BUFF_SIZE=18, LOG_ACC_BUFF_SIZE=17)
CONFIGS = {"osdi18": {}, "b32": B32, "small": dict(LOG_INP_BUFF_SIZE=14, LOG_WGT_BUFF_SIZE=15, LOG_ACC_BUFF_SIZE=16)}

layers = st.builds(
    lambda h, w, k, stride, ic, oc, n, shift, pcs: Conv2D(h=max(h, k), w=max(w, k), ic=ic, oc=oc, k=k, stride=stride,
                                                         pad=k // 2, n=n, shift=shift, per_channel_shift=pcs),
    h=st.integers(1, 20), w=st.integers(1, 20), k=st.sampled_from([1, 3, 5]), stride=st.integers(1, 2),
    ic=st.integers(1, 48), oc=st.integers(1, 48), n=st.integers(1, 2), shift=st.sampled_from([0, 7]),
    pcs=st.booleans())


def config_of(name: str) -> Config:
    return load_config(name) if name == "tiny" else Config.from_preset("osdi18", **CONFIGS[name])


@settings(max_examples=15, deadline=None)
@given(layer=layers, config=st.sampled_from(["tiny", "osdi18", "b32", "small"]))
def test_ranked_is_the_candidates_with_their_rough_cycles(layer, config):
    cfg = config_of(config)
    assert ranked(layer, cfg, (1, 2, 3)) == [(rough_cycles(p), p.schedule) for p in candidates(layer, cfg, (1, 2, 3))]


@settings(max_examples=15, deadline=None)
@given(layer=layers, config=st.sampled_from(["tiny", "osdi18", "b32"]), seed=st.integers(0, 10 ** 6))
def test_plan_estimate_equals_the_estimate_of_the_generated_segments(layer, config, seed):
    plans = candidates(layer, config_of(config), (1, 2, 3))
    for plan in random.Random(seed).sample(plans, min(3, len(plans))):
        segments = thread_segments(plan, SEARCH_DRAM, thread_buffers(plan))
        fast, count = plan_estimate(plan)
        assert fast == estimate(segments, plan.config)
        assert count == sum(len(seg.ops) for t in segments for seg in t)


# Recorded with the search before it was made fast (commit 233c50f): ResNet-18's distinct convs at
# 32 x 32 (layer name, configuration, schedule, the search's estimate, sha256 of the instructions).
PINNED = [
    ["conv1", "osdi18", "th=8,tw=16,toc=4,tic=1,vthreads=2,order=spatial,tky=1", 62880, "a914156e2be48e14"],
    ["conv1", "b32", "th=8,tw=16,toc=2,tic=1,vthreads=1,order=oc", 48718, "6359d7826bf47f86"],
    ["layer1.0.conv1", "osdi18", "th=8,tw=8,toc=2,tic=2,vthreads=2,order=spatial", 13636, "a17725a5102b4831"],
    ["layer1.0.conv1", "b32", "th=8,tw=8,toc=1,tic=2,vthreads=1,order=spatial", 9305, "4694eed1906873a3"],
    ["layer2.0.conv1", "osdi18", "th=4,tw=4,toc=3,tic=4,vthreads=1,order=spatial", 16245, "53e1c25122354724"],
    ["layer2.0.conv1", "b32", "th=4,tw=4,toc=2,tic=2,vthreads=1,order=spatial", 12051, "7d05b81eb54066a1"],
    ["layer2.0.conv2", "osdi18", "th=4,tw=4,toc=8,tic=1,vthreads=1,order=spatial", 30324, "84cdb0619bccfd7e"],
    ["layer2.0.conv2", "b32", "th=4,tw=4,toc=2,tic=4,vthreads=1,order=spatial", 22283, "8fbe770d08df64a6"],
    ["layer2.0.downsample", "osdi18", "th=4,tw=4,toc=8,tic=4,vthreads=2,order=spatial", 3557, "77b7e0b28f527704"],
    ["layer2.0.downsample", "b32", "th=4,tw=4,toc=2,tic=2,vthreads=1,order=spatial", 2513, "76d272ae153f63d2"],
    ["layer3.0.conv1", "osdi18", "th=2,tw=2,toc=8,tic=1,vthreads=1,order=spatial", 44413, "88bfffe15758fdb1"],
    ["layer3.0.conv1", "b32", "th=2,tw=2,toc=8,tic=2,vthreads=1,order=spatial", 39222, "033803cea7a4ebf7"],
    ["layer3.0.conv2", "osdi18", "th=2,tw=2,toc=8,tic=1,vthreads=1,order=spatial", 87181, "fa9b359a0c930b3b"],
    ["layer3.0.conv2", "b32", "th=2,tw=2,toc=8,tic=2,vthreads=1,order=spatial", 77408, "5572c7e357c42984"],
    ["layer3.0.downsample", "osdi18", "th=2,tw=2,toc=16,tic=8,vthreads=1,order=spatial", 6009, "51928f0a3f2d7f2c"],
    ["layer3.0.downsample", "b32", "th=2,tw=2,toc=8,tic=4,vthreads=1,order=spatial", 5189, "bb0d4a5b01e008d7"],
    ["layer4.0.conv1", "osdi18", "th=1,tw=1,toc=4,tic=2,vthreads=1,order=spatial", 171882, "809313f3e4a96981"],
    ["layer4.0.conv1", "b32", "th=1,tw=1,toc=2,tic=8,vthreads=1,order=spatial", 152840, "ed71d7b88b3260ca"],
    ["layer4.0.conv2", "osdi18", "th=1,tw=1,toc=4,tic=2,vthreads=1,order=spatial", 341674, "ee8d726742c3856c"],
    ["layer4.0.conv2", "b32", "th=1,tw=1,toc=8,tic=2,vthreads=1,order=spatial", 304928, "20ce6ed1df80ba41"],
    ["layer4.0.downsample", "osdi18", "th=1,tw=1,toc=8,tic=16,vthreads=1,order=spatial", 19846, "00e5fdfb4cbc43b5"],
    ["layer4.0.downsample", "b32", "th=1,tw=1,toc=8,tic=8,vthreads=1,order=spatial", 18002, "02afc1eeab295eb9"],
]


def resnet18_convs_at_32():
    import csv
    from importlib import resources

    text = resources.files("compiler").joinpath("data/resnet18_layers.csv").read_text()
    rows = list(csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#")))
    out, seen = {}, set()
    for r in rows:
        key = tuple(int(r[k]) for k in ("H_in", "IC", "OC", "K", "stride", "pad"))
        if r["name"] == "fc" or key in seen:
            continue
        seen.add(key)
        h, ic, oc, k, s, p = key
        out[r["name"]] = Conv2D(h=h * 32 // 224, w=h * 32 // 224, ic=ic, oc=oc, k=k, stride=s, pad=p, shift=8, relu=True)
    return out


@pytest.mark.parametrize("name, config, schedule, cycles, sha", PINNED, ids=lambda v: str(v))
def test_resnet18_schedules_estimates_and_programs_as_before(name, config, schedule, cycles, sha):
    layer, cfg = resnet18_convs_at_32()[name], config_of(config)
    assert best_schedule(layer, cfg).schedule.text() == schedule
    assert search.searched(layer, cfg).cycles == cycles
    assert hashlib.sha256(compile_layer(layer, cfg).insn_bytes).hexdigest()[:16] == sha


def test_configurations_sharing_what_the_search_reads_share_one_search(monkeypatch):
    calls = []
    real = search._search
    monkeypatch.setattr(search, "_search", lambda *a: calls.append(a) or real(*a))
    monkeypatch.setenv("VDLA_CACHE", "off")
    layer = Conv2D(h=9, w=9, ic=40, oc=24, k=3, pad=1, shift=5)
    other_name = Conv2D(name="other", h=9, w=9, ic=40, oc=24, k=3, pad=1, shift=9, relu=True)
    slow, fast = Config.from_preset("osdi18", CLOCK_MHZ=50), Config.from_preset("osdi18", CLOCK_MHZ=200)
    assert schedule_key(layer, slow) == schedule_key(other_name, fast)
    search._SEARCHED.clear()
    assert best_schedule(layer, slow).schedule == best_schedule(other_name, fast).schedule
    assert len(calls) == 1
    # a parameter the search reads, or a layer field, makes another search
    assert schedule_key(layer, Config.from_preset("osdi18", LOG_INP_BUFF_SIZE=14)) != schedule_key(layer, slow)
    assert schedule_key(Conv2D(h=9, w=9, ic=40, oc=24, k=3, pad=1), slow) != schedule_key(layer, slow)  # no shift


class _Recording(dict):
    """A parameter mapping that remembers which parameters were read."""

    def __init__(self, params):
        super().__init__(params)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


def test_the_search_reads_no_parameter_left_out_of_its_key():
    base = load_config("osdi18")
    cfg = Config(name="recording", params=dict(base.params), sources=dict(base.sources))  # a name of its own:
    params = _Recording(base.params)                                                    # no cache shares it
    object.__setattr__(cfg, "params", params)
    for layer in (Conv2D(h=14, w=14, ic=64, oc=64, k=3, pad=1, shift=3),
                  Conv2D(h=15, w=15, ic=40, oc=72, k=1, stride=2, per_channel_shift=True)):
        search._SEARCHED.clear()
        search._search(layer, cfg, (1, 2), search.REFINE, None)
    assert params.read and not params.read & search.UNREAD_PARAMS, params.read & search.UNREAD_PARAMS


def test_a_disk_cache_hit_gives_the_same_program(monkeypatch, tmp_path):
    from vdla_hw import cache

    monkeypatch.setenv("VDLA_CACHE_DIR", str(tmp_path))
    layer = Conv2D(h=10, w=10, ic=24, oc=40, k=3, pad=1, shift=6)
    search._SEARCHED.clear()
    first = compile_layer(layer, "osdi18", seed=3)
    search._SEARCHED.clear()
    before = dict(cache.stats.get("layer", {}))
    again = compile_layer(layer, "osdi18", seed=3)
    assert cache.stats["layer"]["hit"] == before.get("hit", 0) + 1
    assert again.to_bytes() == first.to_bytes()
    assert compile_layer(layer, "osdi18", seed=4).to_bytes() != first.to_bytes()  # other tensors: not a hit
    # the schedule entry alone (no layer entry): the same program again
    for path in (tmp_path / "layer").iterdir():
        path.unlink()
    assert compile_layer(layer, "osdi18", seed=3).to_bytes() == first.to_bytes()
    assert cache.stats["schedule"]["hit"] >= 1


def test_compile_reports_progress():
    messages = []
    compile_layer(Conv2D(h=12, w=12, ic=32, oc=32, k=3, pad=1, shift=4), "osdi18", seed=11,
                  progress=messages.append)
    assert any("ranking candidates" in m for m in messages) and any("hiding latency" in m for m in messages)
