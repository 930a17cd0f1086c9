"""Exporter-style ONNX graphs (dynamo patterns, built with onnx.helper): the float model against
onnxruntime, and the quantized network through the executor bit for bit against the numpy
reference, with every op placed and its reason given."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from compiler.frontend import ModelError, float_ref, from_model, load_onnx
from compiler.network import PartitionOptions, execute, partition
from compiler.quantize import quantize_graph, reference
from driver import open_device

from .exporter_graphs import MODELS, Builder, resnet_like


def onnxruntime_forward(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"input": x})[0]


@pytest.fixture(scope="module", params=sorted(MODELS))
def imported(request):
    model = MODELS[request.param]()
    onnx.checker.check_model(model, full_check=True)
    return request.param, model, from_model(model, request.param)


def test_float_model_matches_onnxruntime(imported):
    name, model, graph = imported
    x = np.random.default_rng(0).standard_normal(graph.shapes[graph.input]).astype(np.float32)
    want = onnxruntime_forward(model, x)
    got = float_ref.forward(graph, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("options", [PartitionOptions(), PartitionOptions(stem_on_vdla=True, add_on_vdla=True,
                                                                           fc_on_vdla=True)], ids=["default", "all"])
def test_quantized_network_is_bit_exact_and_placed(imported, options):
    name, model, graph = imported
    shape = graph.shapes[graph.input]
    rng = np.random.default_rng(1)
    calibration = rng.standard_normal((4 * shape[0],) + shape[1:]).astype(np.float32)
    q = quantize_graph(graph, calibration, wide_output=not options.fc_on_vdla)
    device = open_device("sim", "osdi18")
    placements = partition(q, device.config, options)
    assert all(placements[n.name].reason for n in q.nodes)
    x = rng.standard_normal(shape).astype(np.float32)
    result = execute(q, x, placements, device)
    np.testing.assert_array_equal(result.output, reference.forward(q, x))
    # The quantized network follows the float one.
    want, got = float_ref.forward(graph, x), q.dequantize_output(result.output)
    assert np.sqrt(((got - want) ** 2).mean()) < 0.25 * np.sqrt((want ** 2).mean()) + 1e-3


def test_each_model_puts_its_heavy_ops_where_expected():
    device = open_device("sim", "osdi18")
    placements = {}
    for name in ("mobilenet_like", "elementwise_like"):
        graph = from_model(MODELS[name](), name)
        q = quantize_graph(graph, np.random.default_rng(0).standard_normal((2,) + graph.shapes[graph.input][1:]))
        placements.update({(name, n.op, n.attrs.get("groups", 1)): placements_ for n in q.nodes
                           for placements_ in [partition(q, device.config)[n.name]]})
    depthwise = placements[("mobilenet_like", "conv", 16)]
    assert depthwise.target == "cpu" and "depthwise" in depthwise.reason
    grouped = placements[("elementwise_like", "conv", 2)]
    assert grouped.target == "vdla" and "2 per-group GEMMs" in grouped.reason
    assert placements[("elementwise_like", "gather", 1)].target == "cpu"
    assert placements[("mobilenet_like", "lut", 1)].target == "cpu"


def test_external_data_and_a_missing_data_file(tmp_path):
    path = tmp_path / "r.onnx"
    onnx.save(resnet_like(), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="r.onnx.data", size_threshold=0)
    graph = load_onnx(path)
    assert graph.nodes[0].op == "conv" and graph.nodes[-1].op == "dense"
    (tmp_path / "r.onnx.data").unlink()
    with pytest.raises(ModelError, match=r"external data file 'r.onnx.data' is missing"):
        load_onnx(path)


def test_dynamic_dimensions_need_an_input_shape():
    model = resnet_like(shape=(1, 3, 16, 20))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_param, dims[2].dim_param, dims[3].dim_param = "batch", "height", "width"
    with pytest.raises(ModelError, match=r"dynamic dimensions: axis 0 \('batch'\), axis 2 \('height'\), "
                                         r"axis 3 \('width'\); give --input-shape"):
        from_model(model, "dyn")
    graph = from_model(model, "dyn", input_shape=(1, 3, 24, 40))
    assert graph.shapes[graph.input] == (1, 3, 24, 40)
    assert graph.shapes[graph.nodes[0].output] == (1, 16, 12, 20)
    with pytest.raises(ModelError, match="--input-shape gives 4 for axis 1"):
        from_model(model, "dyn", input_shape=(1, 4, 24, 40))


def test_opset_above_21_is_refused_and_below_13_converted():
    b = Builder()
    model = b.model((1, 3, 8, 8), b.op("Relu", ["input"]), [1, 3, 8, 8], opset=22)
    with pytest.raises(ModelError, match="opset 22 is not supported"):
        from_model(model, "new")
    model.opset_import[0].version = 12
    assert [n.op for n in from_model(model, "old").nodes] == ["relu"]


def test_unsupported_op_names_every_node():
    b = Builder()
    x = b.op("Sign", ["input"])
    model = b.model((1, 3, 8, 8), b.op("Erf", [x]), [1, 3, 8, 8])
    with pytest.raises(ModelError, match=r"m: 2 nodes cannot be imported .*: unsupported op Sign \(1 node: "
                                         r"'node_Sign_1'\); unsupported op Erf \(1 node: 'node_Erf_2'\)$"):
        from_model(model, "m")


def test_computing_ops_are_not_taken_for_data_movement():
    b = Builder()
    model = b.model((1, 3, 8, 8), b.op("ReduceMax", ["input"], keepdims=1, axes=[1]), [1, 1, 8, 8], opset=17)
    with pytest.raises(ModelError, match="unsupported op ReduceMax"):
        from_model(model, "m")
