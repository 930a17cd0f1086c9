"""Float execution of a graph in plain numpy: the model the quantized network is measured against.

``run(graph, x)`` returns every value (name -> float32 array); ``forward`` just the output.
``conv_taps`` is the one convolution loop of the project's numpy models: this float model and
the quantized reference (``compiler.quantize.reference``) both call it. It sums, per kernel tap,
a float64 matrix product; on int8 operands every partial sum is an integer below 2**53, so the
quantized reference gets exact integers from it.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.graph import Graph, Node, conv_out


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


def conv_taps(x: np.ndarray, weight: np.ndarray, stride=1, pad=0, groups: int = 1, fill=0.0,
              dtype=np.float64) -> np.ndarray:
    """(N, O, OH, OW) sum over taps and input channels of a grouped convolution (no bias), the
    padding holding ``fill``, in ``dtype``: per sample one matrix product of the weights with the
    input's patches per group (a multiply-add per tap for depthwise)."""
    o, cg, kh, kw = weight.shape
    g, n = int(groups), x.shape[0]
    og = o // g
    taps = list(windows(x, (kh, kw), stride, pad, fill=fill, dtype=dtype))
    oh, ow = taps[0][1].shape[2:]
    w = weight.astype(dtype)
    if cg == 1 and og == 1:  # depthwise
        acc = np.zeros((n, o, oh, ow), dtype)
        for (i, j), view in taps:
            acc += w[:, 0, i, j][None, :, None, None] * view
        return acc
    acc = np.empty((n, o, oh * ow), dtype)
    wg = w.reshape(g, og, cg, kh * kw).reshape(g, og, cg * kh * kw)
    for s in range(n):
        # patches (C, kh*kw, P): channel-major, then tap, matching the weights' (cg, kh, kw) order
        cols = np.stack([view[s].reshape(x.shape[1], oh * ow) for _, view in taps], axis=1)
        cols = cols.reshape(g, cg * kh * kw, oh * ow)
        for k in range(g):
            acc[s, k * og:(k + 1) * og] = wg[k] @ cols[k]
    return acc.reshape(n, o, oh, ow)


def conv2d(x, weight, bias, stride=1, pad=0, groups: int = 1) -> np.ndarray:
    """float32 convolution (accumulated in float32, like onnxruntime)."""
    acc = conv_taps(x, weight, stride, pad, groups, dtype=np.float32)
    return acc + bias.astype(np.float32)[None, :, None, None]


def maxpool(x, kernel, stride, pad, ceil_extra=(0, 0)):
    out = None
    for _, view in windows(x, kernel, stride, pad, fill=-np.inf, ceil_extra=ceil_extra):
        out = view.copy() if out is None else np.maximum(out, view)
    return out


def eval_node(node: Node, args: list[np.ndarray]) -> np.ndarray:
    from compiler.frontend import float_ops

    return float_ops.evaluate(node, args)


def run_graph(graph, x: np.ndarray, evaluate, cast=np.float32) -> dict[str, np.ndarray]:
    """Every value of ``graph`` (float or quantized) for input ``x``, node by node.

    The graph is defined for its input's batch B (usually 1). A batch of k*B inputs runs in
    chunks of B, and every value is the chunks' results concatenated along axis 0.
    """
    x = np.asarray(x, dtype=cast)
    batch = graph.shapes[graph.input][0]
    if x.shape[0] != batch and batch and x.shape[0] % batch == 0:
        chunks = [run_graph(graph, x[i:i + batch], evaluate, cast) for i in range(0, x.shape[0], batch)]
        return {name: np.concatenate([c[name] for c in chunks], axis=0) for name in chunks[0]}
    values = {graph.input: x}
    for node in graph.nodes:
        values[node.output] = evaluate(node, [values[i] for i in node.inputs])
    return values


def run(graph: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    return run_graph(graph, x, eval_node)


def forward(graph: Graph, x: np.ndarray) -> np.ndarray:
    return run(graph, x)[graph.output]
