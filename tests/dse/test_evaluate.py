"""The sweep's point evaluation (cached programs, timing-only device) against a plain run of the
network through the executor on the simulator (`vdla run`'s path), and the clock invariance the
caches rely on."""

import dataclasses
import json

import pytest

import vdla_sim
from compiler.accel import compile_layer
from compiler.layers import Conv2D
from compiler.network import PartitionOptions
from dse.evaluate import evaluate
from dse.space import KNOB_DEFAULTS
from vdla.network import load_model, quantize_model, run_network
from vdla_hw.config import Config


@pytest.fixture(scope="module")
def small_q(small_cnn_path):
    return quantize_model(load_model(small_cnn_path), "small_cnn")


CASES = [
    ("osdi18", {}, {}),
    ("osdi18", {"LOG_BLOCK": 3, "LOG_ACC_BUFF_SIZE": 15, "CLOCK_MHZ": 150.0}, {"vthreads": 1}),
    ("vta-pynq", {"MEM_LATENCY": 64}, {"add_on_vdla": True, "fc_on_vdla": True, "vthreads": 2}),
]


@pytest.mark.parametrize("preset, overrides, knobs", CASES)
def test_evaluation_equals_a_plain_run_on_the_simulator(small_q, small_cnn_path, preset, overrides, knobs):
    config = Config.from_preset(preset, **overrides)
    knobs = {**KNOB_DEFAULTS, **knobs}
    # vdla run quantizes the classifier for the side it runs on (int8 logits on VDLA, int32 on the CPU)
    # and the adds for theirs (multipliers on the CPU, shifts on the ALU)
    q = small_q if not (knobs["fc_on_vdla"] or knobs["add_on_vdla"]) else quantize_model(
        load_model(small_cnn_path), "small_cnn", wide_output=not knobs["fc_on_vdla"], add_scales=not knobs["add_on_vdla"])
    ev = evaluate(q, config, knobs)
    vthreads = None if knobs["vthreads"] == "search" else knobs["vthreads"]
    options = PartitionOptions(stem_on_vdla=knobs["stem_on_vdla"], add_on_vdla=knobs["add_on_vdla"],
                               fc_on_vdla=knobs["fc_on_vdla"])
    plain = run_network(small_cnn_path, config=config, options=options, vthreads=vthreads, placement="all")
    assert plain.bit_exact
    assert [(r.name, r.placement, r.cycles, r.bytes) for r in ev.records] == \
        [(r.name, r.placement, r.cycles, r.bytes) for r in plain.records]
    for key in ("offload_s", "cpu_only_s", "accelerator_cycles", "cpu_resident_s", "speedup"):
        assert ev.totals[key] == pytest.approx(plain.totals[key], rel=1e-12), key


def test_a_second_evaluation_reuses_every_program(small_q):
    config = Config.from_preset("osdi18", LOG_INP_BUFF_SIZE=14)
    first = evaluate(small_q, config, KNOB_DEFAULTS)
    again = evaluate(small_q, dataclasses.replace(config), KNOB_DEFAULTS)
    assert again.stats["programs_simulated"] == 0
    assert again.totals == first.totals


def test_cycles_do_not_depend_on_the_clock():
    """What lets points that differ only in CLOCK_MHZ share compiled and simulated programs."""
    layer = Conv2D(h=14, w=14, ic=64, oc=64, k=3, pad=1, shift=6, relu=True)
    runs = [vdla_sim.simulate(compile_layer(layer, Config.from_preset("osdi18", CLOCK_MHZ=mhz)), race_check=False)
            for mhz in (50.0, 200.0, 333.0)]
    assert len({r.cycles for r in runs}) == 1
    assert len({r.dram.tobytes() for r in runs}) == 1


def test_evaluation_scales_accelerator_time_with_the_clock(small_q):
    slow = evaluate(small_q, Config.from_preset("osdi18", CLOCK_MHZ=100.0), KNOB_DEFAULTS)
    fast = evaluate(small_q, Config.from_preset("osdi18", CLOCK_MHZ=250.0), KNOB_DEFAULTS)
    assert slow.totals["accelerator_cycles"] == fast.totals["accelerator_cycles"]
    assert slow.totals["accelerator_s"] == pytest.approx(2.5 * fast.totals["accelerator_s"], rel=1e-12)
    assert fast.stats["programs_simulated"] == 0


def test_a_damaged_layer_cache_entry_is_recomputed_and_named(small_q, tmp_path):
    """An entry `{}` once failed every point that used it; an edited number was trusted."""
    from dse import evaluate as ev_module

    config = Config.from_preset("osdi18", LOG_WGT_BUFF_SIZE=17)
    ev_module._TIMINGS.data.clear()
    first = evaluate(small_q, config, KNOB_DEFAULTS, cache_dir=tmp_path)
    entries = sorted((tmp_path / "layers").glob("*.json"))
    assert len(entries) >= 2 and not first.stats["cache_problems"]
    entries[0].write_text("{}")
    text = json.loads(entries[1].read_text())
    text["value"]["cycles"] += 1000
    entries[1].write_text(json.dumps(text))
    ev_module._TIMINGS.data.clear()  # a fresh worker: only the disk remembers
    again = evaluate(small_q, config, KNOB_DEFAULTS, cache_dir=tmp_path)
    assert again.totals == first.totals and again.stats["programs_simulated"] == 2
    problems = {p.split(": ")[0]: p for p in again.stats["cache_problems"]}
    assert sorted(problems) == [str(entries[0]), str(entries[1])]
    assert "not a checksummed cache entry" in problems[str(entries[0])]
    assert "fails its checksum" in problems[str(entries[1])]
    ev_module._TIMINGS.data.clear()
    third = evaluate(small_q, config, KNOB_DEFAULTS, cache_dir=tmp_path)  # the entries were rewritten
    assert third.stats["programs_simulated"] == 0 and not third.stats["cache_problems"]


def test_layer_timings_use_the_simulators_timing_only_mode_where_it_has_one(monkeypatch):
    from dse import evaluate as ev

    ev._timing_only.cache_clear()
    monkeypatch.setattr(vdla_sim, "simulate", lambda bundle, *, race_check=True, data=True: None)
    assert ev._timing_only() == {"data": False}
    ev._timing_only.cache_clear()
    monkeypatch.setattr(vdla_sim, "simulate", lambda bundle, *, race_check=True: None)
    assert ev._timing_only() == {}
    ev._timing_only.cache_clear()
