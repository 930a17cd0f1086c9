"""Split (shufflenet's channel halves and its channel shuffle), as exporters write it: each output a
gather; float vs onnxruntime, int8 run bit-exact with the reference, bad split sizes refused."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import float_ref, from_model
from compiler.frontend.graph import ModelError
from compiler.frontend.inputs import synthetic_images
from tests.compiler.frontend.int8_run import run_int8


def shuffle_block(split_node, opset=17, c=16):
    """conv -> Split in two -> conv on one half -> Concat -> channel shuffle (Reshape, Transpose,
    Reshape), as torchvision's shufflenet_v2 exports its unit."""
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal((c // 2, c // 2, 1, 1)) * 0.3).astype(np.float32), "w2"),
             numpy_helper.from_array(np.array([1, 2, c // 2, 8, 8], np.int64), "s5"),
             numpy_helper.from_array(np.array([1, c, 8, 8], np.int64), "s4"),
             numpy_helper.from_array(np.array([c // 2, c // 2], np.int64), "halves")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r"], name="relu"), split_node,
             helper.make_node("Conv", ["right", "w2"], ["b"], name="conv2", kernel_shape=[1, 1]),
             helper.make_node("Concat", ["left", "b"], ["cat"], name="cat", axis=1),
             helper.make_node("Reshape", ["cat", "s5"], ["g"], name="groups"),
             helper.make_node("Transpose", ["g"], ["t"], name="shuffle", perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "s4"], ["y"], name="back")]
    graph = helper.make_graph(nodes, "shuffle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


SPLITS = {
    "split input (opset 13+)": (helper.make_node("Split", ["r", "halves"], ["left", "right"], name="split", axis=1), 17),
    "equal parts": (helper.make_node("Split", ["r"], ["left", "right"], name="split", axis=-3), 17),
    "split attribute (opset 11, converted)": (helper.make_node("Split", ["r"], ["left", "right"], name="split",
                                                                axis=1, split=[8, 8]), 11),
    "num_outputs (opset 18)": (helper.make_node("Split", ["r"], ["left", "right"], name="split", axis=1,
                                                num_outputs=2), 18),
}


@pytest.mark.parametrize("form", SPLITS)
def test_float_model_matches_onnxruntime(form):
    model = shuffle_block(*SPLITS[form])
    x = synthetic_images(1, 8, 3)
    graph = from_model(model, "s.onnx")
    assert "gather" in [n.op for n in graph.nodes]
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(float_ref.forward(graph, x) - theirs).max() < 1e-4


def test_int8_run_is_the_reference():
    graph = from_model(shuffle_block(*SPLITS["split input (opset 13+)"]), "s.onnx")
    run_int8(graph, 8)


def test_sizes_that_do_not_cut_the_axis_are_refused():
    node = helper.make_node("Split", ["r"], ["left", "right"], name="split", axis=1, split=[4, 4])
    with pytest.raises(ModelError, match=r"s.onnx: .*node name: split.*sum of 'split' \(8\)"):
        from_model(shuffle_block(node, opset=11), "s.onnx")
