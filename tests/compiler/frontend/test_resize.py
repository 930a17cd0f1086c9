"""Resize in nearest mode (FPN's top-down upsampling) is a copy: a gather, equal to onnxruntime's
for every coordinate transformation and rounding, by sizes or scales; linear mode (bilinear
upsampling: LR-ASPP, FCN) is a weighted gather (``resize``), equal to onnxruntime's for every
coordinate transformation it supports, up and down, by sizes or scales; both int8 bit-exact on the
simulator and the CPU kernels; cubic and the rest refused by name."""

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


def check_against_onnxruntime(model, ops: list[str]) -> None:
    """The imported graph has ``ops`` (sorted) and gives onnxruntime's float output."""
    graph = from_model(model, "r.onnx")
    assert sorted(n.op for n in graph.nodes) == ops
    x = synthetic_images(1, 8, 3)
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ours = float_ref.forward(graph, x)
    assert ours.shape == theirs.shape and np.abs(ours - theirs).max() < 1e-5


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"{f[0]}-{f[1]}")
def test_nearest_resize_is_onnxruntimes(form):
    check_against_onnxruntime(upsample(*form), ["conv", "gather", "relu"])


def test_int8_run_is_the_reference():
    graph = from_model(upsample(*FORMS[0]), "r.onnx")
    run_int8(graph, 8)


LINEAR = [(ctm, sizes, scales) for ctm in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
          for sizes, scales in (([1, 8, 16, 16], None), ([1, 8, 13, 11], None), (None, [1, 1, 2, 2]),
                                (None, [1, 1, 1.5, 2.5]), ([1, 8, 5, 3], None), ([1, 8, 1, 1], None))]


@pytest.mark.parametrize("form", LINEAR, ids=lambda f: f"{f[0]}-{f[1] or f[2]}")
def test_linear_resize_is_onnxruntimes(form):
    ctm, sizes, scales = form
    check_against_onnxruntime(upsample(ctm, "floor", sizes, scales, mode="linear"), ["conv", "relu", "resize"])


@pytest.mark.parametrize("form", [LINEAR[0], LINEAR[9], LINEAR[16]], ids=lambda f: f"{f[0]}-{f[1] or f[2]}")
def test_linear_int8_run_is_the_reference_and_near_the_float(form):
    ctm, sizes, scales = form
    graph = from_model(upsample(ctm, "floor", sizes, scales, mode="linear"), "r.onnx")
    q, placements, x, result = run_int8(graph, 8)
    node = next(n for n in q.nodes if n.op == "resize")
    assert placements[node.name].target == "cpu" and "bilinear" in placements[node.name].reason
    assert (node.attrs["weight"].sum(axis=1) == 1 << node.attrs["frac"]).all()
    assert q.fracs[node.output] == q.fracs[node.inputs[0]] and q.zp(node.output) == q.zp(node.inputs[0])
    want = float_ref.forward(graph, x)
    got = q.dequantize_output(result.output)
    assert np.sqrt(((got - want) ** 2).mean()) < 0.05 * np.sqrt((want ** 2).mean())


def test_int8_resize_of_one_plane_is_the_rounded_weighted_mean():
    """The quantized op on its own, against plain numpy: rounding to nearest of the fixed-point mean."""
    from compiler.quantize import reference

    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (2, 3, 4, 5)).astype(np.int8)
    index = rng.integers(0, 20, (6, 4)).astype(np.int32)
    weight = rng.integers(0, 1 << 12, (6, 4)).astype(np.int32)
    weight[:, 0] += (1 << 14) - weight.sum(axis=1)
    got = reference.resize(x, index, weight, 14, (2, 3, 2, 3))
    planes = x.reshape(6, 20).astype(np.float64)
    want = np.floor((planes[:, index] * weight).sum(axis=-1) / 2 ** 14 + 0.5).reshape(2, 3, 2, 3)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs, why", [
    (dict(mode="cubic"), "Resize mode 'cubic' is not supported"),
    (dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize"),
     "coordinate_transformation_mode 'tf_crop_and_resize' is not supported"),
    (dict(mode="linear", keep_aspect_ratio_policy="not_larger"), "keep_aspect_ratio_policy"),
    (dict(mode="linear", antialias=1, sizes=[1, 8, 4, 4]), "antialias when shrinking"),
    (dict(mode="linear", sizes=[1, 4, 8, 8]), "only the height and width"),
])
def test_other_resizes_are_refused_by_name(attrs, why):
    attrs = dict(attrs)
    sizes = attrs.pop("sizes", [1, 8, 16, 16])
    model = upsample("half_pixel", "floor", sizes, None, mode=attrs.pop("mode"))
    node = next(n for n in model.graph.node if n.op_type == "Resize")
    node.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items() if k != "coordinate_transformation_mode")
    if "coordinate_transformation_mode" in attrs:
        next(a for a in node.attribute if a.name == "coordinate_transformation_mode").s = \
            attrs["coordinate_transformation_mode"].encode()
    with pytest.raises(ModelError, match=r"node 'up' \(Resize\): .*" + why):
        from_model(model, "r.onnx")
