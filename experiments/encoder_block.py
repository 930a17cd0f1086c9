"""A BERT-base-sized transformer encoder block as an ONNX model, built with ``onnx.helper`` (no torch).

:func:`encoder_block` writes the op sequence torch 2.x's TorchScript exporter writes for
``nn.TransformerEncoderLayer(d_model, heads, ffn, batch_first=True, norm_first=False)`` in eval
mode (``torch.onnx.export(..., dynamo=False, opset_version=17)``; ``scripts/export_attention.py``
prints it): tokens to the front, the in-projection (MatMul by a (d, 3d) constant, Add of the
bias), the split per head (Reshape, Unsqueeze, Transpose, Squeeze, Gather, Reshape, Transpose),
the scale sqrt(1/sqrt(dh)) computed from the shape (Shape, Slice, Cast, Sqrt, Div, Sqrt) and
multiplied into Q and K^T, Q.K^T, Softmax over the keys, P.V, heads back, the out-projection as
a Gemm, batch first again, the residual Add, LayerNormalization, the feed-forward part (Linear,
ReLU or GELU as ``Erf`` with its Div, Add and two Muls, Linear), the residual Add of the first
LayerNorm's output, LayerNormalization. Weights are seeded random (BERT-base's shape: d_model
768, 12 heads, FFN 3072; the sequence is the caller's), not trained ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

OPSET = 17
ACTIVATIONS = ("relu", "gelu")


@dataclass(frozen=True)
class BlockShape:
    """The block's sizes: ``d_model`` channels split over ``heads`` heads, ``ffn`` channels in the
    feed-forward part, ``seq`` tokens, batch 1; ``activation`` relu (torch's default) or gelu."""

    d_model: int = 768
    heads: int = 12
    ffn: int = 3072
    seq: int = 128
    activation: str = "gelu"

    def __post_init__(self):
        for name in ("d_model", "heads", "ffn", "seq"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of heads {self.heads}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")

    @property
    def macs(self) -> int:
        """The block's multiply-accumulates: in-projection, Q.K^T and P.V, out-projection, FFN."""
        d, t = self.d_model, self.seq
        return t * d * 3 * d + 2 * t * t * d + t * d * d + 2 * t * d * self.ffn

    def describe(self) -> str:
        return (f"d_model {self.d_model}, {self.heads} heads, FFN {self.ffn}, sequence {self.seq}, "
                f"{self.activation}")


class GraphBuilder:
    """Appends nodes and initializers (seeded random weights); node ``k`` of op ``Op`` is named
    ``NODE_PREFIX + "Op_k"`` (tests/compiler/frontend/exporter_graphs.Builder, the dynamo
    exporter's ``node_`` names, builds on this class)."""

    NODE_PREFIX = ""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def init(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def ints(self, name: str, values) -> str:
        self.count += 1
        return self.init(f"{name}_{self.count}", np.asarray(values, np.int64))

    def weight(self, name: str, shape, scale: float) -> str:
        return self.init(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{self.NODE_PREFIX}{op_type}_{self.count}",
                                           **attrs))
        return out

    def linear(self, x: str, name: str, ic: int, oc: int) -> str:
        """nn.Linear on tokens as exported: MatMul by the transposed weight, then Add of the bias."""
        product = self.op("MatMul", [x, self.weight(f"{name}.weight", (ic, oc), np.sqrt(1.0 / ic))])
        return self.op("Add", [self.weight(f"{name}.bias", (oc,), 0.1), product])

    def layernorm(self, x: str, name: str, channels: int) -> str:
        gamma = self.init(f"{name}.weight", (1.0 + 0.1 * self.rng.standard_normal(channels)).astype(np.float32))
        return self.op("LayerNormalization", [x, gamma, self.weight(f"{name}.bias", (channels,), 0.1)], axis=-1,
                       epsilon=1e-5)

    def gelu(self, x: str) -> str:
        """F.gelu as exported at opset 17: x * (1 + erf(x / sqrt 2)) * 0.5."""
        e = self.op("Erf", [self.op("Div", [x, self.init(f"sqrt2_{self.count}", np.float32(np.sqrt(2.0)))])])
        e = self.op("Add", [e, self.init(f"one_{self.count}", np.float32(1.0))])
        return self.op("Mul", [self.op("Mul", [x, e]), self.init(f"half_{self.count}", np.float32(0.5))])


def self_attention(g: GraphBuilder, x: str, t: int, d: int, h: int, mask: np.ndarray | None = None) -> str:
    """nn.MultiheadAttention(d, h, batch_first=True)(x, x, x) over ``t`` tokens as exported (see the
    module); tests/compiler/frontend/attention_graphs.py builds its attention graphs with it. With
    ``mask`` (float (t, t), ``attn_mask=``: 0 kept, -inf or torch.finfo.min masked), the scores
    plus the mask unsqueezed to (1, 1, t, t), as torch's scaled_dot_product_attention exports it."""
    dh = d // h
    tokens = g.op("Transpose", [x], perm=[1, 0, 2])                                        # (T, 1, D)
    qkv = g.op("Add", [g.weight("in_proj_bias", (3 * d,), 0.1),
                       g.op("MatMul", [tokens, g.weight("in_proj_weight", (d, 3 * d), np.sqrt(1.0 / d))])])
    qkv = g.op("Reshape", [qkv, g.ints("split", [t, 1, 3, d])])                            # (T, 1, 3, D)
    qkv = g.op("Unsqueeze", [qkv, g.ints("axes", [0])])
    qkv = g.op("Transpose", [qkv], perm=[3, 1, 2, 0, 4])                                   # (3, T, 1, 1, D)
    qkv = g.op("Squeeze", [qkv, g.ints("axes", [3])])                                      # (3, T, 1, D)
    parts = []
    for index in range(3):
        part = g.op("Gather", [qkv, g.init(f"which{index}", np.asarray(index, np.int64))], axis=0)  # (T, 1, D)
        part = g.op("Reshape", [part, g.ints("heads", [t, h, dh])])
        part = g.op("Transpose", [part], perm=[1, 0, 2])                                   # (H, T, dh)
        parts.append(g.op("Reshape", [part, g.ints("batch", [1, h, t, dh])]))
    q, k, v = parts
    dim = g.op("Slice", [g.op("Shape", [q]), g.ints("last", [-1]), g.ints("end", [2 ** 63 - 1])])
    scale = g.op("Div", [g.init("one", np.asarray(1.0, np.float32)), g.op("Sqrt", [g.op("Cast", [dim], to=1)])])
    root = g.op("Sqrt", [g.op("Cast", [scale], to=1)])
    kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])
    scores = g.op("MatMul", [g.op("Mul", [q, root]), g.op("Mul", [kt, root])])
    if mask is not None:
        mask4 = g.op("Unsqueeze", [g.init("attn_mask", np.asarray(mask, np.float32)), g.ints("mask_axes", [0, 1])])
        scores = g.op("Add", [scores, mask4])
    p = g.op("Softmax", [scores], axis=-1)
    o = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[2, 0, 1, 3])                     # (T, 1, H, dh)
    o = g.op("Reshape", [o, g.ints("rows", [t, d])])
    o = g.op("Gemm", [o, g.weight("out_proj.weight", (d, d), np.sqrt(1.0 / d)),
                      g.weight("out_proj.bias", (d,), 0.1)], transB=1)
    o = g.op("Reshape", [o, g.ints("tokens", [t, 1, d])])
    return g.op("Transpose", [o], perm=[1, 0, 2])                                          # (1, T, D)


def encoder_block(shape: BlockShape = BlockShape(), seed: int = 0) -> ModelProto:
    """The post-norm encoder block of ``shape`` (input and output ``(1, seq, d_model)``, float)."""
    g = GraphBuilder(seed)
    x = g.layernorm(g.op("Add", ["input", self_attention(g, "input", shape.seq, shape.d_model, shape.heads)]),
                    "norm1", shape.d_model)
    y = g.linear(x, "linear1", shape.d_model, shape.ffn)
    y = g.op("Relu", [y]) if shape.activation == "relu" else g.gelu(y)
    y = g.linear(y, "linear2", shape.ffn, shape.d_model)
    out = g.layernorm(g.op("Add", [x, y]), "norm2", shape.d_model)
    dims = [1, shape.seq, shape.d_model]
    graph = helper.make_graph(g.nodes, "encoder_block",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, dims)], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model
