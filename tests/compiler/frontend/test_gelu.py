"""GELU (issue 28, item 2): ONNX's Gelu (opset 20, exact and tanh) and torch's decomposed export
before it (Div or Mul by the square root of 2, Erf, Add 1, Mul by x and by 0.5 in either order)
become one element-wise op, a 256-entry int8 table like the other activations; the float model
against onnxruntime, and near misses left alone."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import ModelError, float_ref, from_model

SHAPE = [1, 6, 16]


def model(nodes, inits=(), opset=18):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
                              [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def decomposed(order: str, scale_op: str = "Div", root: float = float(np.sqrt(2.0))):
    scale = ("s", root if scale_op == "Div" else 1.0 / root)
    nodes = [helper.make_node(scale_op, ["x", "s"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["one", "e"], ["a"])]
    if order == "x*(1+erf)*0.5":
        nodes += [helper.make_node("Mul", ["a", "x"], ["m"]), helper.make_node("Mul", ["m", "half"], ["y"])]
    else:   # 0.5 * x first
        nodes += [helper.make_node("Mul", ["half", "x"], ["h"]), helper.make_node("Mul", ["h", "a"], ["y"])]
    return model(nodes, [scale, ("one", 1.0), ("half", 0.5)])


def against_onnxruntime(m):
    x = (np.random.default_rng(0).standard_normal(SHAPE) * 3).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    graph = from_model(m, "gelu")
    np.testing.assert_allclose(float_ref.forward(graph, x), want, rtol=0, atol=2e-6)
    return graph


@pytest.mark.parametrize("order", ["x*(1+erf)*0.5", "0.5*x*(1+erf)"])
@pytest.mark.parametrize("scale_op", ["Div", "Mul"])
def test_torch_s_decomposed_gelu_is_one_op(order, scale_op):
    graph = against_onnxruntime(decomposed(order, scale_op))
    assert [(n.op, n.attrs) for n in graph.nodes] == [("gelu", {"approximate": "none"})]


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_onnx_gelu_of_opset_20(approximate):
    graph = against_onnxruntime(model([helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)], opset=20))
    assert [(n.op, n.attrs) for n in graph.nodes] == [("gelu", {"approximate": approximate})]


def test_a_near_miss_is_not_taken_for_gelu_and_a_bad_attribute_is_one_line():
    with pytest.raises(ModelError, match="unsupported op Erf"):   # divided by 1.5, not the root of 2
        from_model(decomposed("x*(1+erf)*0.5", root=1.5), "near")
    with pytest.raises(ModelError, match=r"Gelu approximate='fast': expected 'none' or 'tanh'"):
        from_model(model([helper.make_node("Gelu", ["x"], ["y"], approximate="fast")], opset=20), "bad")
