"""A board record's program: its layer compiled with VTA's logged schedule, and what to report.

:func:`compile_record` takes a row of ``compiler.paper.board_records("vta")`` (a ResNet-18 conv
shape and the AutoTVM knobs VTA ran it with) and compiles the tuning task's layer under the
mapped schedule (:mod:`compiler.tensorize.vta_schedule`); :func:`summary` turns a run of it
(cycles, the final DRAM image) into the replay's result. Running it is the caller's: the
compiler does not import the simulator (ARCHITECTURE.md), ``dse.vta_replay.replay`` does both.
The layer is the tuning task's: shift 8 and a clip to [0, 127] (ReLU); ours also adds a bias
(random, seeded, like the input and weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.layers import Conv2D
from compiler.tensorize.vta_schedule import VTA_TASK_SHIFT, VtaKnobs, differences, parse_knobs, to_schedule
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config, load_config


@dataclass
class CompiledRecord:
    """A record's layer, its checked knobs, the seeded tensors and the compiled bundle."""

    record: dict
    layer: Conv2D
    knobs: VtaKnobs
    tensors: dict
    bundle: Bundle


def record_layer(record: dict) -> Conv2D:
    """The tuning task's convolution of a board record (batch 1, shift 8, ReLU clip)."""
    return Conv2D(name=record.get("record", "conv2d"), n=1, h=record["H"], w=record["W"], ic=record["IC"],
                  oc=record["OC"], k=record["K"], stride=record["stride"], pad=record["pad"],
                  shift=VTA_TASK_SHIFT, relu=True)


def compile_record(record: dict, config: Config | str = "vta-pynq", seed: int = 0) -> CompiledRecord:
    """``record``'s layer compiled on ``config`` with its knobs' schedule and random tensors of ``seed``."""
    from compiler.accel import compile_layer, random_tensors

    config = load_config(config)
    layer = record_layer(record)
    knobs = parse_knobs(record["knobs"], layer, config)
    tensors = random_tensors(layer, seed)
    bundle = compile_layer(layer, config, tensors=tensors, schedule=to_schedule(knobs))
    return CompiledRecord(record, layer, knobs, tensors, bundle)


def summary(compiled: CompiledRecord, cycles: int, dram: np.ndarray | None = None) -> dict:
    """The replay's result for a run of ``compiled`` that took ``cycles``: ``record`` (id),
    ``layer`` (ResNet-18 names), ``schedule`` (ours, as text), ``cycles``, ``seconds`` (at the
    configuration's clock), ``clock_mhz``, ``measured_s`` (the record's, copied), ``counts``
    ({"ours", "vta", "delta"}: instructions by kind, see
    :func:`~compiler.tensorize.vta_schedule.differences`), ``notes`` (the differences) and, given
    the final image ``dram``, ``exact``: the output equals the numpy reference bit for bit."""
    from compiler.accel import layer_output
    from compiler.quantize import reference as ref

    record, layer, bundle = compiled.record, compiled.layer, compiled.bundle
    config = bundle.config
    diff = differences(layer, compiled.knobs, config, bundle.insns())
    out = {"record": record.get("record"), "layer": " ".join(record.get("layers", ())) or layer.name,
           "schedule": diff["schedule"], "cycles": int(cycles), "seconds": cycles / config.clock_hz,
           "clock_mhz": config.params["CLOCK_MHZ"], "measured_s": record.get("measured_s"),
           "counts": {k: diff[k] for k in ("ours", "vta", "delta")}, "notes": diff["notes"]}
    if dram is not None:
        t = compiled.tensors
        want = ref.conv2d(t["input"], t["weight"], t["bias"], stride=layer.stride, pad=layer.pad, shift=layer.shift,
                          lo=layer.lo, hi=layer.hi)
        out["exact"] = bool((layer_output(bundle, dram) == want).all())
    return out
