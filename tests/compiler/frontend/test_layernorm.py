"""LayerNorm (issue 28, item 2): ONNX's LayerNormalization (opset 17) and torch's decomposed export
before it (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta) become one
``layernorm`` op over the last axis; the float model against onnxruntime, near misses left alone,
and an LN over another axis or with a computed scale refused in one line naming the node."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import ModelError, float_ref, from_model

SHAPE = [2, 6, 16]
RNG = np.random.default_rng(0)
GAMMA = (1.0 + 0.3 * RNG.standard_normal(16)).astype(np.float32)
BETA = (0.2 * RNG.standard_normal(16)).astype(np.float32)


def model(nodes, inits=(), opset=17, shape=SHAPE):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def against_onnxruntime(m, shape=SHAPE):
    x = (RNG.standard_normal(shape) * 3 + 1.5).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    graph = from_model(m, "ln")
    np.testing.assert_allclose(float_ref.forward(graph, x), want, rtol=0, atol=2e-5)
    return graph


def layernorm_node(axis=-1, bias=True, **attrs):
    return helper.make_node("LayerNormalization", ["x", "g"] + (["b"] if bias else []), ["y"], name="ln", axis=axis,
                            **attrs)


@pytest.mark.parametrize("axis", [-1, 2])
@pytest.mark.parametrize("bias", [True, False])
def test_onnx_layernormalization_over_the_last_axis_is_one_op(axis, bias):
    inits = [("g", GAMMA)] + ([("b", BETA)] if bias else [])
    graph = against_onnxruntime(model([layernorm_node(axis, bias, epsilon=1e-3)], inits))
    [node] = graph.nodes
    assert node.op == "layernorm" and node.attrs["eps"] == pytest.approx(1e-3)
    np.testing.assert_array_equal(node.attrs["bias"], BETA if bias else 0)


def decomposed(square="Pow", axes_as="input", gamma=True, beta=True, mean_axis=-1, order="x-first"):
    """torch's nn.LayerNorm before opset 17; ``axes_as`` "attribute" is opset 13's ReduceMean."""
    def mean(src, out):
        if axes_as == "attribute":
            return helper.make_node("ReduceMean", [src], [out], axes=[mean_axis])
        return helper.make_node("ReduceMean", [src, "axes"], [out])
    nodes = [mean("x", "m"), helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["p"]) if square == "Pow" else helper.make_node("Mul", ["d", "d"], ["p"]),
             mean("p", "v"), helper.make_node("Add", ["v", "eps"] if order == "x-first" else ["eps", "v"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["s"]), helper.make_node("Div", ["d", "s"], ["n" if gamma or beta else "y"])]
    if gamma:
        nodes.append(helper.make_node("Mul", ["n", "g"] if order == "x-first" else ["g", "n"], ["gm" if beta else "y"]))
    if beta:
        nodes.append(helper.make_node("Add", ["gm" if gamma else "n", "b"], ["y"]))
    inits = [("two", np.array(2.0, np.float32)), ("eps", np.array(1e-5, np.float32)), ("g", GAMMA), ("b", BETA)]
    if axes_as == "input":
        inits.append(("axes", np.array([mean_axis], np.int64)))
    return model(nodes, inits, opset=13 if axes_as == "attribute" else 18)


@pytest.mark.parametrize("variant", [{}, {"square": "Mul"}, {"axes_as": "attribute"}, {"mean_axis": 2},
                                     {"order": "constant-first"}, {"gamma": False}, {"beta": False},
                                     {"gamma": False, "beta": False}])
def test_torch_s_decomposed_layernorm_is_one_op(variant):
    graph = against_onnxruntime(decomposed(**variant))
    assert [n.op for n in graph.nodes] == ["layernorm"]
    assert graph.nodes[0].attrs["eps"] == pytest.approx(1e-5)


def test_near_misses_are_left_alone():
    # the mean over another axis than the last: not a LayerNorm; its ReduceMeans are means over
    # tokens, and the rest (Sub and Div of computed tensors, Pow, Sqrt) is refused
    with pytest.raises(ModelError, match=r"unsupported op Pow \(1 node: 'p'\); unsupported op Sqrt"):
        from_model(decomposed(mean_axis=1), "axis1")
    # the deviation read by a third node (here the output): the nodes stay, Sqrt is refused
    m = decomposed()
    m.graph.node.append(helper.make_node("Add", ["y", "d"], ["y2"]))
    m.graph.output[0].name = "y2"
    with pytest.raises(ModelError, match="Sqrt"):
        from_model(m, "shared")


def test_a_layernorm_over_another_axis_is_refused_in_one_line():
    m = model([layernorm_node(axis=1)], [("g", np.ones((6, 16), np.float32)), ("b", np.zeros((6, 16), np.float32))])
    with pytest.raises(ModelError) as err:
        from_model(m, "other.onnx")
    assert "\n" not in str(err.value)
    assert "'ln' (LayerNormalization): only normalisation over the last axis is supported (axis 1 of a 3-D " \
           "input)" in str(err.value)


def test_a_computed_scale_is_refused_in_one_line():
    m = model([helper.make_node("Relu", ["x"], ["g"]), layernorm_node()], [("b", BETA)])
    with pytest.raises(ModelError) as err:
        from_model(m, "computed.onnx")
    assert "\n" not in str(err.value)
    assert "'ln' (LayerNormalization)" in str(err.value) and "must be a constant" in str(err.value)


def test_the_mean_and_inverse_deviation_outputs_are_refused():
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y", "mean"], name="ln", axis=-1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE),
                               helper.make_tensor_value_info("mean", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(GAMMA, "g"), numpy_helper.from_array(BETA, "b")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelError, match="its Mean and InvStdDev outputs are not supported"):
        from_model(m, "stats")


@pytest.mark.parametrize("form", ["opset17", "decomposed"])
def test_a_layernorm_alone_runs_bit_exact_through_the_executor_on_the_cpu(form):
    from compiler.network import execute, partition
    from compiler.quantize import quantize_graph, reference
    from driver import open_device

    m = model([layernorm_node(epsilon=1e-5)], [("g", GAMMA), ("b", BETA)]) if form == "opset17" else decomposed()
    graph = from_model(m, form)
    rng = np.random.default_rng(2)
    q = quantize_graph(graph, (rng.standard_normal([8] + SHAPE[1:]) * 3 + 1.5).astype(np.float32))
    device = open_device("sim", "osdi18")
    placements = partition(q, device.config)
    [ln] = [n for n in q.nodes if n.op == "layernorm"]
    assert placements[ln.name].target == "cpu" and "integer square root" in placements[ln.name].reason
    x = (rng.standard_normal(SHAPE) * 3 + 1.5).astype(np.float32)
    result = execute(q, x, placements, device)
    np.testing.assert_array_equal(result.output, reference.forward(q, x))
    want = float_ref.forward(graph, x)
    assert np.sqrt(((q.dequantize_output(result.output) - want) ** 2).mean() / (want ** 2).mean()) < 0.05
