"""The roofline's points without latency hiding (vdla.network.roofline_without_latency_hiding)
come from the simulator's timing-only mode and equal what a full data simulation of the same
one-thread program gives."""

from __future__ import annotations

from types import SimpleNamespace

import vdla_sim
from compiler.accel import compile_layer
from compiler.layers import Conv2D
from vdla.network import roofline_without_latency_hiding
from vdla_hw.config import load_config


def test_points_come_from_the_timing_only_mode_and_equal_a_data_run(monkeypatch):
    config = load_config("osdi18")
    layer = Conv2D(name="c", h=14, w=14, ic=32, oc=32, k=3, pad=1, shift=6, relu=True)
    record = SimpleNamespace(name="c", op="conv", placement="vdla", useful_macs=layer.macs,
                             extra={"layer": layer, "run": SimpleNamespace(config=config)})
    cpu = SimpleNamespace(name="pool", op="maxpool", placement="cpu", useful_macs=0, extra={})
    report = SimpleNamespace(records=[record, cpu])
    modes, simulate = [], vdla_sim.simulate

    def spy(bundle, **kwargs):
        modes.append(kwargs.get("data", True))
        return simulate(bundle, **kwargs)

    monkeypatch.setattr(vdla_sim, "simulate", spy)
    points = roofline_without_latency_hiding(report)
    assert modes == [False] and list(points) == ["c"]
    full = simulate(compile_layer(layer, config, vthreads=1))
    moved = sum(v for k, v in full.bytes.items() if k != "insn")
    assert points["c"] == (2 * full.macs / moved, 2 * full.macs / full.seconds / 1e9,
                           2 * layer.macs / full.seconds / 1e9)


def test_runs_done_beside_are_used_only_for_the_same_layer_and_configuration(monkeypatch):
    from dataclasses import replace

    from vdla.network import _config_key, one_thread_timing

    config = load_config("osdi18")
    layer = Conv2D(name="c", h=14, w=14, ic=32, oc=32, k=3, pad=1, shift=6, relu=True)
    record = SimpleNamespace(name="c", op="conv", placement="vdla", useful_macs=layer.macs,
                             extra={"layer": layer, "run": SimpleNamespace(config=config)})
    done = one_thread_timing({"c": layer}, config)
    assert done["c"][:2] == (layer, _config_key(config))
    fresh = roofline_without_latency_hiding(SimpleNamespace(records=[record]))
    calls, simulate = [], vdla_sim.simulate
    monkeypatch.setattr(vdla_sim, "simulate", lambda bundle, **kw: calls.append(1) or simulate(bundle, **kw))
    assert roofline_without_latency_hiding(SimpleNamespace(records=[record], one_thread_timing=done)) == fresh
    assert calls == []  # used as it was
    other_layer = {"c": (replace(layer, relu=False), *done["c"][1:])}
    other_config = {"c": (layer, _config_key(load_config("osdi18-200")), done["c"][2])}
    for stale in (other_layer, other_config):
        assert roofline_without_latency_hiding(SimpleNamespace(records=[record], one_thread_timing=stale)) == fresh
    assert len(calls) == 2  # recomputed both times
