"""Cost-aware placement: each op the accelerator can run goes where the whole network is faster.

For every op the rules of :mod:`.partition` allow on VDLA (a *candidate*), before anything runs:

- **accelerator time**: the schedule search's pipeline estimate
  (:func:`compiler.tensorize.estimate.estimate` over the chosen plan's segments, the plan the
  compiler will build) at the configuration's clock, summed over the op's GEMM parts; an ALU
  add takes its instructions' module cycles one after the other (timing contract, no overlap:
  an upper bound). Within a few per cent of the simulator on ResNet-18's layers
  (``tests/compiler/network/test_placement_cost.py`` checks a tolerance; docs/compiler.md gives
  the figures).
- **CPU time**: ``cpu_model.kernel_cost(spec)`` of the op's kernel, as the executor charges it.
- **host work** around an offload: :func:`host_cost`, the one place that asks the CPU model
  (``offload_cost``) for packing, copies, cache maintenance, registers, polling and unpacking.

The host work depends on the neighbours' placement (:func:`crossings`): once activations stay
on the device, a tensor crossing CPU -> accelerator is packed (and copied in), one crossing
accelerator -> CPU is unpacked, and one passing accelerator -> accelerator costs nothing. Today's
runtime (``compiler.network.executor.Executor.host_time``) still packs every input and unpacks
every output of every offload; :func:`activations_stay_on_device` says which rule applies.

**The rule.** The network's modelled time is ``T = sum over candidates of (accelerator estimate
+ host work given its neighbours, if on VDLA; CPU time, if on the CPU)`` (the other ops' times do
not depend on the placement). :func:`place` minimises ``T`` by local search from two starts (every
candidate on VDLA, as ``--placement all``; every candidate on the CPU): a move puts one op on the
other side, or a whole *run* (candidates connected producer -> consumer) on one side; a move is
taken only when it lowers ``T``, so the search ends, and the lower of the two ends wins (a tie
goes to fewer offloads). At the end no single op can move and make ``T`` lower: each op's
reason prints that comparison, with what its move would change in its neighbours' host work.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compiler.cpu_fallback import PackSpec, UnpackSpec
from compiler.network.cpu_ops import kernel_plan, layout_specs
from compiler.network.vdla_ops import vdla_parts
from compiler.quantize.qgraph import QGraph, QNode
from vdla_hw.config import Config

VDLA, CPU = "vdla", "cpu"
EPSILON = 1e-9  # relative: a move must lower T by more than this (float noise never cycles)


def activations_stay_on_device(runtime) -> bool:
    """Whether the board runtime keeps activations in device buffers between offloads (then only
    tensors crossing CPU <-> accelerator are packed and unpacked). False for today's runtime: the
    executor packs every input and unpacks every output of each offload."""
    return False


@dataclass(frozen=True)
class PartEstimate:
    """One accelerator program of an op: its estimated busy seconds and packed input."""

    seconds: float
    input: tuple          # (shape, dtype) the host packs for it
    weights: tuple | None = None  # (shape, dtype) of weights packed per run (a product's second operand)


@dataclass(frozen=True)
class OpEstimate:
    """What placement knows of a candidate before running it."""

    vdla_s: float
    cpu_s: float
    parts: tuple[PartEstimate, ...]
    basis: str


def host_cost(cpu_model, runtime, config: Config, *, packs: list[tuple], unpack: tuple | None,
              accelerator_s: float):
    """THE host-work model of placement: modelled seconds (a ``HostCost``) around one run of a
    loaded accelerator program, packing and writing the (shape, dtype) tensors ``packs`` and
    reading and unpacking the ``unpack`` output shape (or nothing), the accelerator busy
    ``accelerator_s``. It asks ``cpu_model.offload_cost`` as ``Executor.host_time`` does (the
    bytes written and read are the packed tensors'), so the estimate and the run charge the same
    work."""
    pack_specs = layout_specs(config, packs, PackSpec)
    unpack_specs = layout_specs(config, [(unpack, "int8")] if unpack is not None else [], UnpackSpec)
    return cpu_model.offload_cost(packs=pack_specs, unpacks=unpack_specs, accelerator_s=accelerator_s,
                                  runtime=runtime)


def crossings(node: QNode, q: QGraph, targets: dict[str, str], resident: bool) -> tuple[list[bool], bool]:
    """(per input: is it packed, is the output unpacked) for ``node`` on VDLA, the others placed as
    ``targets`` says (nodes not in it run on the CPU). ``resident`` False: everything crosses."""
    if not resident:
        return [True] * len(node.inputs), True
    producer = {n.output: n.name for n in q.nodes}
    packed = [targets.get(producer.get(name, ""), CPU) != VDLA for name in node.inputs]
    consumers = [n.name for n in q.nodes if node.output in n.inputs]
    unpacked = node.output == q.output or any(targets.get(name, CPU) != VDLA for name in consumers)
    return packed, unpacked


def estimate_op(node: QNode, q: QGraph, config: Config, cpu_model, vthreads: int | None = None) -> OpEstimate:
    """Accelerator and CPU estimates of candidate ``node`` (see the module docstring)."""
    spec = kernel_plan(node, [q.shapes[name] for name in node.inputs])
    cpu_s = cpu_model.kernel_cost(spec[0]).seconds if spec is not None else 0.0
    if node.op == "add":
        parts = (_add_estimate(node, q, config),)
        basis = "ALU instructions in series (timing contract)"
    else:
        parts = tuple(_gemm_estimate(part.layer, config, vthreads, node.op == "matmul")
                      for part in vdla_parts(node, q.shapes[node.inputs[0]], q.shapes[node.output]))
        basis = "schedule search's pipeline estimate"
    return OpEstimate(sum(p.seconds for p in parts), cpu_s, parts, f"{basis} at {config.clock_hz / 1e6:g} MHz")


def _gemm_estimate(layer, config: Config, vthreads: int | None, runtime_weights: bool = False) -> PartEstimate:
    from compiler.accel import searched_layer

    # the search's own estimate of the plan it chose (the plan the compiler then builds, from the
    # same memoised search: one search per layer shape)
    cycles = searched_layer(dataclasses.replace(layer.as_conv2d(), name="conv2d"), config, vthreads).cycles
    return PartEstimate(cycles / config.clock_hz, (layer.input_shape, "int8"),
                        (layer.weight_shape, "int8") if runtime_weights else None)


def _add_estimate(node: QNode, q: QGraph, config: Config) -> PartEstimate:
    import numpy as np

    from compiler.network.alu_add import compile_vdla_add
    from compiler.tensorize.estimate import insn_cycles

    shape = q.shapes[node.inputs[0]]
    zeros = np.zeros(shape, np.int8)
    bundle = compile_vdla_add(node, [zeros, zeros], config)
    cycles = sum(insn_cycles(insn, config)[0] for insn in bundle.insns())
    return PartEstimate(cycles / config.clock_hz, (shape, "int32"))


def kernel_specs(q: QGraph, candidates: list[str], config: Config) -> list:
    """Every CPU-model spec placement and the run will ask for: each op's kernel, and the pack and
    unpack kernels of each candidate (so a cold CPU-model cache is analysed in parallel, ahead)."""
    specs = []
    for node in q.nodes:
        plan = kernel_plan(node, [q.shapes[name] for name in node.inputs])
        specs += [plan[0]] if plan is not None else []
        if node.name in candidates:
            packed = "int32" if node.op == "add" else "int8"
            shapes = [q.shapes[name] for name in node.inputs]
            if node.op == "matmul":  # each product's rows and its weights
                shapes = [shapes[0][-2:], (shapes[1][-1], shapes[1][-2])]
            specs += layout_specs(config, [(shape, packed) for shape in shapes], PackSpec)
            specs += layout_specs(config, [(q.shapes[node.output], "int8")], UnpackSpec)
    return specs


class CostModel:
    """``T`` of a placement (the module docstring), from estimates made once per candidate."""

    def __init__(self, q: QGraph, config: Config, cpu_model, runtime, estimates: dict[str, OpEstimate], *,
                 resident: bool):
        self.q, self.config, self.cpu_model, self.runtime = q, config, cpu_model, runtime
        self.estimates, self.resident = estimates, resident
        self.nodes = {n.name: n for n in q.nodes}
        self._host: dict = {}

    def host_s(self, name: str, targets: dict[str, str]) -> float:
        """Host seconds around candidate ``name`` on VDLA, its neighbours placed as ``targets``."""
        node, est = self.nodes[name], self.estimates[name]
        packed, unpacked = crossings(node, self.q, targets, self.resident)
        key = (name, tuple(packed), unpacked)
        if key not in self._host:
            total = 0.0
            for index, part in enumerate(est.parts):
                last = index == len(est.parts) - 1  # the groups' outputs unpack once, as one tensor
                inputs = [part.input] if node.op != "add" else \
                    [(self.q.shapes[i], "int32") for i, p in zip(node.inputs, packed) if p]
                if node.op != "add" and not packed[0]:
                    inputs = []
                inputs += [part.weights] if part.weights is not None else []  # packed every run
                unpack = self.q.shapes[node.output] if last and unpacked else None
                total += host_cost(self.cpu_model, self.runtime, self.config,
                                   packs=inputs, unpack=unpack, accelerator_s=part.seconds).seconds
            self._host[key] = total
        return self._host[key]

    def own_s(self, name: str, targets: dict[str, str]) -> float:
        est = self.estimates[name]
        return est.vdla_s + self.host_s(name, targets) if targets[name] == VDLA else est.cpu_s

    def total(self, targets: dict[str, str]) -> float:
        return sum(self.own_s(name, targets) for name in self.estimates)


def runs(q: QGraph, candidates: list[str]) -> list[list[str]]:
    """Candidates connected producer -> consumer (weakly connected components), in graph order."""
    group = {name: {name} for name in candidates}
    producer = {n.output: n.name for n in q.nodes}
    for node in q.nodes:
        if node.name not in group:
            continue
        for name in node.inputs:
            other = producer.get(name)
            if other in group and group[other] is not group[node.name]:
                merged = group[other] | group[node.name]
                for member in merged:
                    group[member] = merged
    seen, out = set(), []
    for name in candidates:
        if id(group[name]) not in seen:
            seen.add(id(group[name]))
            out.append([n for n in candidates if n in group[name]])
    return out


def _descend(model: CostModel, targets: dict[str, str], moves: list[dict[str, str]]) -> tuple[dict, float]:
    best = model.total(targets)
    improved = True
    while improved:  # every taken move lowers T: a finite number of placements, so this ends
        improved = False
        for move in moves:
            trial = {**targets, **move}
            if trial == targets:
                continue
            t = model.total(trial)
            if t < best * (1 - EPSILON):
                targets, best, improved = trial, t, True
    return targets, best


def place(model: CostModel) -> dict[str, str]:
    """Candidate name -> "vdla" | "cpu" minimising ``T`` (see the module docstring)."""
    names = list(model.estimates)
    moves = [{name: side} for name in names for side in (VDLA, CPU)]
    moves += [dict.fromkeys(run, side) for run in runs(model.q, names) if len(run) > 1 for side in (VDLA, CPU)]
    ends = [_descend(model, dict.fromkeys(names, start), moves) for start in (VDLA, CPU)]
    targets, _ = min(ends, key=lambda end: (end[1], sum(t == VDLA for t in end[0].values())))
    return targets


def comparison(model: CostModel, name: str, targets: dict[str, str]) -> dict:
    """The numbers behind ``name``'s side: its estimates, its host work on VDLA with its final
    neighbours, and how its move would change the other candidates' host work (seconds)."""
    est = model.estimates[name]
    here = {**targets, name: VDLA}
    there = {**targets, name: CPU}
    others = [n for n in model.estimates if n != name]
    neighbours = sum(model.own_s(n, there) - model.own_s(n, here) for n in others)  # on the CPU minus on VDLA
    return {"vdla_s": est.vdla_s, "host_s": model.host_s(name, here), "cpu_s": est.cpu_s,
            "neighbours_host_s": neighbours, "basis": est.basis, "chosen": targets[name]}


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def reason(c: dict) -> str:
    """'VDLA 0.41 ms + host 0.12 ms < CPU 2.3 ms' (or the other way round), with the neighbours'
    host change when the op's side changes it (``neighbours_host_s``: their host work with the op
    on the CPU minus with it on VDLA)."""
    vdla = f"VDLA {ms(c['vdla_s'])} + host {ms(c['host_s'])}"
    cpu = f"CPU {ms(c['cpu_s'])}"
    n = c["neighbours_host_s"]
    if c["chosen"] == VDLA:
        side, other = vdla, cpu + (f" + neighbours' host {ms(n)}" if n else "")
    else:
        side, other = cpu + (f" + neighbours' host {ms(n)}" if n else ""), vdla
    return f"{side} {'<' if _lower(c) else '<='} {other}"


def _lower(c: dict) -> bool:
    on_vdla = c["vdla_s"] + c["host_s"]
    on_cpu = c["cpu_s"] + c["neighbours_host_s"]
    return on_vdla < on_cpu if c["chosen"] == VDLA else on_cpu < on_vdla
