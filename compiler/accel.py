"""Compile one quantized conv2d or dense layer into a program bundle for the accelerator.

The pipeline is two ordered lists of passes, run in order on one :class:`Compilation`:
:data:`CHECKS` (the layer and the caller's options and tensors, validated) and :data:`PASSES`
(plan, pack, place, tensorize, hide latency, encode). Each pass is a function below, its
docstring saying what it sets; docs/compiler.md lists them (tests/compiler/test_accel_pipeline.py).

:func:`layer_output` reads a run's output back as the layer's tensor (NCHW or (N, O) int8).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from compiler import latency_hiding, layout
from compiler.layers import Conv2D, Dense, Layer, LayerError, layer_from_dict
from compiler.tensorize import conv2d
from compiler.tensorize.conv2d import DramPlan, ThreadBuffers
from compiler.tensorize.schedule import BUFFER_SIZE_PARAMS, Plan, Schedule, ScheduleError
from compiler.tensorize.search import Searched, searched
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.cache import cached
from vdla_hw.config import Config, load_config
from vdla_hw.errors import VdlaError

TENSORS = ("input", "weight", "bias")
DTYPES = {"input": np.int8, "weight": np.int8, "bias": np.int32, "shift": np.int32}
BIAS_RANGE = 1 << 12
# Configuration parameters a layer's program does not read once its schedule is fixed: the buffer
# sizes. SRAM slices, micro-op tables and every instruction field value come from the schedule
# (compiler.tensorize.schedule.Plan sizes them), never from the buffers' depths; the sizes only
# set the encoding's field widths and positions and decide whether the schedule fits, which
# ``Plan`` checks for the configuration at hand (every field value is bounded by what it checks:
# a slice index by the depth, a loop factor by the GEMM fields of ``misfit``). So two
# configurations that differ only here, given the same schedule, get programs that decode to the
# same instructions and micro-ops over the same DRAM image: the same cycles and byte counts
# (tests/compiler/test_accel_program_params.py). The clock is not read either (every timing
# parameter is in cycles).
SCHEDULED_UNREAD_PARAMS = BUFFER_SIZE_PARAMS | {"CLOCK_MHZ"}


def random_tensors(layer: Layer, seed: int = 0) -> dict[str, np.ndarray]:
    """Random int8 input and weights and int32 bias of the layer's shapes (bias within +-4096)."""
    rng = np.random.default_rng(seed)
    tensors = {"input": rng.integers(-128, 128, layer.input_shape, dtype=np.int8),
               "weight": rng.integers(-128, 128, layer.weight_shape, dtype=np.int8),
               "bias": rng.integers(-BIAS_RANGE, BIAS_RANGE, layer.bias_shape, dtype=np.int32)}
    if layer.per_channel_shift:
        tensors["shift"] = rng.integers(0, 16, layer.bias_shape, dtype=np.int32)
    return tensors


def valid_tensors(layer: Layer, tensors: dict | None, seed: int = 0) -> dict[str, np.ndarray]:
    """The layer's tensors, validated: right shapes, integer values in range of their dtypes."""
    if tensors is None:
        return random_tensors(layer, seed)
    shapes = {"input": layer.input_shape, "weight": layer.weight_shape, "bias": layer.bias_shape,
              "shift": layer.bias_shape}
    out = {}
    for name in TENSORS + (("shift",) if layer.per_channel_shift else ()):
        if name not in tensors or tensors[name] is None:
            raise LayerError(layer.name, name, "missing (give input, weight and bias, or none for random ones)")
        arr = np.asarray(tensors[name])
        if arr.shape != shapes[name]:
            raise LayerError(layer.name, name, f"shape {arr.shape} does not match the layer's {shapes[name]}")
        if arr.dtype.kind not in "iu":
            raise LayerError(layer.name, name, f"dtype {arr.dtype} is not an integer type")
        info = np.iinfo(DTYPES[name])
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise LayerError(layer.name, name, f"values outside the {np.dtype(DTYPES[name]).name} range")
        out[name] = arr.astype(DTYPES[name])
    if "shift" in out and (out["shift"].min() < 0 or out["shift"].max() > 31):
        raise LayerError(layer.name, "shift", "per-channel shifts must be in [0, 31]")
    return out


def as_conv_tensors(layer: Layer, tensors: dict) -> dict[str, np.ndarray]:
    """Dense tensors as those of the equivalent 1x1 convolution (batch rows become pixels)."""
    if isinstance(layer, Conv2D):
        return tensors
    return {"input": np.ascontiguousarray(tensors["input"].T[None, :, None, :]),
            "weight": tensors["weight"][:, :, None, None], "bias": tensors["bias"],
            **({"shift": tensors["shift"]} if "shift" in tensors else {})}


def searched_layer(conv: Conv2D, config: Config, vthreads: int | None, progress=None) -> Searched:
    """The search's answer for ``conv`` (memoised by :func:`schedule_key`: networks repeat shapes,
    and placement and compilation ask for the same layers), errors naming ``conv``."""
    try:
        return searched(conv, config, vthreads=vthreads, progress=progress)
    except ScheduleError as err:
        raise ScheduleError(conv.name, err.field, err.why) from None


def program_params(config: Config) -> dict:
    """The parameters of ``config`` a layer's program reads once its schedule is fixed (all but
    :data:`SCHEDULED_UNREAD_PARAMS`)."""
    return {k: v for k, v in config.stored_params().items() if k not in SCHEDULED_UNREAD_PARAMS}


def _silent(message: str) -> None:
    """A progress callback that hears nothing."""


@dataclasses.dataclass
class Compilation:
    """One layer's compilation as the passes see it: the caller's inputs, then what each pass of
    :data:`CHECKS` and :data:`PASSES` sets in turn (``None`` until it ran)."""

    layer: Layer
    config: Config
    tensors: dict | None
    schedule: Schedule | str | None
    vthreads: int | None
    seed: int
    progress: Callable[[str], None]
    plan: Plan | None = None
    packed: dict | None = None
    builder: BundleBuilder | None = None
    buffers: list[ThreadBuffers] | None = None
    dram: DramPlan | None = None
    segments: list | None = None
    insns: list | None = None
    bundle: Bundle | None = None

    def key(self) -> tuple:
        """What determines the bundle once :data:`CHECKS` ran (the tensors themselves, not the seed
        that made them)."""
        return (self.layer.describe(), self.config.name, dict(self.config.params), dict(self.config.sources),
                {k: self.tensors[k] for k in sorted(self.tensors)},
                self.schedule.text() if self.schedule is not None else None, self.vthreads)


def check_layer(state: Compilation) -> None:
    """The layer is a conv2d or dense that fits the configuration's fields; vthreads and the
    schedule (text parsed) are valid."""
    layer, vthreads = state.layer, state.vthreads
    if not isinstance(layer, (Conv2D, Dense)):
        raise VdlaError(f"cannot compile {type(layer).__name__} onto the accelerator (conv2d and dense only)")
    if vthreads is not None and (isinstance(vthreads, bool) or not isinstance(vthreads, int) or vthreads < 1):
        raise LayerError(layer.name, "vthreads", f"must be a positive integer, got {vthreads!r}")
    layer.check(state.config)
    if isinstance(state.schedule, str):
        state.schedule = Schedule.parse(state.schedule, layer.name)


def check_tensors(state: Compilation) -> None:
    """The tensors, validated (:func:`valid_tensors`), or random ones of the state's seed."""
    state.tensors = valid_tensors(state.layer, state.tensors, state.seed)


def choose_plan(state: Compilation) -> None:
    """The plan of the user's schedule (vthreads overriding its own), or of the search's best one."""
    conv, config, schedule, vthreads = state.layer.as_conv2d(), state.config, state.schedule, state.vthreads
    if schedule is None:
        schedule = searched_layer(conv, config, vthreads, state.progress).schedule
    elif vthreads is not None and vthreads != schedule.vthreads:
        schedule = Schedule(**{**schedule.__dict__, "vthreads": vthreads})
    plan = state.plan = Plan(conv, config, schedule)
    state.progress(f"encoding {plan.schedule.text()}: {plan.nb * plan.n_tiles_h * plan.n_tiles_w * plan.n_tiles_oc} "
                   "tiles")


def pack(state: Compilation) -> None:
    """NCHW/OIHW tensors (dense ones as a 1x1 convolution's) into blocked layouts."""
    c, tensors = state.config, as_conv_tensors(state.layer, state.tensors)
    state.packed = {"inp": layout.pack_activations(tensors["input"], c.batch, c.block_in),
                    "wgt": layout.pack_weights(tensors["weight"], c.block_out, c.block_in),
                    "bias": layout.pack_bias(tensors["bias"], c.batch, c.block_out),
                    **({"shift": layout.pack_bias(tensors["shift"], c.batch, c.block_out)}
                       if "shift" in tensors else {})}


def plan_dram(state: Compilation) -> None:
    """Every thread's SRAM slices and micro-op tables; the packed tensors, micro-ops and output
    placed in a new bundle's image."""
    state.builder = BundleBuilder(state.config)
    state.buffers = conv2d.thread_buffers(state.plan)
    state.dram = conv2d.plan_dram(state.builder, state.plan, state.packed, state.buffers)


def tensorize(state: Compilation) -> None:
    """Per-thread segments of annotated instructions."""
    state.segments = conv2d.thread_segments(state.plan, state.dram, state.buffers)


def hide_latency(state: Compilation) -> None:
    """Threads interleaved, dependency tokens inserted and folded (:data:`latency_hiding.PASSES`)."""
    state.progress(f"encoding: hiding latency of {sum(len(seg.ops) for t in state.segments for seg in t)} "
                   "instructions")
    state.insns = latency_hiding.hide_latency(state.segments, state.config)


def encode(state: Compilation) -> None:
    """The instructions and the meta (layer, schedule, output symbol and blocked shape) into the bundle."""
    builder, plan, c = state.builder, state.plan, state.config
    builder.insns.extend(state.insns)
    builder.meta = {"producer": "compiler.accel", "layer": state.layer.describe(), "schedule": plan.schedule.text(),
                    "output": {"symbol": "out", "shape": [plan.nb, plan.ocb, plan.oh, plan.ow, c.batch, c.block_out]},
                    "ops": state.layer.ops}
    state.bundle = builder.build(add_finish=False)


# The pipeline, in order: CHECKS validate the caller's inputs (what the disk cache's key is made of),
# PASSES make the bundle.
CHECKS = (check_layer, check_tensors)
PASSES = (choose_plan, pack, plan_dram, tensorize, hide_latency, encode)


def run_passes(passes: tuple, state: Compilation) -> Compilation:
    """``state`` after each of ``passes`` ran on it, in order."""
    for run in passes:
        run(state)
    return state


def compile_layer(layer: Layer, config: Config | str | None = None, *, tensors: dict | None = None,
                  schedule: Schedule | str | None = None, vthreads: int | None = None, seed: int = 0,
                  progress=None, store: bool = True) -> Bundle:
    """A bundle computing ``layer`` on the accelerator; its output lands in the symbol ``out``.
    Runs :data:`CHECKS`, then :data:`PASSES` (or finds their bundle in the disk cache).
    ``progress(message)``, if given, hears of the search's and the encoding's steps. ``store``
    False: the bundle is neither looked up in nor written to the disk cache (a caller that keeps
    only what it needs of a bundle of random tensors, e.g. a sweep's layer timing)."""
    state = run_passes(CHECKS, Compilation(layer, load_config(config), tensors, schedule, vthreads, seed,
                                           progress or _silent))
    if not store:
        return run_passes(PASSES, state).bundle
    return cached("layer", state.key(), lambda: run_passes(PASSES, state).bundle)


def layer_output(bundle: Bundle, dram: np.ndarray | None = None) -> np.ndarray:
    """The layer's output tensor from a final DRAM image (default: the bundle's own image).

    NCHW int8 for conv2d, (N, O) int8 for dense; channel and batch padding removed.
    """
    meta = bundle.meta
    if "layer" not in meta or "output" not in meta:
        raise VdlaError("the bundle was not produced by the layer compiler (its meta has no layer/output)")
    layer = layer_from_dict(meta["layer"])
    packed = bundle.read(meta["output"]["symbol"], dram).reshape(meta["output"]["shape"])
    conv = layer.as_conv2d()
    nchw = layout.unpack_activations(packed, conv.n, conv.oc)
    if isinstance(layer, Dense):
        return np.ascontiguousarray(nchw[0, :, 0, :].T)
    return nchw
