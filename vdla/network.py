"""The main job as an API: import (or build) a model, quantize, partition, run, report.

``run_network("resnet18")`` returns a :class:`NetworkReport` whose ``as_dict()`` is the JSON of
``vdla run``: ``layers``, ``totals``, ``quantization``, ``bit_exact``, ``output_sha256``. CPU and
host times come from the code-level CPU model (``cpu=`` names its data file).
"""

from __future__ import annotations

import hashlib
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from compiler.frontend import load_onnx
from compiler.frontend import float_ref
from compiler.frontend.fold import check_sizes
from compiler.frontend.graph import Graph, ModelError
from compiler.network import PartitionOptions, execute, partition
from compiler.network.executor import outputs_sha256
from compiler.network.report import layer_row, summarise
from compiler.quantize import quantize_graph, reference
from compiler.quantize.qgraph import QGraph
from driver import open_device
from vdla.inputs import IMAGENET, InputError, Inputs, check_run_inputs, check_run_tensors, load_inputs, synthetic
from vdla_hw.cache import cached
from vdla_hw.config import load_config
from vdla_hw.errors import VdlaError
from vdla_hw.files import open_checked, read_checked
from vdla_hw.limits import MAX_GRAPH_OPS, MAX_MODEL_BYTES, MAX_TENSOR_BYTES, RESNET_MAX_RESOLUTION, mib

BUILTIN = {"resnet18": 18, "resnet34": 34}
DEFAULT_CPU = "cortex-a9"


def board_runtime(config=None):
    """What the board runtime's driver does per offloaded layer of a loaded model
    (``driver.registers.run_profile``: register sequence, no image copies, whether the port of
    ``config`` is coherent, poll schedule), for the executor's host-overhead model."""
    from compiler.cpu_fallback.cost import RuntimeProfile
    from driver.registers import run_profile

    return RuntimeProfile(**run_profile(config))


def host_profile(name: str, config=None):
    """The runtime profile of host runtime ``name`` (``vdla.host_runtime.NAMES``) for ``config``;
    InputError for another name."""
    from vdla import host_runtime

    if name not in host_runtime.NAMES:
        raise InputError(f"host runtime {name!r} is not one of {', '.join(host_runtime.NAMES)}")
    return board_runtime(config) if name == "ours" else host_runtime.profile(name, config)
CALIBRATION_SEED, TEST_SEED = 1, 2


def load_model(model: str, resolution: int = 224, input_shape: tuple[int, ...] | None = None) -> Graph:
    """A built-in model name (resnet18, resnet34) or the path of a float ONNX file (``input_shape``
    fixes its dynamic dimensions)."""
    if model in BUILTIN:
        if input_shape is not None:
            raise ModelError(model, "--input-shape is for ONNX files; the built-in models take --resolution")
        from compiler.frontend.resnet import resnet_graph

        if not 32 <= resolution <= RESNET_MAX_RESOLUTION:
            raise ModelError(model, f"resolution {resolution} is outside 32..{RESNET_MAX_RESOLUTION} (the stem's "
                             f"output must fit {mib(MAX_TENSOR_BYTES)} as float32; vdla_hw/limits.py)")
        return check_sizes(resnet_graph(BUILTIN[model], resolution), model)  # = from_model(build_resnet(...))
    path = Path(model)
    if path.suffix.lower() != ".onnx" and not path.exists():
        raise ModelError(model, f"not a built-in model ({', '.join(BUILTIN)}) nor an ONNX file")
    return check_sizes(load_onnx(path, input_shape), model)


def model_source(model: str, input_shape: tuple[int, ...] | None = None) -> tuple | None:
    """What, besides the code and the resolution, determines the graph :func:`load_model` builds:
    a built-in model's name, or an ONNX file's sha256 (not its name) and those of the external
    data files it names, with ``input_shape``; None for a file that cannot be read or parsed
    (:func:`load_model` then reports it).

    Every file is opened by :func:`vdla_hw.files.open_checked` with onnx_read's rules, before a
    byte is read: regular files only (a FIFO or ``/dev/zero`` named as external data is refused,
    not read forever), the model and all its external data files together at most
    :data:`~vdla_hw.limits.MAX_MODEL_BYTES`, external data inside the model's folder (no absolute
    path, ``..`` or link leading out: ``/etc/passwd`` is never read, let alone hashed). A refused
    file gives None, so the key is only ever computed from what those checks let through."""
    shape = None if input_shape is None else list(input_shape)
    if model in BUILTIN:
        return ("builtin", model, shape)
    limit = "vdla_hw.limits.MAX_MODEL_BYTES"
    try:
        data = read_checked(model, "model file", MAX_MODEL_BYTES, limit)
        base, budget, external = Path(model).resolve().parent, MAX_MODEL_BYTES - len(data), []
        for name in external_files(data):
            h = hashlib.sha256()
            with open_checked(name, "external data file", budget, limit, inside=base) as fh:
                while chunk := fh.read(min(1 << 20, budget + 1)):
                    budget -= len(chunk)
                    if budget < 0:  # grew while being read
                        return None
                    h.update(chunk)
            external.append((name, h.hexdigest()))
    except (VdlaError, OSError, ValueError):
        return None
    return ("onnx", hashlib.sha256(data).hexdigest(), external, shape)


def external_files(data: bytes) -> list[str]:
    """The external-data files (relative names) an ONNX file's tensors are stored in; ValueError
    for bytes that are not an ONNX model."""
    if b"location" not in data:  # the key every external tensor names its file by
        return []
    import onnx
    from google.protobuf.message import DecodeError

    from compiler.frontend.onnx_read import _tensors

    try:
        parsed = onnx.load_model_from_string(data)
    except (DecodeError, RuntimeError) as err:
        raise ValueError(f"not an ONNX model ({type(err).__name__})") from None
    return sorted({entry.value for _, tensor in _tensors(parsed.graph)
                   if tensor.data_location == onnx.TensorProto.EXTERNAL
                   for entry in tensor.external_data if entry.key == "location"})


def built_model(model: str, resolution: int = 224, input_shape: tuple[int, ...] | None = None) -> Graph:
    """:func:`load_model` through the disk cache (kind ``model``, keyed by :func:`model_source`
    and the resolution; errors are raised, never cached)."""
    source = model_source(model, input_shape)
    if source is None:
        return load_model(model, resolution, input_shape)
    return cached("model", (source, resolution if model in BUILTIN else None),
                  lambda: load_model(model, resolution, input_shape))


def content_digest(value) -> str:
    """sha256 of a graph's (or any picklable value's) pickle: a cache key part naming its content.
    The pickle is written without its memo (``Pickler.fast``: a value referenced twice is written
    twice), so equal values give equal digests however their objects are shared (a graph built in
    memory, imported from ONNX or read back from the cache); streamed into the hash, no copy."""
    h = hashlib.sha256()
    pickler = pickle.Pickler(_HashWriter(h), protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True
    pickler.dump(value)
    return h.hexdigest()


class _HashWriter:
    """A file-like ``write`` that feeds a hash."""

    def __init__(self, h):
        self.write = h.update


def quantized(graph: Graph, calibration: np.ndarray | Inputs, graph_digest: str | None = None, **options) -> QGraph:
    """``quantize_graph(graph, calibration, **options)`` through the disk cache (kind ``qgraph``,
    keyed by the graph's content, the calibration inputs (their bytes, or an :class:`Inputs`'
    ``key``) and every option)."""
    key = calibration.key if isinstance(calibration, Inputs) else np.asarray(calibration)
    parts = (graph_digest or content_digest(graph), key, options)
    return cached("qgraph", parts, lambda: quantize_graph(graph, calibration, **options))  # a set: read as it comes


def cached_quantization_report(graph: Graph, q: QGraph, tests: Inputs, graph_digest: str | None = None) -> dict:
    """:func:`quantization_report` through the disk cache (kind ``qreport``: a pure function of
    the two graphs and the test inputs with their source and names)."""
    return report_beside(graph, q, tests, graph_digest, fork=False).result()


def report_beside(graph: Graph, q: QGraph, tests: Inputs, graph_digest: str | None = None,
                  fork: bool = True, layers: dict | None = None, config=None) -> "_Report":
    """:func:`cached_quantization_report` started now and collected by ``.result()``: unless the
    cache holds it, it is computed in a child process (``vdla.beside``) while the caller goes on
    (``vdla run``: the simulation), on the second core; ``.cancel()`` stops it. The value is the
    same either way (the report is deterministic); this process stores it in the cache.
    ``fork=False``: computed (or read) when collected, here. With ``layers`` (conv name ->
    compiler layer) and their ``config``, the child then also runs :func:`one_thread_timing`
    (``.timing()``: its answer, or {} if it gave none; the roofline computes what is missing)."""
    from vdla import beside
    from vdla_hw import cache

    parts = (graph_digest or content_digest(graph), content_digest(q), tests.key, tests.source, list(tests.names))

    def work():  # in the child only
        report = quantization_report(graph, q, tests)
        try:
            timing = one_thread_timing(layers, config) if layers else {}
        except Exception:  # noqa: BLE001 (the roofline computes it again, and reports any error)
            timing = {}
        return report, timing

    job = beside.Beside(work, fork=fork and not cache.contains("qreport", parts),
                        fallback=lambda: (quantization_report(graph, q, tests), {}))
    return _Report(job, parts)


class _Report:
    """A quantization report being computed: its value from the cache or the job, stored."""

    def __init__(self, job, parts):
        self.job, self.parts, self._timing = job, parts, {}

    def result(self) -> dict:
        def compute():
            report, self._timing = self.job.result()
            return report

        return cached("qreport", self.parts, compute)

    def timing(self) -> dict:
        return self._timing

    def cancel(self) -> None:
        self.job.cancel()


def _config_key(config) -> tuple:
    return (config.name, sorted(config.params.items()), sorted(config.sources.items()))


def offloaded_convs(q: QGraph, placements: dict) -> dict:
    """conv name -> the compiler layer the executor runs for each conv placed on the accelerator
    (its first part: ``compiler.network.vdla_ops.vdla_parts``, as ``record.extra["layer"]``)."""
    from compiler.network.vdla_ops import vdla_parts

    return {node.name: vdla_parts(node, q.shapes[node.inputs[0]], q.shapes[node.output])[0].layer
            for node in q.nodes if node.op == "conv" and node.name in placements and placements[node.name].target == "vdla"}


def one_thread_timing(layers: dict, config) -> dict:
    """conv name -> (layer, configuration key, (macs, DRAM bytes but instructions, seconds)) of
    each layer compiled with one thread (no latency hiding) and run on the simulator's
    timing-only mode: what :func:`roofline_without_latency_hiding` plots."""
    import vdla_sim
    from compiler.accel import compile_layer

    out = {}
    for name, layer in layers.items():
        sim = vdla_sim.simulate(compile_layer(layer, config, vthreads=1), data=False)
        out[name] = (layer, _config_key(config),
                     (sim.macs, sum(v for k, v in sim.bytes.items() if k != "insn"), sim.seconds))
    return out


def quantize_model(graph: Graph, model: str, calibration: int = 4, wide_output: bool = True,
                   add_scales: bool = True) -> QGraph:
    """The int8 graph of ``graph`` calibrated on ``calibration`` synthetic inputs, as ``vdla run``
    quantizes it by default (``wide_output``: int32 logits, unless the classifier is to run on the
    accelerator, which stores int8; ``add_scales``: residual adds with multipliers, CPU only)."""
    return quantized(graph, synthetic(graph.shapes[graph.input], calibration, CALIBRATION_SEED),
                     wide_output=wide_output, add_scales=add_scales)


def is_classifier_output(shape: tuple[int, ...]) -> bool:
    """Whether an output of ``shape`` is one score per class per sample ((N, K) or (N, K, 1, 1),
    K >= 2), for which top-1 agreement means something; a feature map or a segmentation map is not."""
    return len(shape) >= 2 and shape[1] >= 2 and all(d == 1 for d in shape[2:])


def top1_agreement(want: np.ndarray, got: np.ndarray) -> float:
    """The fraction of samples (axis 0) whose highest score is in the same place in both."""
    return float((want.reshape(len(want), -1).argmax(axis=1) == got.reshape(len(got), -1).argmax(axis=1)).mean())


def positions(names: tuple[str, ...]) -> dict[str, list[int]]:
    """value name -> its places among a graph's outputs (a value may be listed more than once)."""
    places: dict[str, list[int]] = {}
    for k, name in enumerate(names):
        places.setdefault(name, []).append(k)
    return places


ERROR_CHUNK = 1 << 16  # elements compared at a time in float64 (512 KiB each), whatever a tensor's size


def error_sums(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """(sum of squared differences, sum of squares of ``want``, count) in float64, a chunk of
    :data:`ERROR_CHUNK` elements at a time: a few MiB of temporaries for a tensor of any size
    (whole float64 copies of a MAX_TENSOR_BYTES tensor and their differences were 1.3 GiB)."""
    want, got = np.ravel(want), np.ravel(got)
    total = np.zeros(3)
    for start in range(0, want.size, ERROR_CHUNK):
        f = want[start:start + ERROR_CHUNK].astype(np.float64)
        d = got[start:start + ERROR_CHUNK].astype(np.float64)
        total += (((f - d) ** 2).sum(), (f ** 2).sum(), f.size)
    return total


def quantization_report(graph: Graph, q: QGraph, tests: Inputs) -> dict:
    """Per-layer relative RMS error of the int8 network against the float one, each output's RMS
    error, and top-1 agreement for classifier outputs (:func:`is_classifier_output`), on the test
    inputs. ``output_rms_error``/``output_relative_error`` are those of the only output, or of the
    output with the largest relative error (``worst_output`` names it). Both networks run one
    batch of the graph at a time, each value freed once read, and every error is summed as it
    comes (:func:`error_sums`; of a classifier output only each sample's top class is kept):
    memory is one batch's live values, not every activation or output of every test input."""
    q_node = {node.output: node for node in q.nodes[1:]}
    sums = {node.name: np.zeros(3) for node in q.nodes[1:]}  # (sum of squared errors, sum of squares, count)
    out_sums = [np.zeros(3) for _ in q.outputs]
    top = {k: ([], []) for k, name in enumerate(q.outputs) if is_classifier_output(q.shapes[name])}  # argmaxes
    float_index, int8_index = positions(graph.outputs), positions(q.outputs)
    for part in tests.batches(graph.shapes[graph.input][0]):  # one model input at a time, made as read
        # both networks one batch at a time, side by side: a float value waits only until the
        # quantized node that produces the same value has run. The outputs are taken by name
        # (a model whose output is its input, such as a lone Identity, has no node for it).
        floats, pending, ends = float_ref.iter_graph(graph, part, float_ref.eval_node), {}, {"float": {}, "int8": {}}

        def pull(done) -> None:  # run the float network until done()
            while not done():
                fname, fv = next(floats)
                for k in float_index.get(fname, ()):
                    ends["float"][k] = fv
                if fname in q_node:
                    pending[fname] = fv

        for name, qv in float_ref.iter_graph(q, part, reference.eval_node):
            node = q_node.get(name)
            if node is None and name not in int8_index:
                continue
            real = q.dequantize(name, qv)  # once, for the error and the output alike
            for k in int8_index.get(name, ()):
                ends["int8"][k] = real
            if node is None:
                continue
            pull(lambda: name in pending)
            sums[node.name] += error_sums(pending.pop(name), real)
            del real
        pull(lambda: len(ends["float"]) == len(q.outputs))
        for k in range(len(q.outputs)):
            want, got = ends["float"][k], ends["int8"][k]
            out_sums[k] += error_sums(want, got)
            if k in top:
                top[k][0].append(want.reshape(len(want), -1).argmax(axis=1))
                top[k][1].append(got.reshape(len(got), -1).argmax(axis=1))
        del ends, want, got, floats, pending, part  # nothing of this input held while the next is made
    errors = {name: float(np.sqrt(e / n) / max(np.sqrt(f2 / n), 1e-12)) for name, (e, f2, n) in sums.items()}
    outputs, classifier = [], None
    for k, name in enumerate(q.outputs):
        e, f2, n = out_sums[k]
        rms = float(np.sqrt(e / n))
        entry = {"name": name, "shape": list(q.shapes[name]), "rms_error": rms,
                 "relative_error": rms / max(float(np.sqrt(f2 / n)), 1e-12)}
        if k in top:
            want_top, got_top = np.concatenate(top[k][0]), np.concatenate(top[k][1])
            entry["top1_agreement"] = float((want_top == got_top).mean())
            if classifier is None:
                classifier = (entry, want_top, got_top)
        outputs.append(entry)
    worst = max(outputs, key=lambda o: o["relative_error"])
    report = {"per_layer_error": errors, "outputs": outputs, "output_rms_error": worst["rms_error"],
              "output_relative_error": worst["relative_error"], "worst_output": worst["name"],
              "top1_agreement": classifier[0]["top1_agreement"] if classifier else None,
              "test_inputs": tests.count, "test_source": tests.source,
              "scales": "power-of-two per value (zero point -128 for never-negative values), weights per layer "
                        "or per output channel"}
    if tests.names and classifier:
        _, want_top, got_top = classifier
        report["images"] = [{"file": name, "float_top1": int(f), "int8_top1": int(g)}
                            for name, f, g in zip(tests.names, want_top, got_top)]
    return report


@dataclass
class NetworkReport:
    model: str
    config_name: str
    fingerprint: str
    target: str
    records: list
    totals: dict
    quantization: dict
    bit_exact: bool
    outputs: tuple[np.ndarray, ...]   # the executed input's outputs (int8 codes, or int32 if wide)
    timings: dict = field(default_factory=dict)
    resolution: int = 0   # input height of the network
    input: dict = field(default_factory=dict)
    outputs_float: tuple = ()  # the outputs dequantized (float32)
    output_names: tuple = ()   # the quantized graph's names of the outputs
    # conv name -> (layer, configuration key, timing-only run without latency hiding), computed
    # beside the run (run_network); roofline_without_latency_hiding uses the entries that match
    one_thread_timing: dict = field(default_factory=dict, repr=False)
    # a warning line when an accelerator op shifts by an amount VTA's bitstream runs differently
    vta_warning: str | None = None

    @property
    def output_sha256(self) -> str:
        """SHA-256 of every output's bytes, one after another (``executor.outputs_sha256``)."""
        return outputs_sha256(self.outputs)

    def as_dict(self) -> dict:
        return {"model": self.model, "config": self.config_name, "fingerprint": self.fingerprint,
                "target": self.target, "resolution": self.resolution, "layers": [layer_row(r) for r in self.records],
                "totals": self.totals, "quantization": self.quantization, "bit_exact": self.bit_exact,
                "input": self.input, "output_shape": list(self.outputs[0].shape), "output_sha256": self.output_sha256,
                "outputs": [{"name": name, "shape": list(out.shape), "sha256": outputs_sha256([out])}
                            for name, out in zip(self.output_names, self.outputs)],
                "wall_seconds": self.timings}


@dataclass
class Prepared:
    """What every run of a model starts from: the float graph, its quantized graph, the test
    inputs, the placements and the configuration."""

    graph: Graph
    q: QGraph
    placements: dict
    config: object
    timings: dict
    calibration: dict | None = None   # the calibration inputs' description (Inputs.describe)
    test_set: Inputs | None = None  # the test inputs with their source (synthetic ones made when read)
    graph_digest: str = ""          # content_digest(graph), a cache key part

    @property
    def tests(self) -> np.ndarray:
        """The test inputs (batch axis first), all of them (made, if synthetic, and kept)."""
        return self.test_set.array


def prepare(model: str = "resnet18", *, config=None, resolution: int = 224,
            options: PartitionOptions = PartitionOptions(), calibration: int | str = 4, test_inputs: int = 4,
            progress=None, input_shape: tuple[int, ...] | None = None, method: str = "mse",
            normalize=IMAGENET, images: str | None = None, placement: str = "all", cpu_model=None,
            vthreads: int | None = None) -> Prepared:
    """Import, quantize and partition ``model`` (the same for ``vdla run`` and ``vdla deploy``).

    ``calibration``: a number of synthetic inputs, or a folder of images / an image / a .npy or
    .npz of inputs; ``images``: test inputs (the quantization report's) from such a source,
    instead of ``test_inputs`` synthetic ones. Given a source of calibration inputs and no
    ``images``, the report measures on the calibration source's last quarter, held out of the
    calibration (``Inputs.held_out``), not on synthetic inputs. ``placement``: ``"all"`` (the rules alone) or
    ``"cost"`` (needs ``cpu_model``; see :func:`compiler.network.partition`).
    """
    say = progress or (lambda message: None)
    config = load_config(config)
    start = time.perf_counter()
    say(f"importing {model}" + (f" at {resolution}x{resolution}" if model in BUILTIN else ""))
    graph = built_model(model, resolution, input_shape)
    digest = content_digest(graph)
    shape = graph.shapes[graph.input]
    imported = time.perf_counter()
    # the synthetic inputs this run will make (the first test input is made again to run it)
    made = (0 if isinstance(calibration, str) else calibration) + \
        (0 if images or isinstance(calibration, str) else test_inputs + 1)
    check_run_inputs(shape, made)
    check_run_tensors(graph.shapes, made)
    if len(graph.nodes) > MAX_GRAPH_OPS:  # each stage costs about a millisecond per op
        raise ModelError(model, f"{len(graph.nodes)} ops after import, more than the {MAX_GRAPH_OPS} a run takes "
                         "(vdla_hw/limits.py MAX_GRAPH_OPS)")
    calib = load_inputs(calibration, shape, normalize) if isinstance(calibration, str) else \
        synthetic(shape, calibration, CALIBRATION_SEED)
    tests = load_inputs(images, shape, normalize) if images else None
    split = calib.held_out() if tests is None and isinstance(calibration, str) else None
    if split is not None:  # the user's own inputs, none of them synthetic: measure on a held-out part
        calib, tests = split
    say(f"quantizing ({method}) on {calib.count} calibration inputs: {calib.source}")
    q = quantized(graph, calib, digest, method=method, wide_output=not options.fc_on_vdla,
                  add_scales=not options.add_on_vdla)
    calibrated, calib = calib.describe(), None  # the calibration set is not held past here
    if tests is None:  # made once the calibration set is freed: the run holds one set at a time
        tests = synthetic(shape, test_inputs, TEST_SEED)
    placed = time.perf_counter()
    placements = partition(q, config, options, placement=placement, cpu_model=cpu_model,
                           runtime=board_runtime(config) if placement == "cost" else None, vthreads=vthreads, progress=say)
    timings = {"import": imported - start, "quantize": placed - imported, "placement": time.perf_counter() - placed}
    return Prepared(graph, q, placements, config, timings, calibrated, tests, digest)


def run_network(model: str = "resnet18", *, config=None, target: str = "sim", resolution: int = 224,
                options: PartitionOptions = PartitionOptions(), vthreads: int | None = None,
                calibration: int | str = 4, test_inputs: int = 4, progress=None, cpu: str = DEFAULT_CPU,
                input_shape: tuple[int, ...] | None = None, method: str = "mse", normalize=IMAGENET,
                images: str | None = None, x: str | None = None, cpu_baseline: str = "int8",
                cpu_threads: int = 1, placement: str = "cost", roofline: bool = False,
                max_work: int | None = None, host_runtime: str = "ours") -> NetworkReport:
    """Import, quantize, partition and run ``model`` once on ``target``; check it bit for bit.
    ``cpu`` names the CPU whose modelled times the report gives (``cost.cpu_names()``), priced
    by the kernels of ``cpu_baseline`` (``cost.baseline_names()``: int8, fp32, tcpu) on ``cpu_threads``
    cores (1 or 2; the functional path stays int8 either way). The
    executed input is ``x`` (a .npy/.npz or image file), else the first test input.
    ``placement``: ``"cost"`` (default: each op where the whole network is faster) or ``"all"``
    (every op the accelerator can run goes there). ``roofline``: the caller will ask for
    :func:`roofline_without_latency_hiding` (its runs are then done beside this one, with the
    quantization report, when that is computed). ``max_work``: the sim device's work bound per
    program (``vdla_hw/limits.py``; None: the default). ``host_runtime``: whose per-offload host
    work the report models (``vdla.host_runtime``: ``"ours"``, this project's driver, or
    ``"vta"``, VTA's runtime; the run itself is the same)."""
    from compiler.cpu_fallback.cost import CpuModel
    from compiler.vta_compat import network_shift_warning

    say = progress or (lambda message: None)
    for source in (calibration if isinstance(calibration, str) else None, images, x):
        if source is not None and not Path(source).exists():  # before the import and calibration
            raise InputError(f"{source}: no such file or folder")
    cpu_model = CpuModel(cpu, baseline=cpu_baseline, threads=cpu_threads)
    clock = {"start": time.perf_counter()}
    p = prepare(model, config=config, resolution=resolution, options=options, calibration=calibration,
                test_inputs=test_inputs, progress=progress, input_shape=input_shape, method=method,
                normalize=normalize, images=images, placement=placement, cpu_model=cpu_model, vthreads=vthreads)
    graph, q, tests, placements, config = p.graph, p.q, p.test_set, p.placements, p.config
    # beside the run, on the second core: the quantization report, then the roofline's timing
    report = report_beside(graph, q, tests, p.graph_digest, layers=offloaded_convs(q, placements) if roofline else None,
                           config=config)
    try:
        result, want, run_input = _execute(p, model, x, normalize, target, say, vthreads, cpu_model, clock, max_work,
                                           host_runtime)
    except BaseException:
        report.cancel()
        raise
    waited = time.perf_counter()
    quant = report.result()
    clock["report"] = time.perf_counter() - waited
    quant["calibration"] = {**p.calibration, "method": method}
    bit_exact = len(result.outputs) == len(want) and all(np.array_equal(g, w) for g, w in zip(result.outputs, want))
    timings = {"import": clock["import"] - clock["start"], "quantize": clock["quantize"] - clock["import"],
               "execute": clock["execute"] - clock["quantize"], "simulate": result.sim_wall_seconds,
               "compile": result.compile_wall_seconds, "cpu_kernels": result.cpu_wall_seconds,
               "cpu_model": result.model_wall_seconds,
               "reference_check": clock["check"] - clock["execute"], "quantization_report": clock["report"],
               "total": time.perf_counter() - clock["start"]}
    shape = graph.shapes[graph.input]
    totals = {**summarise(result.records, cpu_model.describe(), result.bytes_moved), "placement": placement,
              "host_runtime": host_runtime}
    return NetworkReport(model, config.name, config.fingerprint, target, result.records, totals, quant, bit_exact,
                         result.outputs, timings,
                         resolution=int(shape[2]) if len(shape) == 4 else 0, input=run_input.describe(),
                         outputs_float=q.dequantize_outputs(result.outputs), output_names=q.outputs,
                         one_thread_timing=report.timing(),
                         vta_warning=network_shift_warning(q.nodes, placements))


def _execute(p: Prepared, model, x, normalize, target, say, vthreads, cpu_model, clock: dict, max_work=None,
             host_runtime: str = "ours"):
    """The run of :func:`run_network` after the preparation: (executor result, the reference's
    output, the executed input); ``clock`` gets the ends of ``import``, ``quantize`` (with the
    placement), ``execute`` and ``check`` (the reference)."""
    graph, q, tests, placements, config = p.graph, p.q, p.test_set, p.placements, p.config
    batch = graph.shapes[graph.input][0]
    run_input = load_inputs(x, graph.shapes[graph.input], normalize) if x else \
        tests.first(batch)
    if len(run_input.array) != batch:
        raise ModelError(model, f"--input {x} holds {len(run_input.array)} samples; the model runs {batch} at a time")
    clock["import"] = clock["start"] + p.timings["import"]
    clock["quantize"] = time.perf_counter()  # includes the placement
    device = open_device(target, config, **({"max_work": max_work} if max_work is not None else {}))
    say(f"running {sum(p.target == 'vdla' for p in placements.values())} ops on VDLA ({target}, {config.name}) "
        f"and {sum(p.target == 'cpu' for p in placements.values())} on the CPU")
    result = execute(q, run_input.array, placements, device, progress=say, vthreads=vthreads, cpu_model=cpu_model,
                     runtime=host_profile(host_runtime, config))
    clock["execute"] = time.perf_counter()
    want = cached("reference", (content_digest(q), run_input.key), lambda: reference.forward_all(q, run_input.array))
    clock["check"] = time.perf_counter()
    return result, want, run_input


def roofline_without_latency_hiding(report: NetworkReport, progress=None) -> dict[str, tuple[float, float]]:
    """(ops per DRAM byte, GOPS, useful GOPS) of every offloaded conv recompiled with one thread (no
    latency hiding), run on the simulator's timing-only mode (timing does not depend on values:
    the same cycles and bytes as a data run, no tensor computed); ops count every GEMM lane
    (``macs``), useful GOPS the unpadded layer's (``useful_macs``). Runs that ``run_network``
    computed beside the main one (``report.one_thread_timing``, for the same layer and
    configuration) are not repeated."""
    say = progress or (lambda message: None)
    points = {}
    for r in report.records:
        if r.placement != "vdla" or r.op != "conv":
            continue
        layer, config = r.extra["layer"], r.extra["run"].config
        known = getattr(report, "one_thread_timing", {}).get(r.name)  # computed beside the run, for this layer and config?
        if known is not None and known[0] == layer and known[1] == _config_key(config):
            macs, moved, seconds = known[2]
        else:
            macs, moved, seconds = one_thread_timing({r.name: layer}, config)[r.name][2]
        points[r.name] = (2 * macs / moved, 2 * macs / seconds / 1e9, 2 * r.useful_macs / seconds / 1e9)
        say(f"roofline without latency hiding: {r.name} {points[r.name][1]:.1f} GOPS")
    return points
