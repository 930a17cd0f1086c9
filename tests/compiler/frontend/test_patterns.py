"""torch's spellings of Softplus (dynamo: Where/Greater) and Softsign (Abs/Add/Div), and PRelu with
one slope: imported as the one op, float-checked against onnxruntime; other forms still refused."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import float_ref, from_model
from compiler.frontend.graph import ModelError
from compiler.frontend.inputs import synthetic_images


def model(nodes, inits):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 2).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])] + nodes
    graph = helper.make_graph(nodes, "p", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [w] + [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def softplus_where(threshold=20.0):
    return model([helper.make_node("Greater", ["c", "t"], ["g"], name="gt"),
                  helper.make_node("Softplus", ["c"], ["s"], name="sp"),
                  helper.make_node("Where", ["g", "c", "s"], ["y"], name="where")], {"t": threshold})


def softsign(one=1.0):
    return model([helper.make_node("Abs", ["c"], ["a"], name="abs"),
                  helper.make_node("Add", ["a", "one"], ["d"], name="add"),
                  helper.make_node("Div", ["c", "d"], ["y"], name="div")], {"one": one})


def prelu(slope):
    return model([helper.make_node("PRelu", ["c", "slope"], ["y"], name="prelu")], {"slope": slope})


def check(m, op):
    graph = from_model(m, "p.onnx")
    assert [n.op for n in graph.nodes] == ["conv", op]
    x = synthetic_images(1, 8, 4)
    theirs = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(float_ref.forward(graph, x) - theirs).max() < 1e-4


def test_dynamo_softplus_is_softplus():
    check(softplus_where(), "softplus")


def test_torch_softsign_is_softsign():
    check(softsign(), "softsign")


@pytest.mark.parametrize("slope", [[0.25], np.full((8, 1, 1), 0.1)])
def test_prelu_with_one_slope_is_leakyrelu(slope):
    check(prelu(slope), "leakyrelu")
    alpha = from_model(prelu(slope), "p.onnx").nodes[1].attrs["alpha"]
    assert alpha == np.float32(np.asarray(slope).reshape(-1)[0])


def test_other_forms_stay_refused():
    with pytest.raises(ModelError, match="Greater"):
        from_model(softplus_where(threshold=5.0), "p.onnx")  # far from softplus: not the pattern
    with pytest.raises(ModelError, match="Div"):
        from_model(softsign(one=2.0), "p.onnx")
    with pytest.raises(ModelError, match="PRelu with 8 different slopes"):
        from_model(prelu(np.linspace(0.1, 0.8, 8).reshape(8, 1, 1)), "p.onnx")
