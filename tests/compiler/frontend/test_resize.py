"""Resize in nearest mode (FPN's top-down upsampling) is a copy: a gather, equal to onnxruntime's
for every coordinate transformation and rounding, by sizes or scales; int8 bit-exact; linear refused."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import float_ref, from_model
from compiler.frontend.graph import ModelError
from compiler.frontend.inputs import synthetic_images
from tests.compiler.frontend.int8_run import run_int8

FORMS = [  # (coordinate_transformation_mode, nearest_mode, sizes or None, scales or None)
    ("asymmetric", "floor", None, [1, 1, 2, 2]),  # F.interpolate(scale_factor=2, mode="nearest")
    ("asymmetric", "floor", [1, 8, 16, 16], None),  # F.interpolate(size=..., mode="nearest")
    ("half_pixel", "round_prefer_floor", [1, 8, 13, 11], None),
    ("pytorch_half_pixel", "round_prefer_ceil", [1, 8, 5, 7], None),
    ("align_corners", "floor", [1, 8, 9, 9], None),
]


def upsample(ctm, nearest, sizes, scales, mode="nearest"):
    """conv (8 channels) -> Resize -> ReLU."""
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "w")]
    inputs = ["c", "", ""]
    if scales is not None:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        inputs[2] = "scales"
    else:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        inputs.append("sizes")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Resize", inputs, ["u"], name="up", mode=mode, coordinate_transformation_mode=ctm,
                              nearest_mode=nearest),
             helper.make_node("Relu", ["u"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "up", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"{f[0]}-{f[1]}")
def test_nearest_resize_is_onnxruntimes(form):
    model = upsample(*form)
    graph = from_model(model, "r.onnx")
    assert sorted(n.op for n in graph.nodes) == ["conv", "gather", "relu"]
    x = synthetic_images(1, 8, 3)
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ours = float_ref.forward(graph, x)
    assert ours.shape == theirs.shape and np.abs(ours - theirs).max() < 1e-5


def test_int8_run_is_the_reference():
    graph = from_model(upsample(*FORMS[0]), "r.onnx")
    run_int8(graph, 8)


def test_linear_resize_is_refused_by_name():
    with pytest.raises(ModelError, match=r"node 'up' \(Resize\): Resize mode 'linear' is not supported"):
        from_model(upsample("half_pixel", "floor", [1, 8, 16, 16], None, mode="linear"), "r.onnx")
