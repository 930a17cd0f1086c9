"""Shared fixtures of the sweep tests: a small CNN (stem, three convolutions, a residual add, a
classifier) that evaluates in a fraction of a second, so sweeps on Ray stay short; and a sweep key
(dse.row_seal) of the test session's own, not the user's ~/.config/vdla/sweep.key."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def small_cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(7)

    def init(name, *shape, scale=0.2):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="stem", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"], name="stem_relu"),
        helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], name="conv3", kernel_shape=[1, 1], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["c3"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    inits = [init("w0", 16, 3, 3, 3), init("b0", 16), init("w1", 32, 16, 3, 3), init("b1", 32),
             init("w2", 32, 32, 3, 3), init("b2", 32), init("w3", 64, 32, 1, 1), init("b3", 64),
             init("wf", 10, 64), init("bf", 10)]
    graph = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="session")
def small_cnn_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "small_cnn.onnx"
    onnx.save(small_cnn(), str(path))
    return str(path)


@pytest.fixture(scope="session")
def config_home(tmp_path_factory):
    return str(tmp_path_factory.mktemp("config"))


@pytest.fixture(autouse=True)
def own_sweep_key(config_home, monkeypatch):
    """Every sweep of these tests (and the sweeps they start as processes) seals its rows with a
    key in the session's own configuration folder."""
    monkeypatch.setenv("XDG_CONFIG_HOME", config_home)
