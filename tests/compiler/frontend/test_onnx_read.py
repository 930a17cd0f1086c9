"""Reading an ONNX file (compiler/frontend/onnx_read.py): external data read with its size checked
against the tensor's shape and the file (offset 0 and no length as the spec allows), paths kept
inside the model's folder, and graphs that name a value twice refused. Models built with
onnx.helper; the defects are one ModelError naming the tensor and the file."""

import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import ModelError, from_model, load_onnx
from vdla_hw.limits import MAX_MODEL_BYTES

WEIGHT = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
NBYTES = WEIGHT.nbytes  # 432


def conv_model(weight_dims=None):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="c")
    w = numpy_helper.from_array(WEIGHT, "w")
    if weight_dims is not None:
        del w.dims[:]
        w.dims.extend(weight_dims)
    graph = helper.make_graph([node], "g", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def save_external(tmp_path, data: bytes | None = None, location="m.onnx.data", weight_dims=None, **fields):
    """m.onnx with initializer 'w' in external data ``location`` (``data``: its bytes, default
    the weight's); ``fields`` are the external_data entries besides the location (offset, length)."""
    model = conv_model(weight_dims)
    w = model.graph.initializer[0]
    if data is not None:
        (tmp_path / location).write_bytes(data)
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in {"location": location, **fields}.items():
        entry = w.external_data.add()
        entry.key, entry.value = key, str(value)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())  # as written, not through onnx.save
    return path


def weight_of(path) -> np.ndarray:
    return load_onnx(path).nodes[0].attrs["weight"]


@pytest.mark.parametrize("data, fields", [
    (WEIGHT.tobytes(), {"length": NBYTES}),                      # a length and no offset (was an internal error)
    (WEIGHT.tobytes() + b"\0" * 100, {}),                        # neither: the shape says how much
    (b"\xff" * 16 + WEIGHT.tobytes() + b"\xff" * 8, {"offset": 16, "length": NBYTES}),
    (b"\xff" * 16 + WEIGHT.tobytes(), {"offset": 16}),
])
def test_external_data_offset_defaults_to_zero_and_length_to_the_shape(tmp_path, data, fields):
    np.testing.assert_array_equal(weight_of(save_external(tmp_path, data, **fields)), WEIGHT)


def test_a_huge_data_file_without_a_length_reads_only_the_tensor(tmp_path):
    """Once read to the end of the file (a sparse 4 GiB file here: out of memory)."""
    with open(tmp_path / "m.onnx.data", "wb") as fh:
        fh.write(WEIGHT.tobytes())
        fh.truncate(4 << 30)
    np.testing.assert_array_equal(weight_of(save_external(tmp_path)), WEIGHT)


def refused(path, *words):
    with pytest.raises(ModelError) as err:
        load_onnx(path)
    message = str(err.value)
    assert message.startswith(f"{path}: initializer 'w': external data"), message
    assert "\n" not in message and all(w in message for w in words), message


def test_a_length_that_disagrees_with_the_shape(tmp_path):
    refused(save_external(tmp_path, WEIGHT.tobytes(), length=NBYTES - 4),
            "'m.onnx.data'", f"length {NBYTES - 4} differs from the {NBYTES} bytes of its shape [4, 3, 3, 3]")


@pytest.mark.parametrize("fields", [{}, {"offset": 8}, {"offset": 8, "length": NBYTES}])
def test_a_data_file_too_short_for_offset_and_shape(tmp_path, fields):
    refused(save_external(tmp_path, WEIGHT.tobytes()[:-1], **fields), "file 'm.onnx.data' has 431 bytes",
            f"offset {fields.get('offset', 0)} + the {NBYTES} bytes")


@pytest.mark.parametrize("key, value", [("offset", "-4"), ("offset", "sixteen"), ("length", "4e2"),
                                        ("offset", "\u0661")])
def test_offset_and_length_must_be_non_negative_integers(tmp_path, key, value):
    refused(save_external(tmp_path, WEIGHT.tobytes(), **{key: value}), f"{key} {value!r} is not a non-negative integer")


def test_a_declared_shape_past_the_model_bound_is_refused_before_reading(tmp_path):
    dims = [MAX_MODEL_BYTES // 4 + 1]
    refused(save_external(tmp_path, WEIGHT.tobytes(), weight_dims=dims), "past the 1.0 GiB limit")


@pytest.mark.parametrize("location", ["../outside.data", "/etc/hostname", "link.data"])
def test_external_data_stays_inside_the_models_folder(tmp_path, location):
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "outside.data").write_bytes(WEIGHT.tobytes())
    os.symlink("/dev/zero", folder / "link.data")
    refused(save_external(folder, location=location), "points outside the model's folder")


def test_a_fifo_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "m.onnx.data")  # opening it for reading would wait for a writer
    refused(save_external(tmp_path), "'m.onnx.data' is not a regular file")


def test_a_missing_location(tmp_path):
    refused(save_external(tmp_path, location=""), "without a location")


def graph_model(nodes, inputs=("x",), inits=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(i, TensorProto.FLOAT, [1, 4, 8, 8])
                                           for i in inputs],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.float32(v), k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("model, message", [
    (graph_model([helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Sigmoid", ["x"], ["y"], name="b")]),
     "value 'y' is written by both node 'a' and node 'b'; each value must have one producer"),
    (graph_model([helper.make_node("Relu", ["x"], ["t"], name="a"), helper.make_node("Sigmoid", ["x"], ["t"]),
                  helper.make_node("Relu", ["t"], ["y"], name="c")]),
     "value 't' is written by both node 'a' and node #1 (Sigmoid); each value must have one producer"),
    (graph_model([helper.make_node("Split", ["x"], ["y", "y"], name="s", axis=1, num_outputs=2)]),
     "value 'y' is written by node 's' twice; each value must have one producer"),
    (graph_model([helper.make_node("Relu", ["x"], ["x"], name="a"), helper.make_node("Relu", ["x"], ["y"], name="b")]),
     "node 'a' writes 'x', which is a graph input"),
    (graph_model([helper.make_node("Relu", ["x"], ["c"], name="a"), helper.make_node("Add", ["x", "c"], ["y"], name="b")],
                 inits=[("c", 1.0)]),
     "node 'a' writes 'c', which is an initializer"),
    (graph_model([helper.make_node("Add", ["x", "c"], ["y"], name="a")], inits=[("c", 1.0), ("c", 2.0)]),
     "initializer 'c' is given twice"),
    (graph_model([helper.make_node("Relu", ["x"], ["y"], name="a")], inputs=("x", "x")),
     "graph input 'x' is declared twice"),
])
def test_a_value_named_twice_is_refused(model, message):
    """Two nodes writing one output once ran (the later one silently won)."""
    with pytest.raises(ModelError) as err:
        from_model(model, "dup.onnx")
    assert str(err.value) == f"dup.onnx: {message}"


def test_shape_inference_runs_without_the_weights_data():
    """The copy shape inference gets holds no large float initializer (they are typed inputs), so
    importing costs no second and third copy of the weights; the shapes are those of the whole model."""
    import onnx

    from compiler.frontend.onnx_read import BIG_CONSTANT, _without_weights, infer_shapes, static_shapes
    from compiler.frontend.resnet import build_resnet

    model = build_resnet(18, 32)
    light = _without_weights(model)
    assert max(int(np.prod(t.dims)) for t in light.graph.initializer) <= BIG_CONSTANT
    assert light.ByteSize() < model.ByteSize() / 100
    whole = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    shapes, want = static_shapes(infer_shapes(model, "m", "input", (1, 3, 32, 32))), static_shapes(whole)
    weights = {t.name: tuple(t.dims) for t in model.graph.initializer}
    assert {k: v for k, v in shapes.items() if k not in weights} == want  # the weights: typed inputs
    assert all(shapes[k] == weights[k] for k in shapes if k in weights)
