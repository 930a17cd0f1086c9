"""Evaluate one point: a quantized network on one configuration with one set of software knobs.

The network runs through the project's own executor (``compiler.network.execute``), so the
CPU-resident time, the layout conversions and the totals are exactly those of ``vdla run``;
only the accelerator side is served from caches:

- every accelerator op gets a *prebuilt* bundle compiled once per (layer shape, configuration,
  virtual threads) — with random tensors, because the accelerator's timing does not depend on
  the values it computes (no data-dependent control in the ISA);
- the device is :class:`TimingDevice`: it simulates a program once per (instruction stream,
  configuration) and returns the cycles, counters and activity counts from then on. The image
  it returns is the program's input image, so the values flowing through the network are not
  the network's (timing and the CPU model do not read them).

Cycles do not depend on the fabric clock (every timing-contract parameter is in cycles), so
programs are compiled and simulated for the configuration with ``CLOCK_MHZ`` set to
:data:`REFERENCE_CLOCK_MHZ`, and seconds use the point's own clock: points that differ only in
the clock share all accelerator work. ``tests/dse/test_evaluate.py`` checks both claims
against a plain ``vdla run``-style execution.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from compiler.accel import compile_layer
from compiler.network import PartitionOptions, execute, partition
from compiler.network.alu_add import compile_add
from compiler.network.partition import conv_layer, dense_layer
from compiler.network.report import summarise
from compiler.quantize.qgraph import QGraph, QNode
from dse import activity as act
from dse.cache import DiskCache, Lru, digest
from driver.device import RunResult
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config

REFERENCE_CLOCK_MHZ = 100.0
_BUNDLES = Lru(64)      # compiled programs of this process (images of a few MB each)
_RUNS = Lru(4096)       # (instruction stream, configuration) -> simulated entry


def cycle_config(config: Config) -> Config:
    """``config`` at the reference clock: the configuration programs are compiled and simulated for."""
    params = {**config.params, "CLOCK_MHZ": REFERENCE_CLOCK_MHZ}
    return Config(name=f"{config.name}@cycles", params=params, sources=config.sources)


def _layer_of(node: QNode, q: QGraph):
    shape = q.shapes[node.inputs[0]]
    layer = conv_layer(node, shape) if node.op == "conv" else dense_layer(node, shape)
    return dataclasses.replace(layer, name="layer")  # the name plays no part in the program


def _random_int8(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, shape, dtype=np.int8)


def prebuilt_bundle(node: QNode, q: QGraph, config: Config, vthreads: int | None, disk: DiskCache) -> Bundle:
    """The program of accelerator op ``node`` on ``config`` (a cycle configuration), from the
    caches or compiled now. A searched schedule is kept on disk so another worker compiles the
    same program without searching again."""
    if node.op == "add":
        a = node.attrs
        shape = q.shapes[node.inputs[0]]
        key = digest("add", list(shape), a["a_shift"], a["b_shift"], a["shift"], bool(a["relu"]), config.params)
        bundle = _BUNDLES.get(key)
        if bundle is None:
            bundle = compile_add(_random_int8(shape, 1), _random_int8(shape, 2), a_shift=a["a_shift"],
                                 b_shift=a["b_shift"], shift=a["shift"], relu=a["relu"], config=config, name="add")
            _BUNDLES.put(key, bundle)
        return bundle
    layer = _layer_of(node, q)
    key = digest(layer.describe(), config.params, vthreads)
    bundle = _BUNDLES.get(key)
    if bundle is None:
        stored = disk.get("schedules", key)
        if stored is not None:
            bundle = compile_layer(layer, config, schedule=stored["schedule"])
        else:
            bundle = compile_layer(layer, config, vthreads=vthreads)
            disk.put("schedules", key, {"schedule": bundle.meta["schedule"]})
        _BUNDLES.put(key, bundle)
    return bundle


class TimingDevice:
    """An accelerator device for the executor that simulates each distinct program once.

    ``config`` is the point's configuration (its clock converts cycles to seconds); programs are
    built for its cycle configuration. ``run`` returns the program's input image (see the
    module docstring), the cycles, the executor's counters and, as ``details``, the cached
    entry with the activity counts."""

    def __init__(self, config: Config, disk: DiskCache):
        self.config, self.disk = config, disk
        self.cycle_fingerprint = cycle_config(config).fingerprint
        self.simulated = self.reused = 0
        self.sim_seconds = 0.0

    def entry(self, bundle: Bundle) -> dict:
        key = digest(bundle.insn_bytes, self.cycle_fingerprint)
        entry = _RUNS.get(key) or self.disk.get("runs", key)
        if entry is None:
            import vdla_sim

            start = time.perf_counter()
            sim = vdla_sim.simulate(bundle, race_check=False)
            self.sim_seconds += time.perf_counter() - start
            entry = {"cycles": sim.cycles, "gemm_utilization": sim.gemm_utilization,
                     "bytes": {k: int(v) for k, v in sim.bytes.items()}, "activity": act.program_activity(bundle)}
            self.disk.put("runs", key, entry)
            self.simulated += 1
        else:
            self.reused += 1
        _RUNS.put(key, entry)
        return entry

    def run(self, bundle: Bundle) -> RunResult:
        entry = self.entry(bundle)
        counters = {"gemm_utilization": entry["gemm_utilization"], "bytes": entry["bytes"]}
        return RunResult(dram=bundle.dram, cycles=entry["cycles"], seconds=entry["cycles"] / self.config.clock_hz,
                         counters=counters, details=entry)


@dataclasses.dataclass
class Evaluation:
    """What one point's run gives: the executor's records and totals, summed activity counts."""

    records: list
    totals: dict
    activity: dict
    stats: dict


def evaluate(q: QGraph, config: Config, knobs: dict, cache_dir=None) -> Evaluation:
    """Run ``q`` on ``config`` with ``knobs`` (see :data:`dse.space.KNOBS`) through the executor."""
    start = time.perf_counter()
    disk = DiskCache(cache_dir)
    options = PartitionOptions(stem_on_vdla=knobs["stem_on_vdla"], add_on_vdla=knobs["add_on_vdla"],
                               fc_on_vdla=knobs["fc_on_vdla"])
    vthreads = None if knobs["vthreads"] == "search" else int(knobs["vthreads"])
    placements = partition(q, config, options)
    cycles = cycle_config(config)
    prebuilt = {node.name: prebuilt_bundle(node, q, cycles, vthreads, disk)
                for node in q.nodes if placements[node.name].target == "vdla"}
    compiled = time.perf_counter()
    device = TimingDevice(config, disk)
    x = np.zeros(q.shapes[q.input], dtype=np.float32)
    result = execute(q, x, placements, device, prebuilt=prebuilt, vthreads=vthreads)
    total = act.empty()
    for r in result.records:
        if r.placement == "vdla":
            act.add(total, r.extra["run"]["activity"])
    stats = {"compile_s": compiled - start, "execute_s": time.perf_counter() - compiled,
             "simulate_s": device.sim_seconds, "programs_simulated": device.simulated,
             "programs_reused": device.reused}
    return Evaluation(result.records, summarise(result.records), total, stats)

