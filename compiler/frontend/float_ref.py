"""Float execution of a graph in plain numpy: the model the quantized network is measured against.

``run(graph, x)`` returns every value (name -> float32 array); ``forward`` just the output;
``iter_graph`` yields the values one at a time and frees each once its last reader has run
(memory bounded by the live values of one batch, not by the whole network).

``conv_taps`` is the one convolution loop of the project's numpy models: this float model and
the quantized reference (``compiler.quantize.reference``) both call it. It sums, per kernel tap,
a float64 matrix product; on integer operands every partial sum is an integer below 2**53, so
the result is exact and the same whatever order the BLAS library adds in (threads, CPU, build).

The float convolutions and dense layers (``conv2d``, ``dense``) use that property to be
deterministic: each operand is first rounded onto a power-of-two fixed-point grid (per sample for
activations, per output channel for weights) fine enough to keep 20-odd significant bits and
coarse enough that every product and partial sum is an exact float64 integer (:func:`on_grid`,
:func:`grid_bits`); the exact sum is then scaled back by a power of two and rounded to float32
once. So the float model gives the same bits on any machine, BLAS thread count and numpy build,
and the model build and calibration that read it decide the same scales (docs/onnx.md,
"Determinism"). The price is the grid's rounding: about 2**-21 of each tensor's peak, measured
within 5e-5 of onnxruntime's float32 (relative to the output's peak) on the built-in ResNets.
Since the thread count cannot change a result, the products run with OpenBLAS on one thread,
which is faster on these shapes (``compiler.frontend.blas``).

The float meaning of every graph-IR op (``compiler.frontend.graph``) is :func:`eval_node`, one
function per op in :data:`EVAL`. The element-wise ones are the functions of
``compiler.frontend.elementwise.ELEMENTWISE``, which the quantizer also tabulates into int8 lookup
tables (with the C library's exponential where numpy's vectorised one could differ in the last bit
between CPUs), so the float model and the int8 tables cannot disagree on what an op means.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend.blas import one_thread
from compiler.frontend.elementwise import ELEMENTWISE
from compiler.frontend.graph import Graph, ModelError, Node, conv_out, only_output

EXACT_BITS = 53  # float64's significand: integers up to 2**53 are exact
COLS_ELEMENTS = 1 << 20  # im2col buffer of conv_taps, per chunk of samples (8 MB as float64)


def pair(value) -> tuple[int, int]:
    """(h, w) of an int or a pair."""
    return (int(value), int(value)) if np.isscalar(value) else (int(value[0]), int(value[1]))


def quad(value) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) padding of an int or a 4-tuple."""
    return (int(value),) * 4 if np.isscalar(value) else tuple(int(v) for v in value)


def padded(x: np.ndarray, pad, fill=0.0, dtype=None) -> np.ndarray:
    """NCHW ``x`` padded with ``fill`` on (top, left, bottom, right)."""
    pt, pl, pb, pr = quad(pad)
    n, c, h, w = x.shape
    out = np.full((n, c, h + pt + pb, w + pl + pr), fill, dtype=dtype or x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def windows(x: np.ndarray, kernel, stride, pad, fill=0.0, dtype=None, ceil_extra=(0, 0)):
    """Yield ((i, j), view) for every window tap: the (N, C, OH, OW) strided view of the padded
    input that tap ``(i, j)`` reads. ``ceil_extra`` adds bottom/right rows of ``fill`` (ceil mode)."""
    kh, kw = pair(kernel)
    sh, sw = pair(stride)
    pt, pl, pb, pr = quad(pad)
    xp = padded(x, (pt, pl, pb + ceil_extra[0], pr + ceil_extra[1]), fill, dtype)
    oh = conv_out(x.shape[2], kh, sh, pt, pb + ceil_extra[0])
    ow = conv_out(x.shape[3], kw, sw, pl, pr + ceil_extra[1])
    for i in range(kh):
        for j in range(kw):
            yield (i, j), xp[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]


def sample_chunks(n: int, per_sample: int) -> list[tuple[int, int]]:
    """(start, stop) ranges of samples whose ``per_sample`` elements each stay within
    :data:`COLS_ELEMENTS` together (at least one sample): temporaries small enough for the
    allocator to reuse, instead of fresh pages (and their faults) per layer."""
    step = max(1, COLS_ELEMENTS // max(1, per_sample))
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def _conv_out(x: np.ndarray, kernel, stride, pad) -> tuple[int, int]:
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = pair(kernel), pair(stride), quad(pad)
    return conv_out(x.shape[2], kh, sh, pt, pb), conv_out(x.shape[3], kw, sw, pl, pr)


def _taps_product(x: np.ndarray, w: np.ndarray, stride, pad, groups: int, fill, dtype, gemm=None) -> np.ndarray:
    """conv_taps of one chunk of samples (``w`` already in ``gemm``, the products' type; the
    input is padded in ``dtype``, where it is exact, and its patches gathered straight into
    ``gemm``: one pass, fewer bytes than gathering in ``dtype`` and converting)."""
    gemm = gemm or dtype
    o, cg, kh, kw = w.shape
    g, m, c = int(groups), x.shape[0], x.shape[1]
    og = o // g
    views = [view for _, view in windows(x, (kh, kw), stride, pad, fill=fill, dtype=dtype)]
    oh, ow = views[0].shape[2:]
    # only the taps with a weight: a dilated kernel's zeros between its taps (compiler.frontend.
    # onnx_import) would add exact zeros, at (kh x kw) / taps times the work
    live = np.flatnonzero(w.reshape(o, cg, kh * kw).any(axis=(0, 1)))
    taps = [views[t] for t in live]
    if cg == 1 and og == 1:  # depthwise
        acc = np.zeros((m, o, oh, ow), gemm)
        for t, view in zip(live, taps):
            acc += w[:, 0, t // kw, t % kw][None, :, None, None] * view
        return acc
    # patches (C, taps, samples, OH, OW): channel-major, then tap, as the weights' (cg, taps)
    cols = np.empty((c, len(taps), m, oh, ow), gemm)
    for t, view in enumerate(taps):
        cols[:, t] = view.transpose(1, 0, 2, 3)
    cols = cols.reshape(g, cg * len(taps), m * oh * ow)
    prod = np.matmul(w.reshape(o, cg, kh * kw)[:, :, live].reshape(g, og, cg * len(taps)), cols)
    return prod.reshape(o, m, oh, ow).transpose(1, 0, 2, 3)


@one_thread()
def conv_taps(x: np.ndarray, weight: np.ndarray, stride=1, pad=0, groups: int = 1, fill=0.0,
              dtype=np.float64) -> np.ndarray:
    """(N, O, OH, OW) sum over taps and input channels of a grouped convolution (no bias), the
    padding holding ``fill``, in ``dtype``: one matrix product of the weights with the input's
    patches per group and chunk of samples (a multiply-add per tap for depthwise)."""
    o, cg, kh, kw = weight.shape
    oh, ow = _conv_out(x, (kh, kw), stride, pad)
    w = weight.astype(dtype)
    out = np.empty((x.shape[0], o, oh, ow), dtype)
    for s0, s1 in sample_chunks(x.shape[0], x.shape[1] * kh * kw * oh * ow):
        out[s0:s1] = _taps_product(x[s0:s1], w, stride, pad, groups, fill, dtype)
    return out


def grid_bits(terms: int) -> tuple[int, int]:
    """(activation bits, weight bits) of the grids of a dot product of ``terms`` products: with
    |integers| <= 2**bits each, terms * 2**(bx + bw) <= 2**53, so every partial sum is exact."""
    budget = EXACT_BITS - max(0, int(terms) - 1).bit_length()
    return budget - budget // 2, budget // 2


def on_grid(a: np.ndarray, bits: int, dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """(integers in ``dtype``, exponents): ``a[i] ~ integers[i] * 2**-exponents[i]`` per leading
    index i, each slice's exponent the one whose peak lands in [2**(bits-1), 2**bits) (so
    |integers| <= 2**bits after rounding to nearest); 0 for an all-zero or non-finite slice.
    Scaling by a power of two and rounding are exact IEEE operations: the same bits everywhere
    (in float32 too, for float32 ``a`` and ``bits`` <= 24)."""
    a = np.asarray(a)
    rows = a.reshape(len(a), -1)
    peaks = np.maximum(rows.max(axis=1), -rows.min(axis=1)) if a.size else np.zeros(len(a))
    exps = np.array([bits - math.frexp(float(p))[1] if 0 < p < np.inf else 0 for p in peaks], dtype=np.int64)
    ints = np.multiply(a, np.ldexp(1.0, exps).reshape((-1,) + (1,) * (a.ndim - 1)).astype(dtype), dtype=dtype)
    return np.rint(ints, out=ints), exps


@one_thread()
def conv2d(x, weight, bias, stride=1, pad=0, groups: int = 1) -> np.ndarray:
    """float32 convolution, the same bits on every machine: ``x`` (per sample) and ``weight`` (per
    output channel) rounded onto their grids (:func:`on_grid`), summed exactly by ``conv_taps``,
    scaled back by a power of two, plus the bias, rounded to float32 once."""
    o, cg, kh, kw = weight.shape
    bx, bw = grid_bits(cg * kh * kw)
    wi, ew = on_grid(weight, bw)
    oh, ow = _conv_out(x, (kh, kw), stride, pad)
    bias = np.asarray(bias, np.float64)[None, :, None, None]
    out = np.empty((x.shape[0], o, oh, ow), np.float32)
    # the input's integers (at most 2**24 when x is float32) gathered as float32, summed in float64
    small = np.float32 if x.dtype == np.float32 and bx <= 24 else np.float64
    for s0, s1 in sample_chunks(x.shape[0], x.shape[1] * kh * kw * oh * ow):
        xi, ex = on_grid(x[s0:s1], bx, small)
        acc = _taps_product(xi, wi, stride, pad, groups, 0.0, small, np.float64)
        acc *= np.ldexp(1.0, -(ex[:, None] + ew[None, :]))[:, :, None, None]
        acc += bias
        out[s0:s1] = acc
    return out


@one_thread()
def exact_dense(x, weight) -> np.ndarray:
    """float64 (N, M) product of (N, K) ``x`` and (M, K) ``weight`` on their grids, summed exactly."""
    bx, bw = grid_bits(weight.shape[1])
    xi, ex = on_grid(x, bx)
    wi, ew = on_grid(weight, bw)
    return (xi @ wi.T) * np.ldexp(1.0, -(ex[:, None] + ew[None, :]))


def matmul(a, b, alpha) -> np.ndarray:
    """float32 (..., N, M): ``alpha`` times the product of (..., N, K) ``a`` and (..., K, M) ``b``
    for each index of their (equal) leading axes, each product summed exactly
    (:func:`exact_dense`), scaled and rounded to float32 once."""
    lead, (n, k), m = a.shape[:-2], a.shape[-2:], b.shape[-1]
    left, right = a.reshape(-1, n, k), b.reshape(-1, k, m)
    out = np.stack([exact_dense(x, np.ascontiguousarray(w.T)) for x, w in zip(left, right)])
    return (out * float(alpha)).astype(np.float32).reshape(lead + (n, m))


def dense(x, weight, bias) -> np.ndarray:
    """float32 (N, M) dense layer: ``exact_dense`` plus the bias, rounded to float32 once."""
    return (exact_dense(x, weight) + np.asarray(bias, np.float64)).astype(np.float32)


def whole_plane(x, kernel, pad, ceil_extra=(0, 0)) -> bool:
    """Whether the window is the whole unpadded plane (GlobalMaxPool): one reduction, not a
    Python step per tap (4 M of them for a 2048 x 2048 plane)."""
    return pair(kernel) == tuple(x.shape[2:]) and not any(quad(pad)) and not any(ceil_extra)


def maxpool(x, kernel, stride, pad, ceil_extra=(0, 0)):
    if whole_plane(x, kernel, pad, ceil_extra):
        return x.max(axis=(2, 3), keepdims=True)
    out = None
    for _, view in windows(x, kernel, stride, pad, fill=-np.inf, ceil_extra=ceil_extra):
        out = view.copy() if out is None else np.maximum(out, view)
    return out


def softmax(x, axis, mask=None):
    """Softmax along ``axis``; with ``mask`` (bool, broadcast to ``x``; True: kept) over the kept
    positions only, the masked ones 0 (an additive attention mask of -inf)."""
    x = x.astype(np.float64)
    if mask is not None:
        x = np.where(np.broadcast_to(np.asarray(mask, bool), x.shape), x, -np.inf)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x, scale, bias, eps):
    """ONNX LayerNormalization over the last axis, in float64: (x - mean) / sqrt(var + eps) * scale
    + bias, the variance the mean of squared deviations (ONNX's and torch's biased estimate)."""
    x = np.asarray(x, np.float64)
    centred = x - x.mean(axis=-1, keepdims=True)
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + float(eps)) * np.asarray(scale, np.float64) + np.asarray(bias, np.float64)


def avgpool_count(hw, kernel, stride, pad, ceil=(0, 0), count_pad=False) -> np.ndarray:
    """(OH, OW) divisor of each window: its real inputs, plus the zero padding when ``count_pad``
    (never the ceil-mode extra rows and columns, as in PyTorch and ONNX)."""
    h, w = hw
    pt, pl, pb, pr = pad
    weights = np.ones((1, 1, h, w))
    if count_pad:
        weights = np.pad(weights, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=1.0)
        pad = (0, 0, 0, 0)
    count = None
    for _, view in windows(weights, kernel, stride, pad, ceil_extra=ceil):
        count = view.copy() if count is None else count + view
    return count[0, 0]


def avgpool2d(x, kernel, stride, pad, ceil=(0, 0), count_pad=False):
    """Windowed mean with zero padding, divided by ``avgpool_count``."""
    total = None
    for _, view in windows(x.astype(np.float64), kernel, stride, pad, ceil_extra=ceil):
        total = view.copy() if total is None else total + view
    return total / avgpool_count(x.shape[2:], kernel, stride, pad, ceil, count_pad)


def gather(x, index, fill):
    """out.flat[i] = x.flat[index[i]], or ``fill[i]`` where ``index[i] < 0``."""
    flat = x.reshape(-1)
    picked = flat[np.maximum(index, 0)]
    return np.where(index >= 0, picked, fill)


def resize(x, index, weight, shape):
    """Each output pixel of a plane: the weighted sum of ``index``'s pixels of its input plane."""
    planes = x.reshape(x.shape[0] * x.shape[1], -1).astype(np.float64)
    return (planes[:, index] * weight.astype(np.float64)).sum(axis=-1).reshape(shape)


CHUNK = 1 << 16  # elements a float64 temporary holds at a time (512 KiB), whatever the tensor


def float32_by_chunks(x, fn) -> np.ndarray:
    """A float32 array of ``x``'s shape: ``fn`` of ``x``'s values in float64, :data:`CHUNK` of
    them at a time (issue 45: whole-tensor float64 temporaries were several times a 128 MiB
    tensor). ``fn`` must be element-wise."""
    x = np.asarray(x)
    out, flat = np.empty(x.shape, np.float32), x.reshape(-1)
    for start in range(0, flat.size, CHUNK):
        out.reshape(-1)[start:start + CHUNK] = fn(flat[start:start + CHUNK].astype(np.float64))
    return out


def _elementwise(op):
    """The float32 values of ``op`` computed in float64 a chunk at a time (:func:`float32_by_chunks`);
    ``affine``, whose scale may be per channel or per element, whole."""
    if op.name == "affine":
        return lambda a, args: op.evaluate(args[0].astype(np.float64), a)
    return lambda a, args: float32_by_chunks(args[0], lambda x: op.evaluate(x, a))


# op -> f(attrs, inputs): its float output (cast to float32 by eval_node)
EVAL = {
    "conv": lambda a, args: conv2d(args[0], a["weight"], a["bias"], a["stride"], a["pad"], a.get("groups", 1)),
    "dense": lambda a, args: dense(args[0], a["weight"], a["bias"]),
    "add": lambda a, args: args[0] + args[1],
    # the float64 product of two float32 values is exact (48 significant bits): one rounding, to float32
    "mul": lambda a, args: np.multiply(args[0], args[1], dtype=np.float64),
    "softmax": lambda a, args: softmax(args[0], a["axis"], a.get("mask")),
    "layernorm": lambda a, args: layernorm(args[0], a["scale"], a["bias"], a["eps"]),
    "matmul": lambda a, args: matmul(args[0], args[1], a["alpha"]),
    "maxpool": lambda a, args: maxpool(args[0], a["kernel"], a["stride"], a["pad"], a.get("ceil", (0, 0))),
    "avgpool": lambda a, args: args[0].mean(axis=(2, 3), keepdims=True, dtype=np.float64),
    "avgpool2d": lambda a, args: avgpool2d(args[0], a["kernel"], a["stride"], a["pad"], a.get("ceil", (0, 0)),
                                           a.get("count_pad", False)),
    "concat": lambda a, args: np.concatenate(args, axis=a["axis"]),
    "reshape": lambda a, args: args[0].reshape(a["shape"]),
    "gather": lambda a, args: gather(args[0], a["index"], a["fill"]).reshape(a["shape"]),
    "resize": lambda a, args: resize(args[0], a["index"], a["weight"], a["shape"]),
    **{op.name: _elementwise(op) for op in ELEMENTWISE},
}


def eval_node(node: Node, args: list[np.ndarray]) -> np.ndarray:
    """float32 output of ``node`` on float32 ``args``. A ModelError names the node if it computes
    inf or NaN from finite inputs (finite constants too large for the values: x * 3e38)."""
    if node.op not in EVAL:
        raise ValueError(f"unknown op {node.op}")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # checked below
        out = np.asarray(EVAL[node.op](node.attrs, args), dtype=np.float32)
    if not np.isfinite(out).all() and all(np.isfinite(a).all() for a in args):
        folded = " (with any Mul, Div or BatchNormalization after it folded in)" if node.op in ("conv", "dense") else ""
        raise ModelError("the float model", f"computes {int((~np.isfinite(out)).sum())} infinite or NaN value(s) "
                         f"from finite inputs: its constants{folded} overflow float32 on this network's values",
                         node.name, node.op)
    return out


def last_readers(graph) -> dict[str, int]:
    """value -> index of the last node reading it (the graph's outputs: past the end)."""
    last = {}
    for k, node in enumerate(graph.nodes):
        for name in node.inputs:
            last[name] = k
    for name in graph.outputs:
        last[name] = len(graph.nodes)
    return last


def iter_graph(graph, x: np.ndarray, evaluate, cast=np.float32):
    """Yield (name, value) for the input and then every node's output, in node order, for an
    input of the graph's batch; a value is dropped once its last reader has run, so only the
    values still to be read (and what the caller keeps) stay in memory."""
    last = last_readers(graph)
    values = {graph.input: np.asarray(x, dtype=cast)}
    yield graph.input, values[graph.input]
    for k, node in enumerate(graph.nodes):
        out = evaluate(node, [values[i] for i in node.inputs])
        for name in set(node.inputs):
            if last.get(name, -1) <= k:
                del values[name]
        if last.get(node.output, -1) > k:
            values[node.output] = out
        yield node.output, out


def batches(graph, x: np.ndarray, cast=np.float32):
    """``x`` as inputs of the graph's batch B (usually 1): chunks of B, or ``x`` itself."""
    x = np.asarray(x, dtype=cast)
    batch = graph.shapes[graph.input][0]
    if x.shape[0] != batch and batch and x.shape[0] % batch == 0:
        return [x[i:i + batch] for i in range(0, x.shape[0], batch)]
    return [x]


def run_graph(graph, x: np.ndarray, evaluate, cast=np.float32, keep=None) -> dict[str, np.ndarray]:
    """The values of ``graph`` (float or quantized) for input ``x``, node by node: every value,
    or those named in ``keep``.

    The graph is defined for its input's batch B (usually 1). A batch of k*B inputs runs in
    chunks of B, and every value is the chunks' results concatenated along axis 0.
    """
    chunks = [{name: v for name, v in iter_graph(graph, part, evaluate, cast) if keep is None or name in keep}
              for part in batches(graph, x, cast)]
    if len(chunks) == 1:
        return chunks[0]
    return {name: np.concatenate([c[name] for c in chunks], axis=0) for name in chunks[0]}


def run(graph: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    return run_graph(graph, x, eval_node)


def forward(graph: Graph, x: np.ndarray) -> np.ndarray:
    """The only output of a one-output ``graph`` for ``x`` (:func:`forward_all` for any graph)."""
    return only_output(graph.name, forward_all(graph, x))


def forward_all(graph: Graph, x: np.ndarray) -> tuple[np.ndarray, ...]:
    """The graph's outputs for ``x``, in ``graph.outputs``' order."""
    return outputs_of(graph, x, eval_node)


def outputs_of(graph, x: np.ndarray, evaluate) -> tuple[np.ndarray, ...]:
    """The outputs of ``graph`` (float or quantized, evaluated by ``evaluate``) for ``x``, in
    ``graph.outputs``' order; every other value is freed after its last reader."""
    kept = run_graph(graph, x, evaluate, keep=set(graph.outputs))
    return tuple(kept[name] for name in graph.outputs)
