"""Dilated convolutions (DeepLab/FCN/LRASPP heads) and non-square kernels (inception): imported as the ordinary conv of the kernel
with zeros between its taps, so onnxruntime's float result, the int8 reference, the CPU kernels
and the accelerator (on the simulator) all agree with no dilation-specific code below the importer."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import float_ref, from_model
from compiler.frontend.inputs import synthetic_images
from tests.compiler.frontend.int8_run import run_int8

CASES = [  # (kernel (kh, kw), dilations, pads (t, l, b, r), strides)
    ((3, 3), (2, 2), (2, 2, 2, 2), (1, 1)),
    ((3, 3), (4, 4), (4, 4, 4, 4), (1, 1)),
    ((3, 1), (2, 1), (2, 0, 2, 0), (1, 1)),
    ((3, 3), (2, 2), (1, 2, 3, 2), (2, 2)),
    ((3, 3), (36, 36), (36, 36, 36, 36), (1, 1)),  # DeepLab's ASPP rate 36 on a 12x12 map: only the centre tap reads it
    ((3, 3), (8, 8), (8, 8, 8, 8), (1, 1)),        # rate 8 on 12x12: every tap reads some of it
]
NON_SQUARE = [  # inception's 1x7 and 7x1 (squared up with zero taps on the accelerator)
    ((1, 7), (1, 1), (0, 3, 0, 3), (1, 1)),
    ((7, 1), (1, 1), (3, 0, 3, 0), (1, 1)),
]


def dilated_net(kernel, dilations, pads, strides, c=16, size=12, seed=0):
    """conv 3x3 (16 channels) -> ReLU -> the dilated conv -> ReLU, as an exporter writes it."""
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((c, c, *kernel)) * 0.1).astype(np.float32), "w2")
    b2 = numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(np.float32), "b2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="stem", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2", "b2"], ["d"], name="aspp", kernel_shape=list(kernel),
                              dilations=list(dilations), pads=[pads[0], pads[1], pads[2], pads[3]],
                              strides=list(strides)),
             helper.make_node("Relu", ["d"], ["y"], name="out")]
    graph = helper.make_graph(nodes, "dilated", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1, w2, b2])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("kernel,dilations,pads,strides", CASES)
def test_float_model_matches_onnxruntime(kernel, dilations, pads, strides):
    model = dilated_net(kernel, dilations, pads, strides)
    x = synthetic_images(1, 12, 3)
    ours = float_ref.forward(from_model(model, "d.onnx"), x)
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() < 1e-4


def test_taps_that_read_only_padding_are_dropped():
    """A 3x3 at dilation 36 on 12x12 would be a 73x73 kernel (5 GB for DeepLab's 960 -> 256
    channels); only its centre tap ever reads the input, so it is a 1x1 conv without padding."""
    graph = from_model(dilated_net((3, 3), (36, 36), (36, 36, 36, 36), (1, 1)), "d.onnx")
    node = graph.node("aspp")
    assert node.attrs["weight"].shape == (16, 16, 1, 1) and tuple(node.attrs["pad"]) == (0, 0, 0, 0)
    node = from_model(dilated_net((3, 3), (8, 8), (8, 8, 8, 8), (1, 1)), "d.onnx").node("aspp")
    assert node.attrs["weight"].shape == (16, 16, 17, 17)  # every tap reads some input: all kept


def test_the_kernel_has_zeros_between_its_taps():
    graph = from_model(dilated_net((3, 1), (2, 1), (2, 0, 2, 0), (1, 1)), "d.onnx")
    w = graph.node("aspp").attrs["weight"]
    assert w.shape == (16, 16, 5, 1)
    assert not w[:, :, 1::2].any() and w[:, :, ::2].all()


@pytest.mark.parametrize("kernel,dilations,pads,strides", CASES[:1] + CASES[2:] + NON_SQUARE)
def test_int8_on_the_accelerator_is_the_reference(kernel, dilations, pads, strides):
    """The dilated conv placed on VDLA (simulator) gives the int8 reference's bits, and the
    int8 result stays within a few output steps of the float model."""
    graph = from_model(dilated_net(kernel, dilations, pads, strides), "d.onnx")
    q, placements, x, result = run_int8(graph, 12, wide_output=False)  # int8 output: VDLA may store it
    aspp = next(n for n in q.nodes if n.name.startswith("aspp"))
    assert placements[aspp.name].target == "vdla", placements[aspp.name].reason
    float_out = float_ref.forward(graph, x)
    assert np.sqrt(np.mean((q.dequantize_output(result.output) - float_out) ** 2)) < 0.1 * np.sqrt(np.mean(float_out ** 2))
