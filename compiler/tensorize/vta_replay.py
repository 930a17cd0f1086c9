"""Replay a board record: compile its layer with VTA's logged schedule and simulate it.

:func:`replay` takes a row of ``compiler.paper.board_records("vta")`` (a ResNet-18 conv shape,
the AutoTVM knobs VTA ran it with, the time the PYNQ-Z1 measured) and returns what our
cycle simulator says of the same layer under the mapped schedule
(:mod:`compiler.tensorize.vta_schedule`), with the instruction counts of both programs and their
differences. The layer is the tuning task's: shift 8 and a clip to [0, 127] (ReLU); ours also
adds a bias (random, seeded, like the input and weights). Nothing here reads the measurement
except to copy it into the result.
"""

from __future__ import annotations

from compiler.layers import Conv2D
from compiler.tensorize.vta_schedule import VTA_TASK_SHIFT, differences, parse_knobs, to_schedule
from vdla_hw.config import Config, load_config


def record_layer(record: dict) -> Conv2D:
    """The tuning task's convolution of a board record (batch 1, shift 8, ReLU clip)."""
    return Conv2D(name=record.get("record", "conv2d"), n=1, h=record["H"], w=record["W"], ic=record["IC"],
                  oc=record["OC"], k=record["K"], stride=record["stride"], pad=record["pad"],
                  shift=VTA_TASK_SHIFT, relu=True)


def replay(record: dict, config: Config | str = "vta-pynq", *, seed: int = 0, check: bool = True) -> dict:
    """Simulate ``record``'s layer under its VTA schedule on ``config``.

    Returns ``record`` (id), ``layer`` (ResNet-18 names), ``schedule`` (ours, as text),
    ``cycles`` and ``seconds`` (simulated, at the configuration's clock), ``clock_mhz``,
    ``measured_s`` (the record's, copied), ``counts`` ({"ours", "vta", "delta"}: instructions by
    kind, :func:`~compiler.tensorize.vta_schedule.differences`), ``notes`` (the differences) and,
    with ``check``, ``exact``: whether the simulated output equals the numpy reference bit for
    bit (``check`` False simulates timing only, which is faster)."""
    import vdla_sim
    from compiler.accel import compile_layer, layer_output, random_tensors
    from compiler.quantize import reference as ref

    config = load_config(config)
    layer = record_layer(record)
    knobs = parse_knobs(record["knobs"], layer, config)
    tensors = random_tensors(layer, seed)
    bundle = compile_layer(layer, config, tensors=tensors, schedule=to_schedule(knobs))
    result = vdla_sim.simulate(bundle, data=check)
    diff = differences(layer, knobs, config, bundle.insns())
    out = {"record": record.get("record"), "layer": " ".join(record.get("layers", ())) or layer.name,
           "schedule": diff["schedule"], "cycles": result.cycles, "seconds": result.seconds,
           "clock_mhz": config.params["CLOCK_MHZ"], "measured_s": record.get("measured_s"),
           "counts": {k: diff[k] for k in ("ours", "vta", "delta")}, "notes": diff["notes"]}
    if check:
        want = ref.conv2d(tensors["input"], tensors["weight"], tensors["bias"], stride=layer.stride, pad=layer.pad,
                          shift=layer.shift, lo=layer.lo, hi=layer.hi)
        out["exact"] = bool((layer_output(bundle, result.dram) == want).all())
    return out
