"""Small ONNX graphs in the shapes today's PyTorch exporter (dynamo, opset 18+) writes, built with
``onnx.helper`` (no torch): each a (name, ModelProto) with random float weights."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from experiments.encoder_block import GraphBuilder

OPSET = 18


class Builder(GraphBuilder):
    """experiments.encoder_block.GraphBuilder with the dynamo exporter's node names (``node_Op_k``);
    ``w(name, shape)`` makes a seeded random weight (He-scaled by default)."""

    NODE_PREFIX = "node_"

    def w(self, name: str, shape, scale: float | None = None) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        value = self.rng.standard_normal(shape) * (scale if scale is not None else np.sqrt(2.0 / fan_in))
        return self.init(name, value.astype(np.float32))

    def conv(self, x: str, ic: int, oc: int, k: int, *, stride=1, pads=None, group=1, bias=True) -> str:
        pads = [k // 2] * 4 if pads is None else pads
        inputs = [x, self.w(f"w{self.count}", (oc, ic // group, k, k))]
        if bias:
            inputs.append(self.w(f"b{self.count}", (oc,), 0.1))
        return self.op("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=pads, group=group)

    def model(self, x_shape, out: str, out_shape=None, opset: int = OPSET, name: str = "main_graph", dims=None):
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, dims or list(x_shape))],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 10
        return model


def flatten_dynamo(b: Builder, x: str) -> str:
    """The dynamo exporter's flatten with optimize=False: Shape -> Gather -> Concat -> Reshape."""
    shape = b.op("Shape", [x])
    batch = b.op("Gather", [shape, b.init("zero", np.array(0, np.int64))], axis=0)
    batch = b.op("Unsqueeze", [batch, b.init("axes0", np.array([0], np.int64))])
    target = b.op("Concat", [batch, b.init("minus_one", np.array([-1], np.int64))], axis=0)
    return b.op("Reshape", [x, target])


def resnet_like(seed: int = 0, shape=(1, 3, 16, 20)):
    """Stem, BN folded by hand, ReLU, MaxPool, a residual block, ReduceMean pooling, dynamo flatten,
    Gemm whose weight comes through Identity (as vgg's export does)."""
    b = Builder(seed)
    x = b.op("Relu", [b.conv("input", 3, 16, 3, stride=2)])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = b.op("Relu", [b.conv(x, 16, 16, 3)])
    y = b.conv(y, 16, 16, 3)
    x = b.op("Relu", [b.op("Add", [y, x])])
    x = b.op("ReduceMean", [x, b.init("axes", np.array([-1, -2], np.int64))], keepdims=1)
    x = flatten_dynamo(b, x)
    weight = b.op("Identity", [b.w("fc.weight", (10, 16))])
    out = b.op("Gemm", [x, weight, b.w("fc.bias", (10,), 0.1)], transB=1)
    return b.model(shape, out, [shape[0], 10])


def mobilenet_like(seed: int = 1, shape=(1, 3, 16, 16)):
    """Clip(0, 6) with min/max inputs, depthwise conv, a 1x1 projection, an inverted residual, a
    standalone BatchNormalization, HardSwish, global pooling, Gemm."""
    b = Builder(seed)
    lo, hi = b.init("min_val", np.array(0.0, np.float32)), b.init("max_val", np.array(6.0, np.float32))
    x = b.op("Clip", [b.conv("input", 3, 16, 3, stride=2), lo, hi])
    y = b.op("Clip", [b.conv(x, 16, 16, 3, group=16), lo, hi])
    y = b.conv(y, 16, 16, 1)
    x = b.op("Add", [x, y])
    bn = [b.init(n, v) for n, v in (("g", np.linspace(0.5, 1.5, 16, dtype=np.float32)),
                                      ("be", np.linspace(-0.2, 0.2, 16, dtype=np.float32)),
                                      ("m", np.linspace(-0.1, 0.1, 16, dtype=np.float32)),
                                      ("v", np.linspace(0.5, 2.0, 16, dtype=np.float32)))]
    x = b.op("BatchNormalization", [x, *bn], epsilon=1e-5)
    x = b.op("HardSwish", [x])
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x], axis=1)
    out = b.op("Gemm", [x, b.w("fc.w", (8, 16)), b.w("fc.b", (8,), 0.1)], transB=1)
    return b.model(shape, out, [shape[0], 8])


def squeezenet_like(seed: int = 2, shape=(1, 3, 17, 23)):
    """Fire module (squeeze, two expands, Concat), MaxPool with ceil_mode, a conv classifier
    with asymmetric padding, AveragePool over a window (count_include_pad), Softmax."""
    b = Builder(seed)
    x = b.op("Relu", [b.conv("input", 3, 16, 3, stride=2, pads=[0, 0, 0, 0])])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    s = b.op("Relu", [b.conv(x, 16, 8, 1)])
    e1 = b.op("Relu", [b.conv(s, 8, 16, 1)])
    e3 = b.op("Relu", [b.conv(s, 8, 16, 3)])
    x = b.op("Concat", [e1, e3], axis=1)
    x = b.op("Relu", [b.conv(x, 32, 10, 2, pads=[0, 0, 1, 1])])
    x = b.op("AveragePool", [x], kernel_shape=[2, 2], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1)
    x = b.op("ReduceMean", [x, b.init("axes", np.array([2, 3], np.int64))], keepdims=0)
    out = b.op("Softmax", [x], axis=-1)
    return b.model(shape, out, [shape[0], 10])


def elementwise_like(seed: int = 3, shape=(1, 4, 6, 10)):
    """Normalisation by constants (Sub, Div, Mul), Sigmoid, HardSigmoid, a Transpose pair, a
    Slice, grouped conv with 16 channels per group, Where with a constant mask."""
    b = Builder(seed)
    x = b.op("Sub", ["input", b.init("mean", np.array([0.1, -0.2, 0.3, 0.0], np.float32).reshape(1, 4, 1, 1))])
    x = b.op("Div", [x, b.init("std", np.array([0.5, 1.0, 2.0, 1.5], np.float32).reshape(1, 4, 1, 1))])
    x = b.op("Relu", [b.conv(x, 4, 32, 3)])
    x = b.op("Relu", [b.conv(x, 32, 32, 3, group=2)])
    x = b.op("Mul", [x, b.init("half", np.array(0.5, np.float32))])
    x = b.op("Sigmoid", [x])
    x = b.op("Transpose", [x], perm=[0, 2, 3, 1])
    x = b.op("Transpose", [x], perm=[0, 3, 1, 2])
    x = b.op("Slice", [x, b.init("st", np.array([1], np.int64)), b.init("en", np.array([5], np.int64)),
                       b.init("ax", np.array([2], np.int64))])
    mask = np.zeros((1, 1, 4, 10), bool)
    mask[..., ::3] = True
    x = b.op("Where", [b.init("mask", mask), b.init("zeroes", np.array(0.0, np.float32)), x])
    out = b.op("HardSigmoid", [b.conv(x, 32, 8, 1)], alpha=0.25, beta=0.5)
    return b.model(shape, out, [shape[0], 8, 4, 10])


def mlp_like(seed: int = 4, shape=(2, 12)):
    """A 2-D input: MatMul + Add, ReLU, Gemm (batch 2)."""
    b = Builder(seed)
    x = b.op("Add", [b.op("MatMul", ["input", b.w("w1", (12, 20))]), b.w("b1", (20,), 0.1)])
    x = b.op("Relu", [x])
    out = b.op("Gemm", [x, b.w("w2", (6, 20)), b.w("b2", (6,), 0.1)], transB=1)
    return b.model(shape, out, [shape[0], 6])


def linear(b: Builder, x: str, ic: int, oc: int) -> str:
    """torch.nn.Linear on an input of more than two axes as the exporter writes it: MatMul by the
    transposed weight (a constant), then Add of the bias."""
    return b.op("Add", [b.op("MatMul", [x, b.w(f"lin{b.count}.weight", (ic, oc), np.sqrt(2.0 / ic))]),
                        b.w(f"lin{b.count}.bias", (oc,), 0.1)])


def token_mlp_like(seed: int = 5, shape=(1, 24, 16)):
    """Linear layers over tokens (batch x tokens x channels): Linear, a learned position table
    added per token and channel (not foldable into the Linear), ReLU, Linear, ReLU, Linear."""
    b = Builder(seed)
    x = linear(b, "input", 16, 32)
    x = b.op("Relu", [b.op("Add", [x, b.w("pos", (1, shape[1], 32), 0.1)])])
    x = b.op("Relu", [linear(b, x, 32, 32)])
    out = linear(b, x, 32, 8)
    return b.model(shape, out, [shape[0], shape[1], 8])


def gelu_decomposed(b: Builder, x: str) -> str:
    """torch's nn.GELU() exported before opset 20: x * (1 + erf(x / sqrt 2)), then * 0.5."""
    e = b.op("Erf", [b.op("Div", [x, b.init(f"sqrt2_{b.count}", np.array(np.sqrt(2.0), np.float32))])])
    e = b.op("Add", [e, b.init(f"one_{b.count}", np.array(1.0, np.float32))])
    return b.op("Mul", [b.op("Mul", [x, e]), b.init(f"half_{b.count}", np.array(0.5, np.float32))])


def transformer_ffn_like(seed: int = 7, shape=(1, 20, 16)):
    """A transformer block's feed-forward part on tokens: Linear, GELU (as torch exports it at
    opset 18), Linear, residual Add."""
    b = Builder(seed)
    y = linear(b, gelu_decomposed(b, linear(b, "input", 16, 48)), 48, 16)
    out = b.op("Add", ["input", y])
    return b.model(shape, out, [shape[0], shape[1], 16])


def channels_last_mlp_like(seed: int = 6, shape=(1, 8, 6, 6)):
    """A ConvNeXt-style pointwise MLP on channels-last pixels: conv, Transpose to N x H x W x C,
    Linear, ReLU, Linear, Transpose back, residual Add."""
    b = Builder(seed)
    x = b.conv("input", 8, 16, 3)
    y = b.op("Transpose", [x], perm=[0, 2, 3, 1])
    y = b.op("Relu", [linear(b, y, 16, 32)])
    y = b.op("Transpose", [linear(b, y, 32, 16)], perm=[0, 3, 1, 2])
    out = b.op("Add", [x, y])
    return b.model(shape, out, [shape[0], 16, shape[2], shape[3]])


def layernorm_decomposed(b: Builder, x: str, channels: int) -> str:
    """torch's nn.LayerNorm exported before opset 17: ReduceMean, Sub, Pow 2, ReduceMean, Add eps,
    Sqrt, Div, Mul gamma, Add beta (the means over axis -1, axes as an input from opset 18)."""
    axes = b.init(f"ln_axes_{b.count}", np.array([-1], np.int64))
    mean = b.op("ReduceMean", [x, axes])
    d = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Pow", [d, b.init(f"two_{b.count}", np.array(2.0, np.float32))]), axes])
    std = b.op("Sqrt", [b.op("Add", [var, b.init(f"eps_{b.count}", np.array(1e-5, np.float32))])])
    gamma = b.init(f"ln{b.count}.weight", (1.0 + 0.2 * b.rng.standard_normal(channels)).astype(np.float32))
    beta = b.w(f"ln{b.count}.bias", (channels,), 0.1)
    return b.op("Add", [b.op("Mul", [b.op("Div", [d, std]), gamma]), beta])


def layernorm(b: Builder, x: str, channels: int) -> str:
    """ONNX LayerNormalization (opset 17) over the last axis, as torch exports nn.LayerNorm."""
    gamma = b.init(f"ln{b.count}.weight", (1.0 + 0.2 * b.rng.standard_normal(channels)).astype(np.float32))
    return b.op("LayerNormalization", [x, gamma, b.w(f"ln{b.count}.bias", (channels,), 0.1)], axis=-1,
                epsilon=1e-5)


def prenorm_transformer_like(seed: int = 8, shape=(1, 20, 16), decomposed: bool = False):
    """A pre-norm transformer block's feed-forward part: LayerNorm, Linear, GELU, Linear, residual
    Add (the input offset per channel, as token embeddings are)."""
    b = Builder(seed)
    x = b.op("Add", ["input", b.w("offset", (shape[-1],), 2.0)])
    norm = (layernorm_decomposed if decomposed else layernorm)(b, x, shape[-1])
    y = linear(b, gelu_decomposed(b, linear(b, norm, 16, 48)), 48, 16)
    out = b.op("Add", [x, y])
    return b.model(shape, out, [shape[0], shape[1], 16])


def convnext_block_like(seed: int = 9, shape=(1, 8, 6, 6), layer_scale: float | None = None):
    """A ConvNeXt block: depthwise conv, Transpose to N x H x W x C, LayerNorm over channels (the
    last axis), Linear, GELU, Linear, Transpose back, residual Add. With ``layer_scale``, torchvision's
    block as torch.onnx.export writes it: the branch times a per-channel (C, 1, 1) constant
    (torchvision initialises it to 1e-6), then ``Add(branch, input)``."""
    b = Builder(seed)
    x = b.conv("input", 8, 8, 7, group=8)
    y = layernorm(b, b.op("Transpose", [x], perm=[0, 2, 3, 1]), 8)
    y = linear(b, gelu_decomposed(b, linear(b, y, 8, 32)), 32, 8)
    y = b.op("Transpose", [y], perm=[0, 3, 1, 2])
    if layer_scale is None:
        out = b.op("Add", ["input", y])
    else:
        scale = b.init("layer_scale", np.full((8, 1, 1), layer_scale, np.float32))
        out = b.op("Add", [b.op("Mul", [scale, y]), "input"])
    return b.model(shape, out, [shape[0], 8, shape[2], shape[3]])


def vit_embedding_like(seed: int = 10, shape=(1, 3, 16, 16), patch: int = 4, hidden: int = 16):
    """torchvision ViT's input as torch.onnx.export (opset 17) writes it: the patch embedding (a
    conv of stride = kernel), Reshape to (N, C, patches), Transpose to tokens, the class token (a
    constant (1, 1, C), Expand-ed to the batch) concatenated before the patches, the position
    table added, then a Linear over the tokens."""
    b = Builder(seed)
    x = b.op("Conv", ["input", b.w("patch.weight", (hidden, shape[1], patch, patch)), b.w("patch.bias", (hidden,), 0.1)],
             kernel_shape=[patch, patch], strides=[patch, patch])
    patches = (shape[2] // patch) * (shape[3] // patch)
    x = b.op("Reshape", [x, b.init("patch_shape", np.array([shape[0], hidden, patches], np.int64))])
    x = b.op("Transpose", [x], perm=[0, 2, 1])
    token = b.op("Expand", [b.w("class_token", (1, 1, hidden), 0.5), b.init("batch", np.array([shape[0], 1, 1], np.int64))])
    x = b.op("Concat", [token, x], axis=1)
    x = b.op("Add", [x, b.w("pos_embedding", (1, patches + 1, hidden), 0.1)])
    return b.model(shape, linear(b, x, hidden, hidden), [shape[0], patches + 1, hidden], opset=17)


def torch_computed_shape(b: Builder, shape) -> str:
    """A shape as torch.onnx.export (TorchScript, opset 17) computes an Expand's: Where(Equal(shape,
    ConstantOfShape * -1), ConstantOfShape, shape), which onnx's data propagation does not follow,
    so every value after the Expand has an unknown first axis until folding."""
    ones = b.op("ConstantOfShape", [b.ints("rank", [len(shape)])],
                value=helper.make_tensor("value", TensorProto.INT64, [1], [1]))
    target = b.ints("shape", shape)
    minus = b.op("Mul", [ones, b.init(f"minus_one_{b.count}", np.array(-1, np.int64))])
    return b.op("Where", [b.op("Equal", [target, minus]), ones, target])


def bert_embedding_like(seed: int = 13, shape=(1, 40, 16), positions: int = 48):
    """HF transformers' BertModel fed ``inputs_embeds`` as torch.onnx.export (TorchScript, opset 17)
    writes it: the token type ids, a zero buffer of ``positions`` (> 32) entries Expand-ed to a
    computed shape, GatherElements of the first ``shape[1]`` by the position ids, Expand-ed again,
    select rows of the token type table; added to the input, with the position table's rows, then
    LayerNorm, Linear, GELU (decomposed: Gelu is opset 20) and Linear."""
    b = Builder(seed)
    seq = shape[1]
    buffer = b.op("Expand", [b.init("token_type_ids", np.zeros((1, positions), np.int64)),
                             torch_computed_shape(b, [1, positions])])
    position_ids = b.init("position_ids", np.arange(seq, dtype=np.int64)[None])
    ids = b.op("GatherElements", [buffer, position_ids], axis=1)
    ids = b.op("Expand", [ids, torch_computed_shape(b, [1, seq])])
    x = b.op("Add", ["input", b.op("Gather", [b.w("token_type_table", (2, shape[2]), 0.5), ids], axis=0)])
    x = b.op("Add", [x, b.op("Gather", [b.w("position_table", (positions, shape[2]), 0.5), position_ids], axis=0)])
    x = linear(b, gelu_decomposed(b, linear(b, layernorm(b, x, shape[2]), shape[2], 32)), 32, shape[2])
    return b.model(shape, x, list(shape), opset=17)


def roll(b: Builder, x: str, shift: int, axis: int, size: int) -> str:
    """torch.roll of ``x`` by ``shift`` along ``axis`` of ``size`` as torch.onnx.export writes it:
    two Slices and a Concat."""
    cut = (-shift) % size
    tail = b.op("Slice", [x, b.ints("start", [cut]), b.ints("end", [size]), b.ints("axis", [axis])])
    head = b.op("Slice", [x, b.ints("start", [0]), b.ints("end", [cut]), b.ints("axis", [axis])])
    return b.op("Concat", [tail, head], axis=axis)


def window_pad(b: Builder, x: str, window: int, h: int, w: int) -> tuple[str, str, str]:
    """torchvision Swin's padding to whole windows as torch.onnx.export (opset 17) writes it: the
    pads computed from constants by Mod, Sub, Concat and Cast (nodes onnx's data propagation does
    not follow, so the whole model's shape inference leaves the padded shape open), then the padded
    height and width read back with Shape and Gather. Returns (padded, height, width), the last two
    as 1-element int64 tensors."""
    def pad_to_window(size: int) -> str:
        rest = b.op("Mod", [b.ints("size", [size]), b.ints("window", [window])])
        return b.op("Mod", [b.op("Sub", [b.ints("window", [window]), rest]), b.ints("window", [window])])
    pads = b.op("Concat", [b.ints("zeros", [0, 0, 0, 0, 0]), pad_to_window(h), pad_to_window(w), b.ints("zero", [0])],
                axis=0)
    padded = b.op("Pad", [x, b.op("Cast", [pads], to=TensorProto.INT64)])
    shape = b.op("Shape", [padded])
    return padded, b.op("Gather", [shape, b.ints("one", [1])], axis=0), b.op("Gather", [shape, b.ints("two", [2])], axis=0)


def swin_block_like(seed: int = 11, shape=(1, 3, 12, 12), window: int = 4, channels: int = 16, heads: int = 2,
                    shift: int = 2):
    """torchvision's ``swin_t`` in small, as torch.onnx.export (opset 17) writes it: a patch
    embedding to channels last and its LayerNorm, then one shifted-window attention block (pads to
    whole windows computed from constants, the padded size read back with Shape for the window
    partition's Reshapes, the cyclic shift as Slice + Concat, q times head_dim**-0.5 (not a power of
    two for 8 channels per head), Q.K^T plus a relative position bias (a constant per head) and the
    shifted windows' mask (a constant per window, -100 between regions) through Reshapes, Softmax,
    P.V, the projection, the windows merged back, the shift undone, the padding sliced off,
    residual Add), then patch
    merging: four strided Slices concatenated on channels, LayerNorm, a Linear without bias."""
    b = Builder(seed)
    patch = 2
    x = b.op("Conv", ["input", b.w("patch.weight", (channels, shape[1], patch, patch)), b.w("patch.bias", (channels,), 0.1)],
             kernel_shape=[patch, patch], strides=[patch, patch])
    h, w = shape[2] // patch, shape[3] // patch
    x = layernorm(b, b.op("Transpose", [x], perm=[0, 2, 3, 1]), channels)
    y = layernorm(b, x, channels)
    y, ph, pw = window_pad(b, y, window, h, w)
    H, W = -(-h // window) * window, -(-w // window) * window  # the padded size
    y = roll(b, roll(b, y, -shift, 1, H), -shift, 2, W)
    wins, n, hd = (H // window) * (W // window), window * window, channels // heads
    sizes = [b.op("Div", [size, b.ints("window", [window])]) for size in (ph, pw)]
    y = b.op("Reshape", [y, b.op("Concat", [b.ints("batch", [1]), sizes[0], b.ints("window", [window]), sizes[1],
                                            b.ints("window_c", [window, channels])], axis=0)])
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 1, 3, 2, 4, 5]), b.ints("windows", [wins, n, channels])])
    qkv = b.op("Reshape", [linear(b, y, channels, 3 * channels), b.ints("qkv", [wins, n, 3, heads, hd])])
    qkv = b.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4])
    q, k, v = (b.op("Gather", [qkv, b.init(f"part{i}", np.array(i, np.int64))], axis=0) for i in range(3))
    q = b.op("Mul", [q, b.init("head_scale", np.float32(hd ** -0.5))])
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = b.op("Add", [scores, b.w("relative_position_bias", (1, heads, n, n), 0.5)])
    region = np.zeros((H, W), np.int64)  # torchvision's attention mask: the shifted image's regions
    for i, rows in enumerate((slice(0, -window), slice(-window, -shift), slice(-shift, None))):
        for j, cols in enumerate((slice(0, -window), slice(-window, -shift), slice(-shift, None))):
            region[rows, cols] = 3 * i + j
    region = region.reshape(H // window, window, W // window, window).transpose(0, 2, 1, 3).reshape(wins, n)
    mask = np.where(region[:, :, None] != region[:, None, :], -100.0, 0.0).astype(np.float32)
    scores = b.op("Reshape", [scores, b.ints("per_window", [1, wins, heads, n, n])])
    scores = b.op("Add", [scores, b.init("attn_mask", mask[None, :, None])])
    scores = b.op("Reshape", [scores, b.ints("scores", [wins, heads, n, n])])
    y = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 1, 3]), b.ints("tokens", [wins, n, channels])])
    y = linear(b, y, channels, channels)
    y = b.op("Reshape", [y, b.ints("grid", [1, H // window, W // window, window, window, channels])])
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 1, 3, 2, 4, 5]), b.ints("image", [1, H, W, channels])])
    y = roll(b, roll(b, y, shift, 1, H), shift, 2, W)
    y = b.op("Slice", [y, b.ints("start", [0, 0]), b.ints("end", [h, w]), b.ints("axes", [1, 2])])  # unpadded
    x = b.op("Add", [x, y])
    parts = [b.op("Slice", [x, b.ints("start", [r, c]), b.ints("end", [h, w]), b.ints("axes", [1, 2]),
                            b.ints("steps", [2, 2])]) for c in (0, 1) for r in (0, 1)]
    x = layernorm(b, b.op("Concat", parts, axis=-1), 4 * channels)
    out = b.op("MatMul", [x, b.w("reduction.weight", (4 * channels, 2 * channels))])
    return b.model(shape, out, [1, h // 2, w // 2, 2 * channels], opset=17)


def token_mean_like(seed: int = 12, shape=(1, 10, 16), keepdims: int = 0):
    """timm's LeViT pooling (and its ViTs' with global_pool="avg") by the mean over the tokens (``x.mean(dim=1)``, ReduceMean
    over axis 1 of (N, T, C)) before the classifier, after a Linear over the tokens."""
    b = Builder(seed)
    # 64 channels: the 4 calibration inputs of the tests give 256 pooled values, enough to see
    # their range (with 24, a test input's pooled value fell 50 % outside it and was clipped)
    x = b.op("ReduceMean", [linear(b, "input", shape[-1], 64), b.ints("axes", [1])], keepdims=keepdims)
    out = linear(b, x, 64, 8)
    return b.model(shape, out, [shape[0], 1, 8] if keepdims else [shape[0], 8], opset=18)


def maxvit_attention_like(seed: int = 13, shape=(1, 2, 16, 16), heads: int = 2):
    """torchvision MaxViT's relative-position attention over (batch, groups, tokens, channels) as
    torch.onnx.export (opset 17) writes it: Q, K, V Linears, heads split by Reshape + Transpose,
    q times head_dim**-0.5, ``Einsum("bghid,bghjd->bghij", q, k)`` plus a relative position bias,
    Softmax, ``Einsum("bghij,bghjd->bghid", p, v)``, heads merged, the output Linear."""
    b = Builder(seed)
    n, g, t, c = shape
    hd = c // heads

    def split(x):
        return b.op("Transpose", [b.op("Reshape", [x, b.ints("heads", [n, g, t, heads, hd])])], perm=[0, 1, 3, 2, 4])
    q, k, v = (split(linear(b, "input", c, c)) for _ in range(3))
    q = b.op("Mul", [q, b.init("scale", np.float32(hd ** -0.5))])
    scores = b.op("Einsum", [q, k], equation="bghid,bghjd->bghij")
    scores = b.op("Add", [scores, b.w("relative_position_bias", (heads, t, t), 0.5)])
    out = b.op("Einsum", [b.op("Softmax", [scores], axis=-1), v], equation="bghij,bghjd->bghid")
    out = b.op("Reshape", [b.op("Transpose", [out], perm=[0, 1, 3, 2, 4]), b.ints("merged", [n, g, t, c])])
    return b.model(shape, linear(b, out, c, c), list(shape), opset=17)


MODELS = {"resnet_like": resnet_like, "mobilenet_like": mobilenet_like, "squeezenet_like": squeezenet_like,
          "elementwise_like": elementwise_like, "mlp_like": mlp_like, "token_mlp_like": token_mlp_like,
          "channels_last_mlp_like": channels_last_mlp_like, "transformer_ffn_like": transformer_ffn_like,
          "prenorm_transformer_like": prenorm_transformer_like,
          "prenorm_decomposed_like": lambda: prenorm_transformer_like(decomposed=True),
          "convnext_block_like": convnext_block_like,
          "convnext_layer_scale_like": lambda: convnext_block_like(layer_scale=1e-6),
          "vit_embedding_like": vit_embedding_like, "bert_embedding_like": bert_embedding_like,
          "swin_block_like": swin_block_like,
          "token_mean_like": token_mean_like, "token_mean_keepdims_like": lambda: token_mean_like(keepdims=1),
          "maxvit_attention_like": maxvit_attention_like}
