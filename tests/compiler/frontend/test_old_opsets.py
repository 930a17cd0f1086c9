"""Models of opsets below 13 (compiler.frontend.onnx_read.upgraded): converted to opset 13 by
onnx's version converter, then imported like their opset-13 twins: the same IR, the same float
results (and onnxruntime's on the old model), the same int8 results bit for bit; a conversion
that fails is one ModelError naming the opset and the reason."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import ModelError, float_ref, from_model
from compiler.frontend.resnet import build_resnet
from compiler.quantize import quantize_graph, reference


def small_net(opset: int, seed: int = 0):
    """Conv, BatchNormalization, Clip(0, 6), MaxPool, a residual add, ReduceMean, Squeeze, Gemm,
    Softmax, Unsqueeze and Flatten in the forms of ``opset``: Clip's bounds as attributes before
    opset 11, Squeeze/Unsqueeze axes as attributes before 13 (inputs from 13 on)."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def init(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op, inputs, out, **attrs):
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(x, ic, oc, name):
        w = init(f"{name}.w", (rng.standard_normal((oc, ic, 3, 3)) * np.sqrt(2 / (9 * ic))).astype(np.float32))
        return node("Conv", [x, w], name, kernel_shape=[3, 3], pads=[1, 1, 1, 1])

    def axes_op(op, x, axes, out):
        if opset < 13:
            return node(op, [x], out, axes=axes)
        return node(op, [x, init(f"{out}.axes", np.array(axes, np.int64))], out)

    x = conv("input", 3, 16, "c1")
    bn = [init(f"bn.{k}", (rng.uniform(0.5, 1.5, 16) if k in "sv" else rng.standard_normal(16) * 0.1).astype(np.float32))
          for k in "sbmv"]
    x = node("BatchNormalization", [x] + bn, "bn", epsilon=1e-5)
    if opset < 11:
        x = node("Clip", [x], "relu6", min=0.0, max=6.0)
    else:
        x = node("Clip", [x, init("lo", np.float32(0)), init("hi", np.float32(6))], "relu6")
    x = node("MaxPool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
    y = node("Relu", [conv(x, 16, 16, "c2")], "r2")
    x = node("Add", [x, y], "sum")
    x = node("ReduceMean", [x], "gap", axes=[2, 3], keepdims=1)
    x = axes_op("Squeeze", x, [2, 3], "squeeze")
    w = init("fc.w", (rng.standard_normal((10, 16)) * 0.25).astype(np.float32))
    x = node("Gemm", [x, w, init("fc.b", np.zeros(10, np.float32))], "fc", transB=1)
    x = node("Softmax", [x], "prob", axis=1)
    x = node("Flatten", [axes_op("Unsqueeze", x, [2], "unsq")], "out", axis=1)
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def int8_output(graph, calibration, x):
    return reference.forward(quantize_graph(graph, calibration), x)


@pytest.mark.parametrize("opset", [9, 11, 12])
def test_an_old_opset_imports_as_its_opset_13_twin(opset):
    old, twin = small_net(opset), small_net(13)
    graph, graph13 = from_model(old, f"small{opset}"), from_model(twin, "small13")
    assert [n.op for n in graph.nodes] == [n.op for n in graph13.nodes]
    rng = np.random.default_rng(1)
    calibration = rng.standard_normal((4, 3, 8, 8)).astype(np.float32)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    got = float_ref.forward(graph, x)
    np.testing.assert_array_equal(got, float_ref.forward(graph13, x))
    session = ort.InferenceSession(old.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"input": x})[0], rtol=0, atol=1e-5)
    np.testing.assert_array_equal(int8_output(graph, calibration, x), int8_output(graph13, calibration, x))


def test_resnet18_at_opset_11():
    """The issue's case: ResNet-18 as an opset-11 file (the same nodes are valid there)."""
    model = build_resnet(18, 32)
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", 11))
    graph, graph17 = from_model(model, "resnet18_opset11"), from_model(build_resnet(18, 32), "resnet18")
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(float_ref.forward(graph, x), float_ref.forward(graph17, x))


def test_a_conversion_that_fails_names_the_opset_and_the_reason():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    stats = [numpy_helper.from_array(np.ones(4, np.float32), n) for n in "sbmv"]
    bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn", spatial=0)
    model = helper.make_model(helper.make_graph([bn], "g", [x], [y], stats), opset_imports=[helper.make_opsetid("", 7)])
    with pytest.raises(ModelError, match=r"^old: opset 7 cannot be converted to opset 13 by onnx's version converter: "
                                         r"Attribute spatial must have value 1; re-export with opset_version 13 to 21$"):
        from_model(model, "old")
    gelu = helper.make_node("Gelu", ["x"], ["y"], name="g")
    model = helper.make_model(helper.make_graph([gelu], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 11)])
    with pytest.raises(ModelError, match=r"^old: opset 11 cannot be converted .*: opset 11 has no op Gelu; re-export"):
        from_model(model, "old")


def test_a_newer_opset_than_21_is_refused():
    model = small_net(13)
    model.opset_import[0].version = 22
    with pytest.raises(ModelError, match="opset 22 is not supported \\(supported: 13 to 21, older ones converted to 13\\)"):
        from_model(model, "new")
