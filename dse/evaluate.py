"""Evaluate one point: a quantized network on one configuration with one set of software knobs.

The network runs through the project's own executor (``compiler.network.Executor``), so the
CPU-resident time, the layout conversions and the totals are exactly those of ``vdla run``;
only the accelerator side is served from caches (:class:`TimingExecutor`):

- every accelerator op's program is compiled (random tensors: the accelerator's timing does not
  depend on the values it computes, there is no data-dependent control in the ISA) and simulated
  once per (layer shape and attributes, configuration, virtual threads); what the executor needs
  of it — cycles, counters, activity counts, the output's layout — is kept as a *layer timing*
  in this process and on disk (``DIR/cache/layers``), so any worker reuses it;
- the executor then gets a :class:`TimedProgram` instead of a bundle and the
  :class:`TimingDevice` answers with the stored timing. The values flowing through the network
  are therefore not the network's (zeros leave each accelerator op); timing and the CPU model do
  not read them.

Cycles do not depend on the fabric clock (every timing-contract parameter is in cycles), so
programs are compiled and simulated for the configuration with ``CLOCK_MHZ`` set to
:data:`REFERENCE_CLOCK_MHZ`, and seconds use the point's own clock: points that differ only in
the clock share all accelerator work. ``tests/dse/test_evaluate.py`` checks both claims against
a plain run of the network on the simulator.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path

import numpy as np

from compiler.accel import compile_layer, program_params, searched_layer
from compiler.network import PartitionOptions, partition
from compiler.network.alu_add import compile_vdla_add
from compiler.network.executor import Executor
from compiler.network.vdla_ops import Part, bundle_key, vdla_parts
from compiler.network.report import summarise
from compiler.quantize.qgraph import QGraph, QNode
from compiler.tensorize.schedule import Schedule
from dse import activity as act
from dse.cache import DiskCache, Lru, digest
from dse.cpu_share import analyse_shared
from driver.device import RunResult
from vdla_hw.config import Config

REFERENCE_CLOCK_MHZ = 100.0
_TIMINGS = Lru(4096)    # layer key -> layer timing (small dicts)
_PRICED: set = set()    # what decides a run's CPU kernels, for each run of this process (their analyses are in memory)


def forget_memos() -> None:
    """Empty this process's memos above (what a new worker process starts with): the local
    executor (:mod:`dse.executors`) runs each sweep's points in the sweep's process between two
    calls, so that, as on a new Ray instance, layer timings come from the sweep's own cache."""
    _TIMINGS.data.clear()
    _PRICED.clear()


@functools.cache
def _timing_only() -> dict:
    """``simulate``'s timing-only switch (``data=False``: the same cycles and byte counts, no
    tensor values, which a layer timing does not read) where the simulator has it."""
    import inspect

    import vdla_sim

    return {"data": False} if "data" in inspect.signature(vdla_sim.simulate).parameters else {}



def cycle_config(config: Config) -> Config:
    """``config`` at the reference clock: the configuration programs are compiled and simulated for."""
    params = {**config.params, "CLOCK_MHZ": REFERENCE_CLOCK_MHZ}
    return Config(name=f"{config.name}@cycles", params=params, sources=config.sources)


def _layer_of(part: Part):
    return dataclasses.replace(part.layer, name="layer")  # the name plays no part in the program


def programs_of(node: QNode, q: QGraph) -> list[Part | None]:
    """The accelerator programs of op ``node``: None for an ALU add, else one part per GEMM layer
    (one per group of a grouped conv)."""
    return [None] if node.op == "add" else vdla_parts(node, q.shapes[node.inputs[0]], q.shapes[node.output])


def _random_int8(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, shape, dtype=np.int8)


def layer_schedule(part: Part, config: Config, vthreads: int | None) -> Schedule:
    """The schedule the compiler gives GEMM layer ``part`` on ``config`` (the search's, memoised
    by ``schedule_key``), after the same layer check ``compile_layer`` makes first."""
    layer = _layer_of(part)
    layer.check(config)
    return searched_layer(layer.as_conv2d(), config, vthreads).schedule


def compile_op(node: QNode, q: QGraph, config: Config, vthreads: int | None, part: Part | None = None,
               schedule: Schedule | None = None):
    """The program of accelerator op ``node`` (its ``part``, with ``schedule``: the search's when
    None) on ``config``, compiled with random tensors."""
    if node.op == "add":
        shape = q.shapes[node.inputs[0]]
        return compile_vdla_add(node, [_random_int8(shape, 1), _random_int8(shape, 2)], config)
    # not stored in the user's cache: a bundle of random tensors is needed only for its timing
    return compile_layer(_layer_of(part), config, vthreads=vthreads, schedule=schedule, store=False)


def layer_key(node: QNode, q: QGraph, config: Config, vthreads: int | None, part: Part | None = None,
              schedule: Schedule | None = None) -> str:
    """What a layer timing depends on (plus the code, see dse.cache). An ALU add: its shapes and
    attributes, the configuration's parameters and the virtual threads. A GEMM layer: its shapes
    and attributes (not its weights), its ``schedule`` and the parameters its program reads given
    the schedule (``compiler.accel.program_params``: not the buffer sizes), so configurations
    whose searches agree on a layer's schedule share its program and its simulation."""
    if node.op == "add":
        a = node.attrs
        what = ["add", list(q.shapes[node.inputs[0]]), a["a_shift"], a["b_shift"], a["shift"], a["offset"], a["lo"],
                a["hi"]]
        return digest(what, config.stored_params(), vthreads)
    return digest("gemm", _layer_of(part).describe(), schedule.text(), program_params(config))


def layer_timing(node: QNode, q: QGraph, config: Config, vthreads: int | None, disk: DiskCache,
                 stats: dict, part: Part | None = None) -> dict:
    """The timing of accelerator op ``node`` (its ``part``) on ``config`` (a cycle configuration),
    from the caches or compiled and simulated now."""
    import vdla_sim

    start = time.perf_counter()
    schedule = None if part is None else layer_schedule(part, config, vthreads)
    stats["search_s"] += time.perf_counter() - start
    key = layer_key(node, q, config, vthreads, part, schedule)
    timing = _TIMINGS.get(key) or disk.get("layers", key)
    if timing is None:
        start = time.perf_counter()
        bundle = compile_op(node, q, config, vthreads, part, schedule)
        compiled = time.perf_counter()
        sim = vdla_sim.simulate(bundle, race_check=False, **_timing_only())
        stats["compile_s"] += compiled - start
        stats["simulate_s"] += time.perf_counter() - compiled
        stats["programs_simulated"] += 1
        timing = {"cycles": sim.cycles, "gemm_utilization": sim.gemm_utilization,
                  "bytes": {k: int(v) for k, v in sim.bytes.items()}, "activity": act.program_activity(bundle),
                  "output_shape": list(bundle.meta["output"]["shape"]), "meta": bundle.meta}
        disk.put("layers", key, timing)
    else:
        stats["programs_reused"] += 1
    _TIMINGS.put(key, timing)
    return timing


class TimedProgram:
    """What the executor reads of an accelerator op's bundle when only its timing matters:
    ``meta`` and ``read("out", image)``, which gives zeros in the program's output layout."""

    def __init__(self, timing: dict):
        self.timing, self.meta = timing, timing["meta"]

    def read(self, name: str, dram=None) -> np.ndarray:
        return np.zeros(math.prod(self.timing["output_shape"]), dtype=np.int8)


class TimingDevice:
    """The executor's accelerator device for :class:`TimedProgram`: the stored cycles at the
    point's clock, the executor's counters and, as ``details``, the timing with its activity."""

    target = "timing"  # the simulator's timings, stored (what a record's measured_by names)

    def __init__(self, config: Config):
        self.config = config

    def run(self, program: TimedProgram) -> RunResult:
        t = program.timing
        counters = {"gemm_utilization": t["gemm_utilization"], "bytes": t["bytes"]}
        return RunResult(dram=np.zeros(0, dtype=np.uint8), cycles=t["cycles"],
                         seconds=t["cycles"] / self.config.clock_hz, counters=counters, details=t)


class TimingExecutor(Executor):
    """The executor with every accelerator op's program replaced by its stored timing."""

    def __init__(self, q, placements, device, *, programs: dict[str, TimedProgram], **options):
        super().__init__(q, placements, device, **options)
        self.programs = programs

    def bundles_for(self, node: QNode, args):
        if node.op == "add":
            return [(self.programs[bundle_key(node.name)], None, [(a.shape, "int32") for a in args])]
        return [(self.programs[part.key], part.layer, [(part.layer.input_shape, "int8")])
                for part in programs_of(node, self.q)]


@dataclasses.dataclass
class Evaluation:
    """What one point's run gives: the executor's records and totals, summed activity counts."""

    records: list
    totals: dict
    activity: dict
    stats: dict


def evaluate(q: QGraph, config: Config, knobs: dict, cache_dir=None, cpu: str = "cortex-a9") -> Evaluation:
    """Run ``q`` on ``config`` with ``knobs`` (see :data:`dse.space.KNOBS`) through the executor;
    CPU and host times from the code-level CPU model of ``cpu`` (its analyses cached on disk)."""
    from compiler.cpu_fallback.cost import CpuModel, RuntimeProfile
    from driver.registers import run_profile

    start = time.perf_counter()
    disk = DiskCache(cache_dir)
    options = PartitionOptions(stem_on_vdla=knobs["stem_on_vdla"], add_on_vdla=knobs["add_on_vdla"],
                               fc_on_vdla=knobs["fc_on_vdla"])
    vthreads = None if knobs["vthreads"] == "search" else int(knobs["vthreads"])
    placements = partition(q, config, options)
    cycles = cycle_config(config)
    stats = {"search_s": 0.0, "compile_s": 0.0, "simulate_s": 0.0, "programs_simulated": 0, "programs_reused": 0}
    programs = {bundle_key(node.name) if part is None else part.key:
                TimedProgram(layer_timing(node, q, cycles, vthreads, disk, stats, part))
                for node in q.nodes if placements[node.name].target == "vdla" for part in programs_of(node, q)}
    timed = time.perf_counter()
    x = np.zeros(q.shapes[q.input], dtype=np.float32)
    # workers=0: a sweep already runs points in parallel; each kernel is analysed once, then cached.
    model = CpuModel(cpu, workers=0)
    executor = TimingExecutor(q, placements, TimingDevice(config), programs=programs, vthreads=vthreads,
                              cpu_model=model, runtime=RuntimeProfile(**run_profile(config)))
    # The CPU kernels of a run depend on the network, where each op runs and the blocking; the
    # first point of this process with those analyses them (shared with the other workers), the
    # others find them in memory. (A wrong answer here would only cost time: the run analyses
    # what it lacks.)
    kernels = (q.name, q.outputs, tuple(p.target for p in placements.values()), config.batch, config.block_in,
               config.block_out)
    if kernels not in _PRICED:
        analyse_shared(executor.kernel_specs(), model, Path(cache_dir) / "cpu-claims" if cache_dir else None)
    result = executor.run(x)
    _PRICED.add(kernels)
    total = act.empty()
    for r in result.records:
        if r.placement == "vdla":
            act.add(total, r.extra["run"]["activity"])
    stats.update(timing_s=timed - start, execute_s=time.perf_counter() - timed, cache_problems=disk.problems)
    return Evaluation(result.records, summarise(result.records, model.describe()), total, stats)
