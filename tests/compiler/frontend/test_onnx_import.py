"""ONNX import: the graph IR against onnx's own reference evaluator, and clear errors."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend import ModelError, float_ref, from_model, load_onnx
from compiler.frontend.inputs import synthetic_images
from compiler.frontend.resnet import build_resnet


@pytest.fixture(scope="module")
def resnet18_32(tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "r18.onnx"
    onnx.save(build_resnet(18, 32), str(path))
    return path


def test_import_matches_onnx_reference_evaluator(resnet18_32):
    """BN folding, pooling, residual adds and the classifier against onnx.reference (float)."""
    x = synthetic_images(1, 32, seed=3)
    want = ReferenceEvaluator(str(resnet18_32)).run(None, {"input": x})[0]
    graph = load_onnx(resnet18_32)
    got = float_ref.forward(graph, x)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_resnet18_graph_has_torchvision_names_and_no_batchnorm(resnet18_32):
    graph = load_onnx(resnet18_32)
    convs = [n.name for n in graph.nodes if n.op == "conv"]
    assert len(convs) == 20 and convs[0] == "conv1" and "layer4.0.downsample.0" in convs
    assert [n.op for n in graph.nodes].count("add") == 8
    assert graph.nodes[-1].op == "dense" and graph.shapes[graph.output] == (1, 1000)


def model_with(nodes, inits, in_shape=(1, 4, 8, 8), out_shape=None, name="m"):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def save(tmp_path, model, name="m.onnx"):
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def test_matmul_plus_bias_reshape_and_clip_relu(tmp_path):
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((256, 10)), rng.standard_normal(10)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
             helper.make_node("Clip", ["a", "lo"], ["y"], name="relu6ish")]
    model = model_with(nodes, {"w": w, "b": b, "lo": np.float32(0)}, out_shape=[1, 10])
    model.graph.initializer.append(numpy_helper.from_array(np.array([1, -1], np.int64), "shape"))
    path = save(tmp_path, model)
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    want = ReferenceEvaluator(str(path)).run(None, {"x": x})[0]
    graph = load_onnx(path)
    assert [n.op for n in graph.nodes] == ["reshape", "dense", "relu"]
    np.testing.assert_allclose(float_ref.forward(graph, x), want, rtol=1e-4, atol=1e-4)


def test_unsupported_op_names_the_node(tmp_path):
    nodes = [helper.make_node("Sign", ["x"], ["s"], name="gate"), helper.make_node("Erf", ["s"], ["y"], name="t")]
    path = save(tmp_path, model_with(nodes, {}, out_shape=[1, 4, 8, 8]))
    with pytest.raises(ModelError) as err:
        load_onnx(path)
    text = str(err.value)
    assert text == (f"{path}: 2 nodes cannot be imported (see docs/onnx.md for what is supported): "
                    "unsupported op Sign (1 node: 'gate'); unsupported op Erf (1 node: 't')")
    with pytest.raises(ModelError, match="m.onnx: node 'gate' \\(Sign\\): unsupported op Sign; see docs/onnx.md for what is supported$"):
        load_onnx(save(tmp_path, model_with(nodes[:1], {}, out_shape=[1, 4, 8, 8])))


def test_token_ids_indexing_an_embedding_are_refused_with_the_way_out():
    """A BERT-style export's input_ids index its word-embedding table: one line that says so and
    names the float input to export from, not 'computes new values'."""
    table = numpy_helper.from_array(np.zeros((100, 16), np.float32), "table")
    graph = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["e"], name="embed")], "ids",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 8])],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)], [table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelError, match=r"node 'embed' \(Gather\): the computed tensor 'ids' is used as indices into "
                       r"the constant 'table' \(an embedding lookup of token ids\).*inputs_embeds"):
        from_model(model, "m.onnx")


@pytest.mark.parametrize("attrs,words", [({"group": 3}, r"weight \(3, 1, 3, 3\) with group=3 does not match 4 input channels"),
                                         ({"dilations": [0, 1]}, r"Attribute dilations must only contain positive values")])
def test_unsupported_conv_forms(tmp_path, attrs, words):
    w = np.zeros((3, 1, 3, 3)) if "group" in attrs else np.zeros((4, 4, 3, 3))
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], **attrs)
    with pytest.raises(ModelError, match=words):
        load_onnx(save(tmp_path, model_with([node], {"w": w}, out_shape=None)))


def test_kernel_shape_must_match_the_weight(tmp_path):
    """onnx's shape inference follows ``kernel_shape`` (a 1x2 window: output 8x7), the weight is
    1x1 (found by tests/fuzz/test_fuzz_onnx.py): refused, naming both."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[1, 2])
    with pytest.raises(ModelError, match=r"node 'c' \(Conv\): kernel_shape \[1, 2\] does not match the weight's \(1, 1\)"):
        load_onnx(save(tmp_path, model_with([node], {"w": np.zeros((4, 4, 1, 1))}, out_shape=None)))


@pytest.mark.parametrize("op,size,kernel,stride", [("MaxPool", 1, 2, 2), ("Conv", 1, 2, 2), ("MaxPool", 2, 3, 2),
                                                   ("Conv", 2, 3, 1), ("AveragePool", 1, 2, 1)])
def test_window_larger_than_its_input(tmp_path, op, size, kernel, stride):
    """onnx's shape inference promises an extent of 1 for a window larger than its unpadded
    input (found by tests/fuzz/test_fuzz_onnx.py); the importer refuses it, naming the node."""
    inits = {"w": np.ones((4, 4, kernel, kernel))} if op == "Conv" else {}
    node = helper.make_node(op, ["x", "w"] if op == "Conv" else ["x"], ["y"], name="win", kernel_shape=[kernel] * 2,
                            strides=[stride] * 2)
    path = save(tmp_path, model_with([node], inits, in_shape=(1, 4, size, size)))
    with pytest.raises(ModelError, match=f"node 'win' \\({op}\\): the {kernel}x{kernel} window is larger than its "
                                         f"input {size}x{size} with padding \\[0, 0, 0, 0\\]"):
        load_onnx(path)


def test_batchnorm_not_after_conv_is_a_per_channel_affine(tmp_path):
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn")
    inits = {k: np.linspace(0.5, 1.5, 4) for k in "sbmv"}
    path = save(tmp_path, model_with([node], inits, out_shape=[1, 4, 8, 8]))
    graph = load_onnx(path)
    assert [n.op for n in graph.nodes] == ["affine"]
    x = np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32)
    want = ReferenceEvaluator(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(float_ref.forward(graph, x), want, rtol=1e-5, atol=1e-5)


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x08\x07definitely not protobuf" * 10)
    with pytest.raises(ModelError, match="not an ONNX model file"):
        load_onnx(path)
    with pytest.raises(ModelError, match="no such file"):
        load_onnx(tmp_path / "missing.onnx")


def test_add_with_mismatched_shapes(tmp_path):
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Add", ["x", "p"], ["y"], name="sum")]
    with pytest.raises(ModelError, match="shape inference failed .*node name: sum.*Incompatible dimensions"):
        load_onnx(save(tmp_path, model_with(nodes, {})))
