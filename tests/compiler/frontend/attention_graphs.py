"""Attention graphs in the shapes torch 2.x's TorchScript exporter writes (``torch.onnx.export(...,
dynamo=False, opset_version=17)`` of ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``,
as ``scripts/export_attention.py`` lists them), built with ``onnx.helper`` (no torch)."""

from __future__ import annotations

import numpy as np

from experiments.encoder_block import self_attention
from tests.compiler.frontend.exporter_graphs import Builder, linear

OPSET = 17


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


def causal_mask(seq: int, masked: float = float("-inf")) -> np.ndarray:
    """``nn.Transformer.generate_square_subsequent_mask(seq)``: 0 on and below the diagonal,
    ``masked`` above it (torch's -inf; dynamo writes torch.finfo(float32).min)."""
    return np.triu(np.full((seq, seq), masked, np.float32), 1)


def key_padding_mask(seq: int, padded: int, masked: float = -1e9) -> np.ndarray:
    """The last ``padded`` keys masked for every query (a key padding mask as one (seq, seq) matrix)."""
    mask = np.zeros((seq, seq), np.float32)
    mask[:, seq - padded:] = masked
    return mask


def multi_head(seed: int = 11, seq: int = 32, d_model: int = 64, heads: int = 4, mask: np.ndarray | None = None):
    """A bare ``nn.MultiheadAttention`` as self-attention (``attn_mask=mask`` if given)."""
    b = Builder(seed)
    out = self_attention(b, "input", seq, d_model, heads, mask)
    return b.model((1, seq, d_model), out, [1, seq, d_model], opset=OPSET)


def encoder_layer(seed: int = 12, seq: int = 32, d_model: int = 64, heads: int = 4, ffn: int = 128,
                  mask: np.ndarray | None = None):
    """``nn.TransformerEncoderLayer(d_model, heads, ffn, batch_first=True)`` without its two
    LayerNorms (post-norm; another change adds LayerNormalization): self-attention, residual Add,
    Linear, ReLU, Linear, residual Add."""
    b = Builder(seed)
    x = b.op("Add", ["input", self_attention(b, "input", seq, d_model, heads, mask)])
    y = linear(b, b.op("Relu", [linear(b, x, d_model, ffn)]), ffn, d_model)
    out = b.op("Add", [x, y])
    return b.model((1, seq, d_model), out, [1, seq, d_model], opset=OPSET)
