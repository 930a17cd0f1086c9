"""Built-in ResNet-18/34 (torchvision layout) as float ONNX with deterministic random weights.

Nothing is downloaded. Convolutions get He-normal weights from a seeded generator; each
BatchNormalization gets the running mean and variance its convolution actually produces on
seeded synthetic images (``compiler.frontend.inputs``) (a data-dependent initialisation), so activations keep a sane range from
layer to layer and quantization behaves as on a trained network. That float pass is the float
model's (``float_ref.conv2d``: exact sums on a fixed-point grid) followed by element-wise numpy
and numpy's own fixed-order reductions, never a BLAS sum of floats, so the model's bits are the
same on every machine and BLAS thread count. Node names follow torchvision
(``conv1``, ``layer1.0.conv1``, ``layer2.0.downsample.0``, ``fc``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.frontend import float_ref
from compiler.frontend.graph import ModelError
from compiler.frontend.inputs import synthetic_images

BLOCKS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3)}
WIDTHS = (64, 128, 256, 512)
NUM_CLASSES = 1000
OPSET = 17


class _Builder:
    """Appends ONNX nodes while running the float network, to set BN statistics on the way."""

    def __init__(self, seed: int, x: np.ndarray):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.value = x  # the current float activation (batch of calibration inputs)

    def init(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, name: str, **attrs) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    def conv_bn(self, x: str, xv: np.ndarray, name: str, bn: str, oc: int, k: int, stride: int, relu: bool):
        ic = xv.shape[1]
        w = (self.rng.standard_normal((oc, ic, k, k)) * np.sqrt(2.0 / (ic * k * k))).astype(np.float32)
        pad = k // 2
        y = float_ref.conv2d(xv, w, np.zeros(oc, np.float32), (stride, stride), (pad,) * 4)
        mean, var = y.mean(axis=(0, 2, 3)), y.var(axis=(0, 2, 3)) + 1e-3
        gamma = (1.0 + 0.1 * self.rng.standard_normal(oc)).astype(np.float32)
        beta = (0.1 * self.rng.standard_normal(oc)).astype(np.float32)
        self.node("Conv", [x, self.init(f"{name}.weight", w)], f"{name}_out", name,
                  kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        out = self.node("BatchNormalization", [f"{name}_out", self.init(f"{bn}.weight", gamma),
                        self.init(f"{bn}.bias", beta), self.init(f"{bn}.running_mean", mean),
                        self.init(f"{bn}.running_var", var)], f"{bn}_out", bn, epsilon=1e-5)
        yv = (y - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5) * gamma[None, :, None, None] \
            + beta[None, :, None, None]
        if relu:
            out = self.node("Relu", [out], f"{bn}_relu", f"{name}.relu")
            yv = np.maximum(yv, 0)
        return out, yv.astype(np.float32)


def build_resnet(depth: int = 18, resolution: int = 224, seed: int = 0, calib_batch: int = 8):
    """The ONNX ModelProto of ResNet-``depth`` for ``resolution`` x ``resolution`` RGB input."""
    from onnx import TensorProto, helper

    if depth not in BLOCKS:
        raise ModelError(f"resnet{depth}", f"unknown depth (known: {', '.join(str(d) for d in BLOCKS)})")
    if resolution < 32 or resolution % 32:
        raise ModelError(f"resnet{depth}", f"resolution {resolution} must be a multiple of 32, at least 32")
    rng = np.random.default_rng(seed + 1000)
    xv = synthetic_images(calib_batch, resolution, seed + 2000)
    b = _Builder(seed, xv)
    x, xv = b.conv_bn("input", xv, "conv1", "bn1", 64, 7, 2, relu=True)
    x = b.node("MaxPool", [x], "maxpool_out", "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
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
    x = b.node("Flatten", [x], "flatten_out", "flatten", axis=1)
    # Standardise the classifier's input features (data-dependent, like the BN statistics), so
    # the logits depend on the input rather than on the features' common mean.
    feats = xv.mean(axis=(2, 3))
    mean, std = feats.mean(axis=0), feats.std(axis=0) + 1e-3
    fc_w = (rng.standard_normal((NUM_CLASSES, WIDTHS[-1])) * np.sqrt(1.0 / WIDTHS[-1]) / std).astype(np.float32)
    fc_b = (-float_ref.exact_dense(mean[None, :], fc_w)[0] + 0.01 * rng.standard_normal(NUM_CLASSES)).astype(np.float32)
    b.node("Gemm", [x, b.init("fc.weight", fc_w), b.init("fc.bias", fc_b)], "logits", "fc", transB=1)
    graph = helper.make_graph(
        b.nodes, f"resnet{depth}",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, resolution, resolution])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, NUM_CLASSES])], b.inits)
    model = helper.make_model(graph, producer_name="vdla", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def write_resnet(path: str | Path, depth: int = 18, resolution: int = 224, seed: int = 0) -> Path:
    import onnx

    model = build_resnet(depth, resolution, seed)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return Path(path)
