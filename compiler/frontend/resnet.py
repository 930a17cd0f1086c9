"""Built-in ResNet-18/34 (torchvision layout) with deterministic random weights, as float ONNX
(:func:`build_resnet`) or directly as the front end's graph (:func:`resnet_graph`).

Nothing is downloaded. Convolutions get He-normal weights from a seeded generator; each
BatchNormalization gets the running mean and variance its convolution actually produces on
seeded synthetic images (``compiler.frontend.inputs``) (a data-dependent initialisation), so activations keep a sane range from
layer to layer and quantization behaves as on a trained network. That float pass is the float
model's (``float_ref.conv2d``: exact sums on a fixed-point grid) followed by element-wise numpy
and numpy's own fixed-order reductions, never a BLAS sum of floats, so the model's bits are the
same on every machine and BLAS thread count. Node names follow torchvision
(``conv1``, ``layer1.0.conv1``, ``layer2.0.downsample.0``, ``fc``).

Both forms come from one list of layers (:func:`resnet_layers`). :func:`resnet_graph` is what
``from_model(build_resnet(...))`` imports, value for value (the same nodes, weights folded the
same way, the same shapes; tests/compiler/frontend/test_resnet.py compares the two), without
onnx: importing onnx alone costs more than a second, and the ONNX round trip more.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.frontend import float_ref
from compiler.frontend.graph import Graph, ModelError, Node, conv_out
from compiler.frontend.inputs import synthetic_images

BLOCKS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3)}
WIDTHS = (64, 128, 256, 512)
NUM_CLASSES = 1000
OPSET = 17
BN_EPSILON = 1e-5  # stored as a float32 attribute: the importer reads float(np.float32(1e-5))


class _Builder:
    """Records the layers (ONNX op, name, inputs, output, parameters) while running the float
    network, to set BN statistics on the way."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.layers: list[tuple[str, str, list[str], str, dict]] = []

    def node(self, op: str, inputs: list[str], output: str, name: str, **params) -> str:
        self.layers.append((op, name, inputs, output, params))
        return output

    def conv_bn(self, x: str, xv: np.ndarray, name: str, bn: str, oc: int, k: int, stride: int, relu: bool):
        ic = xv.shape[1]
        w = (self.rng.standard_normal((oc, ic, k, k)) * np.sqrt(2.0 / (ic * k * k))).astype(np.float32)
        pad = k // 2
        y = float_ref.conv2d(xv, w, np.zeros(oc, np.float32), (stride, stride), (pad,) * 4)
        mean, var = y.mean(axis=(0, 2, 3)), y.var(axis=(0, 2, 3)) + 1e-3
        gamma = (1.0 + 0.1 * self.rng.standard_normal(oc)).astype(np.float32)
        beta = (0.1 * self.rng.standard_normal(oc)).astype(np.float32)
        self.node("Conv", [x], f"{name}_out", name, weight=w, kernel=k, stride=stride, pad=pad)
        out = self.node("BatchNormalization", [f"{name}_out"], f"{bn}_out", bn,
                        gamma=gamma, beta=beta, mean=mean, var=var)
        yv = (y - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5) * gamma[None, :, None, None] \
            + beta[None, :, None, None]
        if relu:
            out = self.node("Relu", [out], f"{bn}_relu", f"{name}.relu")
            yv = np.maximum(yv, 0)
        return out, yv.astype(np.float32)


def resnet_layers(depth: int = 18, resolution: int = 224, seed: int = 0, calib_batch: int = 8) -> list[tuple]:
    """The layers of ResNet-``depth`` for ``resolution`` x ``resolution`` RGB input, in order:
    (ONNX op, node name, inputs, output, parameters as float32 arrays and ints); the input is
    named ``input``, the output ``logits``."""
    if depth not in BLOCKS:
        raise ModelError(f"resnet{depth}", f"unknown depth (known: {', '.join(str(d) for d in BLOCKS)})")
    if resolution < 32 or resolution % 32:
        raise ModelError(f"resnet{depth}", f"resolution {resolution} must be a multiple of 32, at least 32")
    rng = np.random.default_rng(seed + 1000)
    xv = synthetic_images(calib_batch, resolution, seed + 2000)
    b = _Builder(seed)
    x, xv = b.conv_bn("input", xv, "conv1", "bn1", 64, 7, 2, relu=True)
    x = b.node("MaxPool", [x], "maxpool_out", "maxpool", kernel=3, stride=2, pad=1)
    xv = float_ref.maxpool(xv, (3, 3), (2, 2), (1, 1, 1, 1))
    for stage, (blocks, width) in enumerate(zip(BLOCKS[depth], WIDTHS), start=1):
        for i in range(blocks):
            p = f"layer{stage}.{i}"
            stride = 2 if stage > 1 and i == 0 else 1
            y, yv = b.conv_bn(x, xv, f"{p}.conv1", f"{p}.bn1", width, 3, stride, relu=True)
            y, yv = b.conv_bn(y, yv, f"{p}.conv2", f"{p}.bn2", width, 3, 1, relu=False)
            if stride != 1 or xv.shape[1] != width:
                x, xv = b.conv_bn(x, xv, f"{p}.downsample.0", f"{p}.downsample.1", width, 1, stride, relu=False)
            s = b.node("Add", [y, x], f"{p}_add", f"{p}.add")
            x = b.node("Relu", [s], f"{p}_out", f"{p}.relu_out")
            xv = np.maximum(yv + xv, 0)
    x = b.node("GlobalAveragePool", [x], "avgpool_out", "avgpool")
    x = b.node("Flatten", [x], "flatten_out", "flatten")
    # Standardise the classifier's input features (data-dependent, like the BN statistics), so
    # the logits depend on the input rather than on the features' common mean.
    feats = xv.mean(axis=(2, 3))
    mean, std = feats.mean(axis=0), feats.std(axis=0) + 1e-3
    fc_w = (rng.standard_normal((NUM_CLASSES, WIDTHS[-1])) * np.sqrt(1.0 / WIDTHS[-1]) / std).astype(np.float32)
    fc_b = (-float_ref.exact_dense(mean[None, :], fc_w)[0] + 0.01 * rng.standard_normal(NUM_CLASSES)).astype(np.float32)
    b.node("Gemm", [x], "logits", "fc", weight=fc_w, bias=fc_b)
    return b.layers


def build_resnet(depth: int = 18, resolution: int = 224, seed: int = 0, calib_batch: int = 8):
    """The ONNX ModelProto of ResNet-``depth`` for ``resolution`` x ``resolution`` RGB input."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []

    def init(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    for op, name, inputs, output, p in resnet_layers(depth, resolution, seed, calib_batch):
        attrs = {}
        if op == "Conv":
            k, s = p["kernel"], p["stride"]
            inputs = inputs + [init(f"{name}.weight", p["weight"])]
            attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p["pad"]] * 4)
        elif op == "BatchNormalization":
            inputs = inputs + [init(f"{name}.{key}", p[part]) for key, part in
                               (("weight", "gamma"), ("bias", "beta"), ("running_mean", "mean"), ("running_var", "var"))]
            attrs = dict(epsilon=BN_EPSILON)
        elif op == "MaxPool":
            attrs = dict(kernel_shape=[p["kernel"]] * 2, strides=[p["stride"]] * 2, pads=[p["pad"]] * 4)
        elif op == "Flatten":
            attrs = dict(axis=1)
        elif op == "Gemm":
            inputs = inputs + [init("fc.weight", p["weight"]), init("fc.bias", p["bias"])]
            attrs = dict(transB=1)
        nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
    graph = helper.make_graph(
        nodes, f"resnet{depth}",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, resolution, resolution])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, NUM_CLASSES])], inits)
    model = helper.make_model(graph, producer_name="vdla", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def resnet_graph(depth: int = 18, resolution: int = 224, seed: int = 0, calib_batch: int = 8) -> Graph:
    """The float graph ``from_model(build_resnet(depth, resolution, seed, calib_batch))`` gives,
    built without onnx: each layer mapped as ``onnx_import`` maps its op (BatchNormalization an
    ``affine`` of float64 scale and offset from the float32 parameters), then ``simplify`` (the
    importer's own: each affine folded into its conv)."""
    from compiler.frontend.simplify import simplify

    shapes: dict[str, tuple[int, ...]] = {"input": (1, 3, resolution, resolution)}
    nodes = []
    eps = float(np.float32(BN_EPSILON))
    for op, name, inputs, output, p in resnet_layers(depth, resolution, seed, calib_batch):
        n, c, h, w = (shapes[inputs[0]] + (1, 1))[:4]
        if op == "Conv":
            k, s, pad = p["kernel"], p["stride"], p["pad"]
            weight = p["weight"]
            node = Node(name, "conv", inputs, output, dict(weight=weight, bias=np.zeros(weight.shape[0], np.float32),
                                                          stride=(s, s), pad=(pad,) * 4, groups=1))
            shape = (n, weight.shape[0], conv_out(h, k, s, pad, pad), conv_out(w, k, s, pad, pad))
        elif op == "BatchNormalization":
            scale, beta, mean, var = (p[key].astype(np.float64) for key in ("gamma", "beta", "mean", "var"))
            k = scale / np.sqrt(var + eps)
            node = Node(name, "affine", inputs, output, dict(scale=k.reshape(1, -1, 1, 1),
                                                            offset=(beta - mean * k).reshape(1, -1, 1, 1)))
            shape = shapes[inputs[0]]
        elif op in ("Relu", "Add"):
            node, shape = Node(name, op.lower(), inputs, output, {}), shapes[inputs[0]]
        elif op == "MaxPool":
            k, s, pad = p["kernel"], p["stride"], p["pad"]
            node = Node(name, "maxpool", inputs, output, dict(kernel=(k, k), stride=(s, s), pad=(pad,) * 4, ceil=(0, 0)))
            shape = (n, c, conv_out(h, k, s, pad, pad), conv_out(w, k, s, pad, pad))
        elif op == "GlobalAveragePool":
            node, shape = Node(name, "avgpool", inputs, output, {}), (n, c, 1, 1)
        elif op == "Flatten":
            shape = (n, c * h * w)
            node = Node(name, "reshape", inputs, output, dict(shape=shape))
        else:  # Gemm, transB=1, alpha = beta = 1
            weight = p["weight"]
            node = Node(name, "dense", inputs, output, dict(weight=np.ascontiguousarray(weight, np.float32),
                                                           bias=np.asarray(p["bias"], np.float32).copy()))
            shape = (n, weight.shape[0])
        nodes.append(node)
        shapes[output] = shape
    return simplify(Graph(f"resnet{depth}", "input", ("logits",), nodes, shapes))


def write_resnet(path: str | Path, depth: int = 18, resolution: int = 224, seed: int = 0) -> Path:
    import onnx

    model = build_resnet(depth, resolution, seed)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return Path(path)
