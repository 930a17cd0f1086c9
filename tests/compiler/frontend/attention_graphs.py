"""Attention graphs in the shapes torch 2.x's TorchScript exporter writes (``torch.onnx.export(...,
dynamo=False, opset_version=17)`` of ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``,
as ``scripts/export_attention.py`` lists them), built with ``onnx.helper`` (no torch)."""

from __future__ import annotations

import numpy as np

from tests.compiler.frontend.exporter_graphs import Builder, linear

OPSET = 17


def ints(b: Builder, name: str, values) -> str:
    return b.init(f"{name}{b.count}", np.asarray(values, np.int64))


def single_head(seed: int = 10, seq: int = 16, d: int = 32, scale_on: str = "product"):
    """One head: Q, K, V Linear layers over the tokens, K^T by a Transpose, Q.K^T scaled by
    1/sqrt(d) (``scale_on``: Div of the ``product``, Mul of ``q``, or ``both`` operands by
    d**-0.25), Softmax over the keys, P.V, an output Linear."""
    b = Builder(seed)
    q, k, v = (linear(b, "input", d, d) for _ in range(3))
    kt = b.op("Transpose", [k], perm=[0, 2, 1])
    root = float(np.sqrt(d))
    if scale_on == "q":
        q = b.op("Mul", [q, b.init("q_scale", np.float32(1 / root))])
    elif scale_on == "both":
        quarter = b.init("quarter", np.asarray([d ** -0.25], np.float32))
        q, kt = b.op("Mul", [q, quarter]), b.op("Mul", [kt, quarter])
    scores = b.op("MatMul", [q, kt])
    if scale_on == "product":
        scores = b.op("Div", [scores, b.init("root_d", np.float32(root))])
    p = b.op("Softmax", [scores], axis=-1)
    out = linear(b, b.op("MatMul", [p, v]), d, d)
    return b.model((1, seq, d), out, [1, seq, d], opset=OPSET)


def self_attention(b: Builder, x: str, seq: int, d_model: int, heads: int) -> str:
    """``nn.MultiheadAttention(d_model, heads, batch_first=True)(x, x, x)`` as exported: tokens
    first, one in-projection of 3 x d_model, split per head by Reshape/Unsqueeze/Transpose/Squeeze/
    Gather, heads to the front, scores scaled by sqrt(1/sqrt(dh)) on Q and on K^T (the scale
    computed from the shape: Shape, Slice, Cast, Sqrt, Div, Sqrt), Softmax, P.V, heads back, the
    out-projection as a Gemm, batch first again."""
    dh = d_model // heads
    t = b.op("Transpose", [x], perm=[1, 0, 2])                                   # (T, 1, D)
    qkv = b.op("Add", [b.w("in_proj.bias", (3 * d_model,), 0.1),
                       b.op("MatMul", [t, b.w("in_proj.weight", (d_model, 3 * d_model), np.sqrt(1.0 / d_model))])])
    qkv = b.op("Reshape", [qkv, ints(b, "split", [seq, 1, 3, d_model])])           # (T, 1, 3, D)
    qkv = b.op("Unsqueeze", [qkv, ints(b, "axes", [0])])
    qkv = b.op("Transpose", [qkv], perm=[3, 1, 2, 0, 4])                         # (3, T, 1, 1, D)
    qkv = b.op("Squeeze", [qkv, ints(b, "axes", [3])])                           # (3, T, 1, D)
    parts = []
    for index in range(3):
        part = b.op("Gather", [qkv, b.init(f"which{index}", np.asarray(index, np.int64))], axis=0)  # (T, 1, D)
        part = b.op("Reshape", [part, ints(b, "heads", [seq, heads, dh])])
        part = b.op("Transpose", [part], perm=[1, 0, 2])                         # (H, T, dh)
        parts.append(b.op("Reshape", [part, ints(b, "batch", [1, heads, seq, dh])]))
    q, k, v = parts
    size = b.op("Shape", [q])
    dim = b.op("Slice", [size, ints(b, "last", [-1]), ints(b, "end", [2 ** 63 - 1])])
    scale = b.op("Div", [b.init("one", np.asarray(1.0, np.float32)), b.op("Sqrt", [b.op("Cast", [dim], to=1)])])
    root = b.op("Sqrt", [b.op("Cast", [scale], to=1)])
    kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
    scores = b.op("MatMul", [b.op("Mul", [q, root]), b.op("Mul", [kt, root])])
    p = b.op("Softmax", [scores], axis=-1)
    o = b.op("Transpose", [b.op("MatMul", [p, v])], perm=[2, 0, 1, 3])           # (T, 1, H, dh)
    o = b.op("Reshape", [o, ints(b, "rows", [seq, d_model])])
    o = b.op("Gemm", [o, b.w("out_proj.weight", (d_model, d_model), np.sqrt(1.0 / d_model)),
                      b.w("out_proj.bias", (d_model,), 0.1)], transB=1)
    o = b.op("Reshape", [o, ints(b, "tokens", [seq, 1, d_model])])
    return b.op("Transpose", [o], perm=[1, 0, 2])                                # (1, T, D)


def multi_head(seed: int = 11, seq: int = 32, d_model: int = 64, heads: int = 4):
    """A bare ``nn.MultiheadAttention`` as self-attention."""
    b = Builder(seed)
    out = self_attention(b, "input", seq, d_model, heads)
    return b.model((1, seq, d_model), out, [1, seq, d_model], opset=OPSET)


def encoder_layer(seed: int = 12, seq: int = 32, d_model: int = 64, heads: int = 4, ffn: int = 128):
    """``nn.TransformerEncoderLayer(d_model, heads, ffn, batch_first=True)`` without its two
    LayerNorms (post-norm; another change adds LayerNormalization): self-attention, residual Add,
    Linear, ReLU, Linear, residual Add."""
    b = Builder(seed)
    x = b.op("Add", ["input", self_attention(b, "input", seq, d_model, heads)])
    y = linear(b, b.op("Relu", [linear(b, x, d_model, ffn)]), ffn, d_model)
    out = b.op("Add", [x, y])
    return b.model((1, seq, d_model), out, [1, seq, d_model], opset=OPSET)
