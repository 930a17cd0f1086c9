"""Calibrate a float graph on sample inputs and build its power-of-two int8 :class:`QGraph`.

Every value v gets a frac (scale 2**-frac) and a zero point (code of 0) chosen from its float
values on the calibration inputs by one of :data:`METHODS` (``scales.choose_scale``: ``mse``,
``percentile``, ``minmax``; weights: ``scales.weight_fracs``, per output channel where that
helps). A value whose step is free (``equalize`` folded a factor into the layers around it)
takes the whole range with ``mse`` (``equalize.FREE_WINDOW``): its 256 codes then span it
exactly, and clipping, a biased error that identity paths carry on, buys no resolution.
``rules`` turns each float node into its int8 node."""

from __future__ import annotations

import numpy as np

from compiler.frontend import float_ref
from compiler.frontend.graph import Graph, ModelError, fresh_name, unique_names
from compiler.quantize import rules
from compiler.quantize.equalize import FREE_WINDOW, equalize
from compiler.quantize.qgraph import QGraph, QNode
from compiler.quantize.scales import METHODS, SAMPLE, choose_scale, sample_index

def calibration_parts(graph: Graph, calibration):
    """(number of parts, iterator of parts): ``calibration`` one batch of the graph at a time. An
    array is cut in batches (``float_ref.batches``); a set of inputs with ``count`` and
    ``batches(batch)`` (``vdla.inputs.Inputs``: synthetic ones are made as they are read, issue 45)
    gives its own, each checked finite as it comes."""
    batch = graph.shapes[graph.input][0]
    if not hasattr(calibration, "batches"):
        parts = float_ref.batches(graph, calibration)
        return len(parts), iter(parts)

    def checked():
        for part in calibration.batches(batch):
            if not np.all(np.isfinite(part)):
                raise ModelError(graph.name, "calibration inputs contain NaN or infinite values")
            yield np.asarray(part, dtype=np.float32)
            del part  # the next input is made holding none of this one
    return (calibration.count // batch if batch and calibration.count % batch == 0 else 1), checked()


def calibration_statistics(graph: Graph, calibration) -> tuple[dict, dict]:
    """(samples, tap means) of the float graph on the calibration inputs (an array or a set of
    inputs, :func:`calibration_parts`), run one batch of the graph at a time (memory: one batch's
    live values plus the statistics; with a set made as read, no other input).

    ``samples``: per value, the float32 values its scale is chosen on: all of them over the
    calibration inputs, flattened, or the :data:`SAMPLE` of them at ``sample_index`` (the same
    values as ``scales.sample`` of the whole batch). ``tap means``: per conv or dense node, the mean of
    its input under each kernel tap over the first ``rules.BIAS_SAMPLES`` inputs, float64
    (C, kh * kw) (dense: (K, 1)), zero padding included: the mean of a convolution's output is
    its weights applied to these (``rules._bias_error``)."""
    nparts, parts = calibration_parts(graph, calibration)
    index, samples, sums = {}, {}, {}
    readers = {}
    for node in graph.nodes:
        if node.op in ("conv", "dense"):
            readers.setdefault(node.inputs[0], []).append(node)
    for k, part in enumerate(parts):
        for name, v in float_ref.iter_graph(graph, part, float_ref.eval_node):
            size = v.size
            if name not in index:
                index[name] = sample_index(size * nparts)
                samples[name] = [] if index[name] is None else np.empty(SAMPLE, np.float32)
            pick = index[name]
            if pick is None:
                samples[name].append(np.asarray(v, np.float32).reshape(-1))
            else:
                here = np.flatnonzero((pick >= k * size) & (pick < (k + 1) * size))
                samples[name][here] = np.asarray(v, np.float32).reshape(-1)[pick[here] - k * size]
            if k < rules.BIAS_SAMPLES:
                for node in readers.get(name, ()):
                    sums[node.name] = sums.get(node.name, 0.0) + _tap_sums(node, v)
        del part, v  # nothing of this input held while the next is made
    samples = {name: np.concatenate(s) if isinstance(s, list) else s for name, s in samples.items()}
    return samples, {name: total[0] / total[1] for name, total in sums.items()}


def _tap_sums(node, x: np.ndarray) -> np.ndarray:
    """(sums, count): the (C, taps) sums of ``x`` under each of ``node``'s kernel taps, and the
    number of positions summed (a numpy reduction in its own fixed order, no BLAS)."""
    if node.op == "dense":
        return np.stack([x.astype(np.float64).sum(axis=0)[:, None], np.full((x.shape[1], 1), float(len(x)))])
    a = node.attrs
    kernel = a["weight"].shape[2:]
    views = [view for _, view in float_ref.windows(x, kernel, a["stride"], a["pad"], dtype=np.float64)]
    sums = np.stack([view.sum(axis=(0, 2, 3)) for view in views], axis=1)
    count = views[0].shape[0] * views[0].shape[2] * views[0].shape[3]
    return np.stack([sums, np.full(sums.shape, float(count))])


def quantize_graph(graph: Graph, calibration: np.ndarray, *, method: str = "mse", per_channel: bool = True,
                   bias_correction: bool = True, wide_output: bool = True, equalize_scales: bool = True,
                   add_scales: bool = True) -> QGraph:
    """The int8 graph of ``graph`` calibrated on ``calibration`` (a batch of float inputs, or a set
    of inputs read one batch at a time: :func:`calibration_parts`).

    ``per_channel``: allow per-output-channel weight scales where an op can shift per channel.
    ``bias_correction``: remove each conv and dense channel's mean output error that weight
    rounding causes, measured on the first calibration inputs. ``wide_output``: the op computing a
    network's only output keeps int32 results (logits at the accumulator's resolution; the
    outputs of a network with several are feature maps, int8 like every other value, so the
    layers computing them can run on the accelerator).
    ``equalize_scales``: give activations between layers their optimal step by folding a factor
    into the weights around them (``compiler.quantize.equalize``). ``add_scales``: residual adds
    take their inputs and output at any step (integer multipliers, so the add runs on the CPU;
    off for adds on the accelerator's ALU, which only shifts), so equalization reaches the values
    around them.
    Activations get power-of-two scales and zero points (see :func:`choose_scale`).
    """
    if method not in METHODS:
        raise ModelError(graph.name, f"unknown calibration method {method!r} (known: {', '.join(METHODS)})")
    graph = unique_names(graph)  # everything below keys on node names (the importer's graphs have them distinct)
    if hasattr(calibration, "batches"):  # a set of inputs (vdla.inputs.Inputs), read one batch at a time
        given = (calibration.count, *calibration.sample_shape)
    else:
        calibration = np.asarray(calibration, dtype=np.float32)
        given = calibration.shape
    want = graph.shapes[graph.input]
    if len(given) != len(want) or tuple(given[1:]) != tuple(want[1:]) or given[0] % want[0]:
        raise ModelError(graph.name, f"calibration inputs of shape {tuple(given)} do not match the model "
                         f"input {want} (a multiple of its batch, the other dimensions equal)")
    if not hasattr(calibration, "batches") and not np.all(np.isfinite(calibration)):
        raise ModelError(graph.name, "calibration inputs contain NaN or infinite values")
    values, tap_means = calibration_statistics(graph, calibration)
    scales = {}
    if equalize_scales:
        graph, scales = equalize(graph, values, through_adds=add_scales, method=method)
    pairs = rules.fuse_activations(graph)
    out_of = {node.output: (act.output if act else node.output) for node, act in pairs}
    # a value with a free step (equalized) has 256 codes over its window already: a power-of-two
    # step needs no trade between clipping and resolution
    best = {name: choose_scale(v, FREE_WINDOW[method] if name in scales else method) for name, v in values.items()}
    rules.share_concat_scales(graph, pairs, out_of, best)
    rules.symmetric_operands(graph, out_of, best, values, method)
    # the input's quantize node and value: names no node or value of the graph has (a node may be
    # called 'x.quantize', a value 'x_q')
    q_input = fresh_name(f"{graph.input}_q", graph.shapes)
    fracs, zps = {q_input: best[graph.input][0]}, {q_input: 0}
    q_name = fresh_name(f"{graph.input}.quantize", {node.name for node in graph.nodes})
    nodes = [QNode(q_name, "quantize", [graph.input], q_input, {"frac": fracs[q_input]})]
    rename = {graph.input: q_input}
    shapes = {graph.input: graph.shapes[graph.input], q_input: graph.shapes[graph.input]}
    ctx = rules.Context(graph, values, fracs, zps, best, per_channel, bias_correction, method, scales,
                        add_scales and equalize_scales, tap_means)
    for node, act in pairs:
        out = out_of[node.output]
        inputs = [rename[i] for i in node.inputs]
        rename[node.output] = rename[out] = out
        shapes[out] = graph.shapes[node.output]
        wide = wide_output and graph.outputs == (out,) and not graph.consumers(out)
        attrs, fracs[out], zps[out] = rules.quantize_node(ctx, node, act, out, inputs, wide)
        nodes.append(QNode(node.name, attrs.pop("op", node.op), inputs, out, attrs))
    scales = {name: s for name, s in scales.items() if name in fracs}
    return QGraph(graph.name, graph.input, tuple(rename[o] for o in graph.outputs), nodes, shapes, fracs, zps, scales)
