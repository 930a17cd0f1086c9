"""Run a partitioned quantized graph: VDLA ops as bundles on a driver device, CPU ops through the
LLVM kernels, and record per op what it cost.

Accelerator ops run on a loaded model (``device.loaded_model()``, :mod:`driver.session`): each
op's bundles (prebuilt, or compiled here on first use) are written to device buffers once, and
per inference only the packed inputs are written and the outputs read back, byte ranges of their
symbols. Every activation crosses the CPU (packed, written, read, unpacked): where producer and
consumer both run on the accelerator their layouts differ (the consumer pads with its zero point,
or the ALU add loads int32), except a 1x1 conv after an accelerator add, which would need both
programs linked into one buffer; each such record says why (``extra["input_path"]``). A device
without ``loaded_model`` (the sweep's timing device) runs whole bundles with ``run(bundle)``;
its records count the same crossing bytes.

Times: accelerator ops take the device's cycles at the configured clock; CPU ops take the
``cpu_model``'s seconds for their kernel (a :class:`compiler.cpu_fallback.cost.CpuModel`:
modelled from the generated code, its basis recorded per op). Every op also gets the time its
kernel would take on the CPU, which makes the CPU-only baseline, and every offloaded op gets the
host's modelled work around it (``host_seconds`` by part: packing, the bytes the runtime copies,
cache maintenance of those bytes, registers, polling, unpacking, as ``runtime`` describes the
board runtime). Without a ``cpu_model`` (the board, which measures instead) nothing is modelled.
Bytes moved per op (``extra["moved"]``: per inference; ``extra["loaded"]``: the load this run
did) are by category of :data:`driver.session.CATEGORIES`.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from compiler import layout
from compiler.accel import as_conv_tensors, compile_layer, layer_output
from compiler.cpu_fallback import PackSpec, UnpackSpec
from compiler.network.alu_add import add_output, compile_vdla_add
from compiler.network.cpu_ops import cpu_kernel, layout_specs
from compiler.network.partition import Placement
from compiler.network.vdla_ops import bundle_key, part_tensors, vdla_parts
from compiler.frontend.graph import only_output
from compiler.quantize.qgraph import QGraph, QNode
from vdla_hw.bundle import BYTE_CATEGORIES, Bundle
from vdla_hw.config import Config
from vdla_hw.errors import VdlaError


class RunStopped(VdlaError):
    """A run stopped between two ops because its ``should_stop`` said so (a deadline, a cancel)."""


class AcceleratorDevice(Protocol):
    """What the executor needs of a device (``driver.Device`` is one): its configuration, its
    ``target`` name (what a record's ``measured_by`` names), and ``run(bundle)`` returning an
    object with ``dram``, ``cycles``, ``seconds`` and ``counters``."""

    config: Config
    target: str

    def run(self, bundle: Bundle): ...


@dataclass
class LayerRecord:
    name: str
    op: str
    placement: str
    reason: str
    macs: int                   # MACs executed where the op ran: on VDLA the GEMM core's lanes (every
                                # non-reset GEMM uop x BATCH x BLOCK_IN x BLOCK_OUT, padding included;
                                # a device that reports no GEMM activity: the op's own MACs), on the
                                # CPU the op's own MACs (the kernels do not pad)
    useful_macs: int = 0        # MACs of the unpadded op: real channels, real output pixels
                                # (N x OC x OH x OW x IC/groups x K x K; dense N x OC x IC)
    cycles: int = 0             # accelerator cycles (0 on the CPU)
    seconds: float = 0.0        # time in the CPU + VDLA configuration (accelerator or modelled CPU)
    cpu_seconds: float = 0.0    # modelled CPU time of this op's kernel (the CPU-only baseline)
    cpu_cycles: float = 0.0     # the same in CPU cycles
    cpu_basis: str = ""         # what the CPU time rests on
    host_seconds: float = 0.0   # modelled host work around an offloaded op (sum of host_parts)
    host_parts: dict = field(default_factory=dict)
    utilization: float | None = 0.0  # GEMM utilisation on the accelerator (None: not measured)
    bytes: int | None = 0       # DRAM bytes the accelerator moved (None: not measured)
    measured_by: str = ""       # on VDLA: which device counted utilisation and bytes, or what it did not
    wall_seconds: float = 0.0   # host time spent compiling and running this op here
    estimate: dict = field(default_factory=dict)  # cost placement's pre-run comparison (placement_cost)
    extra: dict = field(default_factory=dict)

    # JSON key -> attribute (the report's names)
    KEYS = {"name": "name", "op": "op", "placement": "placement", "reason": "reason", "macs": "macs",
            "useful_macs": "useful_macs",
            "cycles": "cycles", "seconds": "seconds", "cpu_s": "cpu_seconds", "cpu_cycles": "cpu_cycles",
            "cpu_basis": "cpu_basis", "host_s": "host_seconds", "host": "host_parts",
            "utilization": "utilization", "bytes": "bytes", "measured_by": "measured_by", "estimate": "estimate"}

    def as_dict(self) -> dict:
        return {key: getattr(self, attr) for key, attr in self.KEYS.items()}

    @classmethod
    def from_dict(cls, row: dict) -> "LayerRecord":
        """The record of an ``as_dict()`` row (unknown keys ignored)."""
        return cls(**{attr: row[key] for key, attr in cls.KEYS.items() if key in row})


@dataclass
class ExecResult:
    outputs: tuple[np.ndarray, ...]   # the network's outputs, in ``QGraph.outputs``' order
    records: list[LayerRecord]
    sim_wall_seconds: float = 0.0
    compile_wall_seconds: float = 0.0
    cpu_wall_seconds: float = 0.0
    model_wall_seconds: float = 0.0   # host time spent in the CPU model (analyses, cache reads)
    bytes_moved: dict = field(default_factory=dict)  # {"load": {category: bytes}, "per_inference": {...}}

    @property
    def output(self) -> np.ndarray:
        """The only output of a one-output network's run (ValueError if it has several)."""
        return only_output("the run", self.outputs)


CATEGORIES = BYTE_CATEGORIES


def stream_bytes(bundle) -> int:
    """Bytes of ``bundle``'s instruction stream and micro-op tables (what a runtime that builds
    its stream per call writes into device memory before each run)."""
    c = bundle.config
    uops = 0
    for sym in bundle.symbols.values():
        if sym.mem == "uop":
            lo, hi = sym.byte_range(c)
            uops += hi - lo
    return bundle.insn_count * c.insn_bytes + uops


def outputs_sha256(outputs) -> str:
    """SHA-256 of a run's outputs: their bytes (C order) one after another, in the graph's order
    (for a network of one output, the SHA-256 of that array's bytes)."""
    h = hashlib.sha256()
    for output in outputs:
        h.update(np.ascontiguousarray(output).tobytes())
    return h.hexdigest()


def bytes_moved(records: list[LayerRecord]) -> dict:
    """{"load": ..., "per_inference": ...} summed over the records' ``extra["loaded"]``/``["moved"]``."""
    total = {"load": dict.fromkeys(CATEGORIES, 0), "per_inference": dict.fromkeys(CATEGORIES, 0)}
    for r in records:
        for key, extra in (("load", "loaded"), ("per_inference", "moved")):
            for category, value in r.extra.get(extra, {}).items():
                total[key][category] = total[key].get(category, 0) + int(value)
    return total


def input_path(node: QNode, producer: QNode | None, producer_place: str) -> str:
    """Why ``node``'s first input goes through the CPU when its producer ran on the accelerator
    too (empty if the producer ran on the CPU): the layouts of the producer's store and of the
    consumer's load differ in every case our compiler produces."""
    if producer is None or producer_place != "vdla":
        return ""
    if node.op == "add":
        return f"via CPU: {producer.name} stores int8, the ALU add loads int32 accumulators"
    if node.op == "conv" and (node.attrs["pad_value"] != 0 or len(set(node.attrs["pad"])) != 1):
        return (f"via CPU: {producer.name} stores unpadded, this conv loads an input padded with "
                f"{node.attrs['pad_value']}")
    return (f"via CPU: {producer.name} and this op each have their own buffer (no linked arena), so "
            "the output is read back and written again")


def fill_inputs(bundle: Bundle, name: str, writes: dict[str, np.ndarray]) -> Bundle:
    """A copy of a prebuilt bundle with this run's packed activations written into its input
    symbols (``inp`` of a conv/dense part, ``a`` and ``b`` of an ALU add); weights are already in it."""
    dram = bundle.dram.copy()
    for symbol, packed in writes.items():
        lo, raw = bundle.input_bytes(symbol, packed, f"node {name!r}")
        dram[lo:lo + raw.size] = raw
    return bundle.with_dram(dram)


def add_inputs(config: Config, args: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The packed operands of an ALU add (widened to int32)."""
    return {"a": layout.pack_activations(args[0], config.batch, config.block_out, dtype=np.int32),
            "b": layout.pack_activations(args[1], config.batch, config.block_out, dtype=np.int32)}


class Executor:
    """Runs a graph op by op. ``prebuilt`` maps bundle keys (``vdla_ops.bundle_key``: a node's, or one per
    group of a grouped conv) to bundles compiled earlier (a deployed package): their inputs are
    written in instead of compiling. ``kernels`` maps a CPU kernel spec to a callable (default: the
    host JIT; on the board, the packaged ARM library). ``cpu_model`` (``kernel_cost(spec)``,
    ``offload_cost(...)``, ``name``) models CPU and host time, with ``runtime`` (a
    ``cost.RuntimeProfile``) saying what the board runtime does per offload.
    ``should_stop`` (no arguments, a reason or None) is asked before every op; a reason stops
    the run there with RunStopped (so the granularity is one op, whose work is bounded by the
    device's and the kernels' own bounds). ``model``: the loaded model to run on (default: the
    device's ``loaded_model()``); a second ``run`` of the same executor writes no bundle again."""

    def __init__(self, q: QGraph, placements: dict[str, Placement], device: AcceleratorDevice, *, progress=None,
                 cpu_model=None, runtime=None, vthreads: int | None = None,
                 prebuilt: dict[str, Bundle] | None = None, kernels=None, should_stop=None, model=None):
        self.q, self.placements, self.device = q, placements, device
        # The loaded model the accelerator ops run on (kept between runs of this executor); a
        # given one (a server's, kept between runs of the same package), else the device's own.
        if model is None and hasattr(device, "loaded_model"):
            model = device.loaded_model()
        self.model = model
        self.producers = {n.output: n for n in q.nodes}
        self.consumers = {}
        for n in q.nodes:
            for name in n.inputs:
                self.consumers.setdefault(name, []).append(n)
        self.should_stop = should_stop
        self.config = device.config
        self.progress = progress or (lambda message: None)
        if cpu_model is not None and runtime is None:
            raise ValueError("Executor: a cpu_model needs the runtime profile of the board runtime")
        self.cpu_model, self.runtime = cpu_model, runtime
        self.vthreads = vthreads
        self.prebuilt = prebuilt  # None: compile here; else every accelerator bundle comes from it
        if kernels is None:
            from compiler.cpu_fallback import host_jit  # llvmlite: only where kernels are compiled here

            kernels = host_jit().kernel
        self.kernels = kernels
        self.sim_wall = self.compile_wall = self.cpu_wall = self.model_wall = 0.0

    def cpu_time(self, node: QNode, args: list[np.ndarray], record: LayerRecord):
        """Record the modelled CPU time of ``node``'s kernel; return (spec, inputs, shape) or None."""
        kernel = cpu_kernel(node, args)
        if self.cpu_model is None:
            record.cpu_basis = "not modelled"
        elif kernel is None:
            record.cpu_basis = "no work (a reshape)"
        else:
            start = time.perf_counter()
            cost = self.cpu_model.kernel_cost(kernel[0])
            self.model_wall += time.perf_counter() - start
            record.cpu_seconds, record.cpu_cycles, record.cpu_basis = cost.seconds, cost.cycles, cost.basis
        return kernel

    def run_cpu(self, node: QNode, args: list[np.ndarray], record: LayerRecord) -> np.ndarray:
        kernel = self.cpu_time(node, args, record)
        record.seconds = record.cpu_seconds
        if kernel is None:
            return args[0].reshape(self.q.shapes[node.output])
        spec, inputs, shape = kernel
        start = time.perf_counter()
        out = self.kernels(spec)(*inputs)
        self.cpu_wall += time.perf_counter() - start
        return out.reshape(shape) if shape is not None else out.reshape(self.q.shapes[node.output])

    def bundles_for(self, node: QNode, args: list[np.ndarray]):
        """[(key, bundle, compiler layer or None, its packed input shapes, {input symbol: packed})]
        of an accelerator op: resident bundles of the loaded model, else prebuilt bundles, else
        bundles compiled now (one per group of a grouped conv; an input padded with its zero point
        is padded here)."""
        if node.op == "add":
            inputs = [(a.shape, "int32") for a in args]
            writes = add_inputs(self.config, args)
            key = bundle_key(node.name)
            return [(key, self.bundle(key, lambda: compile_vdla_add(node, args, self.config)), None, inputs, writes)]
        out = []
        for part in vdla_parts(node, self.q.shapes[node.inputs[0]], self.q.shapes[node.output]):
            tensors = part_tensors(node, part, *args)
            inputs = [(tensors["input"].shape, "int8")]
            conv = as_conv_tensors(part.layer, tensors)
            packed = layout.pack_activations(conv["input"], self.config.batch, self.config.block_in)
            writes = {"inp": packed}
            if node.op == "matmul":  # the second operand: this run's weights (the program has zeros)
                inputs.append((tensors["weight"].shape, "int8"))
                writes["wgt"] = layout.pack_weights(conv["weight"], self.config.block_out, self.config.block_in)
                if node.attrs.get("a_zp"):  # the first operand's zero point times b's column sums
                    inputs.append(((1, tensors["bias"].shape[0]), "int32"))
                    writes["bias"] = layout.pack_bias(tensors["bias"], self.config.batch, self.config.block_out)
                tensors = part_tensors(node, part, args[0])
            bundle = self.bundle(part.key, lambda: compile_layer(part.layer, self.config, tensors=tensors,
                                                                 vthreads=self.vthreads))
            out.append((part.key, bundle, part.layer, inputs, writes))
        return out

    def bundle(self, key: str, compile_now) -> Bundle:
        """The bundle ``key``: resident in the loaded model, prebuilt, or ``compile_now()``."""
        if self.model is not None and key in self.model:
            return self.model.bundle(key)
        if self.prebuilt is not None:
            return self.prebuilt[key]
        return compile_now()

    def run_bundle(self, key: str | None, bundle, name: str, inputs: list[tuple], writes: dict[str, np.ndarray],
                   record: LayerRecord):
        """Run one bundle with this run's packed inputs ``writes``: on the loaded model (loaded
        first if it is not resident), else whole on the device (``key`` None: a subclass's program
        whose inputs are in it already). Records the bytes moved."""
        moved = record.extra.setdefault("moved", dict.fromkeys(CATEGORIES, 0))
        output = bundle.meta["output"]["symbol"]
        if self.model is None or key is None:
            run = self.device.run(fill_inputs(bundle, name, writes) if writes else bundle)
            # what a loaded model would move: the packed inputs and the output symbol
            moved["activations_in"] += sum(s.io_bytes()[1] for s in layout_specs(self.config, inputs, PackSpec))
            moved["activations_out"] += int(bundle.read(output, run.dram).nbytes)
            return run
        if key not in self.model:
            loaded = self.model.load(key, bundle, tuple(writes), (output,))
            total = record.extra.setdefault("loaded", dict.fromkeys(CATEGORIES, 0))
            for category, value in loaded.items():
                total[category] += value
        run, counts = self.model.run(key, writes)
        for category, value in counts.items():
            moved[category] += value
        return run

    def run_vdla(self, node: QNode, args: list[np.ndarray], record: LayerRecord) -> np.ndarray:
        self.cpu_time(node, args, record)
        producer = self.producers.get(node.inputs[0])
        path = input_path(node, producer, self.placements[producer.name].target if producer else "cpu")
        if path:
            record.extra["input_path"] = path
        start = time.perf_counter()
        bundles = self.bundles_for(node, args)
        compiled = time.perf_counter()
        outputs, runs, counts = [], [], []
        # a subclass may give (bundle, layer, inputs): programs that need no inputs written
        bundles = [entry if len(entry) == 5 else (None, *entry, {}) for entry in bundles]
        for index, (key, bundle, layer, inputs, writes) in enumerate(bundles):
            before = dict(record.extra.get("moved", dict.fromkeys(CATEGORIES, 0)))
            run = self.run_bundle(key, bundle, node.name, inputs, writes, record)
            runs.append(run.details)
            record.cycles += run.cycles
            record.seconds += run.seconds
            counts.append((run.cycles, run.counters.get("gemm_utilization"), run.counters.get("bytes")))
            if self.cpu_model is not None:  # the groups' outputs unpack once, as one tensor
                last = index == len(bundles) - 1
                moved = {k: v - before.get(k, 0) for k, v in record.extra["moved"].items()}
                self.host_time(inputs, self.q.shapes[node.output] if last else None, moved, run.seconds, record,
                               node=node, bundle=bundle)
            outputs.append(add_output(bundle, run.dram) if layer is None else layer_output(bundle, run.dram))
        record.extra.update(layer=bundles[0][2], layers=[layer for _, _, layer, _, _ in bundles], run=runs[0],
                            device_wall=time.perf_counter() - compiled)
        self.compile_wall += compiled - start
        self.sim_wall += record.extra["device_wall"]
        self.count_activity(record, counts)
        if node.op == "matmul":   # one (N, M) product per batch index
            out = np.stack(outputs)
        else:
            out = outputs[0] if len(outputs) == 1 else np.concatenate(outputs, axis=1)
        return out.reshape(self.q.shapes[node.output])

    def count_activity(self, record: LayerRecord, counts: list[tuple]) -> None:
        """An offloaded op's GEMM utilisation, executed MACs and DRAM bytes from its runs'
        ``(cycles, gemm_utilization, bytes by kind)``; a device that does not count them (rtl and
        pynq report cycles and per-module counters only) leaves them None ("not measured"), the
        op's own MACs as ``macs``, and ``measured_by`` says so."""
        target = self.device.target
        missing = [what for what, index in (("GEMM utilisation", 1), ("DRAM bytes", 2))
                   if any(count[index] is None for count in counts)]
        record.measured_by = f"{target} device" + (f"; not measured: {', '.join(missing)}" if missing else "")
        record.utilization = record.bytes = None
        if "GEMM utilisation" not in missing:
            busy = sum(cycles * float(utilization) for cycles, utilization, _ in counts)
            record.utilization = busy / record.cycles if record.cycles else 0.0
            if record.macs:  # conv and dense: the GEMM lanes' MACs (busy = non-reset GEMM uops)
                c = self.config
                record.macs = round(busy) * c.batch * c.block_in * c.block_out
        if "DRAM bytes" not in missing:
            record.bytes = sum(int(v) for *_, moved in counts for k, v in moved.items() if k != "insn")

    def host_time(self, inputs: list[tuple], output: tuple | None, moved: dict, busy_s: float,
                  record: LayerRecord, node: QNode | None = None, bundle=None) -> None:
        """What the board runtime does around one run of a loaded bundle: pack every input (shape,
        dtype) into the blocked layout, write the packed bytes (``moved["activations_in"]``), keep
        them coherent, run (registers, polling), read the output's bytes back
        (``moved["activations_out"]``) and unpack the output (if given) to NCHW for whoever reads
        it next; added to the record. A runtime that keeps layouts on the device
        (``runtime.keeps_layouts``, VTA's) does none of this for an input ``node`` takes from
        another offloaded op, nor for an output only offloaded ops read (:meth:`on_device`); one
        that writes its instruction stream per run (``runtime.writes_stream``) writes ``bundle``'s
        instructions and micro-ops (``bundle`` is read only then: a subclass's program, such as
        the sweep's timed programs, need not be a bundle)."""
        kept_in, kept_out = self.on_device(node, len(inputs)) if node is not None else ([False] * len(inputs), False)
        packs = layout_specs(self.config, [t for t, kept in zip(inputs, kept_in) if not kept], PackSpec)
        skipped = layout_specs(self.config, [t for t, kept in zip(inputs, kept_in) if kept], PackSpec)
        written = moved["activations_in"] - sum(s.io_bytes()[1] for s in skipped)
        read = 0 if kept_out else moved["activations_out"]
        unpacks = layout_specs(self.config, [(output, "int8")] if output is not None and not kept_out else [],
                               UnpackSpec)
        start = time.perf_counter()
        cost = self.cpu_model.offload_cost(packs=packs, unpacks=unpacks, written_bytes=written, read_bytes=read,
                                           accelerator_s=busy_s, runtime=self.runtime,
                                           stream_bytes=stream_bytes(bundle) if self.runtime.writes_stream else 0)
        self.model_wall += time.perf_counter() - start
        record.host_seconds += cost.seconds
        for part, seconds in cost.parts.items():
            record.host_parts[part] = record.host_parts.get(part, 0.0) + seconds

    def on_device(self, node: QNode, count: int) -> tuple[list[bool], bool]:
        """Under a runtime that keeps layouts on the device: whether each of a run's ``count``
        inputs comes from an offloaded op (``node``'s inputs in order; a run with another count,
        one group of a grouped conv, reads its first input), and whether only offloaded ops read
        ``node``'s output (not a network output). All False under our runtime."""
        if self.runtime is None or not self.runtime.keeps_layouts:
            return [False] * count, False
        names = list(node.inputs) if count == len(node.inputs) else [node.inputs[0]] * count

        def offloaded(other) -> bool:
            return other is not None and self.placements[other.name].target == "vdla"

        kept_in = [offloaded(self.producers.get(name)) for name in names]
        readers = self.consumers.get(node.output, [])
        kept_out = node.output not in self.q.outputs and bool(readers) and all(offloaded(r) for r in readers)
        return kept_in, kept_out

    def kernel_specs(self) -> list:
        """Every kernel spec this run asks the CPU model for (so it can analyse them ahead)."""
        specs = []
        for node in self.q.nodes:
            dtype = np.float32 if node.op == "quantize" else np.int8
            args = [np.zeros(self.q.shapes[name], dtype) for name in node.inputs]
            kernel = cpu_kernel(node, args)
            specs += [kernel[0]] if kernel else []
            if self.placements[node.name].target == "vdla":
                packed = "int32" if node.op == "add" else "int8"
                shapes = [a.shape for a in args]
                if node.op == "matmul":  # each product's rows and its weights
                    shapes = [(a.shape[-2], a.shape[-1]) for a in args[:1]] + [(args[1].shape[-1], args[1].shape[-2])]
                    if node.attrs.get("a_zp"):  # and its bias (run_parts)
                        specs += layout_specs(self.config, [((1, args[1].shape[-1]), "int32")], PackSpec)
                specs += layout_specs(self.config, [(shape, packed) for shape in shapes], PackSpec)
                specs += layout_specs(self.config, [(self.q.shapes[node.output], "int8")], UnpackSpec)
        return specs

    def run(self, x: np.ndarray) -> ExecResult:
        if self.cpu_model is not None and hasattr(self.cpu_model, "prefetch"):
            start = time.perf_counter()
            started = self.cpu_model.prefetch(self.kernel_specs())
            self.model_wall += time.perf_counter() - start
            if started:
                self.progress(f"analysing {started} CPU kernels for {self.cpu_model.name} in the background "
                              "(cached for the next run)")
        values = {self.q.input: np.ascontiguousarray(x, dtype=np.float32)}
        records = []
        for index, node in enumerate(self.q.nodes):
            why = self.should_stop() if self.should_stop is not None else None
            if why:
                raise RunStopped(f"run stopped before op {index + 1} of {len(self.q.nodes)} ({node.name}): {why}")
            place = self.placements[node.name]
            record = LayerRecord(node.name, node.op, place.target, place.reason, node.macs, node.macs,
                                 estimate=place.cost or {})
            args = [np.ascontiguousarray(values[i]) for i in node.inputs]
            start = time.perf_counter()
            if place.target == "vdla":
                out = self.run_vdla(node, args, record)
            else:
                out = self.run_cpu(node, args, record)
            record.wall_seconds = time.perf_counter() - start
            values[node.output] = out
            records.append(record)
            cpu = self.cpu_model.name if self.cpu_model is not None else "CPU"
            where = f"{record.cycles:>10,d} cycles" if place.target == "vdla" else f"{record.cpu_seconds * 1e3:8.3f} ms {cpu}"
            self.progress(f"[{index + 1:>2}/{len(self.q.nodes)}] {node.name:<24} {node.op:<8} {place.target:<4} {where}"
                          f"  ({record.wall_seconds:.2f} s)")
        return ExecResult(tuple(values[name] for name in self.q.outputs), records, self.sim_wall, self.compile_wall, self.cpu_wall,
                          self.model_wall, bytes_moved(records))


def execute(q: QGraph, x: np.ndarray, placements: dict[str, Placement], device: AcceleratorDevice, **options) -> ExecResult:
    """Run ``q`` on input ``x`` (float NCHW); see :class:`Executor` for the options."""
    return Executor(q, placements, device, **options).run(x)
