"""Exporter-style ONNX graphs (dynamo patterns, built with onnx.helper): the float model against
onnxruntime, and the quantized network through the executor bit for bit against the numpy
reference, with every op placed and its reason given."""

import re

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


def test_linear_layers_over_tokens_and_channels_last_pixels_are_gemms_on_the_accelerator():
    """A MatMul by a constant on an input of more than two axes (issue 28, item 1) is one dense
    over all rows: its bias Add and ReLU fold or fuse into it through the reshape that restores the
    leading axes, a position table (per token) does not, and by rule every such dense (more rows
    than images) is offloaded while a classifier (a row per image) stays on the CPU."""
    device = open_device("sim", "osdi18")
    # biases folded, ReLUs right after their dense (fused when quantized), the rows restored once
    # at the end (a per-token position table stays an op of its own), reshapes composed with the
    # Transposes' gathers on both sides
    expected = {"token_mlp_like": ["reshape", "dense", "reshape", "affine", "relu", "reshape", "dense", "relu", "dense",
                                   "reshape"],
                "channels_last_mlp_like": ["conv", "gather", "dense", "relu", "dense", "gather", "add"]}
    for name, rows in (("token_mlp_like", 24), ("channels_last_mlp_like", 36)):
        graph = from_model(MODELS[name](), name)
        assert [n.op for n in graph.nodes] == expected[name]
        dense = [n for n in graph.nodes if n.op == "dense"]
        assert [graph.shapes[n.inputs[0]][0] for n in dense] == [rows] * len(dense)
        q = quantize_graph(graph, np.random.default_rng(0).standard_normal((2,) + graph.shapes[graph.input][1:]))
        placements = partition(q, device.config)
        for node in q.nodes:
            if node.op == "dense":
                assert placements[node.name].target == "vdla", placements[node.name]
                assert f"linear layer over {rows} rows" in placements[node.name].reason
    # a 2-D input's rows are its images: one row of work per image, the classifier rule
    mlp = from_model(MODELS["mlp_like"](), "m")
    q = quantize_graph(mlp, np.random.default_rng(0).standard_normal((4, 12)))
    assert partition(q, device.config)["node_MatMul_1"].reason.startswith("classifier: one row of GEMM work")


def test_a_sequence_first_token_input_has_linear_layers_not_classifiers():
    """torch's ``batch_first=False`` layers read (sequence, batch, channels): the first axis is
    the sequence, so a dense over its 24 rows is a linear layer over tokens (offloaded by rule),
    not 24 images' classifier; a dense over one row per batch element stays a classifier."""
    device = open_device("sim", "osdi18")
    graph = from_model(MODELS["token_mlp_like"](shape=(24, 1, 16)), "seq_first")
    q = quantize_graph(graph, np.random.default_rng(0).standard_normal((48, 1, 16)))
    placements = partition(q, device.config)
    dense = [n for n in q.nodes if n.op == "dense"]
    assert len(dense) == 3
    for node in dense:
        assert placements[node.name].target == "vdla" and "linear layer over 24 rows" in placements[node.name].reason
    b = Builder()
    last = b.op("Gather", ["input", b.init("last", np.array(23, np.int64))], axis=0)
    out = b.op("Gemm", [last, b.w("w", (6, 16)), b.w("b", (6,), 0.1)], transB=1)
    head = from_model(b.model((24, 1, 16), out, [1, 6]), "head")
    q = quantize_graph(head, np.random.default_rng(0).standard_normal((48, 1, 16)))
    gemm = next(n for n in q.nodes if n.op == "dense")
    assert partition(q, device.config)[gemm.name].reason.startswith("classifier: one row of GEMM work")


def test_a_matmul_needs_rows_and_a_constant_matrix():
    """A dense layer is over the last axis of an input of two axes or more; a 1-D input (a vector
    times a matrix) and a stack of weight matrices are refused in one line each."""
    b = Builder()
    out = b.op("MatMul", ["input", b.w("w", (16, 4))])
    with pytest.raises(ModelError, match=r"dense weight \(4, 16\) does not match input \(16,\) \(the "
                                         r"weight's second axis must be the input's last\)"):
        from_model(b.model((16,), out, [4]), "vector")
    b = Builder()
    out = b.op("MatMul", ["input", b.w("w", (2, 16, 4))])
    with pytest.raises(ModelError, match=r"only MatMul by a constant 2-D matrix is supported"):
        from_model(b.model((2, 5, 16), out, [2, 5, 4]), "stacked")


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


def test_a_residual_add_of_a_tiny_layer_scaled_branch_keeps_the_sum_s_range():
    """torchvision's ConvNeXt at initialisation adds 1e-6 times its branch to the residual: the
    branch's step is far finer than the sum needs, and the sum's step must follow the sum's range
    (before: at most 2**6 times the finer input's step, which clipped the sum to about 1 % of its
    range: 99 % error on convnext_tiny's first block). The int8 sum stays as close to the float
    one as the residual input's own rounding."""
    graph = from_model(MODELS["convnext_layer_scale_like"](), "convnext_layer_scale_like")
    rng = np.random.default_rng(1)
    shape = graph.shapes[graph.input]
    q = quantize_graph(graph, rng.standard_normal((4,) + shape[1:]).astype(np.float32))
    x = rng.standard_normal((2,) + shape[1:]).astype(np.float32)
    want, got = float_ref.forward(graph, x), q.dequantize_output(reference.forward(q, x))
    assert np.sqrt(((got - want) ** 2).mean()) < 0.03 * np.sqrt((want ** 2).mean())


def test_a_class_token_concatenated_before_the_patches_is_a_copy_with_the_token_as_fill():
    """ViT's Concat of a constant (the class token) and the computed patches is one gather of the
    patches whose first row is the token (before: refused, 'a constant where the network's data
    is expected'); the int8 token is the float one rounded to the patches' step."""
    model = MODELS["vit_embedding_like"]()
    graph = from_model(model, "vit_embedding_like")
    concat = next(n for n in graph.nodes if n.name.startswith("node_Concat"))
    assert concat.op == "gather" and concat.attrs["shape"] == (1, 17, 16)
    token = next(onnx.numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "class_token")
    np.testing.assert_array_equal(concat.attrs["fill"][:16], token.reshape(-1))
    assert (concat.attrs["index"][:16] == -1).all() and (concat.attrs["index"][16:] >= 0).all()
    rng = np.random.default_rng(1)
    q = quantize_graph(graph, rng.standard_normal((4, 3, 16, 16)).astype(np.float32))
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    got = q.dequantize(concat.output, reference.run(q, x)[concat.output])[0, 0]
    step = 2.0 ** -q.fracs[concat.output] / q.scales.get(concat.output, 1.0)
    assert np.abs(got - token.reshape(-1)).max() <= step / 2 + 1e-9


def test_a_mean_over_tokens_is_a_window_mean_and_other_means_are_refused():
    """ReduceMean over adjacent axes after the batch (timm's mean over the tokens, LeViT's
    pooling) is an avgpool2d of a (tokens, 1) window on (N, 1, T, C) between reshapes
    (before: refused, 'only the mean over H and W'); over the batch axis or axes with a gap
    between them it is refused in one line."""
    graph = from_model(MODELS["token_mean_like"](), "token_mean_like")
    pool = next(n for n in graph.nodes if n.op == "avgpool2d")
    assert graph.shapes[pool.inputs[0]] == (1, 1, 10, 64) and pool.attrs["kernel"] == (10, 1)
    for axes, shape in (([0], (2, 4, 6)), ([1, 3], (1, 2, 3, 4))):
        b = Builder()
        model = b.model(shape, b.op("ReduceMean", ["input", b.ints("axes", axes)], keepdims=1), opset=18)
        with pytest.raises(ModelError, match=re.escape(f"only the mean over H and W of an NCHW tensor, or over adjacent "
                                                       f"axes after the batch axis (a mean over tokens), is supported "
                                                       f"(axes {axes} of {shape})")):
            from_model(model, "m")


def test_an_einsum_that_is_a_batched_matrix_product_is_a_matmul():
    """MaxViT's two Einsums (Q.K^T with K's last two axes swapped, and P.V) are products of two
    computed tensors (before: refused, 'unsupported op Einsum'); an output in another order than
    (batch, row, column) gets a Transpose after the product; an Einsum that sums a letter within
    one operand, or has several contracted letters, is left to the importer and refused."""
    from compiler.frontend import einsum

    graph = from_model(MODELS["maxvit_attention_like"](), "maxvit_attention_like")
    products = [n for n in graph.nodes if n.op == "matmul"]
    assert [n.name for n in products] == ["node_Einsum_17", "node_Einsum_20"]
    assert [graph.shapes[n.output] for n in products] == [(1, 2, 2, 16, 16), (1, 2, 2, 16, 8)]
    assert einsum.operands("bij,bjk->bki") == ("bij", "bjk", "bki")
    for equation in ("bii,bij->bij", "ij,jk", "bij,bjk->bk", "bijl,bjlk->bik", "...ij,...jk->...ik", "ij,jk,kl->il"):
        assert einsum.operands(equation) is None, equation
    b = Builder()
    model = b.model((2, 3, 4), b.op("Einsum", ["input", "input"], equation="bij,bij->b"), [2], opset=17)
    with pytest.raises(ModelError, match="unsupported op Einsum"):
        from_model(model, "m")
